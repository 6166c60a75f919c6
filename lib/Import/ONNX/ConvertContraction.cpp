//===- ConvertContraction.cpp - MatMul, Gemm, Conv and pooling to eff -----===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

/// MatMul with numpy semantics: rank-1 operands are promoted to matrices and
/// the added dimension is removed from the result.
LogicalResult convertMatMul(NodeContext &ctx) {
  Value lhs = ctx.input(0), rhs = ctx.input(1);
  RankedTensorType lhsType = ctx.inputType(0), rhsType = ctx.inputType(1);
  bool lhsVector = lhsType.getRank() == 1, rhsVector = rhsType.getRank() == 1;
  if (lhsVector)
    lhs = ctx.reshape(lhs, {1, lhsType.getDimSize(0)});
  if (rhsVector)
    rhs = ctx.reshape(rhs, {rhsType.getDimSize(0), 1});
  RankedTensorType l = cast<RankedTensorType>(lhs.getType());
  RankedTensorType r = cast<RankedTensorType>(rhs.getType());
  if (l.getShape().back() != r.getShape()[r.getRank() - 2])
    return ctx.error("cannot multiply " + eff::formatShape(lhsType.getShape()) +
                     " by " + eff::formatShape(rhsType.getShape()));
  if (!eff::broadcastShapes(l.getShape().drop_back(2), r.getShape().drop_back(2)))
    return ctx.error("batch dimensions of " +
                     eff::formatShape(lhsType.getShape()) + " and " +
                     eff::formatShape(rhsType.getShape()) + " do not broadcast");
  Value result = ctx.create<eff::MatmulOp>(lhs, rhs);
  if (lhsVector || rhsVector) {
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(result.getType()).getShape());
    if (rhsVector)
      shape.pop_back();
    if (lhsVector)
      shape.erase(shape.end() - (rhsVector ? 1 : 2));
    result = ctx.reshape(result, shape);
  }
  ctx.setOutput(0, result);
  return success();
}

LogicalResult convertGemm(NodeContext &ctx) {
  if (ctx.inputType(0).getRank() != 2 || ctx.inputType(1).getRank() != 2)
    return ctx.error("A and B must be matrices");
  bool transA = ctx.getInt("transA", 0), transB = ctx.getInt("transB", 0);
  int64_t ka = ctx.inputType(0).getDimSize(transA ? 0 : 1);
  int64_t kb = ctx.inputType(1).getDimSize(transB ? 1 : 0);
  if (ka != kb)
    return ctx.error("inner dimensions differ: " + Twine(ka) + " vs " +
                     Twine(kb));
  Value bias = ctx.hasInput(2) ? ctx.input(2) : Value();
  auto linear = eff::LinearOp::create(
      ctx.builder, ctx.loc(), ctx.input(0), ctx.input(1), bias,
      ctx.builder.getBoolAttr(transA), ctx.builder.getBoolAttr(transB),
      ctx.builder.getF64FloatAttr(ctx.getFloat("alpha", 1.0)),
      ctx.builder.getF64FloatAttr(ctx.getFloat("beta", 1.0)));
  ctx.setOutput(0, linear);
  return success();
}

/// Window attributes of Conv and pooling, normalised to 2-D.
struct Window {
  SmallVector<int64_t> kernel, strides, padding, dilations;
};

/// Reads kernel/strides/pads/dilations/auto_pad for `spatialRank` (1 or 2)
/// spatial dimensions of `inputShape` and returns them as 2-D windows.
FailureOr<Window> readWindow(NodeContext &ctx, ArrayRef<int64_t> inputShape,
                             ArrayRef<int64_t> kernel) {
  size_t spatial = kernel.size();
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = ctx.getInts("strides");
  w.dilations = ctx.getInts("dilations");
  SmallVector<int64_t> pads = ctx.getInts("pads");
  if (w.strides.empty())
    w.strides.assign(spatial, 1);
  if (w.dilations.empty())
    w.dilations.assign(spatial, 1);
  if (pads.empty())
    pads.assign(2 * spatial, 0);
  if (w.strides.size() != spatial || w.dilations.size() != spatial ||
      pads.size() != 2 * spatial)
    return static_cast<LogicalResult>(
        ctx.error("strides, dilations and pads do not match the " +
                  Twine(spatial) + " spatial dimensions"));
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < spatial; ++d) {
      int64_t in = inputShape[2 + d];
      int64_t out = (in + w.strides[d] - 1) / w.strides[d];
      int64_t total = std::max<int64_t>(
          0, (out - 1) * w.strides[d] + (kernel[d] - 1) * w.dilations[d] + 1 - in);
      int64_t small = total / 2, large = total - small;
      pads[d] = autoPad == "SAME_UPPER" ? small : large;
      pads[d + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return static_cast<LogicalResult>(
        ctx.unsupportedAttribute("auto_pad", "'" + autoPad + "'"));
  }
  if (spatial == 1) {
    // A 1-D window is a 2-D window over [1, L].
    w.kernel.insert(w.kernel.begin(), 1);
    w.strides.insert(w.strides.begin(), 1);
    w.dilations.insert(w.dilations.begin(), 1);
    w.padding = {0, pads[0], 0, pads[1]};
  } else {
    w.padding = pads;
  }
  return w;
}

