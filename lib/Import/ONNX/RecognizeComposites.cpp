//===- RecognizeComposites.cpp - training-granularity ops from exporter idioms ===//
//
// Exporters decompose some ops that eff keeps whole. Recognising them after
// import gives autodiff and the planners the exact op (one gradient rule,
// one cost) instead of a chain of primitives.
//
//===----------------------------------------------------------------------===//

#include "RecognizeComposites.h"

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace effopt;

/// Ops are built with `buildVerified`, as the converters build them: a
/// match whose op would not verify is no match (and no abort).
template <typename OpTy, typename... Args>
static OpTy buildIfValid(PatternRewriter &rewriter, Location loc,
                         Args &&...args) {
  return onnx_import::buildVerified<OpTy>(
      rewriter, loc, [](const Twine &) {}, std::forward<Args>(args)...);
}

/// True if `value` is a splat constant within 1e-6 (relative) of `expected`,
/// or equal to `expected` rounded to the constant's type: an f16/bf16 graph
/// (torch exports a bf16 F.gelu with bf16 constants) holds sqrt(2) as
/// 1.4140625.
static bool isSplatNear(Value value, double expected) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return false;
  APFloat splat = attr.getSplatValue<APFloat>();
  double actual = splat.convertToDouble();
  if (std::abs(actual - expected) <= 1e-6 * std::abs(expected))
    return true;
  APFloat rounded(expected);
  bool losesInfo;
  rounded.convert(splat.getSemantics(), APFloat::rmNearestTiesToEven,
                  &losesInfo);
  return rounded.bitwiseIsEqual(splat);
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
    auto gelu = buildIfValid<eff::GeluOp>(rewriter, op.getLoc(), x,
                                          eff::GeluApproximation::None);
    if (!gelu)
      return rewriter.notifyMatchFailure(op, "the gelu would not verify");
    rewriter.replaceOp(op, gelu.getOperation());
    return success();
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// tanh GELU
//===----------------------------------------------------------------------===//

/// The value of a splat float constant.
static std::optional<double> splatValue(Value value) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

static bool isNear(double actual, double expected) {
  return std::abs(actual - expected) <= 1e-6 * std::abs(expected);
}

namespace {
/// `value` read as coefficient * factor0 * factor1 * ...: through eff.mul,
/// division by a constant and pow by a small integer constant (x^3 is
/// written x * x * x, x * (x * x) or pow(x, 3) by different exporters).
struct Product {
  double coefficient = 1.0;
  SmallVector<Value> factors;
};
} // namespace

static void flattenProduct(Value value, Product &product, int depth = 0) {
  if (std::optional<double> constant = splatValue(value)) {
    product.coefficient *= *constant;
    return;
  }
  // Deep enough for every GELU form; beyond it, a factor is a leaf.
  if (depth < 6) {
    if (auto mul = value.getDefiningOp<eff::MulOp>()) {
      flattenProduct(mul.getLhs(), product, depth + 1);
      flattenProduct(mul.getRhs(), product, depth + 1);
      return;
    }
    if (auto div = value.getDefiningOp<eff::DivOp>()) {
      std::optional<double> divisor = splatValue(div.getRhs());
      if (divisor && *divisor != 0.0) {
        flattenProduct(div.getLhs(), product, depth + 1);
        product.coefficient /= *divisor;
        return;
      }
    }
    if (auto pow = value.getDefiningOp<eff::PowOp>()) {
      std::optional<double> exponent = splatValue(pow.getRhs());
      if (exponent && (*exponent == 2.0 || *exponent == 3.0)) {
        Product base;
        flattenProduct(pow.getLhs(), base, depth + 1);
        for (int i = 0; i < static_cast<int>(*exponent); ++i) {
          product.coefficient *= base.coefficient;
          product.factors.append(base.factors);
        }
        return;
      }
    }
  }
  product.factors.push_back(value);
}

