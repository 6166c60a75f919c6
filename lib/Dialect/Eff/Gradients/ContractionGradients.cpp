//===- ContractionGradients.cpp - matmul, linear, conv and pooling rules --===//

#include "GradientRule.h"

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::gradients;

namespace {

/// Flattens all but the last dimension: [.., M, K] -> [prod(..) * M, K].
Value flattenRows(GradientContext &ctx, Value x) {
  RankedTensorType type = ctx.typeOf(x);
  int64_t cols = type.getShape().back();
  return ctx.reshape(x, {type.getNumElements() / cols, cols});
}

/// dA = dY B^T, dB = A^T dY, each summed over broadcast batch dimensions.
/// A batched activation times a weight matrix (the transformer case) is
/// done as one 2-D product over the flattened rows.
LogicalResult matmulGrad(MatmulOp op, GradientContext &ctx) {
  Value a = op.getLhs(), b = op.getRhs(), g = ctx.resultGrad();
  if (ctx.need(0))
    ctx.setGrad(0, ctx.create<MatmulOp>(g, ctx.transposeLastTwo(b)));
  if (ctx.need(1)) {
    if (ctx.typeOf(b).getRank() == 2 && ctx.typeOf(a).getRank() > 2) {
      ctx.setGrad(1, ctx.create<LinearOp>(
                         flattenRows(ctx, a), flattenRows(ctx, g), Value(),
                         /*transpose_a=*/true, /*transpose_b=*/false,
                         APFloat(1.0), APFloat(1.0)));
    } else {
      ctx.setGrad(1, ctx.create<MatmulOp>(ctx.transposeLastTwo(a), g));
    }
  }
  return success();
}

/// y = alpha op(A) op(B) + beta bias, with op(X) = X or X^T. Each operand
/// gradient is another `linear` with the transpose flags worked out.
LogicalResult linearGrad(LinearOp op, GradientContext &ctx) {
  Value a = op.getA(), b = op.getB(), g = ctx.resultGrad();
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  APFloat alpha = op.getAlpha(), one(1.0);
  if (ctx.need(0)) {
    Value da = ta ? ctx.create<LinearOp>(b, g, Value(), tb, true, alpha, one)
                  : ctx.create<LinearOp>(g, b, Value(), false, !tb, alpha, one);
    ctx.setGrad(0, da);
  }
  if (ctx.need(1)) {
    Value db = tb ? ctx.create<LinearOp>(g, a, Value(), true, ta, alpha, one)
                  : ctx.create<LinearOp>(a, g, Value(), !ta, false, alpha, one);
    ctx.setGrad(1, db);
  }
  if (ctx.need(2)) {
    double beta = op.getBeta().convertToDouble();
    ctx.setGrad(2, beta == 1.0 ? g : ctx.scale(g, beta));
  }
  return success();
}

LogicalResult conv2dGrad(Conv2DOp op, GradientContext &ctx) {
  Value g = ctx.resultGrad();
  if (ctx.need(0))
    ctx.setGrad(0, ctx.create<Conv2DInputGradOp>(
                       op.getInput().getType(), g, op.getFilter(),
                       op.getStrides(), op.getPadding(), op.getDilations(),
                       op.getGroups()));
  if (ctx.need(1))
    ctx.setGrad(1, ctx.create<Conv2DFilterGradOp>(
                       op.getFilter().getType(), op.getInput(), g,
                       op.getStrides(), op.getPadding(), op.getDilations(),
                       op.getGroups()));
  if (ctx.need(2))
    ctx.setGrad(2, ctx.create<ReduceSumOp>(g, ArrayRef<int64_t>{0, 2, 3},
                                           /*keep_dims=*/false));
  return success();
}

LogicalResult maxPoolGrad(MaxPool2DOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<MaxPool2DGradOp>(
                     op.getInput().getType(), op.getInput(), ctx.resultGrad(),
                     op.getKernelSize(), op.getStrides(), op.getPadding(),
                     op.getDilations(), op.getCeilMode()));
  return success();
}

LogicalResult avgPoolGrad(AvgPool2DOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<AvgPool2DGradOp>(
                     op.getInput().getType(), ctx.resultGrad(),
                     op.getKernelSize(), op.getStrides(), op.getPadding(),
                     op.getCeilMode(), op.getCountIncludePad()));
  return success();
}

} // namespace

void effopt::eff::gradients::registerContractionGradients(MLIRContext *context) {
  attachRule<MatmulOp, matmulGrad>(context);
  attachRule<LinearOp, linearGrad>(context);
  attachRule<Conv2DOp, conv2dGrad>(context);
  attachRule<MaxPool2DOp, maxPoolGrad>(context);
  attachRule<AvgPool2DOp, avgPoolGrad>(context);
}
