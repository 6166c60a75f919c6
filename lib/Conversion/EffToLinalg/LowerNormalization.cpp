//===- LowerNormalization.cpp - softmax and normalisation layers ----------===//
//
// Statistics are reductions over the normalised dimensions kept as size-1
// dimensions, so they broadcast back onto the input through indexing maps;
// the variance is computed in two passes (mean first), as PyTorch does, not
// as E[x^2] - E[x]^2.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {


/// Reductions over `axes` of `input`'s shape, returned with the axes kept as
/// size-1 dimensions so they broadcast against the input.
struct Statistics {
  OpBuilder &b;
  Location loc;
  RankedTensorType inputType;
  SmallVector<int64_t> axes;
  const LoweringPolicy &policy;

  Type elementType() const { return inputType.getElementType(); }
  /// Statistics of f16/bf16 inputs stay in f32 (as PyTorch's CPU kernels
  /// keep them), so normalising rounds once, at the output.
  Type statType() const { return computeType(elementType()); }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t a : axes)
      n *= inputType.getDimSize(a);
    return n;
  }
  RankedTensorType keptType(Type element = {}) const {
    SmallVector<int64_t> shape(inputType.getShape());
    for (int64_t a : axes)
      shape[a] = 1;
    return RankedTensorType::get(shape, element ? element : statType());
  }
  Value keep(Value reduced) const {
    return reshapeTo(b, loc, reduced,
                     keptType(tensorType(reduced).getElementType()));
  }
  /// sum over axes of f(elements of `operands`), operands broadcast to the
  /// input's shape, accumulated in f64 for f32 (buildSum); divided by
  /// `divisor` before rounding (means).
  Value sum(ValueRange operands, ScalarFn f, double divisor = 1.0) const {
    Value first = operands.front();
    if (tensorType(first).getShape() != inputType.getShape())
      first = buildElementwise(b, loc, inputType, {first},
                               [](OpBuilder &, Location, ValueRange a) {
                                 return a[0];
                               });
    return keep(buildSum(b, loc, policy, first, axes, f, operands.drop_front(),
                         divisor, statType()));
  }
  Value max(Value input) const {
    Value negInf = negativeInfinity(b, loc, statType());
    return keep(buildReduction(b, loc, input, axes, negInf,
                               [](OpBuilder &nb, Location l, ValueRange a) {
                                 return arith::MaximumFOp::create(nb, l, a[0],
                                                                  a[1])
                                     .getResult();
                               }));
  }
  /// Elementwise map of a kept statistic (e.g. divide by the count).
  Value map(Value kept, ScalarFn f) const {
    return buildElementwise(b, loc, tensorType(kept), {kept}, f);
  }
};

/// A statistic (f32 for f16/bf16 inputs) as the op's result of `type`:
/// reshaped, and rounded when the result is narrower.
Value statisticAs(OpBuilder &b, Location loc, Value stat,
                  RankedTensorType type) {
  Value reshaped = reshapeTo(
      b, loc, stat, type.clone(tensorType(stat).getElementType()));
  return convertElements(b, loc, reshaped, type.getElementType());
}

Value c(OpBuilder &b, Location loc, Type t, double v) {
  return scalarConstant(b, loc, t, v);
}

