//===- ContractionOps.cpp - matmul, linear, convolution, pooling ----------===//

#include "OpUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace effopt::eff;

/// The ranked types of two operands that must share an element type.
static LogicalResult getOperandPair(const RuleDiagnoser &emitError, Value lhs,
                                    StringRef lhsName, Value rhs,
                                    StringRef rhsName,
                                    RankedTensorType &lhsType,
                                    RankedTensorType &rhsType) {
  FailureOr<RankedTensorType> l = getRankedType(emitError, lhs, lhsName);
  if (failed(l))
    return failure();
  FailureOr<RankedTensorType> r = getRankedType(emitError, rhs, rhsName);
  if (failed(r))
    return failure();
  if (l->getElementType() != r->getElementType())
    return emitError(lhsName, " and ", rhsName,
                     " must have the same element type, got ",
                     l->getElementType(), " and ", r->getElementType());
  lhsType = *l;
  rhsType = *r;
  return success();
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

/// Type rule of `eff.matmul`.
static LogicalResult inferMatmulType(const RuleDiagnoser &emitError,
                                    MatmulOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  RankedTensorType lhs, rhs;
  if (failed(getOperandPair(emitError, adaptor.getLhs(), "lhs",
                            adaptor.getRhs(), "rhs", lhs, rhs)))
    return failure();
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitError("operands must have rank >= 2, got ", lhs.getRank(),
                     " and ", rhs.getRank());
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  if (l.back() != r[r.size() - 2])
    return emitError("contracting dimensions differ: ", formatShape(l), " x ",
                     formatShape(r), " multiplies K = ", l.back(), " by K = ",
                     r[r.size() - 2]);
  std::optional<SmallVector<int64_t>> batch =
      broadcastShapes(l.drop_back(2), r.drop_back(2));
  if (!batch)
    return emitError("batch dimensions of ", formatShape(l), " and ",
                     formatShape(r), " do not broadcast");
  SmallVector<int64_t> shape = *batch;
  shape.push_back(l[l.size() - 2]);
  shape.push_back(r.back());
  types.push_back(lhs.clone(shape));
  return success();
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferMatmulType(loc, adaptor, types);
}

LogicalResult MatmulOp::verify() {
  return verifyTypeRule(*this, inferMatmulType);
}

int64_t MatmulOp::getFlops() {
  int64_t k = getLhs().getType().getShape().back();
  return 2 * k * detail::numElements(getType());
}

//===----------------------------------------------------------------------===//
// linear
//===----------------------------------------------------------------------===//

/// Type rule of `eff.linear`.
static LogicalResult inferLinearType(const RuleDiagnoser &emitError,
                                    LinearOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  RankedTensorType a, b;
  if (failed(getOperandPair(emitError, adaptor.getA(), "a", adaptor.getB(),
                            "b", a, b)))
    return failure();
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitError("operands must have rank 2, got ", a.getRank(), " and ",
                     b.getRank());
  bool ta = adaptor.getTransposeA(), tb = adaptor.getTransposeB();
  int64_t m = a.getDimSize(ta ? 1 : 0), ka = a.getDimSize(ta ? 0 : 1);
  int64_t kb = b.getDimSize(tb ? 1 : 0), n = b.getDimSize(tb ? 0 : 1);
  if (ka != kb)
    return emitError("contracting dimensions differ: op(a) is ",
                     formatShape({m, ka}), " and op(b) is ",
                     formatShape({kb, n}));
  Type resultElement = a.getElementType();
  if (Value bias = adaptor.getBias()) {
    FailureOr<RankedTensorType> biasType =
        getRankedType(emitError, bias, "bias");
    if (failed(biasType))
      return failure();
    if (!isBroadcastableTo(biasType->getShape(), {m, n}))
      return emitError("bias of shape ", formatShape(biasType->getShape()),
                       " does not broadcast to ", formatShape({m, n}));
    // A half-precision product added to an f32 bias accumulates into it
    // and stays f32 (a GEMM with an f32 C): partial products summed
    // without rounding each (eff-chunk-cross-entropy's weight gradient).
    Type biasElement = biasType->getElementType();
    if (biasElement.isF32() &&
        (resultElement.isF16() || resultElement.isBF16()))
      resultElement = biasElement;
  }
  types.push_back(RankedTensorType::get({m, n}, resultElement));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferLinearType(loc, adaptor, types);
}

LogicalResult LinearOp::verify() {
  return verifyTypeRule(*this, inferLinearType);
}

int64_t LinearOp::getFlops() {
  RankedTensorType a = getA().getType();
  int64_t k = a.getDimSize(getTransposeA() ? 0 : 1);
  int64_t out = detail::numElements(getType());
  // Multiply-adds, then scaling by alpha, adding the bias and scaling it by
  // beta, each only where it is not the identity.
  int64_t flops = 2 * k * out;
  if (getAlpha().convertToDouble() != 1.0)
    flops += out;
  if (getBias()) {
    flops += out;
    if (getBeta().convertToDouble() != 1.0)
      flops += out;
  }
  return flops;
}

//===----------------------------------------------------------------------===//
// conv2d and pooling
//===----------------------------------------------------------------------===//

/// Checks the window attributes shared by convolution and pooling.
static LogicalResult checkWindow(const RuleDiagnoser &emitError,
                                 RankedTensorType input,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilations) {
  if (input.getRank() != 4)
    return emitError("input must be NCHW (rank 4), got rank ",
                     input.getRank());
  if (strides.size() != 2)
    return emitError("strides need 2 entries, got ", strides.size());
  if (dilations.size() != 2)
    return emitError("dilations need 2 entries, got ", dilations.size());
  if (padding.size() != 4)
    return emitError(
        "padding needs 4 entries ([top, left, bottom, right]), got ",
        padding.size());
  if (llvm::any_of(strides, [](int64_t v) { return v < 1; }))
    return emitError("strides must be >= 1, got ", formatShape(strides));
  if (llvm::any_of(dilations, [](int64_t v) { return v < 1; }))
    return emitError("dilations must be >= 1, got ", formatShape(dilations));
  if (llvm::any_of(padding, [](int64_t v) { return v < 0; }))
    return emitError("padding must be >= 0, got ", formatShape(padding));
  return success();
}

/// Appends the output height and width of a window slid over the input's
/// last two dimensions, or diagnoses a window larger than the padded input.
static LogicalResult inferWindowOutput(const RuleDiagnoser &emitError,
                                       RankedTensorType input,
                                       ArrayRef<int64_t> kernel,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> padding,
                                       ArrayRef<int64_t> dilations,
                                       bool ceilMode,
                                       SmallVectorImpl<int64_t> &shape) {
  for (int d = 0; d < 2; ++d) {
    const char *axis = d == 0 ? "H" : "W";
    std::optional<int64_t> padded =
        llvm::checkedAdd(input.getDimSize(2 + d), padding[d]);
    if (padded)
      padded = llvm::checkedAdd(*padded, padding[d + 2]);
    std::optional<int64_t> window =
        llvm::checkedMul(dilations[d], kernel[d] - 1);
    if (window)
      window = llvm::checkedAdd(*window, int64_t(1));
    if (!padded || !window)
      return emitError("the window or the padding overflows along ", axis);
    if (*window > *padded)
      return emitError("the window of size ", *window,
                       " is larger than the padded input (", *padded,
                       ") along ", axis);
    shape.push_back(windowOutputSize(input.getDimSize(2 + d), kernel[d],
                                     strides[d], padding[d], padding[d + 2],
                                     dilations[d], ceilMode));
  }
  return success();
}

/// Type rule of `eff.conv2d`.
static LogicalResult inferConv2DType(const RuleDiagnoser &emitError,
                                    Conv2DOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  RankedTensorType input, filter;
  if (failed(getOperandPair(emitError, adaptor.getInput(), "input",
                            adaptor.getFilter(), "filter", input, filter)))
    return failure();
  ArrayRef<int64_t> strides = adaptor.getStrides();
  ArrayRef<int64_t> padding = adaptor.getPadding();
  ArrayRef<int64_t> dilations = adaptor.getDilations();
  if (failed(checkWindow(emitError, input, strides, padding, dilations)))
    return failure();
  if (filter.getRank() != 4)
    return emitError("filter must be OIHW (rank 4), got rank ",
                     filter.getRank());
  int64_t groups = adaptor.getGroups();
  int64_t channels = input.getDimSize(1);
  int64_t outChannels = filter.getDimSize(0);
  if (groups < 1 || channels % groups || outChannels % groups)
    return emitError("groups = ", groups, " must divide the input channels (",
                     channels, ") and the output channels (", outChannels,
                     ")");
  if (filter.getDimSize(1) * groups != channels)
    return emitError("filter expects ", filter.getDimSize(1) * groups,
                     " input channels (", filter.getDimSize(1),
                     " per group x ", groups, " groups), the input has ",
                     channels);
  if (Value bias = adaptor.getBias()) {
    FailureOr<RankedTensorType> biasType =
        getRankedType(emitError, bias, "bias");
    if (failed(biasType))
      return failure();
    if (biasType->getShape() != ArrayRef<int64_t>{outChannels})
      return emitError("bias must have shape [", outChannels,
                       "] (one per output channel), got ",
                       formatShape(biasType->getShape()));
  }
  SmallVector<int64_t> shape = {input.getDimSize(0), outChannels};
  if (failed(inferWindowOutput(emitError, input,
                               filter.getShape().drop_front(2), strides,
                               padding, dilations, /*ceilMode=*/false, shape)))
    return failure();
  types.push_back(input.clone(shape));
  return success();
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferConv2DType(loc, adaptor, types);
}

LogicalResult Conv2DOp::verify() {
  return verifyTypeRule(*this, inferConv2DType);
}

int64_t Conv2DOp::getFlops() {
  RankedTensorType filter = getFilter().getType();
  // Each output sums C/groups x KH x KW products.
  int64_t macsPerOutput =
      filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3);
  int64_t out = detail::numElements(getType());
  return 2 * macsPerOutput * out + (getBias() ? out : 0);
}