/// True if `value` is coefficient * x^power with the given coefficient.
static bool isMonomial(Value value, Value x, double coefficient, int power) {
  Product product;
  flattenProduct(value, product);
  return isNear(product.coefficient, coefficient) &&
         static_cast<int>(product.factors.size()) == power &&
         llvm::all_of(product.factors, [&](Value f) { return f == x; });
}

/// If `value` is `constant + other` or `other + constant` with the constant
/// near `expected`, returns other.
static Value matchAddConstant(Value value, double expected) {
  auto add = value.getDefiningOp<eff::AddOp>();
  if (!add)
    return {};
  if (std::optional<double> c = splatValue(add.getRhs());
      c && isNear(*c, expected))
    return add.getLhs();
  if (std::optional<double> c = splatValue(add.getLhs());
      c && isNear(*c, expected))
    return add.getRhs();
  return {};
}

/// True if `value` is sqrt(2/pi) * (x + 0.044715 x^3) or
/// sqrt(2/pi) * x * (1 + 0.044715 x^2), in any association.
static bool isTanhGeluArgument(Value value, Value x) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  constexpr double kCubic = 0.044715;
  Product product;
  flattenProduct(value, product);
  if (!isNear(product.coefficient, kSqrt2OverPi))
    return false;
  if (product.factors.size() == 1) {
    auto add = product.factors[0].getDefiningOp<eff::AddOp>();
    if (!add)
      return false;
    for (auto [a, b] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())})
      if (a == x && isMonomial(b, x, kCubic, 3))
        return true;
    return false;
  }
  if (product.factors.size() == 2) {
    for (auto [a, b] : {std::pair(product.factors[0], product.factors[1]),
                        std::pair(product.factors[1], product.factors[0])})
      if (a == x)
        if (Value square = matchAddConstant(b, 1.0))
          if (isMonomial(square, x, kCubic, 2))
            return true;
  }
  return false;
}

