//===- NormalizationOps.cpp - softmax and normalisation -------------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

template <typename OpTy>
static LogicalResult verifyAxis(OpTy op, int64_t axis, int64_t rank) {
  if (!normalizeAxis(axis, rank))
    return op.emitOpError("axis ")
           << axis << " is out of range [" << -rank << ", " << rank - 1 << "]";
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

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorType(adaptor.getInput());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), input.getRank());
  if (!axis)
    return emitOptionalError(loc, "axis ", adaptor.getAxis(),
                             " is out of range [", -input.getRank(), ", ",
                             input.getRank() - 1, "]");
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

LogicalResult LayerNormOp::verify() {
  RankedTensorType input = getInput().getType();
  int64_t axis = *normalizeAxis(getAxis(), input.getRank());
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (Value operand : {getScale(), getBias()}) {
    if (!operand)
      continue;
    ArrayRef<int64_t> shape = tensorType(operand).getShape();
    if (shape != normalized)
      return emitOpError("scale and bias must have the normalised shape ")
             << formatShape(normalized) << ", got " << formatShape(shape);
  }
  if (getEpsilon().convertToDouble() < 0)
    return emitOpError("epsilon must be >= 0");
  return success();
}

int64_t LayerNormOp::getFlops() {
  // mean, variance, normalise, scale and shift.
  return 8 * detail::numElements(getInput().getType());
}

//===----------------------------------------------------------------------===//
// batch_norm_train and batch_norm
//===----------------------------------------------------------------------===//

/// Checks an NC... input and four per-channel [C] operands.
static LogicalResult verifyBatchNormOperands(Operation *op, Value input,
                                             ValueRange perChannel) {
  RankedTensorType type = tensorType(input);
  if (type.getRank() < 2)
    return op->emitOpError("input must have a channel dimension (rank >= 2), "
                           "got rank ")
           << type.getRank();
  int64_t channels = type.getDimSize(1);
  for (Value operand : perChannel) {
    ArrayRef<int64_t> shape = tensorType(operand).getShape();
    if (shape.size() != 1 || shape[0] != channels)
      return op->emitOpError("per-channel operands must have shape [")
             << channels << "], got " << formatShape(shape);
  }
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
                                     {getScale(), getBias(), getRunningMean(),
                                      getRunningVar()})))
    return failure();
  double momentum = getMomentum().convertToDouble();
  if (!(momentum >= 0.0 && momentum <= 1.0))
    return emitOpError("momentum must be in [0, 1], got ") << momentum;
  if (getInput().getType().getNumElements() / getInput().getType().getDimSize(1) < 2)
    return emitOpError("needs more than one value per channel in training");
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
  return verifyBatchNormOperands(
      *this, getInput(), {getScale(), getBias(), getMean(), getVariance()});
}

int64_t BatchNormOp::getFlops() {
  return 2 * detail::numElements(getInput().getType());
}
