//===- LowerConvolution.cpp - convolution and pooling ---------------------===//
//
// Convolutions work on an explicitly padded input (fill + insert_slice).
// Ungrouped ones are im2col + GEMM: one copying linalg.generic gathers the
// windows into columns [N, C*KH*KW, OH*OW] (a temporary the memory planner
// places in the arena like any other) and a linalg.batch_matmul with the
// filter [F, C*KH*KW] broadcast over the batch computes the output, which
// eff-linalg-to-blas hands to the BLAS. Grouped convolutions view the
// channels as [G, C/G] and use linalg's grouped named op (loops); poolings
// use the named NCHW pooling ops.
//
// The input-side gradients (conv2d_input_grad, avg_pool2d_grad) are the
// transposed window ops written as stride-1 forward ones: the output
// gradient is spread with (stride - 1) zeros between elements into a
// zero tensor whose margins stand for the window overhang, and a stride-1
// convolution with the flipped, channel-swapped filter (a sum pooling for
// the average) produces exactly the unpadded input gradient. Rows and
// columns of the input that no window reaches get zeros, as in PyTorch.
//
// The filter gradient of an ungrouped convolution is a
// linalg.batch_reduce_matmul of dy [N, F, OH*OW] with the transposed
// columns of the input (a GEMM per sample accumulated in sample order); a
// grouped one is one linalg.generic reducing over the batch and the output
// positions (the batch loop outermost, so one sample's data stays in
// cache). max_pool2d_grad finds each window's first maximum (PyTorch's tie
// and NaN rule; padded positions never win) into an index tensor, then
// gathers, for every input element, the output gradients of the windows
// that picked it, in PyTorch's accumulation order.
//
// f16/bf16 convolutions, sum poolings and gradient sums accumulate in f32
// and round once (computeType): im2col writes f32 columns, the filter is
// widened, the GEMM is an f32 one.
//
// With `convolution=library` (policy.libraryConvolutions), f32 conv2d,
// conv2d_input_grad and conv2d_filter_grad, grouped and depthwise ones
// included, are instead one call each of the runtime's oneDNN kernels
// (effrt_conv2d_{fwd,bwd_data,bwd_weights}_f32, runtime/src/cpu/
// Convolution.cpp) on the unpadded operands, with a workspace buffer (for
// oneDNN's scratchpad and blocked copies of the operands) whose size the
// same runtime code reports at compile time, so the memory plan holds it.
// 1x1 stride-1 unpadded convolutions stay GEMMs (im2col needs no columns
// there, and the BLAS beats oneDNN's reorders plus kernel); a convolution
// oneDNN cannot run, or of another type, keeps the lowering above too.
//
// With `convolution=cudnn` (target cuda, policy.cudnnConvolutions) every
// convolution and gradient whose tensors share one f32, f16 or bf16 type
// is one call of the CUDA runtime's cuDNN convolutions
// (effrt_cuda_conv2d_*, runtime/src/cuda/Convolution.cpp) on the unpadded
// tensors, 1x1 ones included (cuDNN has no blocked layouts to reorder
// into); the bias is an elementwise add after the call.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Support/CudaTypeCode.h"
#include "effrt/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <optional>

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {

#ifdef EFFOPT_HAVE_ONEDNN
constexpr StringLiteral kConvForward = "effrt_conv2d_fwd_f32";
constexpr StringLiteral kConvBackwardData = "effrt_conv2d_bwd_data_f32";
constexpr StringLiteral kConvBackwardWeights = "effrt_conv2d_bwd_weights_f32";
#endif

/// The shape arguments of the effrt_conv2d_* calls (EFFRT_CONV2D_SHAPE_ARGS)
/// for input `x`, filter `w` and output `y`.
SmallVector<int64_t> libraryShape(RankedTensorType x, RankedTensorType w,
                                  RankedTensorType y, ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> padding,
                                  ArrayRef<int64_t> dilations, int64_t groups) {
  SmallVector<int64_t> shape{x.getDimSize(0), x.getDimSize(1),
                             x.getDimSize(2), x.getDimSize(3),
                             w.getDimSize(0), w.getDimSize(2),
                             w.getDimSize(3), y.getDimSize(2),
                             y.getDimSize(3), strides[0],
                             strides[1]};
  shape.push_back(dilations.empty() ? 1 : dilations[0]);
  shape.push_back(dilations.empty() ? 1 : dilations[1]);
  llvm::append_range(shape, padding);
  shape.push_back(groups);
  return shape;
}

/// Replaces `op` by one call of the runtime's oneDNN convolution `kind`
/// (EFFRT_CONV2D_*) reading `inputs` (a null bias is passed as a null
/// pointer) and writing a fresh `resultType` buffer, when the policy asks
/// for library convolutions, every tensor is f32 and oneDNN runs the shape.
LogicalResult lowerToLibrary(PatternRewriter &rewriter, Operation *op,
                             const LoweringPolicy &policy, int32_t kind,
                             ArrayRef<Value> inputs, bool hasBias,
                             RankedTensorType resultType,
                             ArrayRef<int64_t> shape) {
  if (!policy.libraryConvolutions)
    return failure();
  if (!resultType.getElementType().isF32() ||
      llvm::any_of(inputs, [](Value v) {
        return v && !tensorType(v).getElementType().isF32();
      }))
    return rewriter.notifyMatchFailure(op, "library convolutions are f32");
  assert(shape.size() == 18 && "EFFRT_CONV2D_SHAPE_ARGS has 18 values");
  const int64_t *s = shape.data();
  // A 1x1 stride-1 unpadded convolution (and each of its gradients) is one
  // GEMM on the tensors as they are, with no columns to build: the BLAS
  // runs it faster than oneDNN's reorders to and from blocked layouts plus
  // its kernel (bench/conv.py: 0.27 vs 0.37 ms for MobileNet's pointwise
  // shapes).
  if (s[5] == 1 && s[6] == 1 && s[9] == 1 && s[10] == 1 && s[13] == 0 &&
      s[14] == 0 && s[15] == 0 && s[16] == 0 && s[17] == 1)
    return rewriter.notifyMatchFailure(op, "a 1x1 stride-1 convolution is a "
                                           "plain GEMM");
#ifdef EFFOPT_HAVE_ONEDNN
  int64_t workspace = effrt_conv2d_workspace_bytes(
      kind, hasBias, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8],
      s[9], s[10], s[11], s[12], s[13], s[14], s[15], s[16], s[17],
      /*threads=*/0);
  if (workspace < 0)
    return rewriter.notifyMatchFailure(op, "oneDNN has no such convolution");
  Location loc = op->getLoc();
  RuntimeCall call(rewriter, loc);
  for (Value input : inputs) {
    if (input)
      call.addInput(input);
    else
      call.addNull();
  }
  Value result = call.addOutput(resultType);
  for (int64_t v : shape)
    call.addI64(v);
  // At least one byte: a zero-sized buffer has no address of its own.
  call.addWorkspace(RankedTensorType::get({std::max<int64_t>(workspace, 1)},
                                          rewriter.getI8Type()));
  call.addI64(workspace);
  StringRef name = kind == EFFRT_CONV2D_FWD        ? kConvForward
                   : kind == EFFRT_CONV2D_BWD_DATA ? kConvBackwardData
                                                   : kConvBackwardWeights;
  call.call(op->getParentOfType<ModuleOp>(), name);
  rewriter.replaceOp(op, call.asTensor(result, resultType));
  return success();
#else
  // The pass refuses convolution=library in a build without oneDNN.
  (void)kind;
  (void)hasBias;
  (void)s;
  return failure();
#endif
}

constexpr StringLiteral kCudnnForward = "effrt_cuda_conv2d_fwd";
constexpr StringLiteral kCudnnBackwardData = "effrt_cuda_conv2d_bwd_data";
constexpr StringLiteral kCudnnBackwardWeights =
    "effrt_cuda_conv2d_bwd_weights";