template <typename OpTy, bool log>
struct SoftmaxLowering : PolicyPattern<OpTy> {
  using PolicyPattern<OpTy>::PolicyPattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    Statistics stats{rewriter, loc, type,
                     {normalizeAxis(op.getAxis(), type.getRank())},
                     this->policy};
    Value x = op.getInput();
    Value max = stats.max(x);
    Value sum = stats.sum({x, max}, [](OpBuilder &b, Location l, ValueRange a) {
      return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, a[0], a[1]))
          .getResult();
    });
    Value result = buildElementwise(
        rewriter, loc, type, {x, max, sum},
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value shifted = arith::SubFOp::create(b, l, a[0], a[1]);
          if (log)
            return arith::SubFOp::create(b, l, shifted,
                                         math::LogOp::create(b, l, a[2]));
          return arith::DivFOp::create(b, l, math::ExpOp::create(b, l, shifted),
                                       a[2]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

template <typename OpTy, bool log>
struct SoftmaxGradLowering : PolicyPattern<OpTy> {
  using PolicyPattern<OpTy>::PolicyPattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getOutput());
    Statistics stats{rewriter, loc, type,
                     {normalizeAxis(op.getAxis(), type.getRank())},
                     this->policy};
    Value y = op.getOutput(), dy = op.getOutputGrad();
    Value result;
    if (log) {
      // dy - exp(y) * sum(dy)
      Value s = stats.sum({dy}, [](OpBuilder &, Location, ValueRange a) {
        return a[0];
      });
      result = buildElementwise(
          rewriter, loc, type, {y, dy, s},
          [](OpBuilder &b, Location l, ValueRange a) -> Value {
            return arith::SubFOp::create(
                b, l, a[1],
                arith::MulFOp::create(b, l, math::ExpOp::create(b, l, a[0]),
                                      a[2]));
          });
    } else {
      // y * (dy - sum(dy * y))
      Value s = stats.sum({dy, y}, [](OpBuilder &b, Location l, ValueRange a) {
        return arith::MulFOp::create(b, l, a[0], a[1]).getResult();
      });
      result = buildElementwise(
          rewriter, loc, type, {y, dy, s},
          [](OpBuilder &b, Location l, ValueRange a) -> Value {
            return arith::MulFOp::create(
                b, l, a[0], arith::SubFOp::create(b, l, a[1], a[2]));
          });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// mean and rstd = 1/sqrt(var + eps) over `stats.axes` (biased variance).
std::pair<Value, Value> meanAndRstd(const Statistics &stats, Value x,
                                    double epsilon, Value *biasedVar = nullptr) {
  double n = static_cast<double>(stats.count());
  Value mean = stats.sum(
      {x}, [](OpBuilder &, Location, ValueRange a) { return a[0]; }, n);
  Value var = stats.sum(
      {x, mean},
      [](OpBuilder &b, Location l, ValueRange a) {
        Value d = arith::SubFOp::create(b, l, a[0], a[1]);
        return arith::MulFOp::create(b, l, d, d).getResult();
      },
      n);
  if (biasedVar)
    *biasedVar = var;
  Value rstd = stats.map(var, [&](OpBuilder &b, Location l, ValueRange a) {
    return math::RsqrtOp::create(
               b, l, arith::AddFOp::create(b, l, a[0], c(b, l, a[0].getType(), epsilon)))
        .getResult();
  });
  return {mean, rstd};
}

/// (x - mean) * rstd [* scale] [+ bias], scale/bias broadcast as given.
Value normalize(OpBuilder &b, Location loc, RankedTensorType type, Value x,
                Value mean, Value rstd, Value scale, Value bias) {
  SmallVector<Value> operands{x, mean, rstd};
  if (scale)
    operands.push_back(scale);
  if (bias)
    operands.push_back(bias);
  bool hasScale = static_cast<bool>(scale), hasBias = static_cast<bool>(bias);
  return buildElementwise(
      b, loc, type, operands,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value y = arith::MulFOp::create(
            nb, l, arith::SubFOp::create(nb, l, a[0], a[1]), a[2]);
        unsigned next = 3;
        if (hasScale)
          y = arith::MulFOp::create(nb, l, y, a[next++]);
        if (hasBias)
          y = arith::AddFOp::create(nb, l, y, a[next]);
        return y;
      });
}

struct LayerNormLowering : PolicyPattern<LayerNormOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    int64_t axis = normalizeAxis(op.getAxis(), type.getRank());
    SmallVector<int64_t> axes;
    for (int64_t d = axis; d < type.getRank(); ++d)
      axes.push_back(d);
    Statistics stats{rewriter, loc, type, axes, this->policy};
    auto [mean, rstd] =
        meanAndRstd(stats, op.getInput(), op.getEpsilon().convertToDouble());
    Value y = normalize(rewriter, loc, type, op.getInput(), mean, rstd,
                        op.getScale(), op.getBias());
    rewriter.replaceOp(
        op, {y, statisticAs(rewriter, loc, mean, tensorType(op.getMean())),
             statisticAs(rewriter, loc, rstd, tensorType(op.getRstd()))});
    return success();
  }
};

