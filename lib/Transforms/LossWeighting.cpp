//===- LossWeighting.cpp - How partial losses combine into one ------------===//

#include "effopt/Transforms/LossWeighting.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt {

FailureOr<LossWeighting> classifyLossOp(Operation *lossOp, StringRef passName) {
  LossWeighting weighting;
  auto classify = [&](auto op) -> LogicalResult {
    if (op.getReduction() == LossReduction::Sum) {
      weighting.kind = LossWeighting::Sum;
      return success();
    }
    if (op.getReduction() != LossReduction::Mean)
      return success();
    if (op.getWeight())
      return op.emitOpError("with per-class weights is not supported by ")
             << passName
             << " (the mean's denominator would be the summed class weights "
                "of the counted targets)";
    if (std::optional<int64_t> ignore = op.getIgnoreIndex()) {
      weighting.kind = LossWeighting::CountedMean;
      weighting.labels = op.getLabels();
      weighting.ignoreIndex = *ignore;
    }
    return success();
  };
  if (auto op = dyn_cast_or_null<SoftmaxCrossEntropyOp>(lossOp)) {
    if (failed(classify(op)))
      return failure();
  } else if (auto op = dyn_cast_or_null<NllLossOp>(lossOp)) {
    if (failed(classify(op)))
      return failure();
  }
  return weighting;
}

Value scalarF32(OpBuilder &b, Location loc, double value) {
  auto type = RankedTensorType::get({}, b.getF32Type());
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
}

Value countTargets(OpBuilder &b, Location loc, Value labels,
                   int64_t ignoreIndex) {
  auto labelType = cast<RankedTensorType>(labels.getType());
  auto scalarLabel = RankedTensorType::get({}, labelType.getElementType());
  Value ignore = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          scalarLabel,
          b.getIntegerAttr(labelType.getElementType(), ignoreIndex)));
  Value counted = CmpOp::create(b, loc, labelType.clone(b.getI1Type()),
                                CmpPredicate::ne, labels, ignore);
  Value ones = CastOp::create(b, loc, labelType.clone(b.getF32Type()), counted);
  SmallVector<int64_t> axes =
      llvm::to_vector(llvm::seq<int64_t>(0, labelType.getRank()));
  return ReduceSumOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()),
                             ones, b.getDenseI64ArrayAttr(axes),
                             b.getBoolAttr(false));
}

} // namespace effopt
