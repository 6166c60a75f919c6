//===- ParameterCopies.h - cheap copies of parameters -----------*- C++ -*-===//
//
// A value computed only from parameters and constants by data movement and
// casts (a transposed weight for MatMul(x, Transpose(W)), autocast's bf16
// copy of a weight, a broadcast bias) is as large as the weight or larger,
// and costs next to nothing to compute again. Holding it from the forward
// to the backward would double the weight memory, so eff-autodiff and
// eff-remat recompute such values right before their backward reader under
// every policy instead of saving them. Recomputing them is bit-identical:
// the ops only move or round the same parameter bits.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_ANALYSIS_PARAMETERCOPIES_H
#define EFFOPT_ANALYSIS_PARAMETERCOPIES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace effopt {

class ParameterCopies {
public:
  /// Analyses the entry block of `func`: arguments tagged `eff.parameter`
  /// (trainable, frozen or buffers) and eff.constant results are the
  /// sources; an op that only moves or casts (reshape, transpose,
  /// broadcast_to, slice, concat, split, pad, cast) and reads sources or
  /// copies produces copies.
  explicit ParameterCopies(mlir::func::FuncOp func);

  /// Whether `value` is a result of such an op (not a parameter or constant
  /// itself).
  bool isCopy(mlir::Value value) const { return copies.contains(value); }

  /// The ops that compute `value` from parameters and constants, in block
  /// order (empty when `value` is not a copy).
  llvm::SmallVector<mlir::Operation *> chainOf(mlir::Value value) const;

private:
  llvm::DenseSet<mlir::Value> copies;
};

} // namespace effopt

#endif // EFFOPT_ANALYSIS_PARAMETERCOPIES_H
