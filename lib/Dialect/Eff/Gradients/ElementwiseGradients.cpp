//===- ElementwiseGradients.cpp - gradient rules of elementwise ops -------===//

#include "GradientRule.h"

#include <cmath>

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::gradients;

namespace {

Type elementTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

//===--- Unary ------------------------------------------------------------===//

LogicalResult negGrad(NegOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.neg(ctx.resultGrad()));
  return success();
}

/// d|x| = sign(x) (0 at 0, as PyTorch).
LogicalResult absGrad(AbsOp op, GradientContext &ctx) {
  Value x = op.getInput(), g = ctx.resultGrad();
  Value zero = ctx.scalar(0.0, elementTypeOf(x));
  Value negative = ctx.select(ctx.cmp(CmpPredicate::lt, x, zero), ctx.neg(g),
                              ctx.zerosLike(g));
  ctx.setGrad(0, ctx.select(ctx.cmp(CmpPredicate::gt, x, zero), g, negative));
  return success();
}

/// d exp(x) = exp(x): reads the output.
LogicalResult expGrad(ExpOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.mul(ctx.resultGrad(), op.getResult()));
  return success();
}

LogicalResult logGrad(LogOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.div(ctx.resultGrad(), op.getInput()));
  return success();
}

/// d sqrt(x) = 1 / (2 sqrt(x)): reads the output.
LogicalResult sqrtGrad(SqrtOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.div(ctx.resultGrad(), ctx.scale(op.getResult(), 2.0)));
  return success();
}

/// d x^-1/2 = -1/2 y^3.
LogicalResult rsqrtGrad(RsqrtOp op, GradientContext &ctx) {
  Value y = op.getResult();
  Value cube = ctx.mul(ctx.mul(y, y), y);
  ctx.setGrad(0, ctx.scale(ctx.mul(ctx.resultGrad(), cube), -0.5));
  return success();
}

/// d 1/x = -y^2.
LogicalResult reciprocalGrad(ReciprocalOp op, GradientContext &ctx) {
  Value y = op.getResult();
  ctx.setGrad(0, ctx.neg(ctx.mul(ctx.resultGrad(), ctx.mul(y, y))));
  return success();
}

/// d tanh = 1 - y^2.
LogicalResult tanhGrad(TanhOp op, GradientContext &ctx) {
  Value y = op.getResult();
  Value one = ctx.scalar(1.0, elementTypeOf(y));
  ctx.setGrad(0, ctx.mul(ctx.resultGrad(), ctx.sub(one, ctx.mul(y, y))));
  return success();
}

/// d sigmoid = y (1 - y).
LogicalResult sigmoidGrad(SigmoidOp op, GradientContext &ctx) {
  Value y = op.getResult();
  Value one = ctx.scalar(1.0, elementTypeOf(y));
  ctx.setGrad(0, ctx.mul(ctx.resultGrad(), ctx.mul(y, ctx.sub(one, y))));
  return success();
}

/// d relu = [y > 0]: reads the output, as PyTorch's threshold_backward.
LogicalResult reluGrad(ReluOp op, GradientContext &ctx) {
  Value y = op.getResult(), g = ctx.resultGrad();
  Value positive =
      ctx.cmp(CmpPredicate::gt, y, ctx.scalar(0.0, elementTypeOf(y)));
  ctx.setGrad(0, ctx.select(positive, g, ctx.zerosLike(g)));
  return success();
}

/// d erf = 2/sqrt(pi) exp(-x^2).
LogicalResult erfGrad(ErfOp op, GradientContext &ctx) {
  Value x = op.getInput();
  Value expNegSquare = ctx.create<ExpOp>(ctx.neg(ctx.mul(x, x)));
  ctx.setGrad(0, ctx.mul(ctx.resultGrad(),
                         ctx.scale(expNegSquare, 2.0 / std::sqrt(M_PI))));
  return success();
}

LogicalResult geluGrad(GeluOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<GeluGradOp>(op.getInput(), ctx.resultGrad(),
                                        op.getApproximate()));
  return success();
}

/// Float-to-float casts pass the gradient back in the input's type.
LogicalResult castGrad(CastOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.castTo(ctx.resultGrad(),
                            op.getInput().getType().getElementType()));
  return success();
}

/// Reuses the forward mask: dx = dy * mask / (1 - ratio).
LogicalResult dropoutGrad(DropoutOp op, GradientContext &ctx) {
  if (ctx.resultGrad(1))
    return op.emitOpError("the dropout mask is not differentiable");
  Value g = ctx.resultGrad(0);
  Type elementType = elementTypeOf(g);
  Value keep = ctx.castTo(op.getMask(), elementType);
  double scale = 1.0 / (1.0 - op.getRatio().convertToDouble());
  ctx.setGrad(0, ctx.mul(ctx.mul(g, keep), ctx.scalar(scale, elementType)));
  return success();
}

//===--- Binary with broadcasting -------------------------------------------===//
// setGrad sums each gradient back to its operand's shape.

LogicalResult addGrad(AddOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.resultGrad());
  ctx.setGrad(1, ctx.resultGrad());
  return success();
}

LogicalResult subGrad(SubOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.resultGrad());
  if (ctx.need(1))
    ctx.setGrad(1, ctx.neg(ctx.resultGrad()));
  return success();
}

