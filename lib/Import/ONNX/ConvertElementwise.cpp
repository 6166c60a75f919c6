//===- ConvertElementwise.cpp - ONNX elementwise ops to eff ---------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "llvm/Support/xxhash.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

template <typename OpTy>
LogicalResult convertUnary(NodeContext &ctx) {
  ctx.setOutput(0, ctx.create<OpTy>(ctx.input(0)));
  return success();
}

template <typename OpTy>
LogicalResult convertBinary(NodeContext &ctx) {
  ctx.setOutput(0, ctx.create<OpTy>(ctx.input(0), ctx.input(1)));
  return success();
}

/// Max/Min/Sum take any number of inputs: fold them pairwise.
template <typename OpTy>
LogicalResult convertVariadic(NodeContext &ctx) {
  Value result = ctx.input(0);
  for (int i = 1; i < ctx.node.input_size(); ++i)
    result = ctx.create<OpTy>(result, ctx.input(i));
  // A single input still broadcasts to nothing: it is the result.
  ctx.setOutput(0, result);
  return success();
}

/// Pow: ONNX allows an exponent of another type; compute in the base's type.
LogicalResult convertPow(NodeContext &ctx) {
  Value base = ctx.input(0);
  Value exponent = ctx.cast(ctx.input(1), ctx.inputType(0).getElementType());
  ctx.setOutput(0, ctx.create<eff::PowOp>(base, exponent));
  return success();
}

template <eff::CmpPredicate predicate>
LogicalResult convertCompare(NodeContext &ctx) {
  ctx.setOutput(0, ctx.create<eff::CmpOp>(predicate, ctx.input(0),
                                          ctx.input(1)));
  return success();
}

LogicalResult convertIdentity(NodeContext &ctx) {
  ctx.setOutput(0, ctx.input(0));
  return success();
}

LogicalResult convertWhere(NodeContext &ctx) {
  ctx.setOutput(0, ctx.create<eff::WhereOp>(ctx.input(0), ctx.input(1),
                                            ctx.input(2)));
  return success();
}

LogicalResult convertCast(NodeContext &ctx) {
  int64_t to = ctx.getInt("to", 0);
  Type elementType = convertElementType(static_cast<int32_t>(to), ctx.context());
  if (!elementType)
    return ctx.unsupportedAttribute("to", dataTypeName(static_cast<int32_t>(to)));
  ctx.setOutput(0, ctx.cast(ctx.input(0), elementType));
  return success();
}

/// Clip(x, min?, max?): x < min ? min : x, then x > max ? max : x. Selects
/// rather than eff.max / eff.min, whose gradient splits ties in half: as
/// torch.clamp (which PyTorch exports as Clip), a value equal to a bound
/// passes its whole gradient, and a NaN stays NaN.
LogicalResult convertClip(NodeContext &ctx) {
  Value result = ctx.input(0);
  if (ctx.hasInput(1)) {
    Value below =
        ctx.create<eff::CmpOp>(eff::CmpPredicate::lt, result, ctx.input(1));
    result = ctx.create<eff::WhereOp>(below, ctx.input(1), result);
  }
  if (ctx.hasInput(2)) {
    Value above =
        ctx.create<eff::CmpOp>(eff::CmpPredicate::gt, result, ctx.input(2));
    result = ctx.create<eff::WhereOp>(above, ctx.input(2), result);
  }
  ctx.setOutput(0, result);
  return success();
}

