//===- LossOps.cpp - classification losses --------------------------------===//

#include "OpUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;

/// Shared type rule: `input` is [N, C, d...], `labels` is [N, d...].
static LogicalResult inferLossType(const RuleDiagnoser &emitError, Value input,
                                   Value labels, Value weight,
                                   LossReduction reduction,
                                   SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> inputOrFailure =
      getRankedType(emitError, input, "input");
  if (failed(inputOrFailure))
    return failure();
  FailureOr<RankedTensorType> labelOrFailure =
      getRankedType(emitError, labels, "labels");
  if (failed(labelOrFailure))
    return failure();
  RankedTensorType inputType = *inputOrFailure, labelType = *labelOrFailure;
  if (inputType.getRank() < 2)
    return emitError("input must be [N, C, ...], got rank ",
                     inputType.getRank());
  SmallVector<int64_t> expected = {inputType.getDimSize(0)};
  llvm::append_range(expected, inputType.getShape().drop_front(2));
  if (labelType.getShape() != ArrayRef<int64_t>(expected))
    return emitError("labels must have shape ", formatShape(expected),
                     " for input of shape ", formatShape(inputType.getShape()),
                     ", got ", formatShape(labelType.getShape()));
  if (weight) {
    FailureOr<RankedTensorType> weightType =
        getRankedType(emitError, weight, "weight");
    if (failed(weightType))
      return failure();
    int64_t classes = inputType.getDimSize(1);
    if (weightType->getShape() != ArrayRef<int64_t>{classes})
      return emitError("weight must have shape [", classes,
                       "] (one per class), got ",
                       formatShape(weightType->getShape()));
  }
  if (reduction == LossReduction::None)
    types.push_back(inputType.clone(expected));
  else
    types.push_back(inputType.clone(ArrayRef<int64_t>{}));
  return success();
}

template <typename OpTy>
static LogicalResult inferClassificationLossType(const RuleDiagnoser &emitError,
                                                 typename OpTy::Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  return inferLossType(emitError, adaptor.getInput(), adaptor.getLabels(),
                       adaptor.getWeight(), adaptor.getReduction(), types);
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferClassificationLossType<SoftmaxCrossEntropyOp>(loc, adaptor,
                                                            types);
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  return verifyTypeRule(
      *this, inferClassificationLossType<SoftmaxCrossEntropyOp>);
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferClassificationLossType<NllLossOp>(loc, adaptor, types);
}

LogicalResult NllLossOp::verify() {
  return verifyTypeRule(*this, inferClassificationLossType<NllLossOp>);
}