/// Replaces `op` by one call of the CUDA runtime's cuDNN convolution `kind`
/// (effrt_cuda_conv2d_*) reading `inputs` and writing a fresh `resultType`
/// buffer, then adds `bias` (if any) per output channel, when the policy
/// asks for cuDNN convolutions and every tensor has the same f32, f16 or
/// bf16 element type. cuDNN's workspace is the device's library
/// workspace (in the plan already), so the call adds no buffer.
LogicalResult lowerToCudnn(PatternRewriter &rewriter, Operation *op,
                           const LoweringPolicy &policy, int32_t kind,
                           ArrayRef<Value> inputs, Value bias,
                           RankedTensorType resultType,
                           ArrayRef<int64_t> shape) {
  if (!policy.cudnnConvolutions)
    return failure();
  Type element = resultType.getElementType();
  std::optional<int32_t> code = cudaTypeCode(element);
  if (!code || llvm::any_of(inputs, [&](Value v) {
        return tensorType(v).getElementType() != element;
      }) || (bias && tensorType(bias).getElementType() != element))
    return rewriter.notifyMatchFailure(
        op, "cuDNN convolutions take tensors of one f32, f16 or bf16 type");
  assert(shape.size() == 18 && "EFFRT_CONV2D_SHAPE_ARGS has 18 values");
  Location loc = op->getLoc();
  RuntimeCall call(rewriter, loc);
  for (Value input : inputs)
    call.addInput(input);
  Value result = call.addOutput(resultType);
  for (int64_t v : shape)
    call.addI64(v);
  call.addI32(*code);
  StringRef name = kind == EFFRT_CONV2D_FWD        ? kCudnnForward
                   : kind == EFFRT_CONV2D_BWD_DATA ? kCudnnBackwardData
                                                   : kCudnnBackwardWeights;
  call.call(op->getParentOfType<ModuleOp>(), name);
  Value conv = call.asTensor(result, resultType);
  if (bias) {
    int64_t f = resultType.getDimSize(1);
    Value column = reshapeTo(rewriter, loc, bias,
                             RankedTensorType::get({f, 1, 1}, element));
    conv = buildElementwise(rewriter, loc, resultType, {conv, column},
                            [](OpBuilder &b, Location l, ValueRange args) {
                              return arith::AddFOp::create(b, l, args[0],
                                                           args[1])
                                  .getResult();
                            });
  }
  rewriter.replaceOp(op, conv);
  return success();
}

/// The attributes of a named window op.
SmallVector<NamedAttribute> windowAttrs(OpBuilder &b, ArrayRef<int64_t> strides,
                                        ArrayRef<int64_t> dilations) {
  return {b.getNamedAttr("strides", b.getI64TensorAttr(strides)),
          b.getNamedAttr("dilations", b.getI64TensorAttr(dilations))};
}

/// One spatial dimension of a window op.
struct Axis {
  int64_t size;   // unpadded input extent
  int64_t kernel; // window extent in taps
  int64_t stride, dilation;
  int64_t padBegin, padEnd;
  int64_t output; // number of windows (the output extent)

  /// Padding beyond `padEnd` that the last window reaches (ceil_mode).
  int64_t overhang() const {
    int64_t reach = (output - 1) * stride + (kernel - 1) * dilation + 1;
    return std::max<int64_t>(0, reach - (size + padBegin + padEnd));
  }
};

std::array<Axis, 2> axesOf(RankedTensorType input, RankedTensorType output,
                           ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> padding,
                           ArrayRef<int64_t> dilations) {
  std::array<Axis, 2> axes;
  for (int d = 0; d < 2; ++d)
    axes[d] = {input.getDimSize(2 + d),
               kernel[d],
               strides[d],
               dilations.empty() ? 1 : dilations[d],
               padding[d],
               padding[d + 2],
               output.getDimSize(2 + d)};
  return axes;
}

/// Negative padding (cropping) is the importer's business; the ops' type
/// rules reject it on the forward ops but not on the gradients.
LogicalResult checkPadding(Operation *op, ArrayRef<int64_t> padding) {
  if (llvm::any_of(padding, [](int64_t p) { return p < 0; }))
    return op->emitOpError("with negative padding is not lowered");
  return success();
}

/// `x` [N, C, H, W] in a tensor filled with `padValue`, placed after
/// `padBegin` rows/columns and followed by `padEnd` plus the windows'
/// overhang.
Value padSpatial(OpBuilder &b, Location loc, Value x,
                 const std::array<Axis, 2> &axes, Value padValue) {
  auto type = tensorType(x);
  SmallVector<int64_t> shape(type.getShape());
  SmallVector<int64_t> offsets{0, 0};
  bool any = false;
  for (int d = 0; d < 2; ++d) {
    const Axis &a = axes[d];
    int64_t extra = a.padBegin + a.padEnd + a.overhang();
    shape[2 + d] += extra;
    offsets.push_back(a.padBegin);
    any |= extra != 0;
  }
  if (!any)
    return x;
  Value filled = buildFill(b, loc, type.clone(shape), padValue);
  return tensor::InsertSliceOp::create(
      b, loc, x, filled, indexAttrs(b, offsets), indexAttrs(b, type.getShape()),
      indexAttrs(b, {1, 1, 1, 1}));
}

/// The taps of one kernel axis that some window puts on a real input
/// element, [first, last], and the padding that leaves the same windows
/// once the filter is cropped to them; nothing when every tap is used (or
/// none is, or cropping would need negative padding under dilation).
struct TapCrop {
  int64_t first, last, padBegin, padEnd;
};

std::optional<TapCrop> cropTaps(const Axis &a) {
  int64_t first = a.kernel, last = -1;
  for (int64_t k = 0; k < a.kernel; ++k)
    for (int64_t o = 0; o < a.output; ++o) {
      int64_t at = o * a.stride - a.padBegin + k * a.dilation;
      if (at >= 0 && at < a.size) {
        first = std::min(first, k);
        last = std::max(last, k);
        break;
      }
    }
  if (last < first || (first == 0 && last == a.kernel - 1))
    return std::nullopt;
  TapCrop crop{first, last, a.padBegin - first * a.dilation,
               a.padEnd - (a.kernel - 1 - last) * a.dilation};
  if (crop.padBegin < 0 || crop.padEnd < 0)
    return std::nullopt;
  return crop;
}

/// A convolution's crop: the taps used along each spatial axis and the
/// padding [top, left, bottom, right] of the cropped convolution.
struct FilterCrop {
  std::array<TapCrop, 2> axes;
  SmallVector<int64_t> padding;

  SmallVector<int64_t> offsets() const {
    return {0, 0, axes[0].first, axes[1].first};
  }
  SmallVector<int64_t> shape(RankedTensorType filter) const {
    return {filter.getDimSize(0), filter.getDimSize(1),
            axes[0].last - axes[0].first + 1,
            axes[1].last - axes[1].first + 1};
  }
};

/// The crop of a convolution with unpadded input `input`, output `output`
/// and filter `filter`, when some rows or columns of taps only ever meet
/// padding (a 3x3 convolution padded by 1 over a 1x1 image uses its centre
/// tap only; ImageNet networks run on CIFAR-sized images end that way).
std::optional<FilterCrop> cropOf(RankedTensorType input,
                                 RankedTensorType output,
                                 RankedTensorType filter,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilations) {
  if (!input.hasStaticShape() || !output.hasStaticShape() ||
      !filter.hasStaticShape() || llvm::any_of(padding, [](int64_t p) {
        return p < 0;
      }))
    return std::nullopt;
  auto axes = axesOf(input, output, filter.getShape().drop_front(2), strides,
                     padding, dilations);
  FilterCrop crop;
  bool any = false;
  for (int d = 0; d < 2; ++d) {
    const Axis &a = axes[d];
    std::optional<TapCrop> c = cropTaps(a);
    any |= c.has_value();
    crop.axes[d] = c.value_or(TapCrop{0, a.kernel - 1, a.padBegin, a.padEnd});
  }
  if (!any)
    return std::nullopt;
  crop.padding = {crop.axes[0].padBegin, crop.axes[1].padBegin,
                  crop.axes[0].padEnd, crop.axes[1].padEnd};
  return crop;
}

