//===- ConvertNormalization.cpp - softmax and normalisation to eff --------===//

#include "NodeImporter.h"

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

template <typename OpTy>
LogicalResult convertSoftmax(NodeContext &ctx) {
  FailureOr<int64_t> axis =
      ctx.normalizedAxis(ctx.getInt("axis", -1), ctx.inputType(0).getRank());
  if (failed(axis))
    return failure();
  ctx.setOutput(0, ctx.create<OpTy>(ctx.input(0), *axis));
  return success();
}

LogicalResult convertLayerNormalization(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  FailureOr<int64_t> axis =
      ctx.normalizedAxis(ctx.getInt("axis", -1), type.getRank());
  if (failed(axis))
    return failure();
  if (ctx.getInt("stash_type", 1) != 1)
    return ctx.unsupportedAttribute("stash_type",
                                    Twine(ctx.getInt("stash_type", 1)));
  // ONNX broadcasts scale and bias; eff wants the normalised shape.
  ArrayRef<int64_t> normalized = type.getShape().drop_front(*axis);
  auto toNormalized = [&](unsigned i) -> Value {
    if (!ctx.hasInput(i))
      return {};
    Value value = ctx.input(i);
    if (ctx.inputType(i).getShape() != normalized)
      value = ctx.create<eff::BroadcastToOp>(ctx.inputType(i).clone(normalized),
                                             value);
    return value;
  };
  Value scale = toNormalized(1), bias = toNormalized(2);
  auto norm = ctx.build<eff::LayerNormOp>(
      ctx.input(0), scale, bias, ctx.builder.getI64IntegerAttr(*axis),
      ctx.builder.getF64FloatAttr(ctx.getFloat("epsilon", 1e-5)));
  if (!norm)
    return failure();
  ctx.setOutput(0, norm.getOutput());
  ctx.setOutput(1, norm.getMean());
  ctx.setOutput(2, norm.getRstd());
  return success();
}

LogicalResult convertBatchNormalization(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (type.getRank() < 2)
    return ctx.error("input must have a channel dimension");
  // Opset 14 states the mode; opset 13 (BatchNormalization-9) is in training
  // mode exactly when it has the extra outputs.
  bool training = ctx.opset >= 14 ? ctx.getInt("training_mode", 0) != 0
                                  : ctx.node.output_size() > 1;
  double epsilon = ctx.getFloat("epsilon", 1e-5);
  if (!training) {
    ctx.setOutput(0, ctx.create<eff::BatchNormOp>(
                         ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3),
                         ctx.input(4), ctx.builder.getF64FloatAttr(epsilon)));
    return success();
  }
  // ONNX's momentum weighs the old statistics; PyTorch's (eff's) the new.
  // Computed in float, as the exporter wrote it: 1 - 0.9 reads back as 0.1.
  double momentum = decimalValue(
      APFloat(static_cast<float>(1.0 - ctx.getFloat("momentum", 0.9))));
  auto norm = ctx.build<eff::BatchNormTrainOp>(
      ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4),
      ctx.builder.getF64FloatAttr(epsilon),
      ctx.builder.getF64FloatAttr(momentum));
  if (!norm)
    return failure();
  ctx.setOutput(0, norm.getOutput());
  ctx.setOutput(1, norm.getNewRunningMean());
  ctx.setOutput(2, norm.getNewRunningVar());
  ctx.recordStateUpdate(3, norm.getNewRunningMean());
  ctx.recordStateUpdate(4, norm.getNewRunningVar());
  if (ctx.opset < 14) {
    ctx.setOutput(3, norm.getSavedMean());
    ctx.setOutput(4, norm.getSavedRstd());
  }
  return success();
}

/// InstanceNormalization(x, scale, bias): each (sample, channel) normalised
/// over the spatial dimensions with biased variance, which is eff.layer_norm
/// over dimensions [2, rank), then the per-channel scale and bias.
/// torch's GroupNorm exports as this on [N, groups, -1].
LogicalResult convertInstanceNormalization(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank();
  if (rank < 3)
    return ctx.error("input must be N x C x D1 x ...");
  int64_t channels = type.getDimSize(1);
  for (unsigned i : {1u, 2u})
    if (ctx.inputType(i).getShape() != ArrayRef<int64_t>{channels})
      return ctx.error(Twine(i == 1 ? "scale" : "bias") + " must have shape [" +
                       Twine(channels) + "]");
  auto norm = ctx.build<eff::LayerNormOp>(
      ctx.input(0), Value(), Value(), ctx.builder.getI64IntegerAttr(2),
      ctx.builder.getF64FloatAttr(ctx.getFloat("epsilon", 1e-5)));
  if (!norm)
    return failure();
  SmallVector<int64_t> perChannel(rank - 1, 1);
  perChannel[0] = channels;
  Value scaled = ctx.create<eff::MulOp>(norm.getOutput(),
                                        ctx.reshape(ctx.input(1), perChannel));
  ctx.setOutput(
      0, ctx.create<eff::AddOp>(scaled, ctx.reshape(ctx.input(2), perChannel)));
  return success();
}

} // namespace

void effopt::onnx_import::populateNormalizationConverters(ConverterMap &map) {
  map["Softmax"] = convertSoftmax<eff::SoftmaxOp>;
  map["LogSoftmax"] = convertSoftmax<eff::LogSoftmaxOp>;
  map["LayerNormalization"] = convertLayerNormalization;
  map["BatchNormalization"] = convertBatchNormalization;
  map["InstanceNormalization"] = convertInstanceNormalization;
}
