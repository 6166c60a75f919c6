//===- LowerLossScale.cpp - unscaling gradients, the loss-scale update ----===//
//
// eff.unscale_gradients lowers to, per gradient, a reduction that ORs "is
// inf or NaN" over its elements and an elementwise multiply by 1/scale. The
// multiply is a plain elementwise loop so fusion moves it into the
// optimizer's update loop that reads the unscaled gradient: each gradient is
// read once by the check and once by the (fused) update.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {

/// True when `x` is inf or NaN: x - x is NaN exactly then.
Value isNonFinite(OpBuilder &b, Location loc, Value x) {
  Value diff = arith::SubFOp::create(b, loc, x, x);
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, diff, diff);
}

struct UnscaleGradientsLowering : OpRewritePattern<UnscaleGradientsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UnscaleGradientsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i1 = rewriter.getI1Type();
    // 1/scale once, in f32 (as PyTorch's inv_scale = scale.reciprocal()).
    Value inverse = buildElementwise(
        rewriter, loc, tensorType(op.getScale()), {op.getScale()},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::DivFOp::create(
              b, l, scalarConstant(b, l, args[0].getType(), 1.0), args[0]);
        });
    Value foundInf;
    SmallVector<Value> results{Value()};
    for (Value grad : op.getGradients()) {
      auto type = tensorType(grad);
      SmallVector<int64_t> all;
      for (int64_t d = 0; d < type.getRank(); ++d)
        all.push_back(d);
      Value nonFinite = buildReduction(
          rewriter, loc, grad, all, scalarConstant(rewriter, loc, i1, 0),
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::OrIOp::create(b, l, args[1],
                                        isNonFinite(b, l, args[0]));
          });
      foundInf = foundInf ? buildElementwise(
                                rewriter, loc, tensorType(nonFinite),
                                {foundInf, nonFinite},
                                [&](OpBuilder &b, Location l,
                                    ValueRange args) -> Value {
                                  return arith::OrIOp::create(b, l, args[0],
                                                              args[1]);
                                })
                          : nonFinite;
      results.push_back(buildElementwise(
          rewriter, loc, type, {grad, inverse},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value factor = castScalar(b, l, args[1], args[0].getType());
            return arith::MulFOp::create(b, l, args[0], factor);
          }));
    }
    if (!foundInf)
      foundInf = buildFill(rewriter, loc,
                           RankedTensorType::get({}, i1),
                           scalarConstant(rewriter, loc, i1, 0));
    results[0] = foundInf;
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// GradScaler.update (+ DeepSpeed hysteresis) on rank-0 tensors.
struct UpdateLossScaleLowering : OpRewritePattern<UpdateLossScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UpdateLossScaleOp op,
                                PatternRewriter &rewriter) const override {
    double growth = op.getGrowthFactor().convertToDouble();
    double backoff = op.getBackoffFactor().convertToDouble();
    double minScale = op.getMinScale().convertToDouble();
    int64_t interval = op.getGrowthInterval();
    int64_t hysteresis = op.getHysteresis();
    SmallVector<RankedTensorType> types{tensorType(op.getNewScale()),
                                        tensorType(op.getNewGrowthTracker()),
                                        tensorType(op.getNewHysteresisLeft())};
    SmallVector<Value> results = buildElementwiseMulti(
        rewriter, op.getLoc(), types,
        {op.getScale(), op.getGrowthTracker(), op.getHysteresisLeft(),
         op.getFoundInf()},
        [&](OpBuilder &b, Location l, ValueRange args) -> SmallVector<Value> {
          Value scale = args[0], tracker = args[1], left = args[2],
                inf = args[3];
          Type f32 = scale.getType(), i64 = tracker.getType();
          auto f = [&](double v) { return scalarConstant(b, l, f32, v); };
          auto i = [&](int64_t v) {
            return scalarConstant(b, l, i64, static_cast<double>(v));
          };
          // Finite: count, and grow once the count reaches the interval.
          Value counted = arith::AddIOp::create(b, l, tracker, i(1));
          Value grow = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                             counted, i(interval));
          Value finiteScale = arith::SelectOp::create(
              b, l, grow, arith::MulFOp::create(b, l, scale, f(growth)),
              scale);
          Value finiteTracker =
              arith::SelectOp::create(b, l, grow, i(0), counted);
          // Overflow: back off once the hysteresis is used up.
          Value leftAfter = arith::SubIOp::create(b, l, left, i(1));
          Value backOff = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::sle, leftAfter, i(0));
          Value reduced = arith::MaximumFOp::create(
              b, l, arith::MulFOp::create(b, l, scale, f(backoff)),
              f(minScale));
          Value infScale =
              arith::SelectOp::create(b, l, backOff, reduced, scale);
          Value infLeft =
              arith::SelectOp::create(b, l, backOff, i(hysteresis), leftAfter);
          return {arith::SelectOp::create(b, l, inf, infScale, finiteScale),
                  arith::SelectOp::create(b, l, inf, i(0), finiteTracker),
                  arith::SelectOp::create(b, l, inf, infLeft, i(hysteresis))};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void populateLossScaleLowering(RewritePatternSet &patterns) {
  patterns.add<UnscaleGradientsLowering, UpdateLossScaleLowering>(
      patterns.getContext());
}

} // namespace effopt::lowering
