//===- EffOps.h - eff dialect ops -------------------------------*- C++ -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFOPS_H
#define EFFOPT_DIALECT_EFF_IR_EFFOPS_H

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/EffGradientInterface.h"
#include "effopt/Dialect/Eff/IR/EffInterfaces.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "effopt/Dialect/Eff/IR/EffEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "effopt/Dialect/Eff/IR/EffAttrs.h.inc"

#define GET_OP_CLASSES
#include "effopt/Dialect/Eff/IR/EffOps.h.inc"

#endif // EFFOPT_DIALECT_EFF_IR_EFFOPS_H
