//===- LowerOptimizer.cpp - learning-rate schedules and optimizer updates -===//
//
// The per-step scalars (learning rate, bias corrections) are computed once
// in f64 in a rank-0 loop, as torch.optim computes them in Python doubles,
// then rounded to the parameter's type; the per-element update is one fused
// loop producing the parameter and every state tensor together, in the order
// of operations torch.optim uses so rounding matches.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {


struct LrScheduleLowering : OpRewritePattern<LrScheduleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LrScheduleOp op,
                                PatternRewriter &rewriter) const override {
    StringRef kind = op.getKind();
    double lr = op.getLr().convertToDouble();
    double minLr = op.getMinLr().convertToDouble();
    int64_t warmup = op.getWarmupSteps();
    int64_t total = op.getTotalSteps();
    Value result = buildElementwise(
        rewriter, op.getLoc(), tensorType(op.getResult()), {op.getStep()},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Type f64 = b.getF64Type();
          auto c = [&](double v) { return scalarConstant(b, loc, f64, v); };
          Value t = arith::SIToFPOp::create(b, loc, f64, args[0]);
          Value value = c(lr);
          if (kind != "constant" && warmup > 0) {
            // lr * min(1, (t + 1) / w)
            Value frac = arith::MinimumFOp::create(
                b, loc, c(1.0),
                arith::DivFOp::create(
                    b, loc, arith::AddFOp::create(b, loc, t, c(1.0)),
                    c(static_cast<double>(warmup))));
            value = arith::MulFOp::create(b, loc, c(lr), frac);
          }
          if (kind == "cosine") {
            double span = std::max<double>(1.0, total - warmup);
            Value progress = arith::MinimumFOp::create(
                b, loc, c(1.0),
                arith::DivFOp::create(
                    b, loc,
                    arith::SubFOp::create(b, loc, t,
                                          c(static_cast<double>(warmup))),
                    c(span)));
            Value cosine = math::CosOp::create(
                b, loc, arith::MulFOp::create(b, loc, c(llvm::numbers::pi),
                                              progress));
            Value decayed = arith::AddFOp::create(
                b, loc, c(minLr),
                arith::MulFOp::create(
                    b, loc, c(0.5 * (lr - minLr)),
                    arith::AddFOp::create(b, loc, c(1.0), cosine)));
            Value inWarmup = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OLT, t,
                c(static_cast<double>(warmup)));
            value = arith::SelectOp::create(b, loc, inWarmup, value, decayed);
          }
          return arith::TruncFOp::create(b, loc, b.getF32Type(), value);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Converts an f32 scalar to the parameter's element type.
Value toElement(OpBuilder &b, Location loc, Value v, Type t) {
  return castScalar(b, loc, v, t);
}

struct SgdUpdateLowering : OpRewritePattern<SgdUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SgdUpdateOp op,
                                PatternRewriter &rewriter) const override {
    auto type = tensorType(op.getParam());
    Type t = computeType(type.getElementType());
    double momentum = op.getMomentum().convertToDouble();
    double dampening = op.getDampening().convertToDouble();
    double weightDecay = op.getWeightDecay().convertToDouble();
    bool nesterov = op.getNesterov();
    bool hasBuffer = static_cast<bool>(op.getMomentumBuffer());
    SmallVector<Value> operands{op.getParam(), op.getGrad(), op.getLr(),
                                op.getStep()};
    SmallVector<RankedTensorType> types{type};
    if (hasBuffer) {
      operands.push_back(op.getMomentumBuffer());
      types.push_back(type);
    }
    SmallVector<Value> results = buildElementwiseMulti(
        rewriter, op.getLoc(), types, operands,
        [&](OpBuilder &b, Location loc, ValueRange args) -> SmallVector<Value> {
          auto c = [&](double v) { return scalarConstant(b, loc, t, v); };
          Value param = args[0], grad = args[1];
          Value lr = toElement(b, loc, args[2], t);
          if (weightDecay != 0.0)
            grad = arith::AddFOp::create(
                b, loc, grad,
                arith::MulFOp::create(b, loc, param, c(weightDecay)));
          Value direction = grad;
          SmallVector<Value> out;
          if (hasBuffer) {
            Value first = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::eq, args[3],
                scalarConstant(b, loc, args[3].getType(), 0));
            Value decayed = arith::AddFOp::create(
                b, loc, arith::MulFOp::create(b, loc, args[4], c(momentum)),
                arith::MulFOp::create(b, loc, grad, c(1.0 - dampening)));
            Value buffer =
                arith::SelectOp::create(b, loc, first, grad, decayed);
            direction =
                nesterov ? arith::AddFOp::create(
                               b, loc, grad,
                               arith::MulFOp::create(b, loc, buffer,
                                                     c(momentum)))
                               .getResult()
                         : buffer;
            out.push_back(buffer);
          }
          Value newParam = arith::SubFOp::create(
              b, loc, param, arith::MulFOp::create(b, loc, lr, direction));
          out.insert(out.begin(), newParam);
          return out;
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct AdamUpdateLowering : OpRewritePattern<AdamUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdamUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getParam());
    Type t = computeType(type.getElementType());
    double beta1 = op.getBeta1().convertToDouble();
    double beta2 = op.getBeta2().convertToDouble();
    double eps = op.getEps().convertToDouble();
    double weightDecay = op.getWeightDecay().convertToDouble();
    bool decoupled = op.getDecoupled();
    bool amsgrad = static_cast<bool>(op.getMaxExpAvgSq());

    // step_size, sqrt(1 - beta2^t) and AdamW's decay, once per step.
    SmallVector<Value> scalars = buildAdamStepScalars(
        rewriter, loc, op.getLr(), op.getStep(), beta1, beta2, weightDecay, t);

    SmallVector<Value> operands{op.getParam(), op.getGrad(), op.getExpAvg(),
                                op.getExpAvgSq(), scalars[0], scalars[1],
                                scalars[2]};
    SmallVector<RankedTensorType> types{type, type, type};
    if (amsgrad) {
      operands.push_back(op.getMaxExpAvgSq());
      types.push_back(type);
    }
    SmallVector<Value> results = buildElementwiseMulti(
        rewriter, loc, types, operands,
        [&](OpBuilder &b, Location l, ValueRange args) -> SmallVector<Value> {
          auto c = [&](double v) { return scalarConstant(b, l, t, v); };
          Value param = args[0], grad = args[1];
          Value stepSize = args[4], bc2Sqrt = args[5], decay = args[6];
          if (weightDecay != 0.0) {
            if (decoupled)
              param = arith::MulFOp::create(b, l, param, decay);
            else
              grad = arith::AddFOp::create(
                  b, l, grad,
                  arith::MulFOp::create(b, l, param, c(weightDecay)));
          }
          Value m = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, args[2], c(beta1)),
              arith::MulFOp::create(b, l, grad, c(1.0 - beta1)));
          Value v = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, args[3], c(beta2)),
              arith::MulFOp::create(
                  b, l, arith::MulFOp::create(b, l, grad, grad),
                  c(1.0 - beta2)));
          Value second = v;
          Value vmax;
          if (amsgrad) {
            vmax = arith::MaximumFOp::create(b, l, args[7], v);
            second = vmax;
          }
          Value denom = arith::AddFOp::create(
              b, l,
              arith::DivFOp::create(b, l, math::SqrtOp::create(b, l, second),
                                    bc2Sqrt),
              c(eps));
          Value newParam = arith::SubFOp::create(
              b, l, param,
              arith::MulFOp::create(b, l, stepSize,
                                    arith::DivFOp::create(b, l, m, denom)));
          SmallVector<Value> out{newParam, m, v};
          if (amsgrad)
            out.push_back(vmax);
          return out;
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

