//===- NormalizationGradients.cpp - softmax and normalisation rules -------===//

#include "GradientRule.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::gradients;

namespace {

/// Both read the saved output, not the input.
LogicalResult softmaxGrad(SoftmaxOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<SoftmaxGradOp>(op.getResult(), ctx.resultGrad(),
                                           op.getAxis()));
  return success();
}

LogicalResult logSoftmaxGrad(LogSoftmaxOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<LogSoftmaxGradOp>(op.getResult(), ctx.resultGrad(),
                                              op.getAxis()));
  return success();
}

/// Reads the input and the mean / rstd the forward returned.
LogicalResult layerNormGrad(LayerNormOp op, GradientContext &ctx) {
  if (ctx.resultGrad(1) || ctx.resultGrad(2))
    return op.emitOpError(
        "gradients through the returned mean / rstd are not supported");
  RankedTensorType input = op.getInput().getType();
  int64_t axis = *normalizeAxis(op.getAxis(), input.getRank());
  SmallVector<int64_t> normalized(input.getShape().drop_front(axis));
  RankedTensorType paramType = input.clone(normalized);
  auto grad = LayerNormGradOp::create(
      ctx.b, ctx.loc, input, paramType, paramType, op.getInput(), op.getMean(),
      op.getRstd(), ctx.resultGrad(), op.getScale(), axis);
  ctx.setGrad(0, grad.getInputGrad());
  // Operand indices follow the op's segments: input, scale?, bias?.
  unsigned next = 1;
  if (op.getScale())
    ctx.setGrad(next++, grad.getScaleGrad());
  if (op.getBias())
    ctx.setGrad(next, grad.getBiasGrad());
  return success();
}

LogicalResult batchNormTrainGrad(BatchNormTrainOp op, GradientContext &ctx) {
  for (unsigned i = 1; i < 5; ++i)
    if (ctx.resultGrad(i))
      return op.emitOpError(
          "gradients through running or saved statistics are not supported");
  auto grad = BatchNormTrainGradOp::create(
      ctx.b, ctx.loc, op.getInput().getType(), op.getScale().getType(),
      op.getBias().getType(), op.getInput(), op.getSavedMean(),
      op.getSavedRstd(), op.getScale(), ctx.resultGrad());
  ctx.setGrad(0, grad.getInputGrad());
  ctx.setGrad(1, grad.getScaleGrad());
  ctx.setGrad(2, grad.getBiasGrad());
  return success();
}

/// Inference-mode batch norm is affine per channel:
/// y = (x - mean) * rstd * scale + bias with rstd = 1/sqrt(var + eps).
LogicalResult batchNormGrad(BatchNormOp op, GradientContext &ctx) {
  RankedTensorType input = op.getInput().getType();
  Type elementType = input.getElementType();
  SmallVector<int64_t> channelShape(input.getRank(), 1);
  channelShape[1] = input.getDimSize(1);
  auto perChannel = [&](Value v) { return ctx.reshape(v, channelShape); };
  Value eps = ctx.scalar(op.getEpsilon().convertToDouble(), elementType);
  Value rstd = ctx.create<RsqrtOp>(ctx.add(op.getVariance(), eps));
  Value g = ctx.resultGrad();
  SmallVector<int64_t> reduceAxes = {0};
  for (int64_t d = 2; d < input.getRank(); ++d)
    reduceAxes.push_back(d);
  if (ctx.need(0))
    ctx.setGrad(0, ctx.mul(g, perChannel(ctx.mul(op.getScale(), rstd))));
  if (ctx.need(1)) {
    Value normalized = ctx.mul(ctx.sub(op.getInput(), perChannel(op.getMean())),
                               perChannel(rstd));
    ctx.setGrad(1, ctx.create<ReduceSumOp>(ctx.mul(g, normalized), reduceAxes,
                                           /*keep_dims=*/false));
  }
  if (ctx.need(2))
    ctx.setGrad(2, ctx.create<ReduceSumOp>(g, reduceAxes, /*keep_dims=*/false));
  return success();
}

/// Input, scale and bias; the statistics operands are not trained.
bool inputScaleAndBias(unsigned index) { return index <= 2; }

} // namespace

void effopt::eff::gradients::registerNormalizationGradients(
    MLIRContext *context) {
  attachRule<SoftmaxOp, softmaxGrad>(context);
  attachRule<LogSoftmaxOp, logSoftmaxGrad>(context);
  attachRule<LayerNormOp, layerNormGrad>(context);
  attachRule<BatchNormTrainOp, batchNormTrainGrad, inputScaleAndBias>(context);
  attachRule<BatchNormOp, batchNormGrad, inputScaleAndBias>(context);
}
