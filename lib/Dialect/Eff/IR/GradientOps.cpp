//===- GradientOps.cpp - backward-only ops: verifiers and costs -----------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

template <typename OpTy>
static LogicalResult verifySoftmaxGrad(OpTy op) {
  int64_t rank = op.getType().getRank();
  if (!normalizeAxis(op.getAxis(), rank))
    return op.emitOpError("axis ") << op.getAxis() << " is out of range ["
                                   << -rank << ", " << rank - 1 << "]";
  return success();
}

LogicalResult SoftmaxGradOp::verify() { return verifySoftmaxGrad(*this); }
LogicalResult LogSoftmaxGradOp::verify() { return verifySoftmaxGrad(*this); }

template <typename OpTy>
static LogicalResult verifyLossGrad(OpTy op) {
  if (op.getInputGrad().getType() != op.getInput().getType())
    return op.emitOpError("input gradient must have the input's type ")
           << op.getInput().getType();
  auto lossGradType = tensorType(op.getLossGrad());
  RankedTensorType input = op.getInput().getType();
  SmallVector<int64_t> perSample = {input.getDimSize(0)};
  llvm::append_range(perSample, input.getShape().drop_front(2));
  bool scalar = lossGradType.getRank() == 0;
  if (op.getReduction() == LossReduction::None
          ? lossGradType.getShape() != ArrayRef<int64_t>(perSample)
          : !scalar)
    return op.emitOpError("loss gradient of shape ")
           << formatShape(lossGradType.getShape())
           << " does not match the reduction";
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  return verifyLossGrad(*this);
}
LogicalResult NllLossGradOp::verify() { return verifyLossGrad(*this); }

LogicalResult LayerNormGradOp::verify() {
  RankedTensorType input = getInput().getType();
  std::optional<int64_t> axis = normalizeAxis(getAxis(), input.getRank());
  if (!axis)
    return emitOpError("axis ") << getAxis() << " is out of range";
  if (getOutputGrad().getType() != input || getInputGrad().getType() != input)
    return emitOpError("output and input gradients must have the input's type");
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*axis);
  for (Value v : {getScaleGrad(), getBiasGrad()})
    if (tensorType(v).getShape() != normalized)
      return emitOpError("scale and bias gradients must have shape ")
             << formatShape(normalized);
  return success();
}

LogicalResult BatchNormTrainGradOp::verify() {
  RankedTensorType input = getInput().getType();
  if (input.getRank() < 2)
    return emitOpError("input must have a channel dimension");
  if (getOutputGrad().getType() != input || getInputGrad().getType() != input)
    return emitOpError("output and input gradients must have the input's type");
  int64_t channels = input.getDimSize(1);
  for (Value v : {getSavedMean(), getSavedRstd(), getScale(), getScaleGrad(),
                  getBiasGrad()})
    if (tensorType(v).getShape() != ArrayRef<int64_t>{channels})
      return emitOpError("per-channel values must have shape [")
             << channels << "]";
  return success();
}

int64_t Conv2DInputGradOp::getFlops() {
  RankedTensorType filter = getFilter().getType();
  return 2 * filter.getDimSize(1) * filter.getDimSize(2) *
         filter.getDimSize(3) * detail::numElements(getOutputGrad().getType());
}

int64_t Conv2DFilterGradOp::getFlops() {
  RankedTensorType filter = getType();
  return 2 * filter.getDimSize(1) * filter.getDimSize(2) *
         filter.getDimSize(3) * detail::numElements(getOutputGrad().getType());
}

