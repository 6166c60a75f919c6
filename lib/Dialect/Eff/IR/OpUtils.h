//===- OpUtils.h - helpers shared by the eff op definitions ------*- C++ -*-===//
//
// Each type-inference rule is written once and serves twice: from the op's
// verifier, which reports a broken rule as "'eff.op' op ...", and from
// `inferReturnTypes`, which builders may call before anything is verified
// (so it must diagnose operands of unexpected types instead of casting).
// Running the rules in the verifier matters: MLIR checks inferred result
// types only after `verify()`, and would otherwise add a second, vaguer
// "failed to infer returned types" error.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_DIALECT_EFF_IR_OPUTILS_H
#define EFFOPT_LIB_DIALECT_EFF_IR_OPUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace effopt::eff {

/// Where a type-inference rule reports a violation: on an op being verified
/// (prefixed with the op's name), at an optional location given to
/// `inferReturnTypes`, or nowhere.
class RuleDiagnoser {
public:
  RuleDiagnoser(std::optional<mlir::Location> loc) : loc(loc) {}
  RuleDiagnoser(mlir::Operation *op) : op(op) {}

  /// Emits the streamed `args` as one error; always returns failure.
  template <typename... Args>
  mlir::LogicalResult operator()(Args &&...args) const {
    if (op) {
      mlir::InFlightDiagnostic diag = op->emitOpError();
      (diag << ... << std::forward<Args>(args));
      return diag;
    }
    return mlir::emitOptionalError(loc, std::forward<Args>(args)...);
  }

private:
  mlir::Operation *op = nullptr;
  std::optional<mlir::Location> loc;
};

/// The type of `value`, which the op's type constraints made a ranked tensor.
inline mlir::RankedTensorType tensorType(mlir::Value value) {
  return llvm::cast<mlir::RankedTensorType>(value.getType());
}

/// The type of `value` as a ranked tensor, or a diagnostic saying that
/// `name` must be one.
inline llvm::FailureOr<mlir::RankedTensorType>
getRankedType(const RuleDiagnoser &emitError, mlir::Value value,
              llvm::StringRef name) {
  if (auto type = llvm::dyn_cast<mlir::RankedTensorType>(value.getType()))
    return type;
  (void)emitError(name, " must be a ranked tensor, got ", value.getType());
  return llvm::failure();
}

/// Runs the type rule `rule` (a function of a diagnoser, the op's adaptor and
/// the types it infers) on `op` as part of its verifier.
template <typename OpTy, typename Rule>
mlir::LogicalResult verifyTypeRule(OpTy op, Rule rule) {
  llvm::SmallVector<mlir::Type> types;
  return rule(op.getOperation(), typename OpTy::Adaptor(op), types);
}

} // namespace effopt::eff

#endif // EFFOPT_LIB_DIALECT_EFF_IR_OPUTILS_H
