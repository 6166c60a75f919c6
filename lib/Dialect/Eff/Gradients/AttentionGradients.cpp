//===- AttentionGradients.cpp - the rule of eff.attention -----------------===//

#include "GradientRule.h"

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::gradients;

namespace {

/// One eff.attention_grad reads q, k, v, the output and the log-sum-exp:
/// nothing Tq x Tk is saved. The mask receives no gradient.
LogicalResult attentionGrad(AttentionOp op, GradientContext &ctx) {
  if (ctx.resultGrad(1))
    return op.emitOpError(
        "gradients through the returned log-sum-exp are not supported");
  if (!ctx.resultGrad(0))
    return success();
  auto grad = AttentionGradOp::create(
      ctx.b, ctx.loc, op.getQuery().getType(), op.getKey().getType(),
      op.getValue().getType(), op.getQuery(), op.getKey(), op.getValue(),
      op.getOutput(), op.getLse(), ctx.resultGrad(0), op.getMask(),
      op.getScaleAttr(), op.getCausalAttr(), op.getDropoutAttr(),
      op.getSeedAttr());
  ctx.setGrad(0, grad.getQueryGrad());
  ctx.setGrad(1, grad.getKeyGrad());
  ctx.setGrad(2, grad.getValueGrad());
  return success();
}

/// Query, key and value; never the mask.
bool queryKeyValue(unsigned index) { return index <= 2; }

} // namespace

void effopt::eff::gradients::registerAttentionGradients(MLIRContext *context) {
  attachRule<AttentionOp, attentionGrad, queryKeyValue>(context);
}
