//===- ConvertLoss.cpp - ONNX losses to eff -------------------------------===//

#include "NodeImporter.h"

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

FailureOr<eff::LossReduction> readReduction(NodeContext &ctx) {
  std::string reduction = ctx.getString("reduction", "mean");
  if (reduction == "mean")
    return eff::LossReduction::Mean;
  if (reduction == "sum")
    return eff::LossReduction::Sum;
  if (reduction == "none")
    return eff::LossReduction::None;
  return static_cast<LogicalResult>(
      ctx.unsupportedAttribute("reduction", "'" + reduction + "'"));
}

template <typename OpTy>
LogicalResult convertClassificationLoss(NodeContext &ctx) {
  FailureOr<eff::LossReduction> reduction = readReduction(ctx);
  if (failed(reduction))
    return failure();
  IntegerAttr ignoreIndex;
  if (ctx.hasAttribute("ignore_index"))
    ignoreIndex = ctx.builder.getI64IntegerAttr(ctx.getInt("ignore_index", 0));
  Value weight = ctx.hasInput(2) ? ctx.input(2) : Value();
  Value loss = ctx.create<OpTy>(ctx.input(0), ctx.input(1), weight, *reduction,
                                ignoreIndex);
  ctx.setOutput(0, loss);
  if constexpr (std::is_same_v<OpTy, eff::SoftmaxCrossEntropyOp>) {
    // The optional log_prob output is the log-softmax over the class axis.
    if (ctx.isOutputUsed(1))
      ctx.setOutput(1, ctx.create<eff::LogSoftmaxOp>(ctx.input(0), 1));
  }
  return success();
}

} // namespace

void effopt::onnx_import::populateLossConverters(ConverterMap &map) {
  map["SoftmaxCrossEntropyLoss"] =
      convertClassificationLoss<eff::SoftmaxCrossEntropyOp>;
  map["NegativeLogLikelihoodLoss"] =
      convertClassificationLoss<eff::NllLossOp>;
}
