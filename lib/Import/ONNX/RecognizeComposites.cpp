//===- RecognizeComposites.cpp - training-granularity ops from exporter idioms ===//
//
// Exporters decompose some ops that eff keeps whole. Recognising them after
// import gives autodiff and the planners the exact op (one gradient rule,
// one cost) instead of a chain of primitives.
//
//===----------------------------------------------------------------------===//

#include "RecognizeComposites.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace effopt;

/// True if `value` is a splat constant within 1e-6 (relative) of `expected`.
static bool isSplatNear(Value value, double expected) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return false;
  double actual = attr.getSplatValue<APFloat>().convertToDouble();
  return std::abs(actual - expected) <= 1e-6 * std::abs(expected);
}

/// If `value` is `x * other` or `other * x` with `other` satisfying `pred`,
/// returns x.
template <typename Pred>
static Value matchMulBy(Value value, Pred pred) {
  auto mul = value.getDefiningOp<eff::MulOp>();
  if (!mul)
    return {};
  if (pred(mul.getRhs()))
    return mul.getLhs();
  if (pred(mul.getLhs()))
    return mul.getRhs();
  return {};
}

/// If `value` is `erf(x / sqrt2)` or `erf(x * (1/sqrt2))`, returns x.
static Value matchErfOfScaledInput(Value value) {
  auto erf = value.getDefiningOp<eff::ErfOp>();
  if (!erf)
    return {};
  Value scaled = erf.getInput();
  if (auto div = scaled.getDefiningOp<eff::DivOp>())
    if (isSplatNear(div.getRhs(), M_SQRT2))
      return div.getLhs();
  return matchMulBy(scaled, [](Value v) { return isSplatNear(v, M_SQRT1_2); });
}

/// If `value` is `1 + erf(x / sqrt2)` (either order), returns x.
static Value matchOnePlusErf(Value value) {
  auto add = value.getDefiningOp<eff::AddOp>();
  if (!add)
    return {};
  if (isSplatNear(add.getRhs(), 1.0))
    return matchErfOfScaledInput(add.getLhs());
  if (isSplatNear(add.getLhs(), 1.0))
    return matchErfOfScaledInput(add.getRhs());
  return {};
}

namespace {
/// 0.5 * x * (1 + erf(x / sqrt(2))) -> eff.gelu x, in the association
/// orders exporters produce: (x * (1 + erf)) * 0.5 and (x * 0.5) * (1 + erf).
struct RecognizeErfGelu : OpRewritePattern<eff::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(eff::MulOp op,
                                PatternRewriter &rewriter) const override {
    auto isHalf = [](Value v) { return isSplatNear(v, 0.5); };
    Value x;
    // (x * (1 + erf(x / sqrt2))) * 0.5
    if (Value product = matchMulBy(op.getResult(), isHalf)) {
      if (auto inner = product.getDefiningOp<eff::MulOp>()) {
        for (auto [a, b] : {std::pair(inner.getLhs(), inner.getRhs()),
                            std::pair(inner.getRhs(), inner.getLhs())})
          if (matchOnePlusErf(b) == a)
            x = a;
      }
    }
    // (x * 0.5) * (1 + erf(x / sqrt2))
    if (!x) {
      for (auto [a, b] : {std::pair(op.getLhs(), op.getRhs()),
                          std::pair(op.getRhs(), op.getLhs())}) {
        Value halfX = matchMulBy(a, isHalf);
        if (halfX && matchOnePlusErf(b) == halfX)
          x = halfX;
      }
    }
    if (!x)
      return rewriter.notifyMatchFailure(op, "not the erf form of GELU");
    if (x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "broadcasts beyond its input");
    rewriter.replaceOpWithNewOp<eff::GeluOp>(op, x,
                                             eff::GeluApproximation::None);
    return success();
  }
};
} // namespace

void effopt::onnx_import::populateRecognizeCompositesPatterns(
    RewritePatternSet &patterns) {
  patterns.add<RecognizeErfGelu>(patterns.getContext());
}
