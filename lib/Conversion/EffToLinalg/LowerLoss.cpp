//===- LowerLoss.cpp - classification losses and their gradients ----------===//
//
// `softmax_cross_entropy` and `nll_loss` (and their `_grad` ops) work on
// rows: `[N, C, d...]` logits are first viewed as `[N*d..., C]` rows. Per row
// the stable log-sum-exp, the picked logit and the sample weight are computed
// in fused loops; ignored samples (label == ignore_index) get weight 0 and
// never index the logits.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {


/// The loss input as rows `[R, C]` and labels as `[R]`.
struct Rows {
  Value input;  // [R, C]
  Value labels; // [R]
  int64_t rows, classes;
};

Rows toRows(OpBuilder &b, Location loc, Value input, Value labels) {
  auto type = tensorType(input);
  int64_t classes = type.getDimSize(1);
  int64_t rows = numElements(type.getShape()) / classes;
  if (type.getRank() > 2) {
    SmallVector<int64_t> perm{0};
    for (int64_t d = 2; d < type.getRank(); ++d)
      perm.push_back(d);
    perm.push_back(1);
    input = TransposeOp::create(b, loc, input, perm);
  }
  Type elementType = type.getElementType();
  input = reshapeTo(b, loc, input,
                    RankedTensorType::get({rows, classes}, elementType));
  labels = reshapeTo(
      b, loc, labels,
      RankedTensorType::get({rows}, tensorType(labels).getElementType()));
  return {input, labels, rows, classes};
}

/// `[R]` viewed as `[R, 1]`, to broadcast against rows.
Value column(OpBuilder &b, Location loc, Value v) {
  auto type = tensorType(v);
  return reshapeTo(
      b, loc, v,
      RankedTensorType::get({type.getDimSize(0), 1}, type.getElementType()));
}

/// Rows longer than this take the online log-sum-exp where the policy asks
/// for it: the longest row a warp reduces (eff-gpu-form-kernels), so the
/// online pair is always one block reduction there.
constexpr int64_t kMinOnlineClasses = 4096;

/// The online log-sum-exp of every row, one pass over the logits: the
/// running max m and the sum s of exp(x - m), rescaled by exp(m_old - m)
/// whenever the max grows (Milakov and Gimelshein, 2018). One reduction with
/// two f32 outputs; eff-gpu-form-kernels combines the threads' pairs.
/// -inf logits add nothing, a row of them gives -inf.
Value rowOnlineLogSumExp(OpBuilder &b, Location loc, const Rows &r) {
  Type t = tensorType(r.input).getElementType();
  Type f32 = b.getF32Type();
  auto rowType = RankedTensorType::get({r.rows}, f32);
  Value maxInit = buildFill(b, loc, rowType, negativeInfinity(b, loc, f32));
  Value sumInit = buildFill(b, loc, rowType, scalarConstant(b, loc, f32, 0.0));
  MLIRContext *ctx = b.getContext();
  AffineMap rows = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{rowType, rowType}, ValueRange{r.input},
      ValueRange{maxInit, sumInit},
      {AffineMap::getMultiDimIdentityMap(2, ctx), rows, rows},
      {utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value x = castScalar(nb, l, args[0], f32), m = args[1], s = args[2];
        Value newMax = arith::MaximumFOp::create(nb, l, m, x);
        Value one = scalarConstant(nb, l, f32, 1.0);
        Value zero = scalarConstant(nb, l, f32, 0.0);
        // exp(m - newMax), 1 when the max stays (also when both are -inf).
        Value same = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                           m, newMax);
        Value rescale = arith::SelectOp::create(
            nb, l, same, one,
            math::ExpOp::create(nb, l,
                                arith::SubFOp::create(nb, l, m, newMax)));
        // exp(x - newMax), 0 while the max is -inf.
        Value empty = arith::CmpFOp::create(
            nb, l, arith::CmpFPredicate::OEQ, newMax,
            negativeInfinity(nb, l, f32));
        Value term = arith::SelectOp::create(
            nb, l, empty, zero,
            math::ExpOp::create(nb, l,
                                arith::SubFOp::create(nb, l, x, newMax)));
        Value newSum = arith::AddFOp::create(
            nb, l, arith::MulFOp::create(nb, l, s, rescale), term);
        linalg::YieldOp::create(nb, l, ValueRange{newMax, newSum});
      });
  Value lse = buildElementwise(
      b, loc, rowType, {generic.getResult(0), generic.getResult(1)},
      [](OpBuilder &nb, Location l, ValueRange args) {
        return arith::AddFOp::create(nb, l, args[0],
                                     math::LogOp::create(nb, l, args[1]))
            .getResult();
      });
  return convertElements(b, loc, lse, t);
}