/// The used taps of `filter`, as a dense tensor of their own (the library
/// calls and the GEMM read a filter as one contiguous array), for the op
/// `user`. Gathering them reads every cache line of the filter, so the
/// forward's copy, when it is earlier in the same block, serves the input
/// gradient too.
Value cropFilter(OpBuilder &b, Operation *user, Value filter,
                 const FilterCrop &crop) {
  Location loc = user->getLoc();
  auto type = tensorType(filter);
  SmallVector<int64_t> shape = crop.shape(type);
  SmallVector<int64_t> offsets = crop.offsets();
  for (Operation *other : filter.getUsers()) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(other);
    if (!slice || slice->getBlock() != user->getBlock() ||
        !slice->isBeforeInBlock(user) || !slice->hasOneUse() ||
        slice.getStaticOffsets() != ArrayRef<int64_t>(offsets) ||
        slice.getStaticSizes() != ArrayRef<int64_t>(shape))
      continue;
    auto copy = dyn_cast<linalg::CopyOp>(*slice->getUsers().begin());
    if (copy && copy->getBlock() == user->getBlock() &&
        copy->isBeforeInBlock(user))
      return copy.getResult(0);
  }
  auto croppedType = type.clone(shape);
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, croppedType, filter, indexAttrs(b, offsets),
      indexAttrs(b, shape), indexAttrs(b, {1, 1, 1, 1}));
  Value dense = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  return linalg::CopyOp::create(b, loc, slice, dense).getResult(0);
}

/// A convolution, or one of its gradients, with taps that only ever meet
/// padding becomes the same op on the cropped filter (its filter gradient
/// placed in zeros): the same sums without the products by padding, and
/// without moving the unused taps in and out of the library's blocked
/// layouts. The cropped op uses every tap, so this does not apply again.
struct CropConv2D : OpRewritePattern<Conv2DOp> {
  CropConv2D(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {
    setHasBoundedRewriteRecursion();
  }
  LogicalResult matchAndRewrite(Conv2DOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<FilterCrop> crop = cropOf(
        tensorType(op.getInput()), tensorType(op.getResult()),
        tensorType(op.getFilter()), op.getStrides(), op.getPadding(),
        op.getDilations());
    if (!crop)
      return rewriter.notifyMatchFailure(op, "every tap meets the input");
    Value filter = cropFilter(rewriter, op, op.getFilter(), *crop);
    rewriter.replaceOpWithNewOp<Conv2DOp>(
        op, op.getInput(), filter, op.getBias(), op.getStrides(),
        crop->padding, op.getDilations(), op.getGroups());
    return success();
  }
};

struct CropConv2DInputGrad : OpRewritePattern<Conv2DInputGradOp> {
  CropConv2DInputGrad(MLIRContext *ctx)
      : OpRewritePattern(ctx, /*benefit=*/2) {
    setHasBoundedRewriteRecursion();
  }
  LogicalResult matchAndRewrite(Conv2DInputGradOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<FilterCrop> crop = cropOf(
        tensorType(op.getResult()), tensorType(op.getOutputGrad()),
        tensorType(op.getFilter()), op.getStrides(), op.getPadding(),
        op.getDilations());
    if (!crop)
      return rewriter.notifyMatchFailure(op, "every tap meets the input");
    Value filter = cropFilter(rewriter, op, op.getFilter(), *crop);
    rewriter.replaceOpWithNewOp<Conv2DInputGradOp>(
        op, op.getResult().getType(), op.getOutputGrad(), filter,
        op.getStrides(), crop->padding, op.getDilations(), op.getGroups());
    return success();
  }
};

struct CropConv2DFilterGrad : OpRewritePattern<Conv2DFilterGradOp> {
  CropConv2DFilterGrad(MLIRContext *ctx)
      : OpRewritePattern(ctx, /*benefit=*/2) {
    setHasBoundedRewriteRecursion();
  }
  LogicalResult matchAndRewrite(Conv2DFilterGradOp op,
                                PatternRewriter &rewriter) const override {
    auto type = tensorType(op.getResult());
    std::optional<FilterCrop> crop =
        cropOf(tensorType(op.getInput()), tensorType(op.getOutputGrad()), type,
               op.getStrides(), op.getPadding(), op.getDilations());
    if (!crop)
      return rewriter.notifyMatchFailure(op, "every tap meets the input");
    Location loc = op.getLoc();
    SmallVector<int64_t> shape = crop->shape(type);
    Value grad = Conv2DFilterGradOp::create(
        rewriter, loc, type.clone(shape), op.getInput(), op.getOutputGrad(),
        op.getStrides(), crop->padding, op.getDilations(), op.getGroups());
    // The unused taps' gradient is exactly zero.
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, grad, zeros(rewriter, loc, type), indexAttrs(rewriter, crop->offsets()),
        indexAttrs(rewriter, shape), indexAttrs(rewriter, {1, 1, 1, 1}));
    return success();
  }
};

/// A pointwise convolution (f32, ungrouped, 1x1 filter, stride 1, no
/// padding) over small maps is a product over channels whose columns are
/// every sample's positions: with the activations as [C, N*P] (P = H*W),
/// one GEMM, where im2col's product per sample is a [F, C] x [C, P]
/// product packing the whole filter again for every sample (at P = 1 a
/// matrix-vector product). Returns P when that pays: the two activation
/// transposes move (C + F) * N * P values, the per-sample products pack
/// F * C per sample and run at the speed of their narrow P columns. At
/// P = 1 (what cropping leaves of a padded convolution over 1x1 maps) the
/// transposes are reshapes.
std::optional<int64_t> pointwisePositions(Value input, Value filter,
                                          Value output,
                                          ArrayRef<int64_t> strides,
                                          ArrayRef<int64_t> padding,
                                          int64_t groups) {
  auto x = tensorType(input), w = tensorType(filter), y = tensorType(output);
  if (groups != 1 || !x.hasStaticShape() || !w.hasStaticShape() ||
      !y.hasStaticShape() || !x.getElementType().isF32() ||
      !w.getElementType().isF32() || !y.getElementType().isF32() ||
      w.getDimSize(2) != 1 || w.getDimSize(3) != 1 ||
      llvm::any_of(strides, [](int64_t s) { return s != 1; }) ||
      llvm::any_of(padding, [](int64_t p) { return p != 0; }))
    return std::nullopt;
  int64_t p = x.getDimSize(2) * x.getDimSize(3);
  int64_t c = w.getDimSize(1), f = w.getDimSize(0);
  if (p == 1 || (x.getDimSize(0) > 1 && p < 64 && 2 * p * (c + f) <= c * f))
    return p;
  return std::nullopt;
}

/// [A, B, H, W] as the matrix [A, B] (H = W = 1), or transposed and
/// flattened to [B, A*H*W].
Value channelsFirst(OpBuilder &b, Location loc, Value v) {
  auto type = tensorType(v);
  int64_t a = type.getDimSize(0), c = type.getDimSize(1);
  int64_t p = type.getDimSize(2) * type.getDimSize(3);
  Type element = type.getElementType();
  if (p == 1)
    return reshapeTo(b, loc, v, RankedTensorType::get({a, c}, element));
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned k) { return getAffineDimExpr(k, ctx); };
  Value flat =
      reshapeTo(b, loc, v, RankedTensorType::get({a, c, p}, element));
  // Loops (c, a, p): contiguous reads and writes along p.
  SmallVector<AffineMap> maps{AffineMap::get(3, 0, {d(1), d(0), d(2)}, ctx),
                              AffineMap::getMultiDimIdentityMap(3, ctx)};
  Value transposed =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get({c, a, p}, element)},
          ValueRange{flat},
          ValueRange{tensor::EmptyOp::create(b, loc, {c, a, p}, element)},
          maps,
          SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
          [](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(nb, l, args[0]);
          })
          .getResult(0);
  return reshapeTo(b, loc, transposed,
                   RankedTensorType::get({c, a * p}, element));
}

