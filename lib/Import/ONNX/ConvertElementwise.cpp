//===- ConvertElementwise.cpp - ONNX elementwise ops to eff ---------------===//

#include "NodeImporter.h"

#include "llvm/Support/xxhash.h"

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

/// Clip(x, min?, max?) with constant bounds.
LogicalResult convertClip(NodeContext &ctx) {
  Value result = ctx.input(0);
  if (ctx.hasInput(1))
    result = ctx.create<eff::MaxOp>(result, ctx.input(1));
  if (ctx.hasInput(2))
    result = ctx.create<eff::MinOp>(result, ctx.input(2));
  ctx.setOutput(0, result);
  return success();
}

/// Dropout(x, ratio?, training_mode?): training mode with a non-zero ratio
/// is `eff.dropout`; otherwise the identity with an all-true mask.
LogicalResult convertDropout(NodeContext &ctx) {
  double ratio = 0.5;
  if (ctx.hasInput(1)) {
    DenseElementsAttr attr = ctx.constantInput(1);
    if (!attr || !isa<FloatType>(attr.getElementType()))
      return ctx.error("input 'ratio' must be a constant");
    ratio = decimalValue(*attr.getValues<APFloat>().begin());
  }
  bool training = false;
  if (ctx.hasInput(2)) {
    DenseElementsAttr attr = ctx.constantInput(2);
    if (!attr)
      return ctx.error("input 'training_mode' must be a constant");
    training = !(*attr.getValues<APInt>().begin()).isZero();
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
  auto dropout = eff::DropoutOp::create(ctx.builder, ctx.loc(), input,
                                        ctx.builder.getF64FloatAttr(ratio),
                                        ctx.builder.getI64IntegerAttr(seed));
  ctx.setOutput(0, dropout.getOutput());
  ctx.setOutput(1, dropout.getMask());
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
}