/// Dropout(x, ratio?, training_mode?): training mode with a non-zero ratio
/// is `eff.dropout`; otherwise the identity with an all-true mask.
LogicalResult convertDropout(NodeContext &ctx) {
  double ratio = 0.5;
  if (ctx.hasInput(1)) {
    DenseElementsAttr attr = ctx.constantInput(1);
    if (!attr || !isa<FloatType>(attr.getElementType()) ||
        attr.getNumElements() != 1)
      return ctx.error("input 'ratio' must be a constant scalar");
    ratio = decimalValue(*attr.getValues<APFloat>().begin());
  }
  bool training = false;
  if (ctx.hasInput(2)) {
    std::optional<double> mode = ctx.constantScalar(2);
    if (!mode)
      return ctx.error("input 'training_mode' must be a constant scalar");
    training = *mode != 0;
  }
  Value input = ctx.input(0);
  if (!training || ratio == 0.0) {
    ctx.setOutput(0, input);
    if (ctx.isOutputUsed(1))
      ctx.setOutput(1, ctx.splat(1, ctx.builder.getI1Type(),
                                 ctx.inputType(0).getShape()));
    return success();
  }
  if (!(ratio > 0.0 && ratio < 1.0))
    return ctx.error("ratio " + std::to_string(ratio) + " is outside [0, 1)");
  // The node's seed, or a stable one per node: a fixed hash of its name
  // (llvm::hash_value may be seeded per process).
  int64_t seed = ctx.hasAttribute("seed")
                     ? ctx.getInt("seed", 0)
                     : static_cast<int64_t>(llvm::xxh3_64bits(ctx.node.name()) &
                                            std::numeric_limits<int32_t>::max());
  auto dropout =
      ctx.build<eff::DropoutOp>(input, ctx.builder.getF64FloatAttr(ratio),
                                ctx.builder.getI64IntegerAttr(seed));
  if (!dropout)
    return failure();
  ctx.setOutput(0, dropout.getOutput());
  ctx.setOutput(1, dropout.getMask());
  return success();
}

//===----------------------------------------------------------------------===//
// Rounding and integer arithmetic, composed from casts and comparisons
//===----------------------------------------------------------------------===//

Type elementTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

/// 1 where `condition` holds, else 0, in `elementType`.
Value indicator(NodeContext &ctx, Value condition, Type elementType) {
  return ctx.cast(condition, elementType);
}

/// x truncated toward zero through i64: exact for |x| < 2^63 (every float at
/// least 2^23 (f32) is already an integer, and i64 holds it exactly), and
/// without gradient, as the rounding ops have none.
Value truncate(NodeContext &ctx, Value x) {
  return ctx.cast(ctx.cast(x, ctx.builder.getI64Type()), elementTypeOf(x));
}

/// Floor, Ceil and Round (half to even) of floats; values beyond 2^63 in
/// magnitude, infinities and NaN are outside what the composition covers.
enum class Rounding { Floor, Ceil, Round };

template <Rounding kind> LogicalResult convertRounding(NodeContext &ctx) {
  Value x = ctx.input(0);
  Type type = elementTypeOf(x);
  if (!isa<FloatType>(type))
    return ctx.error("input must be a floating-point tensor");
  Value t = truncate(ctx, x);
  Value result;
  if (kind == Rounding::Floor) {
    // Truncation rounds negative non-integers up: step back by one.
    Value above = ctx.create<eff::CmpOp>(eff::CmpPredicate::lt, x, t);
    result = ctx.create<eff::SubOp>(t, indicator(ctx, above, type));
  } else if (kind == Rounding::Ceil) {
    Value below = ctx.create<eff::CmpOp>(eff::CmpPredicate::gt, x, t);
    result = ctx.create<eff::AddOp>(t, indicator(ctx, below, type));
  } else {
    // x - t is exact; round away from zero past one half, and at one half
    // only when t is odd.
    Value fraction = ctx.create<eff::AbsOp>(ctx.create<eff::SubOp>(x, t));
    Value half = ctx.splat(0.5, type);
    Value beyondHalf =
        ctx.create<eff::CmpOp>(eff::CmpPredicate::gt, fraction, half);
    Value atHalf =
        ctx.create<eff::CmpOp>(eff::CmpPredicate::eq, fraction, half);
    Type i64 = ctx.builder.getI64Type();
    Value integer = ctx.cast(x, i64);
    Value two = ctx.splat(2, i64);
    Value parity = ctx.create<eff::SubOp>(
        integer,
        ctx.create<eff::MulOp>(ctx.create<eff::DivOp>(integer, two), two));
    Value odd = ctx.compare(eff::CmpPredicate::ne, parity, 0.0);
    Value away = ctx.create<eff::LogicalOrOp>(
        beyondHalf, ctx.create<eff::LogicalAndOp>(atHalf, odd));
    Value sign = ctx.create<eff::SubOp>(
        indicator(ctx, ctx.compare(eff::CmpPredicate::gt, x, 0.0), type),
        indicator(ctx, ctx.compare(eff::CmpPredicate::lt, x, 0.0), type));
    result = ctx.create<eff::WhereOp>(away, ctx.create<eff::AddOp>(t, sign), t);
  }
  ctx.setOutput(0, result);
  return success();
}