/// The inverse of channelsFirst: a product [C, N*P] (or [N, C] when P = 1)
/// as the [N, C, H, W] tensor of `type`, plus `bias` [C] if given.
Value fromChannelsFirst(OpBuilder &b, Location loc, Value product,
                        RankedTensorType type, Value bias) {
  int64_t n = type.getDimSize(0), c = type.getDimSize(1);
  int64_t p = type.getDimSize(2) * type.getDimSize(3);
  Type element = type.getElementType();
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned k) { return getAffineDimExpr(k, ctx); };
  // Loops (n, c, p) over the result [N, C, P].
  AffineMap productMap =
      p == 1 ? AffineMap::get(3, 0, {d(0), d(1)}, ctx)
             : AffineMap::get(3, 0, {d(1), d(0), d(2)}, ctx);
  Value source = p == 1 ? product
                        : reshapeTo(b, loc, product,
                                    RankedTensorType::get({c, n, p}, element));
  if (p == 1 && !bias)
    return reshapeTo(b, loc, product, type);
  SmallVector<Value> inputs{source};
  SmallVector<AffineMap> maps{productMap};
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(AffineMap::get(3, 0, {d(1)}, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(3, ctx));
  Value result =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get({n, c, p}, element)}, inputs,
          ValueRange{tensor::EmptyOp::create(b, loc, {n, c, p}, element)},
          maps,
          SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value v = args[0];
            if (bias)
              v = arith::AddFOp::create(nb, l, v, args[1]);
            linalg::YieldOp::create(nb, l, v);
          })
          .getResult(0);
  return reshapeTo(b, loc, result, type);
}

/// [F, C, 1, 1] as [F, C].
Value filterMatrix(OpBuilder &b, Location loc, Value w) {
  auto type = tensorType(w);
  return reshapeTo(b, loc, w,
                   RankedTensorType::get({type.getDimSize(0), type.getDimSize(1)},
                                         type.getElementType()));
}

/// The zero-initialised [rows, cols] accumulator of a product.
Value productInit(OpBuilder &b, Location loc, int64_t rows, int64_t cols) {
  return zeros(b, loc, RankedTensorType::get({rows, cols}, b.getF32Type()));
}

/// y = w x: with P = 1, y[N, F] = x[N, C] w[F, C]^T; else
/// y[F, N*P] = w[F, C] x[C, N*P].
struct PointwiseConv2D : OpRewritePattern<Conv2DOp> {
  PointwiseConv2D(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(Conv2DOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> p = pointwisePositions(
        op.getInput(), op.getFilter(), op.getResult(), op.getStrides(),
        op.getPadding(), op.getGroups());
    if (!p)
      return rewriter.notifyMatchFailure(op, "not a pointwise product");
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    int64_t n = type.getDimSize(0), f = type.getDimSize(1);
    Value x = channelsFirst(rewriter, loc, op.getInput());
    Value w = filterMatrix(rewriter, loc, op.getFilter());
    Value y = *p == 1 ? buildMatmul(rewriter, loc, x, w,
                                    productInit(rewriter, loc, n, f), false,
                                    true)
                      : buildMatmul(rewriter, loc, w, x,
                                    productInit(rewriter, loc, f, n * *p),
                                    false, false);
    rewriter.replaceOp(
        op, fromChannelsFirst(rewriter, loc, y, type, op.getBias()));
    return success();
  }
};

/// dx = w^T dy: with P = 1, dx[N, C] = dy[N, F] w[F, C]; else
/// dx[C, N*P] = w[F, C]^T dy[F, N*P].
struct PointwiseConv2DInputGrad : OpRewritePattern<Conv2DInputGradOp> {
  PointwiseConv2DInputGrad(MLIRContext *ctx)
      : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(Conv2DInputGradOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> p = pointwisePositions(
        op.getResult(), op.getFilter(), op.getOutputGrad(), op.getStrides(),
        op.getPadding(), op.getGroups());
    if (!p)
      return rewriter.notifyMatchFailure(op, "not a pointwise product");
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    int64_t n = type.getDimSize(0), c = type.getDimSize(1);
    Value dy = channelsFirst(rewriter, loc, op.getOutputGrad());
    Value w = filterMatrix(rewriter, loc, op.getFilter());
    Value dx = *p == 1 ? buildMatmul(rewriter, loc, dy, w,
                                     productInit(rewriter, loc, n, c), false,
                                     false)
                       : buildMatmul(rewriter, loc, w, dy,
                                     productInit(rewriter, loc, c, n * *p),
                                     true, false);
    rewriter.replaceOp(op, fromChannelsFirst(rewriter, loc, dx, type, {}));
    return success();
  }
};

/// dw[F, C] = dy x^T over every sample's positions: with P = 1,
/// dy[N, F]^T x[N, C]; else dy[F, N*P] x[C, N*P]^T.
struct PointwiseConv2DFilterGrad : OpRewritePattern<Conv2DFilterGradOp> {
  PointwiseConv2DFilterGrad(MLIRContext *ctx)
      : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(Conv2DFilterGradOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> p = pointwisePositions(
        op.getInput(), op.getResult(), op.getOutputGrad(), op.getStrides(),
        op.getPadding(), op.getGroups());
    if (!p)
      return rewriter.notifyMatchFailure(op, "not a pointwise product");
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    int64_t f = type.getDimSize(0), c = type.getDimSize(1);
    Value dy = channelsFirst(rewriter, loc, op.getOutputGrad());
    Value x = channelsFirst(rewriter, loc, op.getInput());
    Value init = productInit(rewriter, loc, f, c);
    Value dw = *p == 1 ? buildMatmul(rewriter, loc, dy, x, init, true, false)
                       : buildMatmul(rewriter, loc, dy, x, init, false, true);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, dw, type));
    return success();
  }
};

/// The output gradient `dy` [N, F, OH, OW] of a window op spread into a
/// zero tensor [N, F, H + (KH-1)*DH, W + (KW-1)*DW] so that a stride-1
/// window op with dilation D (and a flipped kernel) over it gives the
/// gradient of the H x W input: output position `o` lands at
/// `(K-1)*D - padBegin + o*stride`; those outside the tensor reach only
/// padding and are dropped.
Value spreadOutputGrad(OpBuilder &b, Location loc, Value dy,
                       const std::array<Axis, 2> &axes) {
  auto type = tensorType(dy);
  SmallVector<int64_t> shape(type.getShape().take_front(2));
  SmallVector<int64_t> first{0, 0}, count(type.getShape()), at{0, 0};
  SmallVector<int64_t> steps{1, 1};
  bool empty = false;
  for (int d = 0; d < 2; ++d) {
    const Axis &a = axes[d];
    int64_t length = a.size + (a.kernel - 1) * a.dilation;
    int64_t base = (a.kernel - 1) * a.dilation - a.padBegin;
    shape.push_back(length);
    // Outputs o in [lo, hi) have 0 <= base + o*stride < length.
    int64_t lo = base >= 0 ? 0 : (-base + a.stride - 1) / a.stride;
    int64_t hi = length - 1 - base < 0
                     ? 0
                     : std::min(a.output, (length - 1 - base) / a.stride + 1);
    if (hi <= lo) {
      empty = true;
      continue;
    }
    first.push_back(lo);
    count[2 + d] = hi - lo;
    at.push_back(base + lo * a.stride);
    steps.push_back(a.stride);
  }
  Value spread = zeros(b, loc, type.clone(shape));
  if (empty)
    return spread;
  Value source = dy;
  if (ArrayRef<int64_t>(count) != type.getShape())
    source = tensor::ExtractSliceOp::create(
        b, loc, type.clone(count), dy, indexAttrs(b, first),
        indexAttrs(b, count), indexAttrs(b, {1, 1, 1, 1}));
  return tensor::InsertSliceOp::create(b, loc, source, spread,
                                       indexAttrs(b, at), indexAttrs(b, count),
                                       indexAttrs(b, steps));
}

