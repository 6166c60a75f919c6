//===- Passes.h - effopt training passes ------------------------*- C++ -*-===//

#ifndef EFFOPT_TRANSFORMS_PASSES_H
#define EFFOPT_TRANSFORMS_PASSES_H

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Support/ExactDouble.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace effopt {

#define GEN_PASS_DECL
#include "effopt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "effopt/Transforms/Passes.h.inc"

} // namespace effopt

#endif // EFFOPT_TRANSFORMS_PASSES_H