/// Adam's per-step scalars, computed once in f64 as torch.optim computes
/// them in Python doubles and rounded to `t`: with t' = step + 1,
/// {lr / (1 - beta1^t'), sqrt(1 - beta2^t'), 1 - lr * weight_decay}.
SmallVector<Value> buildAdamStepScalars(OpBuilder &builder, Location loc,
                                        Value lr, Value step, double beta1,
                                        double beta2, double weightDecay,
                                        Type t) {
  auto scalarType = RankedTensorType::get({}, t);
  return buildElementwiseMulti(
      builder, loc, {scalarType, scalarType, scalarType}, {lr, step},
      [&](OpBuilder &b, Location l, ValueRange args) -> SmallVector<Value> {
        Type f64 = b.getF64Type();
        auto c = [&](double v) { return scalarConstant(b, l, f64, v); };
        Value rate = arith::ExtFOp::create(b, l, f64, args[0]);
        Value count = arith::SIToFPOp::create(
            b, l, f64,
            arith::AddIOp::create(b, l, args[1],
                                  scalarConstant(b, l, args[1].getType(), 1)));
        Value bc1 = arith::SubFOp::create(
            b, l, c(1.0), math::PowFOp::create(b, l, c(beta1), count));
        Value bc2 = arith::SubFOp::create(
            b, l, c(1.0), math::PowFOp::create(b, l, c(beta2), count));
        Value stepSize = arith::DivFOp::create(b, l, rate, bc1);
        Value bc2Sqrt = math::SqrtOp::create(b, l, bc2);
        Value decay = arith::SubFOp::create(
            b, l, c(1.0), arith::MulFOp::create(b, l, rate, c(weightDecay)));
        return {castScalar(b, l, stepSize, t), castScalar(b, l, bc2Sqrt, t),
                castScalar(b, l, decay, t)};
      });
}

void populateOptimizerLowering(RewritePatternSet &patterns) {
  patterns.add<LrScheduleLowering, SgdUpdateLowering, AdamUpdateLowering>(
      patterns.getContext());
}

} // namespace effopt::lowering