/// [N, G*X, ...] viewed as [N, G, X, ...] (`dim` is the split dimension).
Value splitDim(OpBuilder &b, Location loc, Value v, int64_t dim,
               int64_t groups) {
  auto type = tensorType(v);
  SmallVector<int64_t> shape(type.getShape().take_front(dim));
  shape.push_back(groups);
  shape.push_back(type.getDimSize(dim) / groups);
  llvm::append_range(shape, type.getShape().drop_front(dim + 1));
  return reshapeTo(b, loc, v, type.clone(shape));
}

/// The columns of an (already padded) input `xp` [N, C, Hp, Wp] for a
/// window op of `kernel` taps producing `output` [OH, OW] positions:
///   cols[n, (c*KH + i)*KW + j, oh*OW + ow] = xp[n, c, oh*SH + i*DH, ow*SW + j*DW]
/// as one copying linalg.generic ([N, C, KH, KW, OH, OW], collapsed). A
/// 1x1 stride-1 window over an unpadded input needs no copy: the columns
/// are the input itself.
Value im2col(OpBuilder &b, Location loc, Value xp, ArrayRef<int64_t> kernel,
             ArrayRef<int64_t> output, ArrayRef<int64_t> strides,
             ArrayRef<int64_t> dilations, Type elementType) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(xp);
  int64_t n = type.getDimSize(0), c = type.getDimSize(1);
  auto colsType = RankedTensorType::get(
      {n, c * kernel[0] * kernel[1], output[0] * output[1]}, elementType);
  if (kernel[0] == 1 && kernel[1] == 1 && strides[0] == 1 && strides[1] == 1 &&
      type.getDimSize(2) == output[0] && type.getDimSize(3) == output[1])
    return convertElements(
        b, loc, reshapeTo(b, loc, xp, colsType.clone(type.getElementType())),
        elementType);
  auto d = [&](unsigned k) { return getAffineDimExpr(k, ctx); };
  // Loops (n, c, i, j, oh, ow).
  SmallVector<AffineMap> maps{
      AffineMap::get(6, 0,
                     {d(0), d(1), d(4) * strides[0] + d(2) * dilations[0],
                      d(5) * strides[1] + d(3) * dilations[1]},
                     ctx),
      AffineMap::getMultiDimIdentityMap(6, ctx)};
  SmallVector<int64_t> shape{n, c, kernel[0], kernel[1], output[0], output[1]};
  Value cols =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get(shape, elementType)},
          ValueRange{xp},
          ValueRange{tensor::EmptyOp::create(b, loc, shape, elementType)},
          maps,
          SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
          [&](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(nb, l,
                                    castScalar(nb, l, args[0], elementType));
          })
          .getResult(0);
  return tensor::CollapseShapeOp::create(
      b, loc, colsType, cols,
      SmallVector<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5}});
}

/// The `indexing_maps` attribute of a (batch, m, n, k) product.
NamedAttribute productMaps(OpBuilder &b, ArrayRef<AffineExpr> a,
                           ArrayRef<AffineExpr> bm, ArrayRef<AffineExpr> c) {
  MLIRContext *ctx = b.getContext();
  SmallVector<Attribute> maps;
  for (ArrayRef<AffineExpr> results : {a, bm, c})
    maps.push_back(AffineMapAttr::get(AffineMap::get(4, 0, results, ctx)));
  return b.getNamedAttr("indexing_maps", b.getArrayAttr(maps));
}

/// The element type a product reads `operand` in: its own with native
/// low-precision products, else the accumulator's.
Type productOperandType(const LoweringPolicy &policy, Value operand,
                        Type accumulator) {
  return policy.nativeLowPrecisionProducts
             ? tensorType(operand).getElementType()
             : accumulator;
}

/// out = init + conv(input, filter), accumulated in init's element type
/// (f32 for f16/bf16 operands): with `policy.im2colConvolutions`, NCHW/FCHW
/// as im2col and one product per sample (the filter [F, C*KH*KW] broadcast
/// over the batch, a linalg.batch_matmul that eff-linalg-to-blas hands to the
/// GEMM); with `groups > 1` (or without im2col) the grouped named op on
/// [N, G, C/G, H, W] / [G, F/G, C/G, KH, KW] views.
Value buildConv(OpBuilder &b, Location loc, const LoweringPolicy &policy,
                Value input, Value filter, Value init, int64_t groups,
                ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations) {
  auto type = tensorType(init);
  SmallVector<NamedAttribute> attrs = windowAttrs(b, strides, dilations);
  if (groups == 1 && policy.im2colConvolutions) {
    MLIRContext *ctx = b.getContext();
    auto filterType = tensorType(filter);
    Type elementType = type.getElementType();
    int64_t n = type.getDimSize(0), f = type.getDimSize(1);
    int64_t oh = type.getDimSize(2), ow = type.getDimSize(3);
    int64_t ckk = filterType.getDimSize(1) * filterType.getDimSize(2) *
                  filterType.getDimSize(3);
    Value cols = im2col(b, loc, input, filterType.getShape().drop_front(2),
                        {oh, ow}, strides, dilations,
                        productOperandType(policy, input, elementType));
    Value a = convertElements(
        b, loc,
        reshapeTo(b, loc, filter,
                  RankedTensorType::get({f, ckk}, filterType.getElementType())),
        productOperandType(policy, filter, elementType));
    auto accType = RankedTensorType::get({n, f, oh * ow}, elementType);
    Value acc = reshapeTo(b, loc, init, accType);
    auto d = [&](unsigned k) { return getAffineDimExpr(k, ctx); };
    // (batch, m, n, k) = (sample, filter, position, column row).
    Value product =
        linalg::BatchMatmulOp::create(
            b, loc, TypeRange{accType}, ValueRange{a, cols}, ValueRange{acc},
            {productMaps(b, {d(1), d(3)}, {d(0), d(3), d(2)},
                         {d(0), d(1), d(2)})})
            .getResult(0);
    return reshapeTo(b, loc, product, type);
  }
  Value groupedInit = splitDim(b, loc, init, 1, groups);
  Value conv = linalg::Conv2DNgchwGfchwOp::create(
                   b, loc, TypeRange{groupedInit.getType()},
                   ValueRange{splitDim(b, loc, input, 1, groups),
                              splitDim(b, loc, filter, 0, groups)},
                   ValueRange{groupedInit}, attrs)
                   .getResult(0);
  return reshapeTo(b, loc, conv, type);
}

struct Conv2DLowering : PolicyPattern<Conv2DOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(Conv2DOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkPadding(op, op.getPadding())))
      return failure();
    SmallVector<int64_t> shape = libraryShape(
        tensorType(op.getInput()), tensorType(op.getFilter()),
        tensorType(op.getResult()), op.getStrides(), op.getPadding(),
        op.getDilations(), op.getGroups());
    if (succeeded(lowerToCudnn(rewriter, op, policy, EFFRT_CONV2D_FWD,
                               {op.getInput(), op.getFilter()}, op.getBias(),
                               tensorType(op.getResult()), shape)) ||
        succeeded(lowerToLibrary(
            rewriter, op, policy, EFFRT_CONV2D_FWD,
            {op.getInput(), op.getFilter(), op.getBias()},
            op.getBias() != nullptr, tensorType(op.getResult()), shape)))
      return success();
    Location loc = op.getLoc();
    auto resultType = tensorType(op.getResult());
    auto filterType = tensorType(op.getFilter());
    Type elementType = resultType.getElementType();
    auto type = resultType.clone(computeType(elementType));
    auto axes = axesOf(tensorType(op.getInput()), type,
                       filterType.getShape().drop_front(2), op.getStrides(),
                       op.getPadding(), op.getDilations());
    Value input = padSpatial(rewriter, loc, op.getInput(), axes,
                             scalarConstant(rewriter, loc, elementType, 0));
    Value init;
    if (Value bias = op.getBias()) {
      int64_t f = type.getDimSize(1);
      Value column = reshapeTo(rewriter, loc, bias,
                               RankedTensorType::get({f, 1, 1}, elementType));
      init = buildElementwise(
          rewriter, loc, type, {column},
          [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    } else {
      init = zeros(rewriter, loc, type);
    }
    Value conv = buildConv(rewriter, loc, policy, input, op.getFilter(), init,
                           op.getGroups(), op.getStrides(), op.getDilations());
    rewriter.replaceOp(op, convertElements(rewriter, loc, conv, elementType));
    return success();
  }
};

