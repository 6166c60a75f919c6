//===- ConvertWindows3D.cpp - 3-D convolution and pooling as 2-D ones -----===//
//
// eff's windows are 2-D. A 3-D window over [N, C, T, H, W] (nn.Conv3d,
// MaxPool3d, AvgPool3d; torchvision's video models) is written with 2-D
// windows over the frames, time folded into the batch, and its temporal
// taps as strided slices along time:
//
// - Conv: y[t] = sum over taps i of conv2d(x[t * st + i * dt - pt], W[:, :,
//   i]): each tap convolves the frames it reads with its slice of the
//   filter (the gradient reaches W through the slice); the bias is added by
//   the first tap.
// - MaxPool: the maximum over a box is the maximum over its time window of
//   the frames' 2-D maximum pools (time padding reads -inf).
// - AveragePool: a box's divisor is the product of its per-axis counts
//   (with or without padding, ceil_mode's clipped windows alike), so the
//   average is the time average of the frames' 2-D averages, time dividing
//   by its own count.
//
// Exact up to the order of the sums. Each tap materialises the frames it
// reads: a k-tap temporal convolution reads its input k times.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include <limits>

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The time axis of a 3-D window.
struct TimeAxis {
  int64_t kernel, stride, dilation, padLow, padHigh, size, outSize;
};

/// The time axis of `w` (spatial order T, H, W) over `size` frames, and the
/// number of windows along it (ceil_mode: a last partial window that starts
/// inside the input or the low padding).
FailureOr<TimeAxis> timeAxisOf(NodeContext &ctx, const Window &w, int64_t size,
                               bool ceilMode) {
  TimeAxis t{w.kernel[0], w.strides[0], w.dilations[0],
             w.padding[0], w.padding[3], size, 0};
  if (t.kernel < 1 || t.stride < 1 || t.dilation < 1 || t.padLow < 0 ||
      t.padHigh < 0)
    return static_cast<LogicalResult>(
        ctx.error("the time window (kernel " + Twine(t.kernel) + ", stride " +
                  Twine(t.stride) + ", dilation " + Twine(t.dilation) +
                  ", pads " + Twine(t.padLow) + "/" + Twine(t.padHigh) +
                  ") is not valid"));
  int64_t span = (t.kernel - 1) * t.dilation + 1;
  int64_t room = size + t.padLow + t.padHigh - span;
  if (room < 0)
    return static_cast<LogicalResult>(
        ctx.error("the time window spans " + Twine(span) + " frames of " +
                  Twine(size + t.padLow + t.padHigh) + " (padded)"));
  t.outSize = (ceilMode ? (room + t.stride - 1) / t.stride : room / t.stride) + 1;
  if (ceilMode && (t.outSize - 1) * t.stride >= size + t.padLow)
    --t.outSize;
  return t;
}

/// For each tap of `t`, the frames it reads from `timeMajor` [N, T, ...]:
/// [N, T', ...], padding reading `padValue`.
SmallVector<Value> timeTaps(NodeContext &ctx, Value timeMajor,
                            const TimeAxis &t, double padValue) {
  RankedTensorType type = typeOf(timeMajor);
  int64_t rank = type.getRank();
  int64_t needed = (t.outSize - 1) * t.stride + (t.kernel - 1) * t.dilation + 1;
  int64_t high = std::max<int64_t>(0, needed - (t.size + t.padLow));
  Value padded = timeMajor;
  if (t.padLow > 0 || high > 0) {
    SmallVector<int64_t> low(rank, 0), up(rank, 0);
    low[1] = t.padLow;
    up[1] = high;
    padded = ctx.create<eff::PadOp>(timeMajor,
                                    ctx.builder.getDenseI64ArrayAttr(low),
                                    ctx.builder.getDenseI64ArrayAttr(up),
                                    ctx.builder.getF64FloatAttr(padValue));
  }
  SmallVector<Value> taps;
  if (!padded)
    return taps;
  SmallVector<int64_t> shape(typeOf(padded).getShape());
  for (int64_t i = 0; i < t.kernel; ++i) {
    SmallVector<int64_t> starts(rank, 0), limits(shape), strides(rank, 1);
    starts[1] = i * t.dilation;
    limits[1] = starts[1] + (t.outSize - 1) * t.stride + 1;
    strides[1] = t.stride;
    taps.push_back(ctx.create<eff::SliceOp>(padded, starts, limits, strides));
  }
  return taps;
}

/// [N, T, C, H, W] -> [N * T, C, H, W].
Value foldTime(NodeContext &ctx, Value timeMajor) {
  if (!timeMajor)
    return {};
  ArrayRef<int64_t> s = typeOf(timeMajor).getShape();
  return ctx.reshape(timeMajor, {s[0] * s[1], s[2], s[3], s[4]});
}

/// [N * T, C, H, W] -> [N, T, C, H, W].
Value unfoldTime(NodeContext &ctx, Value frames, int64_t n) {
  if (!frames)
    return {};
  ArrayRef<int64_t> s = typeOf(frames).getShape();
  return ctx.reshape(frames, {n, s[0] / n, s[1], s[2], s[3]});
}

/// The 2-D part of a 3-D window: H and W of each attribute.
SmallVector<int64_t> spatial2D(ArrayRef<int64_t> values) {
  return {values[1], values[2]};
}
SmallVector<int64_t> padding2D(ArrayRef<int64_t> pads) {
  return {pads[1], pads[2], pads[4], pads[5]};
}

