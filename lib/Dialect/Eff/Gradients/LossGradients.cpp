//===- LossGradients.cpp - classification loss rules ----------------------===//

#include "GradientRule.h"

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::gradients;

namespace {

LogicalResult softmaxCrossEntropyGrad(SoftmaxCrossEntropyOp op,
                                      GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<SoftmaxCrossEntropyGradOp>(
                     op.getInput().getType(), op.getInput(), op.getLabels(),
                     ctx.resultGrad(), op.getWeight(), op.getReduction(),
                     op.getIgnoreIndexAttr()));
  return success();
}

LogicalResult nllLossGrad(NllLossOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<NllLossGradOp>(
                     op.getInput().getType(), op.getInput(), op.getLabels(),
                     ctx.resultGrad(), op.getWeight(), op.getReduction(),
                     op.getIgnoreIndexAttr()));
  return success();
}


} // namespace

void effopt::eff::gradients::registerLossGradients(MLIRContext *context) {
  attachRule<SoftmaxCrossEntropyOp, softmaxCrossEntropyGrad, onlyFirstOperand>(
      context);  // class weights are not trained
  attachRule<NllLossOp, nllLossGrad, onlyFirstOperand>(context);
}
