//===- LossWeighting.h - How partial losses combine into one ---*- C++ -*-===//
//
// eff-grad-accum combines K micro-batches and eff-zero N ranks the same way:
// the loss op's reduction decides whether the parts' results are averaged,
// added, or weighted by each part's count of non-ignored targets. One
// classification serves both, so the two cannot disagree about a loss.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_TRANSFORMS_LOSSWEIGHTING_H
#define EFFOPT_TRANSFORMS_LOSSWEIGHTING_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

namespace effopt {

/// How the parts of a batch (micro-batches, ranks) combine their losses and
/// gradients into those of the whole batch.
struct LossWeighting {
  enum Kind {
    /// A mean over a count that is the same in every part (or no
    /// recognised loss): the plain mean of the parts' results.
    EqualMean,
    /// A sum-reduced loss: the parts' results add up.
    Sum,
    /// A mean-reduced classification loss with ignore_index: each part
    /// weighs its count of non-ignored targets, and the sum is divided by
    /// the global count.
    CountedMean,
  } kind = EqualMean;
  /// CountedMean: the loss op's labels operand.
  mlir::Value labels;
  int64_t ignoreIndex = 0;
};

/// Classifies `lossOp` (eff.softmax_cross_entropy or eff.nll_loss; any other
/// op is EqualMean). A class-weighted mean is refused with an error naming
/// `passName`: its denominator, the summed weights of the counted targets,
/// differs between parts.
mlir::FailureOr<LossWeighting> classifyLossOp(mlir::Operation *lossOp,
                                              llvm::StringRef passName);

/// A rank-0 f32 constant.
mlir::Value scalarF32(mlir::OpBuilder &b, mlir::Location loc, double value);

/// The number of `labels` (any rank, integer) not equal to `ignoreIndex`, as
/// a rank-0 f32: the denominator of a mean classification loss.
mlir::Value countTargets(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value labels, int64_t ignoreIndex);

} // namespace effopt

#endif // EFFOPT_TRANSFORMS_LOSSWEIGHTING_H
