//===- ConvertReduction.cpp - ONNX reductions to eff ----------------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

/// The axes a reduction reads (normalised, sorted), or nullopt when it is
/// the identity (`noop_with_empty_axes` with no axes).
FailureOr<std::optional<SmallVector<int64_t>>> readAxes(NodeContext &ctx) {
  SmallVector<int64_t> axes;
  // ReduceSum (opset >= 13) and every reduction from opset 18 take `axes` as
  // an input; older reductions take an attribute.
  bool axesAsInput = ctx.node.op_type() == "ReduceSum" ? ctx.opset >= 13
                                                        : ctx.opset >= 18;
  if (axesAsInput) {
    if (ctx.hasInput(1)) {
      FailureOr<SmallVector<int64_t>> a = ctx.constantInts(1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else {
    axes = ctx.getInts("axes");
  }
  RankedTensorType type = ctx.inputType(0);
  if (axes.empty()) {
    if (ctx.getInt("noop_with_empty_axes", 0))
      return std::optional<SmallVector<int64_t>>();
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
  }
  for (int64_t &axis : axes) {
    FailureOr<int64_t> d = ctx.normalizedAxis(axis, type.getRank());
    if (failed(d))
      return failure();
    axis = *d;
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return static_cast<LogicalResult>(
        ctx.error("an axis appears twice in " + eff::formatShape(axes)));
  return std::optional<SmallVector<int64_t>>(axes);
}

bool keepDims(NodeContext &ctx) { return ctx.getInt("keepdims", 1) != 0; }

template <typename OpTy> LogicalResult convertReduce(NodeContext &ctx) {
  FailureOr<std::optional<SmallVector<int64_t>>> axes = readAxes(ctx);
  if (failed(axes))
    return failure();
  if (!*axes) {
    ctx.setOutput(0, ctx.input(0));
    return success();
  }
  ctx.setOutput(0, ctx.create<OpTy>(ctx.input(0), **axes, keepDims(ctx)));
  return success();
}

Type elementTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

/// The reductions ONNX defines by formula, composed from eff ops:
/// L1 = sum |x|, L2 = sqrt(sum x^2), SumSquare = sum x^2, LogSum =
/// log(sum x), LogSumExp = m + log(sum exp(x - m)) with m the (finite)
/// maximum, as PyTorch's logsumexp computes it.
enum class ComposedReduction { L1, L2, SumSquare, LogSum, LogSumExp };

template <ComposedReduction kind>
LogicalResult convertComposedReduce(NodeContext &ctx) {
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNoop = readAxes(ctx);
  if (failed(axesOrNoop))
    return failure();
  Value x = ctx.input(0);
  Type elementType = elementTypeOf(x);
  bool isFloat = isa<FloatType>(elementType);
  if (!isFloat && kind != ComposedReduction::L1 &&
      kind != ComposedReduction::SumSquare)
    return ctx.error("input must be a floating-point tensor");
  // With no axes and noop_with_empty_axes, the reduction is over nothing:
  // the formula applied elementwise.
  SmallVector<int64_t> axes = axesOrNoop->value_or(SmallVector<int64_t>());
  bool keep = keepDims(ctx);
  auto sum = [&](Value v, bool keepDimensions) -> Value {
    if (axes.empty())
      return v;
    return ctx.create<eff::ReduceSumOp>(v, axes, keepDimensions);
  };
  Value result;
  switch (kind) {
  case ComposedReduction::L1:
    result = sum(ctx.create<eff::AbsOp>(x), keep);
    break;
  case ComposedReduction::L2:
    result = ctx.create<eff::SqrtOp>(sum(ctx.create<eff::MulOp>(x, x), keep));
    break;
  case ComposedReduction::SumSquare:
    result = sum(ctx.create<eff::MulOp>(x, x), keep);
    break;
  case ComposedReduction::LogSum:
    result = ctx.create<eff::LogOp>(sum(x, keep));
    break;
  case ComposedReduction::LogSumExp: {
    if (axes.empty()) {
      result = x;
      break;
    }
    // An infinite maximum (all -inf, or a +inf) is replaced by 0 so that
    // x - m stays defined, as in PyTorch.
    Value max = ctx.create<eff::ReduceMaxOp>(x, axes, true);
    Value infinite =
        ctx.compare(eff::CmpPredicate::eq, ctx.create<eff::AbsOp>(max),
                    std::numeric_limits<double>::infinity());
    max = ctx.create<eff::WhereOp>(infinite, ctx.splat(0.0, elementType), max);
    Value shifted = ctx.create<eff::ExpOp>(ctx.create<eff::SubOp>(x, max));
    Value logSum = ctx.create<eff::LogOp>(sum(shifted, true));
    result = ctx.create<eff::AddOp>(logSum, max);
    if (!keep) {
      SmallVector<int64_t> shape;
      for (auto [d, size] :
           llvm::enumerate(cast<RankedTensorType>(x.getType()).getShape()))
        if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
          shape.push_back(size);
      result = ctx.reshape(result, shape);
    }
    break;
  }
  }
  ctx.setOutput(0, result);
  return success();
}

/// ReduceProd folds on constants (the element counts torch's var/std
/// exports compute from shapes); eff has no product reduction for tensors
/// computed at run time.
LogicalResult convertReduceProd(NodeContext &ctx) {
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNoop = readAxes(ctx);
  if (failed(axesOrNoop))
    return failure();
  if (!*axesOrNoop) {
    ctx.setOutput(0, ctx.input(0));
    return success();
  }
  DenseElementsAttr input = ctx.constantInput(0);
  if (!input)
    return ctx.error("ReduceProd is supported on constant inputs only (eff "
                     "has no product reduction)");
  RankedTensorType type = ctx.inputType(0);
  if (failed(ctx.checkComputedSize(type.getShape(), "the folded input")))
    return failure();
  const SmallVector<int64_t> &axes = **axesOrNoop;
  bool keep = keepDims(ctx);
  SmallVector<int64_t> keptShape, resultShape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool reduced = llvm::is_contained(axes, d);
    keptShape.push_back(reduced ? 1 : type.getDimSize(d));
    if (!reduced || keep)
      resultShape.push_back(reduced ? 1 : type.getDimSize(d));
  }
  int64_t count = 1;
  for (int64_t size : keptShape)
    count *= size;
  // Linear index of each input element in the reduced (kept-dims) shape.
  auto target = [&](int64_t index) {
    int64_t result = 0, stride = 1;
    SmallVector<int64_t> coordinates(type.getRank());
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      coordinates[d] = index % type.getDimSize(d);
      index /= type.getDimSize(d);
    }
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      result += (keptShape[d] == 1 ? 0 : coordinates[d]) * stride;
      stride *= keptShape[d];
    }
    return result;
  };
  auto resultType = RankedTensorType::get(resultShape, type.getElementType());
  DenseElementsAttr folded;
  if (isa<FloatType>(type.getElementType())) {
    SmallVector<APFloat> products(count, APFloat(1.0));
    const llvm::fltSemantics &semantics =
        cast<FloatType>(type.getElementType()).getFloatSemantics();
    bool lost;
    for (APFloat &p : products)
      p.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
    for (auto [i, value] : llvm::enumerate(input.getValues<APFloat>()))
      products[target(i)].multiply(value, APFloat::rmNearestTiesToEven);
    folded = DenseElementsAttr::get(resultType, products);
  } else {
    unsigned width = type.getElementTypeBitWidth();
    SmallVector<APInt> products(count, APInt(width, 1));
    for (auto [i, value] : llvm::enumerate(input.getValues<APInt>()))
      products[target(i)] *= value;
    folded = DenseElementsAttr::get(resultType, products);
  }
  ctx.setOutput(0, ctx.constant(folded));
  return success();
}

/// ArgMax / ArgMin: the first (or, with select_last_index, last) position
/// along `axis` holding the extreme value: positions where x equals the
/// reduced extreme (or is NaN, which PyTorch treats as the extreme), then
/// the smallest (largest) such position.
template <bool isMax> LogicalResult convertArgExtreme(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = ctx.normalizedAxis(ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  bool keep = keepDims(ctx);
  bool last = ctx.getInt("select_last_index", 0) != 0;
  Value x = ctx.input(0);
  SmallVector<int64_t> axes{*axis};
  Value extreme = isMax ? ctx.create<eff::ReduceMaxOp>(x, axes, true)
                        : ctx.create<eff::ReduceMinOp>(x, axes, true);
  Value hit = ctx.create<eff::CmpOp>(eff::CmpPredicate::eq, x, extreme);
  if (isa<FloatType>(type.getElementType()))
    hit = ctx.create<eff::LogicalOrOp>(
        hit, ctx.create<eff::CmpOp>(eff::CmpPredicate::ne, x, x));
  Type i64 = ctx.builder.getI64Type();
  int64_t size = type.getDimSize(*axis);
  Value positions = ctx.iota(size, *axis, rank, i64);
  Value candidates = ctx.create<eff::WhereOp>(hit, positions,
                                              ctx.splat(last ? -1 : size, i64));
  Value result = last ? ctx.create<eff::ReduceMaxOp>(candidates, axes, keep)
                      : ctx.create<eff::ReduceMinOp>(candidates, axes, keep);
  ctx.setOutput(0, result);
  return success();
}

/// The most elements TopK selects: it is written as k selections.
constexpr int64_t kMaxTopK = 64;

/// TopK(x, k): the k largest (or smallest) elements along an axis, sorted,
/// equal elements in index order (ONNX's order), and their positions.
/// Written as k selections, each an ArgMax/ArgMin over the elements not yet
/// taken; each value is picked by a one-hot `where` + sum, so the gradient
/// reaches exactly the selected position, as PyTorch's topk backward does.
LogicalResult convertTopK(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = ctx.normalizedAxis(ctx.getInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  FailureOr<SmallVector<int64_t>> kValues = ctx.constantInts(1, "K");
  if (failed(kValues))
    return failure();
  if (kValues->size() != 1)
    return ctx.error("K must hold one value, not " + Twine(kValues->size()));
  int64_t k = kValues->front(), size = type.getDimSize(*axis);
  if (k < 1 || k > size)
    return ctx.error("K = " + Twine(k) + " is not in [1, " + Twine(size) +
                     "] (the size of axis " + Twine(*axis) + ")");
  if (k > kMaxTopK)
    return ctx.error("K = " + Twine(k) + " is more than the " +
                     Twine(kMaxTopK) + " elements TopK can select");
  bool largest = ctx.getInt("largest", 1) != 0;
  Type elementType = type.getElementType();
  // Taken positions read as the value no other element passes.
  double taken;
  if (isa<FloatType>(elementType))
    taken = largest ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  else if (elementType.isSignlessInteger() &&
           elementType.getIntOrFloatBitWidth() > 1)
    taken = largest ? -std::ldexp(1.0, elementType.getIntOrFloatBitWidth() - 1)
                    : std::ldexp(1.0, elementType.getIntOrFloatBitWidth() - 1) -
                          1;
  else
    return ctx.error("TopK takes float or signed integer elements");
  Value x = ctx.input(0), remaining = x;
  Type i64 = ctx.builder.getI64Type();
  Value positions = ctx.iota(size, *axis, rank, i64);
  Value fill = ctx.splat(taken, elementType);
  Value zero = ctx.splat(0, elementType);
  Value isTaken = ctx.create<eff::CmpOp>(eff::CmpPredicate::ne, positions,
                                         positions);
  SmallVector<int64_t> axes{*axis};
  SmallVector<Value> values, indices;
  for (int64_t i = 0; i < k; ++i) {
    Value extreme = largest
                        ? ctx.create<eff::ReduceMaxOp>(remaining, axes, true)
                        : ctx.create<eff::ReduceMinOp>(remaining, axes, true);
    Value hit = ctx.create<eff::CmpOp>(eff::CmpPredicate::eq, remaining,
                                       extreme);
    if (isa<FloatType>(elementType))
      hit = ctx.create<eff::LogicalOrOp>(
          hit,
          ctx.create<eff::CmpOp>(eff::CmpPredicate::ne, remaining, remaining));
    hit = ctx.create<eff::LogicalAndOp>(
        hit, ctx.create<eff::LogicalNotOp>(isTaken));
    Value index = ctx.create<eff::ReduceMinOp>(
        ctx.create<eff::WhereOp>(hit, positions, ctx.splat(size, i64)), axes,
        true);
    Value hot = ctx.create<eff::CmpOp>(eff::CmpPredicate::eq, positions, index);
    values.push_back(ctx.create<eff::ReduceSumOp>(
        ctx.create<eff::WhereOp>(hot, x, zero), axes, true));
    indices.push_back(index);
    if (i + 1 == k)
      break;
    remaining = ctx.create<eff::WhereOp>(hot, fill, remaining);
    isTaken = ctx.create<eff::LogicalOrOp>(isTaken, hot);
  }
  ctx.setOutput(0, k == 1 ? values.front()
                          : ctx.create<eff::ConcatOp>(values, *axis));
  ctx.setOutput(1, k == 1 ? indices.front()
                          : ctx.create<eff::ConcatOp>(indices, *axis));
  return success();
}

} // namespace

void effopt::onnx_import::populateReductionConverters(ConverterMap &map) {
  map["ReduceSum"] = convertReduce<eff::ReduceSumOp>;
  map["ReduceMean"] = convertReduce<eff::ReduceMeanOp>;
  map["ReduceMax"] = convertReduce<eff::ReduceMaxOp>;
  map["ReduceMin"] = convertReduce<eff::ReduceMinOp>;
  map["ReduceL1"] = convertComposedReduce<ComposedReduction::L1>;
  map["ReduceL2"] = convertComposedReduce<ComposedReduction::L2>;
  map["ReduceSumSquare"] = convertComposedReduce<ComposedReduction::SumSquare>;
  map["ReduceLogSum"] = convertComposedReduce<ComposedReduction::LogSum>;
  map["ReduceLogSumExp"] = convertComposedReduce<ComposedReduction::LogSumExp>;
  map["ReduceProd"] = convertReduceProd;
  map["ArgMax"] = convertArgExtreme<true>;
  map["ArgMin"] = convertArgExtreme<false>;
  map["TopK"] = convertTopK;
}