/// Sign(x) in {-1, 0, 1} (NaN stays NaN).
LogicalResult convertSign(NodeContext &ctx) {
  Value x = ctx.input(0);
  Type type = elementTypeOf(x);
  Value sign = ctx.create<eff::SubOp>(
      indicator(ctx, ctx.compare(eff::CmpPredicate::gt, x, 0.0), type),
      indicator(ctx, ctx.compare(eff::CmpPredicate::lt, x, 0.0), type));
  if (isa<FloatType>(type))
    sign = ctx.create<eff::WhereOp>(
        ctx.create<eff::CmpOp>(eff::CmpPredicate::ne, x, x), x, sign);
  ctx.setOutput(0, sign);
  return success();
}

LogicalResult convertIsNaN(NodeContext &ctx) {
  ctx.setOutput(0, ctx.create<eff::CmpOp>(eff::CmpPredicate::ne, ctx.input(0),
                                          ctx.input(0)));
  return success();
}

LogicalResult convertIsInf(NodeContext &ctx) {
  Value x = ctx.input(0);
  double inf = std::numeric_limits<double>::infinity();
  Value result;
  for (auto [attribute, value] : {std::pair("detect_positive", inf),
                                  std::pair("detect_negative", -inf)}) {
    if (!ctx.getInt(attribute, 1))
      continue;
    Value hit = ctx.compare(eff::CmpPredicate::eq, x, value);
    result = result ? ctx.create<eff::LogicalOrOp>(result, hit) : hit;
  }
  if (!result)
    result = ctx.splat(0, ctx.builder.getI1Type(), ctx.inputType(0).getShape());
  ctx.setOutput(0, result);
  return success();
}

/// Mod on integers: a - trunc(a / b) * b (fmod = 1), moved into the
/// divisor's sign when fmod = 0 (Python's %). Float Mod folds on constants.
LogicalResult convertMod(NodeContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  Type type = elementTypeOf(a);
  bool fmod = ctx.getInt("fmod", 0) != 0;
  if (isa<FloatType>(type)) {
    DenseElementsAttr lhs = ctx.constantInput(0), rhs = ctx.constantInput(1);
    if (!fmod)
      return ctx.unsupportedAttribute("fmod", "0 on floating-point inputs");
    if (!lhs || !rhs || !lhs.isSplat() || !rhs.isSplat())
      return ctx.error("floating-point Mod is supported on constant scalars "
                       "only (eff has no fmod op)");
    APFloat result = lhs.getSplatValue<APFloat>();
    result.mod(rhs.getSplatValue<APFloat>());
    std::optional<SmallVector<int64_t>> shape = eff::broadcastShapes(
        ctx.inputType(0).getShape(), ctx.inputType(1).getShape());
    if (!shape)
      return ctx.error("the operands' shapes do not broadcast");
    auto resultType = RankedTensorType::get(*shape, type);
    ctx.setOutput(0, ctx.constant(DenseElementsAttr::get(resultType, result)));
    return success();
  }
  Value quotient = ctx.create<eff::DivOp>(a, b);
  Value remainder =
      ctx.create<eff::SubOp>(a, ctx.create<eff::MulOp>(quotient, b));
  if (!fmod) {
    Value nonZero = ctx.compare(eff::CmpPredicate::ne, remainder, 0.0);
    Value signsDiffer = ctx.create<eff::CmpOp>(
        eff::CmpPredicate::ne,
        ctx.compare(eff::CmpPredicate::lt, remainder, 0.0),
        ctx.compare(eff::CmpPredicate::lt, b, 0.0));
    Value adjust = ctx.create<eff::LogicalAndOp>(nonZero, signsDiffer);
    remainder = ctx.create<eff::WhereOp>(
        adjust, ctx.create<eff::AddOp>(remainder, b), remainder);
  }
  ctx.setOutput(0, remainder);
  return success();
}

//===----------------------------------------------------------------------===//
// Math eff has no op for: folded when the input is a constant
//===----------------------------------------------------------------------===//

double sinOf(double x) { return std::sin(x); }
double cosOf(double x) { return std::cos(x); }
double tanOf(double x) { return std::tan(x); }
double asinOf(double x) { return std::asin(x); }
double acosOf(double x) { return std::acos(x); }
double atanOf(double x) { return std::atan(x); }
double sinhOf(double x) { return std::sinh(x); }
double coshOf(double x) { return std::cosh(x); }
double asinhOf(double x) { return std::asinh(x); }
double acoshOf(double x) { return std::acosh(x); }
double atanhOf(double x) { return std::atanh(x); }