/// Stable log-sum-exp of every row: max + log(sum(exp(x - max))).
Value rowLogSumExp(OpBuilder &b, Location loc, const LoweringPolicy &policy,
                   const Rows &r) {
  if (policy.onlineLogSumExp && r.classes > kMinOnlineClasses)
    return rowOnlineLogSumExp(b, loc, r);
  Type t = tensorType(r.input).getElementType();
  Value negInf = negativeInfinity(b, loc, t);
  Value max = buildReduction(b, loc, r.input, {1}, negInf,
                             [](OpBuilder &nb, Location l, ValueRange args) {
                               return arith::MaximumFOp::create(nb, l, args[0],
                                                                args[1])
                                   .getResult();
                             });
  Value sum = buildSum(
      b, loc, policy, r.input, {1},
      [](OpBuilder &nb, Location l, ValueRange args) {
        return math::ExpOp::create(
                   nb, l, arith::SubFOp::create(nb, l, args[0], args[1]))
            .getResult();
      },
      {column(b, loc, max)});
  auto rowType = tensorType(max);
  return buildElementwise(b, loc, rowType, {max, sum},
                          [](OpBuilder &nb, Location l, ValueRange args) {
                            return arith::AddFOp::create(
                                       nb, l, args[0],
                                       math::LogOp::create(nb, l, args[1]))
                                .getResult();
                          });
}

/// Per row: whether the sample counts, and the label clamped to a valid
/// index (0 for ignored samples, which then never read out of bounds).
std::pair<Value, Value> labelOf(OpBuilder &b, Location loc, Value label,
                                std::optional<int64_t> ignoreIndex) {
  Value valid = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  if (ignoreIndex)
    valid = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, label,
        scalarConstant(b, loc, label.getType(), *ignoreIndex));
  Value index = arith::IndexCastOp::create(b, loc, b.getIndexType(), label);
  index = arith::SelectOp::create(b, loc, valid, index,
                                  arith::ConstantIndexOp::create(b, loc, 0));
  return {valid, index};
}

/// Per row `(weight, picked input)`: the sample weight (0 when ignored) and
/// `input[row, label]`.
std::pair<Value, Value> rowWeightAndPick(OpBuilder &b, Location loc,
                                         const Rows &r, Value weight,
                                         std::optional<int64_t> ignoreIndex) {
  Type t = tensorType(r.input).getElementType();
  auto rowType = RankedTensorType::get({r.rows}, t);
  Value input = r.input;
  SmallVector<Value> results = buildElementwiseMulti(
      b, loc, {rowType, rowType}, {r.labels},
      [&](OpBuilder &nb, Location l, ValueRange args) -> SmallVector<Value> {
        auto [valid, index] = labelOf(nb, l, args[0], ignoreIndex);
        Value row = linalg::IndexOp::create(nb, l, 0);
        Value picked = tensor::ExtractOp::create(nb, l, input,
                                                 ValueRange{row, index});
        Value w = scalarConstant(nb, l, t, 1.0);
        if (weight)
          w = tensor::ExtractOp::create(nb, l, weight, ValueRange{index});
        w = arith::SelectOp::create(nb, l, valid, w,
                                    scalarConstant(nb, l, t, 0.0));
        return {w, picked};
      });
  return {results[0], results[1]};
}