/// dx = conv(spread dy, W flipped with in/out channels swapped per group),
/// at stride 1 and the forward dilation.
struct Conv2DInputGradLowering : PolicyPattern<Conv2DInputGradOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(Conv2DInputGradOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkPadding(op, op.getPadding())))
      return failure();
    SmallVector<int64_t> shape = libraryShape(
        tensorType(op.getResult()), tensorType(op.getFilter()),
        tensorType(op.getOutputGrad()), op.getStrides(), op.getPadding(),
        op.getDilations(), op.getGroups());
    if (succeeded(lowerToCudnn(rewriter, op, policy, EFFRT_CONV2D_BWD_DATA,
                               {op.getOutputGrad(), op.getFilter()}, nullptr,
                               tensorType(op.getResult()), shape)) ||
        succeeded(lowerToLibrary(rewriter, op, policy, EFFRT_CONV2D_BWD_DATA,
                                 {op.getOutputGrad(), op.getFilter()}, false,
                                 tensorType(op.getResult()), shape)))
      return success();
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = tensorType(op.getResult());
    auto filterType = tensorType(op.getFilter());
    Type resultElementType = resultType.getElementType();
    // The flipped filter, the columns and the sum in the accumulation type.
    Type elementType = computeType(resultElementType);
    auto type = resultType.clone(elementType);
    int64_t groups = op.getGroups();
    int64_t f = filterType.getDimSize(0), cg = filterType.getDimSize(1);
    int64_t kh = filterType.getDimSize(2), kw = filterType.getDimSize(3);
    int64_t fg = f / groups;
    auto axes = axesOf(type, tensorType(op.getOutputGrad()),
                       filterType.getShape().drop_front(2), op.getStrides(),
                       op.getPadding(), op.getDilations());
    Value spread = spreadOutputGrad(rewriter, loc, op.getOutputGrad(), axes);

    // flipped[g, c, f, i, j] = W[g*FG + f, c, KH-1-i, KW-1-j], in the type
    // the product reads it in.
    Type flippedElementType =
        productOperandType(policy, op.getFilter(), elementType);
    auto flippedType =
        RankedTensorType::get({groups, cg, fg, kh, kw}, flippedElementType);
    AffineExpr g = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx),
               fd = getAffineDimExpr(2, ctx), i = getAffineDimExpr(3, ctx),
               j = getAffineDimExpr(4, ctx);
    SmallVector<AffineMap> maps{
        AffineMap::get(5, 0, {g, fd, c, (kh - 1) - i, (kw - 1) - j}, ctx),
        AffineMap::getMultiDimIdentityMap(5, ctx)};
    Value flipped =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{flippedType},
            ValueRange{splitDim(rewriter, loc, op.getFilter(), 0, groups)},
            ValueRange{tensor::EmptyOp::create(
                rewriter, loc, flippedType.getShape(), flippedElementType)},
            maps,
            SmallVector<utils::IteratorType>(5, utils::IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l, castScalar(b, l, args[0], flippedElementType));
            })
            .getResult(0);
    Value filter = reshapeTo(
        rewriter, loc, flipped,
        RankedTensorType::get({groups * cg, fg, kh, kw}, flippedElementType));
    Value grad = buildConv(rewriter, loc, policy, spread, filter,
                           zeros(rewriter, loc, type), groups, {1, 1},
                           op.getDilations());
    rewriter.replaceOp(op,
                       convertElements(rewriter, loc, grad, resultElementType));
    return success();
  }
};

/// dW[g, f, c, i, j] = sum over n, oh, ow of
///   dy[n, g, f, oh, ow] * xpad[n, g, c, oh*SH + i*DH, ow*SW + j*DW].
struct Conv2DFilterGradLowering : PolicyPattern<Conv2DFilterGradOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(Conv2DFilterGradOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkPadding(op, op.getPadding())))
      return failure();
    SmallVector<int64_t> shape = libraryShape(
        tensorType(op.getInput()), tensorType(op.getResult()),
        tensorType(op.getOutputGrad()), op.getStrides(), op.getPadding(),
        op.getDilations(), op.getGroups());
    if (succeeded(lowerToCudnn(rewriter, op, policy, EFFRT_CONV2D_BWD_WEIGHTS,
                               {op.getInput(), op.getOutputGrad()}, nullptr,
                               tensorType(op.getResult()), shape)) ||
        succeeded(lowerToLibrary(rewriter, op, policy,
                                 EFFRT_CONV2D_BWD_WEIGHTS,
                                 {op.getInput(), op.getOutputGrad()}, false,
                                 tensorType(op.getResult()), shape)))
      return success();
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = tensorType(op.getResult());
    Type resultElementType = resultType.getElementType();
    Type elementType = computeType(resultElementType);
    auto type = resultType.clone(elementType);
    auto rounded = [&](Value grad) {
      return convertElements(rewriter, loc,
                             reshapeTo(rewriter, loc, grad, type),
                             resultElementType);
    };
    int64_t groups = op.getGroups();
    auto axes =
        axesOf(tensorType(op.getInput()), tensorType(op.getOutputGrad()),
               type.getShape().drop_front(2), op.getStrides(), op.getPadding(),
               op.getDilations());
    Value input = padSpatial(
        rewriter, loc, op.getInput(), axes,
        scalarConstant(rewriter, loc,
                       tensorType(op.getInput()).getElementType(), 0));
    if (groups == 1 && policy.im2colConvolutions) {
      // dW[F, C*KH*KW] = sum over samples of dy[n] [F, OH*OW] times the
      // transposed columns of x[n]: one linalg.batch_reduce_matmul, which
      // accumulates the samples in order.
      auto dyType = tensorType(op.getOutputGrad());
      int64_t n = dyType.getDimSize(0), f = dyType.getDimSize(1);
      int64_t oh = dyType.getDimSize(2), ow = dyType.getDimSize(3);
      int64_t ckk = type.getDimSize(1) * type.getDimSize(2) * type.getDimSize(3);
      Value cols =
          im2col(rewriter, loc, input, type.getShape().drop_front(2), {oh, ow},
                 op.getStrides(), op.getDilations(),
                 productOperandType(policy, input, elementType));
      Value dy = convertElements(
          rewriter, loc,
          reshapeTo(rewriter, loc, op.getOutputGrad(),
                    RankedTensorType::get({n, f, oh * ow},
                                          dyType.getElementType())),
          productOperandType(policy, op.getOutputGrad(), elementType));
      auto accType = RankedTensorType::get({f, ckk}, elementType);
      auto d = [&](unsigned k) { return getAffineDimExpr(k, ctx); };
      Value grad =
          linalg::BatchReduceMatmulOp::create(
              rewriter, loc, TypeRange{accType}, ValueRange{dy, cols},
              ValueRange{zeros(rewriter, loc, accType)},
              {productMaps(rewriter, {d(0), d(1), d(3)}, {d(0), d(2), d(3)},
                           {d(1), d(2)})})
              .getResult(0);
      rewriter.replaceOp(op, rounded(grad));
      return success();
    }
    Value x = splitDim(rewriter, loc, input, 1, groups);
    Value dy = splitDim(rewriter, loc, op.getOutputGrad(), 1, groups);
    Value init = splitDim(rewriter, loc, zeros(rewriter, loc, type), 0, groups);
    // Loops (n, g, f, c, i, j, oh, ow).
    auto d = [&](unsigned k) { return getAffineDimExpr(k, ctx); };
    AffineExpr n = d(0), g = d(1), f = d(2), c = d(3), i = d(4), j = d(5),
               oh = d(6), ow = d(7);
    ArrayRef<int64_t> s = op.getStrides(), dil = op.getDilations();
    SmallVector<AffineMap> maps{AffineMap::get(8, 0, {n, g, f, oh, ow}, ctx),
                                AffineMap::get(8, 0,
                                               {n, g, c, oh * s[0] + i * dil[0],
                                                ow * s[1] + j * dil[1]},
                                               ctx),
                                AffineMap::get(8, 0, {g, f, c, i, j}, ctx)};
    using utils::IteratorType;
    SmallVector<IteratorType> iterators{
        IteratorType::reduction, IteratorType::parallel, IteratorType::parallel,
        IteratorType::parallel,  IteratorType::parallel, IteratorType::parallel,
        IteratorType::reduction, IteratorType::reduction};
    Value grad =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{init.getType()}, ValueRange{dy, x},
            ValueRange{init}, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value product = arith::MulFOp::create(
                  b, l, castScalar(b, l, args[0], elementType),
                  castScalar(b, l, args[1], elementType));
              linalg::YieldOp::create(
                  b, l,
                  ValueRange{arith::AddFOp::create(b, l, args[2], product)});
            })
            .getResult(0);
    rewriter.replaceOp(op, rounded(grad));
    return success();
  }
};

