//===- ContractionOps.cpp - matmul, linear, convolution, pooling ----------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  RankedTensorType lhs = tensorType(adaptor.getLhs());
  RankedTensorType rhs = tensorType(adaptor.getRhs());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2, got ",
                             lhs.getRank(), " and ", rhs.getRank());
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  if (l.back() != r[r.size() - 2])
    return emitOptionalError(loc, "contracting dimensions differ: ",
                             formatShape(l), " x ", formatShape(r));
  std::optional<SmallVector<int64_t>> batch =
      broadcastShapes(l.drop_back(2), r.drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "batch dimensions of ", formatShape(l),
                             " and ", formatShape(r), " do not broadcast");
  SmallVector<int64_t> shape = *batch;
  shape.push_back(l[l.size() - 2]);
  shape.push_back(r.back());
  types.push_back(lhs.clone(shape));
  return success();
}

LogicalResult MatmulOp::verify() {
  if (getLhs().getType().getElementType() != getRhs().getType().getElementType())
    return emitOpError("operands must have the same element type");
  return success();
}

int64_t MatmulOp::getFlops() {
  int64_t k = getLhs().getType().getShape().back();
  return 2 * k * detail::numElements(getType());
}

//===----------------------------------------------------------------------===//
// linear
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  RankedTensorType a = tensorType(adaptor.getA());
  RankedTensorType b = tensorType(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "operands must have rank 2, got ",
                             a.getRank(), " and ", b.getRank());
  bool ta = adaptor.getTransposeA(), tb = adaptor.getTransposeB();
  int64_t m = a.getDimSize(ta ? 1 : 0), ka = a.getDimSize(ta ? 0 : 1);
  int64_t kb = b.getDimSize(tb ? 1 : 0), n = b.getDimSize(tb ? 0 : 1);
  if (ka != kb)
    return emitOptionalError(loc, "contracting dimensions differ: ", ka,
                             " vs ", kb);
  types.push_back(a.clone({m, n}));
  return success();
}

LogicalResult LinearOp::verify() {
  if (Value bias = getBias()) {
    ArrayRef<int64_t> biasShape = tensorType(bias).getShape();
    if (!isBroadcastableTo(biasShape, getType().getShape()))
      return emitOpError("bias of shape ")
             << formatShape(biasShape) << " does not broadcast to "
             << formatShape(getType().getShape());
  }
  return success();
}

int64_t LinearOp::getFlops() {
  RankedTensorType a = getA().getType();
  int64_t k = a.getDimSize(getTransposeA() ? 0 : 1);
  int64_t out = detail::numElements(getType());
  return 2 * k * out + (getBias() ? out : 0);
}

//===----------------------------------------------------------------------===//
// conv2d and pooling
//===----------------------------------------------------------------------===//

