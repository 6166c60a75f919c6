//===- ConvertActivation.cpp - ONNX activations composed from eff ops
//------===//
//
// Activations eff has no single op for, written with eff primitives so that
// autodiff differentiates them with no new rule. Each composition computes
// the ONNX definition and, where PyTorch's backward picks a side at a kink
// (x == 0), picks the same side: the branch taken at the kink is the one
// PyTorch's derivative formula uses. Exponentials in a branch `where` does
// not select are fed a safe input, so that their (zero) gradient never
// becomes 0 * inf = NaN.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

Type elementTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

Value scalarLike(NodeContext &ctx, double value, Value like) {
  if (!like)
    return {};
  return ctx.splat(value, elementTypeOf(like));
}

Value mulScalar(NodeContext &ctx, Value value, double scalar) {
  return ctx.create<eff::MulOp>(value, scalarLike(ctx, scalar, value));
}

LogicalResult requireFloat(NodeContext &ctx) {
  if (!isa<FloatType>(ctx.inputType(0).getElementType()))
    return ctx.error("input must be a floating-point tensor");
  return success();
}

/// `x > 0 ? x : negative`: PyTorch's leaky_relu/elu/prelu backward use the
/// negative side at x == 0, and so does this.
Value positiveOr(NodeContext &ctx, Value x, Value negative) {
  Value positive = ctx.compare(eff::CmpPredicate::gt, x, 0.0);
  return ctx.create<eff::WhereOp>(positive, x, negative);
}

/// LeakyRelu(x) = x > 0 ? x : alpha * x.
LogicalResult convertLeakyRelu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Value x = ctx.input(0);
  double alpha = ctx.getFloat("alpha", 0.01);
  ctx.setOutput(0, positiveOr(ctx, x, mulScalar(ctx, x, alpha)));
  return success();
}

/// PRelu(x, slope) = x > 0 ? x : slope * x, slope broadcasting to x.
LogicalResult convertPRelu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Value x = ctx.input(0), slope = ctx.input(1);
  if (!eff::isBroadcastableTo(ctx.inputType(1).getShape(),
                              ctx.inputType(0).getShape()))
    return ctx.error("slope of shape " +
                     eff::formatShape(ctx.inputType(1).getShape()) +
                     " does not broadcast to the input's shape " +
                     eff::formatShape(ctx.inputType(0).getShape()));
  ctx.setOutput(0, positiveOr(ctx, x, ctx.create<eff::MulOp>(x, slope)));
  return success();
}

/// `alpha * (exp(x / divisor) - 1)` for x <= 0, x for x > 0 (Elu, Celu, and
/// Selu before its scale). exp reads min(x, 0) through a `where`, so the
/// branch not taken never overflows.
Value exponentialLinear(NodeContext &ctx, Value x, double alpha,
                        double divisor) {
  Value positive = ctx.compare(eff::CmpPredicate::gt, x, 0.0);
  Value safe = ctx.create<eff::WhereOp>(positive, scalarLike(ctx, 0.0, x), x);
  if (divisor != 1.0)
    safe = ctx.create<eff::DivOp>(safe, scalarLike(ctx, divisor, x));
  Value expm1 = ctx.create<eff::SubOp>(ctx.create<eff::ExpOp>(safe),
                                       scalarLike(ctx, 1.0, x));
  Value negative = alpha == 1.0 ? expm1 : mulScalar(ctx, expm1, alpha);
  return ctx.create<eff::WhereOp>(positive, x, negative);
}

LogicalResult convertElu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  ctx.setOutput(
      0, exponentialLinear(ctx, ctx.input(0), ctx.getFloat("alpha", 1.0), 1.0));
  return success();
}

LogicalResult convertCelu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  double alpha = ctx.getFloat("alpha", 1.0);
  if (alpha == 0.0)
    return ctx.unsupportedAttribute("alpha", "0");
  ctx.setOutput(0, exponentialLinear(ctx, ctx.input(0), alpha, alpha));
  return success();
}

LogicalResult convertSelu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  // ONNX's defaults are the float values of SELU's constants.
  double alpha = ctx.getFloat("alpha", 1.67326319217681884765625);
  double gamma = ctx.getFloat("gamma", 1.05070102214813232421875);
  Value elu = exponentialLinear(ctx, ctx.input(0), alpha, 1.0);
  ctx.setOutput(0, mulScalar(ctx, elu, gamma));
  return success();
}