struct LayerNormGradLowering : PolicyPattern<LayerNormGradOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(LayerNormGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    int64_t axis = normalizeAxis(op.getAxis(), type.getRank());
    SmallVector<int64_t> normAxes, batchAxes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      (d >= axis ? normAxes : batchAxes).push_back(d);
    Statistics rows{rewriter, loc, type, normAxes, this->policy};
    Statistics columns{rewriter, loc, type, batchAxes, this->policy};
    Value x = op.getInput(), dy = op.getOutputGrad();
    Value mean = reshapeTo(rewriter, loc, op.getMean(),
                           rows.keptType(tensorType(op.getMean())
                                             .getElementType()));
    Value rstd = reshapeTo(rewriter, loc, op.getRstd(),
                           rows.keptType(tensorType(op.getRstd())
                                             .getElementType()));
    Value scale = op.getScale();
    bool hasScale = static_cast<bool>(scale);
    double n = static_cast<double>(rows.count());

    // xhat = (x - mean) * rstd and g = dy * scale are computed again in
    // each reader from x, dy and the statistics instead of being stored:
    // each would be a tensor of the input's size written once and read
    // back three times, and the readers read x and dy anyway (on cuda the
    // row sums and dx are one row-group kernel that then writes dx alone).
    // The same operations in the same order: the same bits as stored.
    SmallVector<Value> rowOperands{x, mean, rstd, dy};
    if (hasScale)
      rowOperands.push_back(scale);
    // a: x, mean, rstd, dy[, scale]
    auto xhatOf = [](OpBuilder &b, Location l, ValueRange a) -> Value {
      return arith::MulFOp::create(b, l,
                                   arith::SubFOp::create(b, l, a[0], a[1]),
                                   a[2]);
    };
    auto gOf = [hasScale](OpBuilder &b, Location l, ValueRange a) -> Value {
      return hasScale ? arith::MulFOp::create(b, l, a[3], a[4]).getResult()
                      : a[3];
    };
    Value sumG = rows.sum(rowOperands, gOf);
    Value sumGX =
        rows.sum(rowOperands, [&](OpBuilder &b, Location l, ValueRange a) {
          return arith::MulFOp::create(b, l, gOf(b, l, a), xhatOf(b, l, a))
              .getResult();
        });
    // dx = rstd * (g - sum(g)/n - xhat * sum(g*xhat)/n)
    SmallVector<Value> dxOperands(rowOperands);
    dxOperands.append({sumG, sumGX});
    unsigned sums = rowOperands.size();
    Value dx = buildElementwise(
        rewriter, loc, type, dxOperands,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value g = gOf(b, l, a), xhat = xhatOf(b, l, a);
          Value inv = c(b, l, g.getType(), 1.0 / n);
          Value centered = arith::SubFOp::create(
              b, l, g, arith::MulFOp::create(b, l, a[sums], inv));
          Value proj = arith::MulFOp::create(
              b, l, xhat, arith::MulFOp::create(b, l, a[sums + 1], inv));
          return arith::MulFOp::create(
              b, l, a[2], arith::SubFOp::create(b, l, centered, proj));
        });
    Value dscale = statisticAs(
        rewriter, loc,
        columns.sum({x, mean, rstd, dy},
                    [&](OpBuilder &b, Location l, ValueRange a) {
                      return arith::MulFOp::create(b, l, a[3],
                                                   xhatOf(b, l, a))
                          .getResult();
                    }),
        tensorType(op.getScaleGrad()));
    Value dbias = statisticAs(
        rewriter, loc,
        columns.sum({dy}, [](OpBuilder &, Location, ValueRange a) { return a[0]; }),
        tensorType(op.getBiasGrad()));
    rewriter.replaceOp(op, {dx, dscale, dbias});
    return success();
  }
};

/// Channel (dim 1) parameters viewed as [1, C, 1, ...] to broadcast.
Value channelView(OpBuilder &b, Location loc, Value v, RankedTensorType input) {
  SmallVector<int64_t> shape(input.getRank(), 1);
  shape[1] = input.getDimSize(1);
  return reshapeTo(b, loc, v,
                   RankedTensorType::get(shape, tensorType(v).getElementType()));
}

SmallVector<int64_t> allButChannel(RankedTensorType type) {
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != 1)
      axes.push_back(d);
  return axes;
}

struct BatchNormTrainLowering : PolicyPattern<BatchNormTrainOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(BatchNormTrainOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    Statistics stats{rewriter, loc, type, allButChannel(type), this->policy};
    Value var;
    auto [mean, rstd] = meanAndRstd(
        stats, op.getInput(), op.getEpsilon().convertToDouble(), &var);
    Value y = normalize(rewriter, loc, type, op.getInput(), mean, rstd,
                        channelView(rewriter, loc, op.getScale(), type),
                        channelView(rewriter, loc, op.getBias(), type));
    auto channelType = tensorType(op.getRunningMean());
    Value meanC = reshapeTo(rewriter, loc, mean,
                            channelType.clone(stats.statType()));
    Value varC = reshapeTo(rewriter, loc, var,
                           channelType.clone(stats.statType()));
    Value rstdC = reshapeTo(rewriter, loc, rstd,
                            channelType.clone(stats.statType()));
    double m = op.getMomentum().convertToDouble();
    double n = static_cast<double>(stats.count());
    double unbias = n > 1 ? n / (n - 1) : 1.0;
    SmallVector<Value> running = buildElementwiseMulti(
        rewriter, loc, {channelType, channelType},
        {op.getRunningMean(), op.getRunningVar(), meanC, varC},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value keep = c(b, l, a[0].getType(), 1.0 - m), take = c(b, l, a[0].getType(), m);
          Value newMean = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, a[0], keep),
              arith::MulFOp::create(b, l, a[2], take));
          Value unbiased = arith::MulFOp::create(b, l, a[3], c(b, l, a[0].getType(), unbias));
          Value newVar = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, a[1], keep),
              arith::MulFOp::create(b, l, unbiased, take));
          return {newMean, newVar};
        });
    rewriter.replaceOp(
        op, {y, running[0], running[1],
             statisticAs(rewriter, loc, meanC, tensorType(op.getSavedMean())),
             statisticAs(rewriter, loc, rstdC, tensorType(op.getSavedRstd()))});
    return success();
  }
};