namespace {
/// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) -> eff.gelu x
/// approximate tanh: torch's F.gelu(approximate='tanh') export and the
/// hand-written forms of GPT-2 / BERT code.
struct RecognizeTanhGelu : OpRewritePattern<eff::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(eff::MulOp op,
                                PatternRewriter &rewriter) const override {
    Product product;
    flattenProduct(op.getResult(), product);
    if (!isNear(product.coefficient, 0.5) || product.factors.size() != 2)
      return rewriter.notifyMatchFailure(op, "not 0.5 * x * (...)");
    Value x;
    for (auto [a, b] : {std::pair(product.factors[0], product.factors[1]),
                        std::pair(product.factors[1], product.factors[0])}) {
      Value tanhOutput = matchAddConstant(b, 1.0);
      auto tanh =
          tanhOutput ? tanhOutput.getDefiningOp<eff::TanhOp>() : nullptr;
      if (tanh && isTanhGeluArgument(tanh.getInput(), a))
        x = a;
    }
    if (!x)
      return rewriter.notifyMatchFailure(op, "not the tanh form of GELU");
    if (x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "broadcasts beyond its input");
    auto gelu = buildIfValid<eff::GeluOp>(rewriter, op.getLoc(), x,
                                          eff::GeluApproximation::Tanh);
    if (!gelu)
      return rewriter.notifyMatchFailure(op, "the gelu would not verify");
    rewriter.replaceOp(op, gelu.getOperation());
    return success();
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// LayerNorm
//===----------------------------------------------------------------------===//

/// If `value` is reduce_mean(x) with keep_dims over trailing axes [k, rank),
/// returns x and sets `axis` to k.
static Value matchTrailingMean(Value value, int64_t &axis) {
  auto mean = value.getDefiningOp<eff::ReduceMeanOp>();
  if (!mean || !mean.getKeepDims())
    return {};
  int64_t rank = cast<RankedTensorType>(mean.getInput().getType()).getRank();
  ArrayRef<int64_t> axes = mean.getAxes();
  if (axes.empty())
    return {};
  SmallVector<int64_t> sorted;
  for (int64_t a : axes)
    sorted.push_back(a < 0 ? a + rank : a);
  llvm::sort(sorted);
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != rank - static_cast<int64_t>(sorted.size() - i))
      return {};
  axis = sorted.front();
  return mean.getInput();
}

namespace {
/// The pieces of a decomposed layer norm: its input, first normalised axis
/// and epsilon.
struct LayerNormParts {
  Value input;
  int64_t axis;
  double epsilon;
};
} // namespace

/// Matches `centered` = x - mean(x) and `varianceEps` = mean(centered^2) +
/// eps (or eps + ...), both means over the same trailing axes.
static std::optional<LayerNormParts> matchLayerNorm(Value centered,
                                                    Value varianceEps) {
  auto sub = centered.getDefiningOp<eff::SubOp>();
  if (!sub)
    return std::nullopt;
  int64_t axis;
  Value x = sub.getLhs();
  if (matchTrailingMean(sub.getRhs(), axis) != x)
    return std::nullopt;
  auto add = varianceEps.getDefiningOp<eff::AddOp>();
  if (!add)
    return std::nullopt;
  Value variance;
  std::optional<double> epsilon;
  if ((epsilon = splatValue(add.getRhs())))
    variance = add.getLhs();
  else if ((epsilon = splatValue(add.getLhs())))
    variance = add.getRhs();
  if (!variance || !(*epsilon >= 0.0))
    return std::nullopt;
  int64_t varianceAxis;
  Value square = matchTrailingMean(variance, varianceAxis);
  if (!square || varianceAxis != axis)
    return std::nullopt;
  Product product;
  flattenProduct(square, product);
  if (!isNear(product.coefficient, 1.0) || product.factors.size() != 2 ||
      product.factors[0] != centered || product.factors[1] != centered)
    return std::nullopt;
  if (centered.getType() != x.getType())
    return std::nullopt;
  // The epsilon as written (1e-5, not 9.99999974e-06).
  auto elementType =
      cast<FloatType>(cast<RankedTensorType>(x.getType()).getElementType());
  bool lost;
  APFloat eps(*epsilon);
  eps.convert(elementType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &lost);
  return LayerNormParts{x, axis, onnx_import::decimalValue(eps)};
}

static LogicalResult replaceWithLayerNorm(Operation *op,
                                          const LayerNormParts &parts,
                                          PatternRewriter &rewriter) {
  auto norm = buildIfValid<eff::LayerNormOp>(
      rewriter, op->getLoc(), parts.input, Value(), Value(),
      rewriter.getI64IntegerAttr(parts.axis),
      rewriter.getF64FloatAttr(parts.epsilon));
  if (!norm)
    return rewriter.notifyMatchFailure(op, "the layer norm would not verify");
  rewriter.replaceOp(op, norm.getOutput());
  return success();
}

namespace {
/// centered / sqrt(var + eps).
struct RecognizeLayerNormDiv : OpRewritePattern<eff::DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(eff::DivOp op,
                                PatternRewriter &rewriter) const override {
    auto sqrt = op.getRhs().getDefiningOp<eff::SqrtOp>();
    std::optional<LayerNormParts> parts =
        sqrt ? matchLayerNorm(op.getLhs(), sqrt.getInput()) : std::nullopt;
    if (!parts || op.getType() != parts->input.getType())
      return rewriter.notifyMatchFailure(op, "not a decomposed layer norm");
    return replaceWithLayerNorm(op, *parts, rewriter);
  }
};

/// centered * rsqrt(var + eps) or centered * reciprocal(sqrt(var + eps)).
struct RecognizeLayerNormMul : OpRewritePattern<eff::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(eff::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [centered, scale] : {std::pair(op.getLhs(), op.getRhs()),
                                   std::pair(op.getRhs(), op.getLhs())}) {
      Value varianceEps;
      if (auto rsqrt = scale.getDefiningOp<eff::RsqrtOp>())
        varianceEps = rsqrt.getInput();
      if (auto reciprocal = scale.getDefiningOp<eff::ReciprocalOp>())
        if (auto sqrt = reciprocal.getInput().getDefiningOp<eff::SqrtOp>())
          varianceEps = sqrt.getInput();
      if (!varianceEps)
        continue;
      std::optional<LayerNormParts> parts =
          matchLayerNorm(centered, varianceEps);
      if (parts && op.getType() == parts->input.getType())
        return replaceWithLayerNorm(op, *parts, rewriter);
    }
    return rewriter.notifyMatchFailure(op, "not a decomposed layer norm");
  }
};