/// Checks the window attributes shared by convolution and pooling.
static LogicalResult checkWindow(std::optional<Location> loc,
                                 RankedTensorType input,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilations) {
  if (input.getRank() != 4)
    return emitOptionalError(loc, "input must be NCHW (rank 4), got rank ",
                             input.getRank());
  if (strides.size() != 2 || dilations.size() != 2 || padding.size() != 4)
    return emitOptionalError(
        loc, "strides and dilations need 2 entries and padding 4 "
             "([top, left, bottom, right])");
  for (int64_t v : strides)
    if (v < 1)
      return emitOptionalError(loc, "strides must be >= 1");
  for (int64_t v : dilations)
    if (v < 1)
      return emitOptionalError(loc, "dilations must be >= 1");
  for (int64_t v : padding)
    if (v < 0)
      return emitOptionalError(loc, "padding must be >= 0");
  return success();
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorType(adaptor.getInput());
  RankedTensorType filter = tensorType(adaptor.getFilter());
  ArrayRef<int64_t> strides = adaptor.getStrides();
  ArrayRef<int64_t> padding = adaptor.getPadding();
  ArrayRef<int64_t> dilations = adaptor.getDilations();
  if (failed(checkWindow(loc, input, strides, padding, dilations)))
    return failure();
  if (filter.getRank() != 4)
    return emitOptionalError(loc, "filter must be OIHW (rank 4)");
  int64_t groups = adaptor.getGroups();
  int64_t channels = input.getDimSize(1);
  if (groups < 1 || channels % groups || filter.getDimSize(0) % groups)
    return emitOptionalError(loc, "groups = ", groups,
                             " must divide the input channels (", channels,
                             ") and the output channels (",
                             filter.getDimSize(0), ")");
  if (filter.getDimSize(1) * groups != channels)
    return emitOptionalError(loc, "filter expects ",
                             filter.getDimSize(1) * groups,
                             " input channels, the input has ", channels);
  SmallVector<int64_t> shape = {input.getDimSize(0), filter.getDimSize(0)};
  for (int d = 0; d < 2; ++d)
    shape.push_back(windowOutputSize(input.getDimSize(2 + d),
                                     filter.getDimSize(2 + d), strides[d],
                                     padding[d], padding[d + 2], dilations[d],
                                     /*ceilMode=*/false));
  types.push_back(input.clone(shape));
  return success();
}

LogicalResult Conv2DOp::verify() {
  if (Value bias = getBias()) {
    RankedTensorType biasType = tensorType(bias);
    if (biasType.getRank() != 1 ||
        biasType.getDimSize(0) != getFilter().getType().getDimSize(0))
      return emitOpError("bias must have shape [")
             << getFilter().getType().getDimSize(0) << "], got "
             << formatShape(biasType.getShape());
  }
  return success();
}

int64_t Conv2DOp::getFlops() {
  RankedTensorType filter = getFilter().getType();
  int64_t macsPerOutput =
      filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3);
  int64_t out = detail::numElements(getType());
  return 2 * macsPerOutput * out + (getBias() ? out : 0);
}

static LogicalResult inferPoolType(std::optional<Location> loc,
                                   RankedTensorType input,
                                   ArrayRef<int64_t> kernel,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> padding,
                                   ArrayRef<int64_t> dilations, bool ceilMode,
                                   SmallVectorImpl<Type> &types) {
  if (failed(checkWindow(loc, input, strides, padding, dilations)))
    return failure();
  if (kernel.size() != 2 || kernel[0] < 1 || kernel[1] < 1)
    return emitOptionalError(loc, "kernel_size needs 2 entries >= 1");
  SmallVector<int64_t> shape = {input.getDimSize(0), input.getDimSize(1)};
  for (int d = 0; d < 2; ++d)
    shape.push_back(windowOutputSize(input.getDimSize(2 + d), kernel[d],
                                     strides[d], padding[d], padding[d + 2],
                                     dilations[d], ceilMode));
  types.push_back(input.clone(shape));
  return success();
}

LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferPoolType(loc, tensorType(adaptor.getInput()),
                       adaptor.getKernelSize(), adaptor.getStrides(),
                       adaptor.getPadding(), adaptor.getDilations(),
                       adaptor.getCeilMode(), types);
}

LogicalResult AvgPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  int64_t unitDilations[] = {1, 1};
  return inferPoolType(loc, tensorType(adaptor.getInput()),
                       adaptor.getKernelSize(), adaptor.getStrides(),
                       adaptor.getPadding(), unitDilations,
                       adaptor.getCeilMode(), types);
}

LogicalResult MaxPool2DOp::verify() { return success(); }
LogicalResult AvgPool2DOp::verify() { return success(); }

int64_t MaxPool2DOp::getFlops() {
  ArrayRef<int64_t> k = getKernelSize();
  return k[0] * k[1] * detail::numElements(getType());
}

int64_t AvgPool2DOp::getFlops() {
  ArrayRef<int64_t> k = getKernelSize();
  return (k[0] * k[1] + 1) * detail::numElements(getType());
}
