//===- LossOps.cpp - classification losses --------------------------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;

/// Shared type rule: `input` is [N, C, d...], `labels` is [N, d...].
static LogicalResult inferLossType(std::optional<Location> loc, Value input,
                                   Value labels, LossReduction reduction,
                                   SmallVectorImpl<Type> &types) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto labelType = cast<RankedTensorType>(labels.getType());
  if (inputType.getRank() < 2)
    return emitOptionalError(loc, "input must be [N, C, ...], got rank ",
                             inputType.getRank());
  SmallVector<int64_t> expected = {inputType.getDimSize(0)};
  llvm::append_range(expected, inputType.getShape().drop_front(2));
  if (labelType.getShape() != ArrayRef<int64_t>(expected))
    return emitOptionalError(loc, "labels must have shape ",
                             formatShape(expected), " for input of shape ",
                             formatShape(inputType.getShape()), ", got ",
                             formatShape(labelType.getShape()));
  if (reduction == LossReduction::None)
    types.push_back(inputType.clone(expected));
  else
    types.push_back(inputType.clone(ArrayRef<int64_t>{}));
  return success();
}

template <typename OpTy>
static LogicalResult verifyClassWeight(OpTy op) {
  if (Value weight = op.getWeight()) {
    auto shape = cast<RankedTensorType>(weight.getType()).getShape();
    int64_t classes = op.getInput().getType().getDimSize(1);
    if (shape.size() != 1 || shape[0] != classes)
      return op.emitOpError("weight must have shape [")
             << classes << "] (one per class), got " << formatShape(shape);
  }
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferLossType(loc, adaptor.getInput(), adaptor.getLabels(),
                       adaptor.getReduction(), types);
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  return verifyClassWeight(*this);
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferLossType(loc, adaptor.getInput(), adaptor.getLabels(),
                       adaptor.getReduction(), types);
}

LogicalResult NllLossOp::verify() { return verifyClassWeight(*this); }