/// The outputs of one spatial axis whose window puts tap `k` on a real
/// input element, [begin, end), and where the first of them reads.
struct TapSpan {
  int64_t begin = 0, end = 0, at = 0;
  int64_t count() const { return end - begin; }
};

TapSpan tapSpan(const Axis &a, int64_t k) {
  // Output o reads o*stride + k*dilation - padBegin.
  int64_t offset = k * a.dilation - a.padBegin;
  auto ceilDiv = [](int64_t n, int64_t d) {
    return n >= 0 ? (n + d - 1) / d : -((-n) / d);
  };
  auto floorDiv = [](int64_t n, int64_t d) {
    return n >= 0 ? n / d : -((-n + d - 1) / d);
  };
  TapSpan span;
  span.begin = std::max<int64_t>(0, ceilDiv(-offset, a.stride));
  span.end = std::min(a.output, floorDiv(a.size - 1 - offset, a.stride) + 1);
  span.end = std::max(span.end, span.begin);
  span.at = span.begin * a.stride + offset;
  return span;
}

/// The real input elements that tap (i, j) of every window reads, for the
/// outputs of `spans`: a strided view of `x` [N, C, H, W].
Value tapView(OpBuilder &b, Location loc, Value x,
              const std::array<Axis, 2> &axes,
              const std::array<TapSpan, 2> &spans) {
  auto type = tensorType(x);
  SmallVector<int64_t> sizes{type.getDimSize(0), type.getDimSize(1),
                             spans[0].count(), spans[1].count()};
  return tensor::ExtractSliceOp::create(
      b, loc, type.clone(sizes), x,
      indexAttrs(b, {0, 0, spans[0].at, spans[1].at}), indexAttrs(b, sizes),
      indexAttrs(b, {1, 1, axes[0].stride, axes[1].stride}));
}

/// The outputs of `spans` in a per-output tensor `v` [N, C, OH, OW].
Value outputView(OpBuilder &b, Location loc, Value v,
                 const std::array<TapSpan, 2> &spans) {
  auto type = tensorType(v);
  SmallVector<int64_t> sizes{type.getDimSize(0), type.getDimSize(1),
                             spans[0].count(), spans[1].count()};
  return tensor::ExtractSliceOp::create(
      b, loc, type.clone(sizes), v,
      indexAttrs(b, {0, 0, spans[0].begin, spans[1].begin}),
      indexAttrs(b, sizes), indexAttrs(b, {1, 1, 1, 1}));
}

/// `update` written back where `view` (an extract_slice) was taken from.
Value writeBack(OpBuilder &b, Location loc, Value update, Value view) {
  auto slice = view.getDefiningOp<tensor::ExtractSliceOp>();
  return tensor::InsertSliceOp::create(
      b, loc, update, slice.getSource(), slice.getMixedOffsets(),
      slice.getMixedSizes(), slice.getMixedStrides());
}

/// An elementwise linalg.generic over [N, C, h, w] views, updating `outs`
/// in place from `ins`; `body` gets the ins' then the outs' elements.
SmallVector<Value> updateInPlace(OpBuilder &b, Location loc, ValueRange ins,
                                 ValueRange outs, MultiScalarFn body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps(ins.size() + outs.size(),
                              AffineMap::getMultiDimIdentityMap(4, ctx));
  return linalg::GenericOp::create(
             b, loc, TypeRange(outs), ins, outs, maps,
             SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, body(nb, l, args));
             })
      ->getResults();
}

/// Max pooling as one elementwise max per window tap, over strided views of
/// the unpadded input (padding never changes a max: only the outputs whose
/// window puts the tap on the input are updated). Each update is a long
/// vectorisable loop; the window loop of linalg's pooling op had 3
/// iterations innermost. The taps are visited in the window's row-major
/// order, as the pooling op does.
struct MaxPool2DLowering : PolicyPattern<MaxPool2DOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(MaxPool2DOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkPadding(op, op.getPadding())))
      return failure();
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    Type elementType = type.getElementType();
    ArrayRef<int64_t> kernel = op.getKernelSize();
    auto axes = axesOf(tensorType(op.getInput()), type, kernel, op.getStrides(),
                       op.getPadding(), op.getDilations());
    Value best =
        buildFill(rewriter, loc, type, negativeInfinity(rewriter, loc, elementType));
    for (int64_t i = 0; i < kernel[0]; ++i)
      for (int64_t j = 0; j < kernel[1]; ++j) {
        std::array<TapSpan, 2> spans{tapSpan(axes[0], i), tapSpan(axes[1], j)};
        if (spans[0].count() == 0 || spans[1].count() == 0)
          continue;
        Value view = outputView(rewriter, loc, best, spans);
        Value updated = updateInPlace(
            rewriter, loc,
            {tapView(rewriter, loc, op.getInput(), axes, spans)}, {view},
            [](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              return {arith::MaximumFOp::create(b, l, a[1], a[0])};
            })[0];
        best = writeBack(rewriter, loc, updated, view);
      }
    rewriter.replaceOp(op, best);
    return success();
  }
};

SmallVector<int64_t> avgPoolDivisors(const std::array<Axis, 2> &axes,
                                     bool countIncludePad) {
  auto extents = [&](const Axis &a) {
    SmallVector<int64_t> result;
    for (int64_t o = 0; o < a.output; ++o) {
      int64_t start = o * a.stride - a.padBegin;
      int64_t end = std::min(start + a.kernel, a.size + a.padEnd);
      if (!countIncludePad) {
        start = std::max<int64_t>(start, 0);
        end = std::min(end, a.size);
      }
      result.push_back(end - start);
    }
    return result;
  };
  SmallVector<int64_t> rows = extents(axes[0]), cols = extents(axes[1]);
  SmallVector<int64_t> divisors;
  for (int64_t r : rows)
    for (int64_t c : cols)
      divisors.push_back(r * c);
  return divisors;
}

/// `value` divided elementwise by the [OH, OW] `divisors` (broadcast over the
/// batch and channels), as a tensor of `resultElementType`.
Value divideByWindow(OpBuilder &b, Location loc, Value value,
                     ArrayRef<int64_t> divisors, Type resultElementType) {
  auto type = tensorType(value);
  // Window sizes are integers, exact in f32 (not always in bf16).
  Type elementType = computeType(type.getElementType());
  bool uniform = llvm::all_equal(divisors);
  SmallVector<Value> operands{value};
  if (!uniform) {
    auto f = cast<FloatType>(elementType);
    SmallVector<APFloat> values;
    for (int64_t d : divisors) {
      APFloat v(static_cast<double>(d));
      bool loses;
      v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &loses);
      values.push_back(v);
    }
    auto divisorType = RankedTensorType::get(
        {type.getDimSize(2), type.getDimSize(3)}, elementType);
    operands.push_back(arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(divisorType, values)));
  }
  int64_t common = divisors.empty() ? 1 : divisors.front();
  return buildElementwise(
      b, loc, type.clone(resultElementType), operands,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value divisor =
            uniform ? scalarConstant(nb, l, args[0].getType(), common)
                    : args[1];
        return arith::DivFOp::create(nb, l, args[0], divisor);
      });
}