/// NCL -> NC1L for 1-D convolution and pooling.
Value to2D(NodeContext &ctx, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() != 3)
    return value;
  return ctx.reshape(value, {type.getDimSize(0), type.getDimSize(1), 1,
                             type.getDimSize(2)});
}

Value from2D(NodeContext &ctx, Value value, int64_t rank) {
  if (rank != 3)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  return ctx.reshape(value, {type.getDimSize(0), type.getDimSize(1),
                             type.getDimSize(3)});
}

LogicalResult checkSpatialRank(NodeContext &ctx, int64_t rank) {
  if (rank != 3 && rank != 4)
    return ctx.error("only 1-D and 2-D windows are supported (input rank " +
                     Twine(rank) + ")");
  return success();
}

LogicalResult convertConv(NodeContext &ctx) {
  RankedTensorType inputType = ctx.inputType(0), filterType = ctx.inputType(1);
  int64_t rank = inputType.getRank();
  if (failed(checkSpatialRank(ctx, rank)))
    return failure();
  SmallVector<int64_t> kernel = ctx.getInts("kernel_shape");
  if (kernel.empty())
    kernel.assign(filterType.getShape().begin() + 2, filterType.getShape().end());
  FailureOr<Window> w = readWindow(ctx, inputType.getShape(), kernel);
  if (failed(w))
    return failure();
  int64_t groups = ctx.getInt("group", 1);
  int64_t channels = inputType.getDimSize(1);
  if (groups < 1 || channels % groups ||
      filterType.getDimSize(1) * groups != channels)
    return ctx.error("group " + Twine(groups) + " does not fit " +
                     Twine(channels) + " input channels and a filter of shape " +
                     eff::formatShape(filterType.getShape()));
  Value bias = ctx.hasInput(2) ? ctx.input(2) : Value();
  auto conv = eff::Conv2DOp::create(ctx.builder, ctx.loc(), to2D(ctx, ctx.input(0)),
                                    to2D(ctx, ctx.input(1)), bias, w->strides,
                                    w->padding, w->dilations, groups);
  ctx.setOutput(0, from2D(ctx, conv, rank));
  return success();
}

LogicalResult convertMaxPool(NodeContext &ctx) {
  RankedTensorType inputType = ctx.inputType(0);
  int64_t rank = inputType.getRank();
  if (failed(checkSpatialRank(ctx, rank)))
    return failure();
  if (ctx.isOutputUsed(1))
    return ctx.error("the Indices output is not supported");
  if (ctx.getInt("storage_order", 0) != 0)
    return ctx.unsupportedAttribute("storage_order", "1");
  FailureOr<Window> w =
      readWindow(ctx, inputType.getShape(), ctx.getInts("kernel_shape"));
  if (failed(w))
    return failure();
  auto pool = eff::MaxPool2DOp::create(
      ctx.builder, ctx.loc(), to2D(ctx, ctx.input(0)), w->kernel, w->strides,
      w->padding, w->dilations, ctx.getInt("ceil_mode", 0) != 0);
  ctx.setOutput(0, from2D(ctx, pool, rank));
  return success();
}

LogicalResult convertAveragePool(NodeContext &ctx) {
  RankedTensorType inputType = ctx.inputType(0);
  int64_t rank = inputType.getRank();
  if (failed(checkSpatialRank(ctx, rank)))
    return failure();
  FailureOr<Window> w =
      readWindow(ctx, inputType.getShape(), ctx.getInts("kernel_shape"));
  if (failed(w))
    return failure();
  if (llvm::any_of(w->dilations, [](int64_t d) { return d != 1; }))
    return ctx.unsupportedAttribute("dilations", "other than 1");
  auto pool = eff::AvgPool2DOp::create(
      ctx.builder, ctx.loc(), to2D(ctx, ctx.input(0)), w->kernel, w->strides,
      w->padding, ctx.getInt("ceil_mode", 0) != 0,
      ctx.getInt("count_include_pad", 0) != 0);
  ctx.setOutput(0, from2D(ctx, pool, rank));
  return success();
}

/// GlobalAveragePool / GlobalMaxPool: a reduction over the spatial dims.
template <typename OpTy>
LogicalResult convertGlobalPool(NodeContext &ctx) {
  int64_t rank = ctx.inputType(0).getRank();
  if (rank < 3)
    return ctx.error("input must be N x C x spatial...");
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  ctx.setOutput(0, ctx.create<OpTy>(ctx.input(0), axes, /*keep_dims=*/true));
  return success();
}

} // namespace

void effopt::onnx_import::populateContractionConverters(ConverterMap &map) {
  map["MatMul"] = convertMatMul;
  map["Gemm"] = convertGemm;
  map["Conv"] = convertConv;
  map["MaxPool"] = convertMaxPool;
  map["AveragePool"] = convertAveragePool;
  map["GlobalAveragePool"] = convertGlobalPool<eff::ReduceMeanOp>;
  map["GlobalMaxPool"] = convertGlobalPool<eff::ReduceMaxOp>;
}