LogicalResult mulGrad(MulOp op, GradientContext &ctx) {
  if (ctx.need(0))
    ctx.setGrad(0, ctx.mul(ctx.resultGrad(), op.getRhs()));
  if (ctx.need(1))
    ctx.setGrad(1, ctx.mul(ctx.resultGrad(), op.getLhs()));
  return success();
}

/// d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b.
LogicalResult divGrad(DivOp op, GradientContext &ctx) {
  Value g = ctx.resultGrad();
  if (ctx.need(0))
    ctx.setGrad(0, ctx.div(g, op.getRhs()));
  if (ctx.need(1))
    ctx.setGrad(1, ctx.neg(ctx.div(ctx.mul(g, op.getResult()), op.getRhs())));
  return success();
}

/// d(a^b)/da = b a^(b-1) (0 where b == 0); d(a^b)/db = a^b log(a) (0 where
/// a == 0 and b >= 0), as PyTorch's pow_backward.
LogicalResult powGrad(PowOp op, GradientContext &ctx) {
  Value a = op.getLhs(), b = op.getRhs(), g = ctx.resultGrad();
  Type elementType = elementTypeOf(a);
  Value zero = ctx.scalar(0.0, elementType);
  if (ctx.need(0)) {
    Value bMinusOne = ctx.sub(b, ctx.scalar(1.0, elementType));
    Value local = ctx.mul(b, ctx.create<PowOp>(a, bMinusOne));
    Value grad = ctx.mul(g, local);
    ctx.setGrad(0, ctx.select(ctx.cmp(CmpPredicate::eq, b, zero),
                              ctx.zerosLike(grad), grad));
  }
  if (ctx.need(1)) {
    Value grad = ctx.mul(g, ctx.mul(op.getResult(), ctx.create<LogOp>(a)));
    Value aIsZero = ctx.cmp(CmpPredicate::eq, a, zero);
    Value bNonNegative = ctx.cmp(CmpPredicate::ge, b, zero);
    Value mask = ctx.create<LogicalAndOp>(aIsZero, bNonNegative);
    ctx.setGrad(1, ctx.select(mask, ctx.zerosLike(grad), grad));
  }
  return success();
}

/// max/min: the gradient goes to the selected operand; ties split it evenly
/// (PyTorch's maximum/minimum backward).
template <typename OpTy, CmpPredicate wins>
LogicalResult extremumGrad(OpTy op, GradientContext &ctx) {
  Value a = op.getLhs(), b = op.getRhs(), g = ctx.resultGrad();
  Type elementType = elementTypeOf(a);
  Value one = ctx.scalar(1.0, elementType), half = ctx.scalar(0.5, elementType),
        zero = ctx.scalar(0.0, elementType);
  Value tie = ctx.cmp(CmpPredicate::eq, a, b);
  Value aWins = ctx.cmp(wins, a, b);
  Value aShare = ctx.select(aWins, one, ctx.select(tie, half, zero));
  if (ctx.need(0))
    ctx.setGrad(0, ctx.mul(g, aShare));
  if (ctx.need(1))
    ctx.setGrad(1, ctx.mul(g, ctx.sub(one, aShare)));
  return success();
}

LogicalResult whereGrad(WhereOp op, GradientContext &ctx) {
  Value g = ctx.resultGrad(), zeros = ctx.zerosLike(ctx.resultGrad());
  if (ctx.need(1))
    ctx.setGrad(1, ctx.select(op.getCondition(), g, zeros));
  if (ctx.need(2))
    ctx.setGrad(2, ctx.select(op.getCondition(), zeros, g));
  return success();
}

bool notTheCondition(unsigned index) { return index != 0; }

} // namespace

void effopt::eff::gradients::registerElementwiseGradients(MLIRContext *context) {
  attachRule<NegOp, negGrad>(context);
  attachRule<AbsOp, absGrad>(context);
  attachRule<ExpOp, expGrad>(context);
  attachRule<LogOp, logGrad>(context);
  attachRule<SqrtOp, sqrtGrad>(context);
  attachRule<RsqrtOp, rsqrtGrad>(context);
  attachRule<ReciprocalOp, reciprocalGrad>(context);
  attachRule<TanhOp, tanhGrad>(context);
  attachRule<SigmoidOp, sigmoidGrad>(context);
  attachRule<ReluOp, reluGrad>(context);
  attachRule<ErfOp, erfGrad>(context);
  attachRule<GeluOp, geluGrad>(context);
  attachRule<CastOp, castGrad>(context);
  attachRule<DropoutOp, dropoutGrad, onlyFirstOperand>(context);
  attachRule<AddOp, addGrad>(context);
  attachRule<SubOp, subGrad>(context);
  attachRule<MulOp, mulGrad>(context);
  attachRule<DivOp, divGrad>(context);
  attachRule<PowOp, powGrad>(context);
  attachRule<MaxOp, extremumGrad<MaxOp, CmpPredicate::gt>>(context);
  attachRule<MinOp, extremumGrad<MinOp, CmpPredicate::lt>>(context);
  attachRule<WhereOp, whereGrad, notTheCondition>(context);
}
