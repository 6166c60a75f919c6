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

namespace effopt::eff {
/// The side-effect resource of the split collectives (eff.*_start,
/// eff.wait): the run's one ordered stream of collectives.
struct CollectiveResource
    : public mlir::SideEffects::Resource::Base<CollectiveResource> {
  llvm::StringRef getName() override { return "eff.collective"; }
};
} // namespace effopt::eff

#define GET_ATTRDEF_CLASSES
#include "effopt/Dialect/Eff/IR/EffAttrs.h.inc"

#define GET_OP_CLASSES
#include "effopt/Dialect/Eff/IR/EffOps.h.inc"

#endif // EFFOPT_DIALECT_EFF_IR_EFFOPS_H