/// The forward conv2d's output shape for `input` and `filter` must be the
/// output gradient's shape.
static LogicalResult verifyConvGradShapes(Operation *op, RankedTensorType input,
                                          RankedTensorType filter,
                                          RankedTensorType outputGrad,
                                          ArrayRef<int64_t> strides,
                                          ArrayRef<int64_t> padding,
                                          ArrayRef<int64_t> dilations,
                                          int64_t groups) {
  if (input.getRank() != 4 || filter.getRank() != 4 ||
      outputGrad.getRank() != 4 || strides.size() != 2 ||
      padding.size() != 4 || dilations.size() != 2)
    return op->emitOpError("expects NCHW/OIHW tensors and 2-D windows");
  if (groups < 1 || filter.getDimSize(1) * groups != input.getDimSize(1))
    return op->emitOpError("groups do not match the channels");
  SmallVector<int64_t> expected = {input.getDimSize(0), filter.getDimSize(0)};
  for (int d = 0; d < 2; ++d)
    expected.push_back(windowOutputSize(input.getDimSize(2 + d),
                                        filter.getDimSize(2 + d), strides[d],
                                        padding[d], padding[d + 2],
                                        dilations[d], false));
  if (outputGrad.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError("output gradient has shape ")
           << formatShape(outputGrad.getShape()) << ", the convolution gives "
           << formatShape(expected);
  return success();
}

LogicalResult Conv2DInputGradOp::verify() {
  return verifyConvGradShapes(*this, getType(), getFilter().getType(),
                              getOutputGrad().getType(), getStrides(),
                              getPadding(), getDilations(), getGroups());
}

LogicalResult Conv2DFilterGradOp::verify() {
  return verifyConvGradShapes(*this, getInput().getType(), getType(),
                              getOutputGrad().getType(), getStrides(),
                              getPadding(), getDilations(), getGroups());
}

/// The forward pooling's output shape must be the output gradient's shape.
static LogicalResult verifyPoolGradShapes(Operation *op, RankedTensorType input,
                                          RankedTensorType outputGrad,
                                          ArrayRef<int64_t> kernel,
                                          ArrayRef<int64_t> strides,
                                          ArrayRef<int64_t> padding,
                                          ArrayRef<int64_t> dilations,
                                          bool ceilMode) {
  if (input.getRank() != 4 || outputGrad.getRank() != 4 ||
      kernel.size() != 2 || strides.size() != 2 || padding.size() != 4)
    return op->emitOpError("expects NCHW tensors and 2-D windows");
  SmallVector<int64_t> expected = {input.getDimSize(0), input.getDimSize(1)};
  for (int d = 0; d < 2; ++d)
    expected.push_back(windowOutputSize(
        input.getDimSize(2 + d), kernel[d], strides[d], padding[d],
        padding[d + 2], dilations.empty() ? 1 : dilations[d], ceilMode));
  if (outputGrad.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError("output gradient has shape ")
           << formatShape(outputGrad.getShape()) << ", the pooling gives "
           << formatShape(expected);
  return success();
}

LogicalResult MaxPool2DGradOp::verify() {
  if (getType() != getInput().getType())
    return emitOpError("input gradient must have the input's type");
  return verifyPoolGradShapes(*this, getInput().getType(),
                              getOutputGrad().getType(), getKernelSize(),
                              getStrides(), getPadding(), getDilations(),
                              getCeilMode());
}

LogicalResult AvgPool2DGradOp::verify() {
  return verifyPoolGradShapes(*this, getType(), getOutputGrad().getType(),
                              getKernelSize(), getStrides(), getPadding(), {},
                              getCeilMode());
}

int64_t MaxPool2DGradOp::getFlops() {
  ArrayRef<int64_t> k = getKernelSize();
  return k[0] * k[1] * detail::numElements(getOutputGrad().getType());
}

int64_t AvgPool2DGradOp::getFlops() {
  ArrayRef<int64_t> k = getKernelSize();
  return k[0] * k[1] * detail::numElements(getOutputGrad().getType());
}

LogicalResult GatherGradOp::verify() {
  RankedTensorType data = getType();
  std::optional<int64_t> axis = normalizeAxis(getAxis(), data.getRank());
  if (!axis)
    return emitOpError("axis ") << getAxis() << " is out of range";
  SmallVector<int64_t> expected(data.getShape().take_front(*axis));
  llvm::append_range(expected, getIndices().getType().getShape());
  llvm::append_range(expected, data.getShape().drop_front(*axis + 1));
  if (getOutputGrad().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("output gradient has shape ")
           << formatShape(getOutputGrad().getType().getShape())
           << ", the gather gives " << formatShape(expected);
  return success();
}

LogicalResult SliceGradOp::verify() {
  RankedTensorType input = getType();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(getStarts().size()) != rank ||
      static_cast<int64_t>(getLimits().size()) != rank ||
      static_cast<int64_t>(getStrides().size()) != rank)
    return emitOpError("starts, limits and strides need one entry per dimension");
  for (int64_t d = 0; d < rank; ++d) {
    if (getStrides()[d] == 0)
      return emitOpError("stride of dimension ") << d << " is zero";
    if (sliceLength(getStarts()[d], getLimits()[d], getStrides()[d]) !=
        getOutputGrad().getType().getDimSize(d))
      return emitOpError("output gradient does not match the slice in dimension ")
             << d;
  }
  return success();
}