Value sumAll(OpBuilder &b, Location loc, const LoweringPolicy &policy,
             Value v) {
  return buildSum(b, loc, policy, v, {0},
                  [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

/// Reduces per-row losses (already weighted) as `reduction` says.
Value reduceLoss(OpBuilder &b, Location loc, const LoweringPolicy &policy,
                 Value rowLoss, Value rowWeight, LossReduction reduction,
                 RankedTensorType resultType) {
  if (reduction == LossReduction::None)
    return reshapeTo(b, loc, rowLoss, resultType);
  Value total = sumAll(b, loc, policy, rowLoss);
  if (reduction == LossReduction::Sum)
    return total;
  Value count = sumAll(b, loc, policy, rowWeight);
  return buildElementwise(b, loc, resultType, {total, count},
                          [](OpBuilder &nb, Location l, ValueRange args) {
                            return arith::DivFOp::create(nb, l, args[0],
                                                         args[1])
                                .getResult();
                          });
}

template <typename OpTy, bool softmax>
struct LossLowering : PolicyPattern<OpTy> {
  using PolicyPattern<OpTy>::PolicyPattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Rows r = toRows(rewriter, loc, op.getInput(), op.getLabels());
    auto [w, picked] = rowWeightAndPick(rewriter, loc, r, op.getWeight(),
                                        op.getIgnoreIndex());
    SmallVector<Value> operands{w, picked};
    if (softmax)
      operands.push_back(rowLogSumExp(rewriter, loc, this->policy, r));
    Value rowLoss = buildElementwise(
        rewriter, loc, tensorType(w), operands,
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          // softmax: w * (lse - x[y]); nll: -w * x[y].
          Value nll = args.size() == 3
                          ? arith::SubFOp::create(b, l, args[2], args[1])
                                .getResult()
                          : arith::NegFOp::create(b, l, args[1]).getResult();
          return arith::MulFOp::create(b, l, args[0], nll);
        });
    rewriter.replaceOp(op, reduceLoss(rewriter, loc, this->policy, rowLoss, w,
                                      op.getReduction(),
                                      tensorType(op.getResult())));
    return success();
  }
};

template <typename OpTy, bool softmax>
struct LossGradLowering : PolicyPattern<OpTy> {
  using PolicyPattern<OpTy>::PolicyPattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = tensorType(op.getInput());
    Type t = inputType.getElementType();
    Rows r = toRows(rewriter, loc, op.getInput(), op.getLabels());
    auto [w, picked] = rowWeightAndPick(rewriter, loc, r, op.getWeight(),
                                        op.getIgnoreIndex());
    (void)picked;
    auto rowType = tensorType(w);
    // Per row: w * dloss / norm.
    Value lossGrad = op.getLossGrad();
    if (op.getReduction() == LossReduction::None)
      lossGrad = reshapeTo(rewriter, loc, lossGrad, rowType);
    SmallVector<Value> scaleOperands{w, lossGrad};
    if (op.getReduction() == LossReduction::Mean)
      scaleOperands.push_back(sumAll(rewriter, loc, this->policy, w));
    Value scale = buildElementwise(
        rewriter, loc, rowType, scaleOperands,
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value s = arith::MulFOp::create(b, l, args[0], args[1]);
          if (args.size() == 3)
            s = arith::DivFOp::create(b, l, s, args[2]);
          return s;
        });
    SmallVector<Value> operands{r.input, column(rewriter, loc, r.labels),
                                column(rewriter, loc, scale)};
    if (softmax)
      operands.push_back(
          column(rewriter, loc, rowLogSumExp(rewriter, loc, this->policy, r)));
    std::optional<int64_t> ignoreIndex = op.getIgnoreIndex();
    Value grad = buildElementwise(
        rewriter, loc, tensorType(r.input), operands,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          auto [valid, index] = labelOf(b, l, args[1], ignoreIndex);
          Value isLabel = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, linalg::IndexOp::create(b, l, 1),
              index);
          Type ct = args[0].getType();
          Value onehot = arith::SelectOp::create(
              b, l, isLabel, scalarConstant(b, l, ct, 1.0),
              scalarConstant(b, l, ct, 0.0));
          Value dlogit;
          if (args.size() == 4) {
            Value p = math::ExpOp::create(
                b, l, arith::SubFOp::create(b, l, args[0], args[3]));
            dlogit = arith::SubFOp::create(b, l, p, onehot);
          } else {
            dlogit = arith::NegFOp::create(b, l, onehot);
          }
          // The scale is already 0 for ignored rows.
          return arith::MulFOp::create(b, l, dlogit, args[2]);
        });
    // Back to the input's layout.
    if (inputType.getRank() > 2) {
      SmallVector<int64_t> rowShape{inputType.getDimSize(0)};
      for (int64_t d = 2; d < inputType.getRank(); ++d)
        rowShape.push_back(inputType.getDimSize(d));
      rowShape.push_back(inputType.getDimSize(1));
      grad = reshapeTo(rewriter, loc, grad, RankedTensorType::get(rowShape, t));
      SmallVector<int64_t> perm{0, inputType.getRank() - 1};
      for (int64_t d = 1; d < inputType.getRank() - 1; ++d)
        perm.push_back(d);
      grad = TransposeOp::create(rewriter, loc, grad, perm);
    } else {
      grad = reshapeTo(rewriter, loc, grad, inputType);
    }
    rewriter.replaceOp(op, grad);
    return success();
  }
};

} // namespace

void populateLossLowering(RewritePatternSet &patterns,
                          const LoweringPolicy &policy) {
  patterns.add<LossLowering<SoftmaxCrossEntropyOp, true>,
               LossLowering<NllLossOp, false>,
               LossGradLowering<SoftmaxCrossEntropyGradOp, true>,
               LossGradLowering<NllLossGradOp, false>>(patterns.getContext(),
                                                       policy);
}

} // namespace effopt::lowering