/// Type rule shared by the pooling ops.
static LogicalResult inferPoolType(const RuleDiagnoser &emitError,
                                   Value inputValue, ArrayRef<int64_t> kernel,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> padding,
                                   ArrayRef<int64_t> dilations, bool ceilMode,
                                   SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input =
      getRankedType(emitError, inputValue, "input");
  if (failed(input))
    return failure();
  if (failed(checkWindow(emitError, *input, strides, padding, dilations)))
    return failure();
  if (kernel.size() != 2)
    return emitError("kernel_size needs 2 entries, got ", kernel.size());
  if (kernel[0] < 1 || kernel[1] < 1)
    return emitError("kernel_size must be >= 1, got ", formatShape(kernel));
  SmallVector<int64_t> shape = {input->getDimSize(0), input->getDimSize(1)};
  if (failed(inferWindowOutput(emitError, *input, kernel, strides, padding,
                               dilations, ceilMode, shape)))
    return failure();
  types.push_back(input->clone(shape));
  return success();
}

static LogicalResult inferMaxPoolType(const RuleDiagnoser &emitError,
                                      MaxPool2DOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  return inferPoolType(emitError, adaptor.getInput(), adaptor.getKernelSize(),
                       adaptor.getStrides(), adaptor.getPadding(),
                       adaptor.getDilations(), adaptor.getCeilMode(), types);
}

static LogicalResult inferAvgPoolType(const RuleDiagnoser &emitError,
                                      AvgPool2DOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  int64_t unitDilations[] = {1, 1};
  return inferPoolType(emitError, adaptor.getInput(), adaptor.getKernelSize(),
                       adaptor.getStrides(), adaptor.getPadding(),
                       unitDilations, adaptor.getCeilMode(), types);
}

LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferMaxPoolType(loc, adaptor, types);
}

LogicalResult AvgPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferAvgPoolType(loc, adaptor, types);
}

LogicalResult MaxPool2DOp::verify() {
  return verifyTypeRule(*this, inferMaxPoolType);
}

LogicalResult AvgPool2DOp::verify() {
  return verifyTypeRule(*this, inferAvgPoolType);
}

int64_t MaxPool2DOp::getFlops() {
  // One comparison per window element.
  ArrayRef<int64_t> k = getKernelSize();
  return k[0] * k[1] * detail::numElements(getType());
}

int64_t AvgPool2DOp::getFlops() {
  // One addition per window element, then one division.
  ArrayRef<int64_t> k = getKernelSize();
  return (k[0] * k[1] + 1) * detail::numElements(getType());
}