struct AvgPool2DLowering : PolicyPattern<AvgPool2DOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(AvgPool2DOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkPadding(op, op.getPadding())))
      return failure();
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    Type elementType = type.getElementType();
    ArrayRef<int64_t> kernel = op.getKernelSize();
    auto axes = axesOf(tensorType(op.getInput()), type, kernel, op.getStrides(),
                       op.getPadding(), {});
    Value input = padSpatial(rewriter, loc, op.getInput(), axes,
                             scalarConstant(rewriter, loc, elementType, 0));
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, elementType);
    // The named op widens f16/bf16 elements into the f32 sum.
    auto sumType = type.clone(computeType(elementType));
    Value sum = linalg::PoolingNchwSumOp::create(
                    rewriter, loc, TypeRange{sumType},
                    ValueRange{input, window},
                    ValueRange{zeros(rewriter, loc, sumType)},
                    windowAttrs(rewriter, op.getStrides(), {1, 1}))
                    .getResult(0);
    rewriter.replaceOp(
        op, divideByWindow(rewriter, loc, sum,
                           avgPoolDivisors(axes, op.getCountIncludePad()),
                           elementType));
    return success();
  }
};

/// dx = sum pooling (stride 1) of the spread dy / divisor.
struct AvgPool2DGradLowering : PolicyPattern<AvgPool2DGradOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(AvgPool2DGradOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkPadding(op, op.getPadding())))
      return failure();
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    Type elementType = type.getElementType();
    ArrayRef<int64_t> kernel = op.getKernelSize();
    auto axes = axesOf(type, tensorType(op.getOutputGrad()), kernel,
                       op.getStrides(), op.getPadding(), {});
    // dy / divisor and its window sums stay in f32 for f16/bf16.
    auto sumType = type.clone(computeType(elementType));
    Value scaled =
        divideByWindow(rewriter, loc, op.getOutputGrad(),
                       avgPoolDivisors(axes, op.getCountIncludePad()),
                       sumType.getElementType());
    Value spread = spreadOutputGrad(rewriter, loc, scaled, axes);
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, elementType);
    Value grad = linalg::PoolingNchwSumOp::create(
                     rewriter, loc, TypeRange{sumType},
                     ValueRange{spread, window},
                     ValueRange{zeros(rewriter, loc, sumType)},
                     windowAttrs(rewriter, {1, 1}, {1, 1}))
                     .getResult(0);
    rewriter.replaceOp(op, convertElements(rewriter, loc, grad, elementType));
    return success();
  }
};

/// max_pool2d_grad in two passes over the window taps, each tap one
/// elementwise update over strided views (no padded copies, no index
/// arithmetic per element):
/// - the tap (i * KW + j) of every output's first maximum, scanning the
///   window row by row: a real element wins if it is the first one, is
///   greater, or is NaN (PyTorch's rule); padding never wins (its outputs
///   are not updated);
/// - dx[n, c, o*S + t*D - P] += dy[n, c, o] where output o picked tap t,
///   the taps visited from the last, so every input element receives its
///   windows' gradients in row-major order of the outputs, PyTorch's
///   accumulation order.
struct MaxPool2DGradLowering : PolicyPattern<MaxPool2DGradOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(MaxPool2DGradOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkPadding(op, op.getPadding())))
      return failure();
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    auto gradType = tensorType(op.getOutputGrad());
    Type elementType = type.getElementType();
    ArrayRef<int64_t> kernel = op.getKernelSize();
    auto axes = axesOf(type, gradType, kernel, op.getStrides(), op.getPadding(),
                       op.getDilations());
    Type i32 = rewriter.getI32Type();
    auto indexType = RankedTensorType::get(gradType.getShape(), i32);
    auto spansOf = [&](int64_t i, int64_t j) {
      return std::array<TapSpan, 2>{tapSpan(axes[0], i), tapSpan(axes[1], j)};
    };
    auto empty = [](const std::array<TapSpan, 2> &spans) {
      return spans[0].count() == 0 || spans[1].count() == 0;
    };

    Value best = buildFill(rewriter, loc, gradType,
                           negativeInfinity(rewriter, loc, elementType));
    Value taps = buildFill(rewriter, loc, indexType,
                           scalarConstant(rewriter, loc, i32, -1));
    for (int64_t i = 0; i < kernel[0]; ++i)
      for (int64_t j = 0; j < kernel[1]; ++j) {
        std::array<TapSpan, 2> spans = spansOf(i, j);
        if (empty(spans))
          continue;
        Value bestView = outputView(rewriter, loc, best, spans);
        Value tapsView = outputView(rewriter, loc, taps, spans);
        int64_t tap = i * kernel[1] + j;
        SmallVector<Value> updated = updateInPlace(
            rewriter, loc, {tapView(rewriter, loc, op.getInput(), axes, spans)},
            {bestView, tapsView},
            [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              Value value = a[0], current = a[1], currentTap = a[2];
              Value first =
                  arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                        currentTap, scalarConstant(b, l, i32, 0));
              Value greater = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::OGT, value, current);
              Value isNan = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::UNO, value, value);
              Value wins = arith::OrIOp::create(
                  b, l, first, arith::OrIOp::create(b, l, greater, isNan));
              return {arith::SelectOp::create(b, l, wins, value, current),
                      arith::SelectOp::create(b, l, wins,
                                              scalarConstant(b, l, i32, tap),
                                              currentTap)};
            });
        best = writeBack(rewriter, loc, updated[0], bestView);
        taps = writeBack(rewriter, loc, updated[1], tapsView);
      }

    // Summed in f32 for f16/bf16 (overlapping windows add up).
    Type sumElementType = computeType(elementType);
    Value grad = zeros(rewriter, loc, type.clone(sumElementType));
    for (int64_t i = kernel[0] - 1; i >= 0; --i)
      for (int64_t j = kernel[1] - 1; j >= 0; --j) {
        std::array<TapSpan, 2> spans = spansOf(i, j);
        if (empty(spans))
          continue;
        Value gradView = tapView(rewriter, loc, grad, axes, spans);
        int64_t tap = i * kernel[1] + j;
        Value updated = updateInPlace(
            rewriter, loc,
            {outputView(rewriter, loc, op.getOutputGrad(), spans),
             outputView(rewriter, loc, taps, spans)},
            {gradView},
            [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              Value g = castScalar(b, l, a[0], sumElementType);
              Value hit = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::eq, a[1],
                  scalarConstant(b, l, i32, tap));
              Value sum = arith::AddFOp::create(b, l, a[2], g);
              return {arith::SelectOp::create(b, l, hit, sum, a[2])};
            })[0];
        grad = writeBack(rewriter, loc, updated, gradView);
      }
    rewriter.replaceOp(op, convertElements(rewriter, loc, grad, elementType));
    return success();
  }
};

} // namespace

void populateConvolutionLowering(RewritePatternSet &patterns,
                                 const LoweringPolicy &policy) {
  patterns.add<Conv2DLowering, Conv2DInputGradLowering,
               Conv2DFilterGradLowering, MaxPool2DLowering, AvgPool2DLowering,
               AvgPool2DGradLowering, MaxPool2DGradLowering>(
      patterns.getContext(), policy);
  patterns.add<CropConv2D, CropConv2DInputGrad, CropConv2DFilterGrad,
               PointwiseConv2D, PointwiseConv2DInputGrad,
               PointwiseConv2DFilterGrad>(patterns.getContext());
}

} // namespace effopt::lowering