/// Softplus(x) = log(1 + exp(x)). Above a threshold where log(1 + exp(x))
/// and x are the same number in the element type, it is x (PyTorch's
/// threshold 20 for float), and exp reads at most the threshold.
LogicalResult convertSoftplus(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Value x = ctx.input(0);
  Type elementType = elementTypeOf(x);
  // log1p(exp(-t)) is below half an ulp of t for these thresholds, and
  // exp(t) is finite (f16 overflows past 11).
  double threshold = elementType.isF16()   ? 10.0
                     : elementType.isF64() ? 40.0
                                           : 20.0;
  Value large = ctx.compare(eff::CmpPredicate::gt, x, threshold);
  Value safe =
      ctx.create<eff::WhereOp>(large, scalarLike(ctx, threshold, x), x);
  Value softplus = ctx.create<eff::LogOp>(ctx.create<eff::AddOp>(
      ctx.create<eff::ExpOp>(safe), scalarLike(ctx, 1.0, x)));
  ctx.setOutput(0, ctx.create<eff::WhereOp>(large, x, softplus));
  return success();
}

/// Softsign(x) = x / (1 + |x|).
LogicalResult convertSoftsign(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Value x = ctx.input(0);
  Value denominator = ctx.create<eff::AddOp>(ctx.create<eff::AbsOp>(x),
                                             scalarLike(ctx, 1.0, x));
  ctx.setOutput(0, ctx.create<eff::DivOp>(x, denominator));
  return success();
}

/// max(0, min(1, alpha * x + beta)), as selects so that the gradient at
/// the kinks is PyTorch's: `inclusive` passes it where alpha x + beta is
/// exactly 0 or 1 (hardswish_backward), otherwise only strictly between
/// (hardsigmoid_backward). eff.max / eff.min would split it in half there.
Value hardSigmoid(NodeContext &ctx, Value x, double alpha, double beta,
                  bool inclusive) {
  Value linear = ctx.create<eff::AddOp>(mulScalar(ctx, x, alpha),
                                        scalarLike(ctx, beta, x));
  Value zero = scalarLike(ctx, 0.0, x), one = scalarLike(ctx, 1.0, x);
  Value low = ctx.create<eff::CmpOp>(
      inclusive ? eff::CmpPredicate::lt : eff::CmpPredicate::le, linear, zero);
  Value high = ctx.create<eff::CmpOp>(
      inclusive ? eff::CmpPredicate::gt : eff::CmpPredicate::ge, linear, one);
  Value upper = ctx.create<eff::WhereOp>(high, one, linear);
  return ctx.create<eff::WhereOp>(low, zero, upper);
}

LogicalResult convertHardSigmoid(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  ctx.setOutput(0, hardSigmoid(ctx, ctx.input(0), ctx.getFloat("alpha", 0.2),
                               ctx.getFloat("beta", 0.5), /*inclusive=*/false));
  return success();
}

/// HardSwish(x) = x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
LogicalResult convertHardSwish(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Value x = ctx.input(0);
  ctx.setOutput(0, ctx.create<eff::MulOp>(
                       x, hardSigmoid(ctx, x, 1.0 / 6.0, 0.5,
                                      /*inclusive=*/true)));
  return success();
}

/// ThresholdedRelu(x) = x > alpha ? x : 0.
LogicalResult convertThresholdedRelu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Value x = ctx.input(0);
  Value above =
      ctx.compare(eff::CmpPredicate::gt, x, ctx.getFloat("alpha", 1.0));
  ctx.setOutput(0, ctx.create<eff::WhereOp>(above, x, scalarLike(ctx, 0.0, x)));
  return success();
}

} // namespace

void effopt::onnx_import::populateActivationConverters(ConverterMap &map) {
  map["LeakyRelu"] = convertLeakyRelu;
  map["PRelu"] = convertPRelu;
  map["Elu"] = convertElu;
  map["Celu"] = convertCelu;
  map["Selu"] = convertSelu;
  map["Softplus"] = convertSoftplus;
  map["Softsign"] = convertSoftsign;
  map["HardSigmoid"] = convertHardSigmoid;
  map["HardSwish"] = convertHardSwish;
  map["ThresholdedRelu"] = convertThresholdedRelu;
}