/// If `value` (of `normalizedShape`'s trailing shape, possibly with leading
/// 1s) can serve as layer_norm's scale or bias, returns its reshaped form.
Value asNormalizedOperand(Value value, ArrayRef<int64_t> normalizedShape,
                          Type elementType, PatternRewriter &rewriter,
                          Location loc) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getElementType() != elementType)
    return {};
  ArrayRef<int64_t> shape = type.getShape();
  while (!shape.empty() && shape.size() > normalizedShape.size() &&
         shape.front() == 1)
    shape = shape.drop_front();
  if (shape != normalizedShape)
    return {};
  if (type.getShape() == normalizedShape)
    return value;
  return buildIfValid<eff::ReshapeOp>(rewriter, loc,
                                      type.clone(normalizedShape), value);
}

/// layer_norm(x) * w -> layer_norm(x) scale w, and then + b -> bias b, for
/// w and b shaped like the normalised dimensions (the affine part of
/// nn.LayerNorm after a decomposed export).
template <typename OpTy> struct FoldLayerNormAffine : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    constexpr bool isScale = std::is_same_v<OpTy, eff::MulOp>;
    for (auto [normalized, operand] : {std::pair(op.getLhs(), op.getRhs()),
                                       std::pair(op.getRhs(), op.getLhs())}) {
      auto norm = normalized.template getDefiningOp<eff::LayerNormOp>();
      // Only the normalised output may be read, and only here: then the
      // operand cannot depend on the layer norm.
      if (!norm || normalized != norm.getOutput() || !normalized.hasOneUse() ||
          !norm.getMean().use_empty() || !norm.getRstd().use_empty() ||
          op.getType() != normalized.getType())
        continue;
      if (norm.getBias() || (isScale && norm.getScale()))
        continue;
      auto type = cast<RankedTensorType>(norm.getInput().getType());
      int64_t axis =
          norm.getAxis() < 0 ? norm.getAxis() + type.getRank() : norm.getAxis();
      Value reshaped =
          asNormalizedOperand(operand, type.getShape().drop_front(axis),
                              type.getElementType(), rewriter, op.getLoc());
      if (!reshaped)
        continue;
      Value scale = isScale ? reshaped : norm.getScale();
      Value bias = isScale ? Value() : reshaped;
      auto fused = buildIfValid<eff::LayerNormOp>(
          rewriter, op.getLoc(), norm.getInput(), scale, bias,
          norm.getAxisAttr(), norm.getEpsilonAttr());
      if (!fused) {
        if (reshaped != operand)
          rewriter.eraseOp(reshaped.getDefiningOp());
        continue;
      }
      rewriter.replaceOp(op, fused.getOutput());
      rewriter.eraseOp(norm);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not an affine layer norm");
  }
};
} // namespace

void effopt::onnx_import::populateRecognizeCompositesPatterns(
    RewritePatternSet &patterns) {
  patterns.add<RecognizeErfGelu, RecognizeTanhGelu, RecognizeLayerNormDiv,
               RecognizeLayerNormMul, FoldLayerNormAffine<eff::MulOp>,
               FoldLayerNormAffine<eff::AddOp>>(patterns.getContext());
}
