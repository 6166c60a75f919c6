//===- NormalizationOps.cpp - softmax and normalisation -------------------===//

#include "OpUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;

template <typename OpTy>
static LogicalResult verifyAxis(OpTy op, int64_t axis, int64_t rank) {
  if (!normalizeAxis(axis, rank))
    return op.emitOpError(formatAxisOutOfRange(axis, rank));
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

//===----------------------------------------------------------------------===//
// layer_norm
//===----------------------------------------------------------------------===//

/// Type rule of `eff.layer_norm`.
static LogicalResult inferLayerNormType(const RuleDiagnoser &emitError,
                                       LayerNormOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> inputOrFailure =
      getRankedType(emitError, adaptor.getInput(), "input");
  if (failed(inputOrFailure))
    return failure();
  RankedTensorType input = *inputOrFailure;
  std::optional<int64_t> axis =
      normalizeAxis(adaptor.getAxis(), input.getRank());
  if (!axis)
    return emitError(formatAxisOutOfRange(adaptor.getAxis(), input.getRank()));
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*axis);
  for (auto [operand, name] : {std::pair(adaptor.getScale(), "scale"),
                               std::pair(adaptor.getBias(), "bias")}) {
    if (!operand)
      continue;
    FailureOr<RankedTensorType> type = getRankedType(emitError, operand, name);
    if (failed(type))
      return failure();
    if (type->getShape() != normalized)
      return emitError(name, " must have the normalised shape ",
                       formatShape(normalized), ", got ",
                       formatShape(type->getShape()));
  }
  SmallVector<int64_t> statShape(input.getShape());
  for (int64_t d = *axis; d < input.getRank(); ++d)
    statShape[d] = 1;
  // Statistics are kept in fp32 even when the input is in low precision.
  Type statType = input.getElementType();
  if (statType.getIntOrFloatBitWidth() < 32)
    statType = Float32Type::get(input.getContext());
  types.push_back(input);
  types.push_back(RankedTensorType::get(statShape, statType));
  types.push_back(RankedTensorType::get(statShape, statType));
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferLayerNormType(loc, adaptor, types);
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyTypeRule(*this, inferLayerNormType)))
    return failure();
  if (!(getEpsilon().convertToDouble() >= 0))
    return emitOpError("epsilon must be >= 0, got ")
           << formatNumber(getEpsilon().convertToDouble());
  return success();
}

int64_t LayerNormOp::getFlops() {
  // Per element: mean (add), variance (subtract, square, add), normalise
  // (subtract, multiply by rstd), then scale and shift when present.
  int64_t perElement = 6 + (getScale() ? 1 : 0) + (getBias() ? 1 : 0);
  return perElement * detail::numElements(getInput().getType());
}

//===----------------------------------------------------------------------===//
// batch_norm_train and batch_norm
//===----------------------------------------------------------------------===//

/// Checks an NC... input, the per-channel [C] operands and epsilon.
static LogicalResult
verifyBatchNormOperands(Operation *op, Value input,
                        ArrayRef<std::pair<Value, StringRef>> perChannel,
                        APFloat epsilon) {
  RankedTensorType type = tensorType(input);
  if (type.getRank() < 2)
    return op->emitOpError("input must have a channel dimension (rank >= 2), "
                           "got rank ")
           << type.getRank();
  int64_t channels = type.getDimSize(1);
  for (auto [operand, name] : perChannel) {
    ArrayRef<int64_t> shape = tensorType(operand).getShape();
    if (shape.size() != 1 || shape[0] != channels)
      return op->emitOpError(name)
             << " must have shape [" << channels << "] (one per channel), got "
             << formatShape(shape);
  }
  if (!(epsilon.convertToDouble() >= 0))
    return op->emitOpError("epsilon must be >= 0, got ")
           << formatNumber(epsilon.convertToDouble());
  return success();
}

LogicalResult BatchNormTrainOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location>,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getInput().getType());
  for (Value stat : {adaptor.getRunningMean(), adaptor.getRunningVar(),
                     adaptor.getRunningMean(), adaptor.getRunningVar()})
    types.push_back(stat.getType());
  return success();
}

LogicalResult BatchNormTrainOp::verify() {
  if (failed(verifyBatchNormOperands(*this, getInput(),
                                     {{getScale(), "scale"},
                                      {getBias(), "bias"},
                                      {getRunningMean(), "running_mean"},
                                      {getRunningVar(), "running_var"}},
                                     getEpsilon())))
    return failure();
  double momentum = getMomentum().convertToDouble();
  if (!(momentum >= 0.0 && momentum <= 1.0))
    return emitOpError("momentum must be in [0, 1], got ")
           << formatNumber(momentum);
  // The batch statistics of a channel come from every dimension but 1; the
  // unbiased variance needs at least two values (as PyTorch says).
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  int64_t valuesPerChannel = 1;
  for (auto [d, size] : llvm::enumerate(shape))
    if (d != 1)
      valuesPerChannel *= size;
  if (valuesPerChannel < 2)
    return emitOpError("needs more than one value per channel in training, "
                       "got ")
           << valuesPerChannel << " for input shape " << formatShape(shape);
  return success();
}

int64_t BatchNormTrainOp::getFlops() {
  return 8 * detail::numElements(getInput().getType());
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult BatchNormOp::verify() {
  return verifyBatchNormOperands(*this, getInput(),
                                 {{getScale(), "scale"},
                                  {getBias(), "bias"},
                                  {getMean(), "mean"},
                                  {getVariance(), "variance"}},
                                 getEpsilon());
}

int64_t BatchNormOp::getFlops() {
  // Per element, as batch_norm_train without the statistics: subtract the
  // mean, multiply by rstd, scale, shift.
  return 4 * detail::numElements(getInput().getType());
}
