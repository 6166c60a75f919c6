//===- EffOps.cpp - generated op definitions -----------------------------===//
//
// The op classes generated from ODS. The hand-written parts (verifiers, type
// inference, folders, costs) live in one file per op family.
//
//===----------------------------------------------------------------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace effopt::eff;

#define GET_OP_CLASSES
#include "effopt/Dialect/Eff/IR/EffOps.cpp.inc"