/// A pool's time axis over the node's input, and that input's frames with
/// time folded into the batch ([N * T, C, H, W]) for its 2-D part.
FailureOr<std::pair<TimeAxis, Value>> poolFrames(NodeContext &ctx,
                                                 const Window &w,
                                                 bool ceilMode) {
  FailureOr<TimeAxis> t =
      timeAxisOf(ctx, w, ctx.inputType(0).getDimSize(2), ceilMode);
  if (failed(t))
    return failure();
  return std::make_pair(*t, foldTime(ctx, ctx.moveAxis(ctx.input(0), 2, 1)));
}

} // namespace

LogicalResult effopt::onnx_import::convertConv3D(NodeContext &ctx,
                                                 const Window &w,
                                                 int64_t groups) {
  RankedTensorType inputType = ctx.inputType(0), filterType = ctx.inputType(1);
  int64_t n = inputType.getDimSize(0);
  FailureOr<TimeAxis> t =
      timeAxisOf(ctx, w, inputType.getDimSize(2), /*ceilMode=*/false);
  if (failed(t))
    return failure();
  SmallVector<Value> taps =
      timeTaps(ctx, ctx.moveAxis(ctx.input(0), 2, 1), *t, 0.0);
  ArrayRef<int64_t> f = filterType.getShape();
  Value sum;
  for (auto [i, tap] : llvm::enumerate(taps)) {
    int64_t k = static_cast<int64_t>(i);
    Value filter = ctx.reshape(
        ctx.create<eff::SliceOp>(ctx.input(1), ArrayRef<int64_t>{0, 0, k, 0, 0},
                                 ArrayRef<int64_t>{f[0], f[1], k + 1, f[3], f[4]},
                                 ArrayRef<int64_t>{1, 1, 1, 1, 1}),
        {f[0], f[1], f[3], f[4]});
    Value bias = i == 0 && ctx.hasInput(2) ? ctx.input(2) : Value();
    Value y = ctx.create<eff::Conv2DOp>(
        foldTime(ctx, tap), filter, bias, spatial2D(w.strides),
        padding2D(w.padding), spatial2D(w.dilations), groups);
    sum = sum ? ctx.create<eff::AddOp>(sum, y) : y;
  }
  ctx.setOutput(0, ctx.moveAxis(unfoldTime(ctx, sum, n), 1, 2));
  return success();
}

LogicalResult effopt::onnx_import::convertMaxPool3D(NodeContext &ctx,
                                                    const Window &w,
                                                    bool ceilMode) {
  int64_t n = ctx.inputType(0).getDimSize(0);
  auto input = poolFrames(ctx, w, ceilMode);
  if (failed(input))
    return failure();
  auto &[t, inFrames] = *input;
  Value frames = ctx.create<eff::MaxPool2DOp>(
      inFrames, spatial2D(w.kernel), spatial2D(w.strides),
      padding2D(w.padding), spatial2D(w.dilations), ceilMode);
  Value result;
  for (Value tap : timeTaps(ctx, unfoldTime(ctx, frames, n), t,
                            -std::numeric_limits<double>::infinity()))
    result = result ? ctx.create<eff::MaxOp>(result, tap) : tap;
  ctx.setOutput(0, ctx.moveAxis(result, 1, 2));
  return success();
}

LogicalResult effopt::onnx_import::convertAveragePool3D(NodeContext &ctx,
                                                        const Window &w,
                                                        bool ceilMode,
                                                        bool countIncludePad) {
  int64_t n = ctx.inputType(0).getDimSize(0);
  auto input = poolFrames(ctx, w, ceilMode);
  if (failed(input))
    return failure();
  auto &[t, inFrames] = *input;
  Value frames = ctx.create<eff::AvgPool2DOp>(
      inFrames, spatial2D(w.kernel), spatial2D(w.strides),
      padding2D(w.padding), ceilMode, countIncludePad);
  Value sum;
  for (Value tap : timeTaps(ctx, unfoldTime(ctx, frames, n), t, 0.0))
    sum = sum ? ctx.create<eff::AddOp>(sum, tap) : tap;
  if (!sum)
    return failure();
  // Each window's count along time, as the 2-D pool counts its own axes.
  SmallVector<double> counts;
  for (int64_t o = 0; o < t.outSize; ++o) {
    int64_t start = o * t.stride - t.padLow;
    int64_t end = std::min(start + t.kernel, t.size + t.padHigh);
    int64_t padded = end - start;
    int64_t valid = std::min(end, t.size) - std::max<int64_t>(start, 0);
    counts.push_back(1.0 / static_cast<double>(countIncludePad ? padded : valid));
  }
  RankedTensorType sumType = typeOf(sum);
  auto scaleType = RankedTensorType::get({1, t.outSize, 1, 1, 1},
                                         sumType.getElementType());
  SmallVector<APFloat> scales;
  auto &semantics =
      cast<FloatType>(sumType.getElementType()).getFloatSemantics();
  for (double c : counts) {
    APFloat value(c);
    bool lost;
    value.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
    scales.push_back(value);
  }
  Value scale = ctx.constant(DenseElementsAttr::get(scaleType, scales));
  ctx.setOutput(0, ctx.moveAxis(ctx.create<eff::MulOp>(sum, scale), 1, 2));
  return success();
}