struct BatchNormTrainGradLowering : PolicyPattern<BatchNormTrainGradOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(BatchNormTrainGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    Statistics stats{rewriter, loc, type, allButChannel(type), this->policy};
    double n = static_cast<double>(stats.count());
    Value mean = channelView(rewriter, loc, op.getSavedMean(), type);
    Value rstd = channelView(rewriter, loc, op.getSavedRstd(), type);
    Value scale = channelView(rewriter, loc, op.getScale(), type);
    Value dy = op.getOutputGrad();
    // xhat is built once per reader, so eff-fuse-elementwise computes it
    // inside the dscale sum and inside dx instead of storing it: a pass over
    // the activation less, written and read twice.
    auto xhat = [&] {
      return normalize(rewriter, loc, type, op.getInput(), mean, rstd, {}, {});
    };
    Value dbias = stats.sum({dy}, [](OpBuilder &, Location, ValueRange a) {
      return a[0];
    });
    Value dscale = stats.sum({dy, xhat()}, [](OpBuilder &b, Location l, ValueRange a) {
      return arith::MulFOp::create(b, l, a[0], a[1]).getResult();
    });
    // dx = scale * rstd / n * (n * dy - dbias - xhat * dscale)
    Value dx = buildElementwise(
        rewriter, loc, type, {dy, xhat(), dbias, dscale, scale, rstd},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value inner = arith::SubFOp::create(
              b, l,
              arith::SubFOp::create(
                  b, l, arith::MulFOp::create(b, l, a[0], c(b, l, a[0].getType(), n)), a[2]),
              arith::MulFOp::create(b, l, a[1], a[3]));
          Value factor = arith::DivFOp::create(
              b, l, arith::MulFOp::create(b, l, a[4], a[5]), c(b, l, a[0].getType(), n));
          return arith::MulFOp::create(b, l, factor, inner);
        });
    auto channelType = tensorType(op.getScaleGrad());
    rewriter.replaceOp(
        op, {dx, statisticAs(rewriter, loc, dscale, channelType),
             statisticAs(rewriter, loc, dbias, tensorType(op.getBiasGrad()))});
    return success();
  }
};

struct BatchNormLowering : PolicyPattern<BatchNormOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    double epsilon = op.getEpsilon().convertToDouble();
    Value rstd = buildElementwise(
        rewriter, loc, tensorType(op.getVariance()), {op.getVariance()},
        [&](OpBuilder &b, Location l, ValueRange a) {
          return math::RsqrtOp::create(
                     b, l, arith::AddFOp::create(b, l, a[0], c(b, l, a[0].getType(), epsilon)))
              .getResult();
        });
    Value y = normalize(rewriter, loc, type, op.getInput(),
                        channelView(rewriter, loc, op.getMean(), type),
                        channelView(rewriter, loc, rstd, type),
                        channelView(rewriter, loc, op.getScale(), type),
                        channelView(rewriter, loc, op.getBias(), type));
    rewriter.replaceOp(op, y);
    return success();
  }
};

} // namespace

void populateNormalizationLowering(RewritePatternSet &patterns,
                                   const LoweringPolicy &policy) {
  patterns.add<SoftmaxLowering<SoftmaxOp, false>,
               SoftmaxLowering<LogSoftmaxOp, true>,
               SoftmaxGradLowering<SoftmaxGradOp, false>,
               SoftmaxGradLowering<LogSoftmaxGradOp, true>, LayerNormLowering,
               LayerNormGradLowering, BatchNormTrainLowering,
               BatchNormTrainGradLowering, BatchNormLowering>(
      patterns.getContext(), policy);
}

} // namespace effopt::lowering
