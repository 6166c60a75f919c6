//===- OpUtils.h - helpers shared by the eff op definitions ------*- C++ -*-===//
//
// `inferReturnTypes` can be called by builders before any verifier has run,
// so it must diagnose operands of unexpected types instead of casting them.
// Verifiers run after the ODS type constraints and may cast directly.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_DIALECT_EFF_IR_OPUTILS_H
#define EFFOPT_LIB_DIALECT_EFF_IR_OPUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace effopt::eff {

/// The type of `value`, which the op's type constraints made a ranked tensor.
inline mlir::RankedTensorType tensorType(mlir::Value value) {
  return llvm::cast<mlir::RankedTensorType>(value.getType());
}

/// The type of `value` as a ranked tensor, or a diagnostic at `loc` saying
/// that `name` must be one.
inline llvm::FailureOr<mlir::RankedTensorType>
getRankedType(std::optional<mlir::Location> loc, mlir::Value value,
              llvm::StringRef name) {
  if (auto type = llvm::dyn_cast<mlir::RankedTensorType>(value.getType()))
    return type;
  (void)mlir::emitOptionalError(loc, name, " must be a ranked tensor, got ",
                                value.getType());
  return llvm::failure();
}

} // namespace effopt::eff

#endif // EFFOPT_LIB_DIALECT_EFF_IR_OPUTILS_H