/// Sin, Cos, ... of a constant (sinusoidal positions computed in `forward`
/// from `arange`); on run-time tensors they would need eff ops.
template <double (*fn)(double)>
LogicalResult convertConstantMath(NodeContext &ctx) {
  DenseElementsAttr input = ctx.constantInput(0);
  if (!input)
    return ctx.error(ctx.node.op_type() +
                     " is supported on constant inputs only (eff has no op "
                     "for it on tensors computed at run time)");
  auto floatType = dyn_cast<FloatType>(input.getElementType());
  if (!floatType)
    return ctx.error("input must be a floating-point tensor");
  if (failed(ctx.checkComputedSize(input.getType().getShape(),
                                   "the folded input")))
    return failure();
  SmallVector<APFloat> results;
  for (const APFloat &value : input.getValues<APFloat>()) {
    APFloat result(fn(value.convertToDouble()));
    bool lost;
    result.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                   &lost);
    results.push_back(result);
  }
  ctx.setOutput(0,
                ctx.constant(DenseElementsAttr::get(input.getType(), results)));
  return success();
}

} // namespace

void effopt::onnx_import::populateElementwiseConverters(ConverterMap &map) {
  map["Neg"] = convertUnary<eff::NegOp>;
  map["Abs"] = convertUnary<eff::AbsOp>;
  map["Exp"] = convertUnary<eff::ExpOp>;
  map["Log"] = convertUnary<eff::LogOp>;
  map["Sqrt"] = convertUnary<eff::SqrtOp>;
  map["Reciprocal"] = convertUnary<eff::ReciprocalOp>;
  map["Tanh"] = convertUnary<eff::TanhOp>;
  map["Sigmoid"] = convertUnary<eff::SigmoidOp>;
  map["Relu"] = convertUnary<eff::ReluOp>;
  map["Erf"] = convertUnary<eff::ErfOp>;
  map["Not"] = convertUnary<eff::LogicalNotOp>;
  map["Add"] = convertBinary<eff::AddOp>;
  map["Sub"] = convertBinary<eff::SubOp>;
  map["Mul"] = convertBinary<eff::MulOp>;
  map["Div"] = convertBinary<eff::DivOp>;
  map["Pow"] = convertPow;
  map["And"] = convertBinary<eff::LogicalAndOp>;
  map["Or"] = convertBinary<eff::LogicalOrOp>;
  map["Max"] = convertVariadic<eff::MaxOp>;
  map["Min"] = convertVariadic<eff::MinOp>;
  map["Sum"] = convertVariadic<eff::AddOp>;
  map["Equal"] = convertCompare<eff::CmpPredicate::eq>;
  map["Less"] = convertCompare<eff::CmpPredicate::lt>;
  map["LessOrEqual"] = convertCompare<eff::CmpPredicate::le>;
  map["Greater"] = convertCompare<eff::CmpPredicate::gt>;
  map["GreaterOrEqual"] = convertCompare<eff::CmpPredicate::ge>;
  map["Where"] = convertWhere;
  map["Cast"] = convertCast;
  map["Clip"] = convertClip;
  map["Identity"] = convertIdentity;
  map["Dropout"] = convertDropout;
  map["Floor"] = convertRounding<Rounding::Floor>;
  map["Ceil"] = convertRounding<Rounding::Ceil>;
  map["Round"] = convertRounding<Rounding::Round>;
  map["Sign"] = convertSign;
  map["IsNaN"] = convertIsNaN;
  map["IsInf"] = convertIsInf;
  map["Mod"] = convertMod;
  map["Sin"] = convertConstantMath<sinOf>;
  map["Cos"] = convertConstantMath<cosOf>;
  map["Tan"] = convertConstantMath<tanOf>;
  map["Asin"] = convertConstantMath<asinOf>;
  map["Acos"] = convertConstantMath<acosOf>;
  map["Atan"] = convertConstantMath<atanOf>;
  map["Sinh"] = convertConstantMath<sinhOf>;
  map["Cosh"] = convertConstantMath<coshOf>;
  map["Asinh"] = convertConstantMath<asinhOf>;
  map["Acosh"] = convertConstantMath<acoshOf>;
  map["Atanh"] = convertConstantMath<atanhOf>;
}
