//===- ConvertShape.cpp - ONNX shape and data-movement ops to eff ---------===//
//
// Shapes are static, so every shape operand (Reshape's shape, Unsqueeze's
// axes, Slice's bounds, ...) must fold to a constant during import; the
// converters say which input is not constant when one does not.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

LogicalResult convertShape(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank();
  // Shape-15 takes an optional [start, end) window.
  int64_t start = ctx.getInt("start", 0), end = ctx.getInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  // eff.shape_of folds to a constant at once; the window is a folded slice.
  Value shape = ctx.create<eff::ShapeOfOp>(ctx.input(0));
  if (start != 0 || end != rank)
    shape = ctx.create<eff::SliceOp>(
        shape, ctx.builder.getDenseI64ArrayAttr({start}),
        ctx.builder.getDenseI64ArrayAttr({std::max(start, end)}),
        ctx.builder.getDenseI64ArrayAttr({1}));
  ctx.setOutput(0, shape);
  return success();
}

LogicalResult convertSize(NodeContext &ctx) {
  ctx.setOutput(0, ctx.splat(ctx.inputType(0).getNumElements(),
                             ctx.builder.getI64Type()));
  return success();
}

LogicalResult convertReshape(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> target = ctx.constantInts(1, "shape");
  if (failed(target))
    return failure();
  RankedTensorType type = ctx.inputType(0);
  bool allowZero = ctx.getInt("allowzero", 0) != 0;
  SmallVector<int64_t> shape;
  int64_t inferred = -1, known = 1;
  for (auto [i, dim] : llvm::enumerate(*target)) {
    if (dim == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= type.getRank())
        return ctx.error("shape entry " + Twine(i) +
                         " is 0 (copy) but the input has rank " +
                         Twine(type.getRank()));
      dim = type.getDimSize(i);
    }
    if (dim == -1) {
      if (inferred >= 0)
        return ctx.error("shape " + eff::formatShape(*target) +
                         " has more than one -1");
      inferred = i;
    } else if (dim < 0) {
      return ctx.error("shape " + eff::formatShape(*target) +
                       " has a negative entry");
    } else {
      known *= dim;
    }
    shape.push_back(dim);
  }
  if (inferred >= 0) {
    if (known == 0 || type.getNumElements() % known)
      return ctx.error("cannot reshape " + eff::formatShape(type.getShape()) +
                       " to " + eff::formatShape(*target));
    shape[inferred] = type.getNumElements() / known;
  }
  if (type.clone(shape).getNumElements() != type.getNumElements())
    return ctx.error("cannot reshape " + eff::formatShape(type.getShape()) +
                     " to " + eff::formatShape(shape));
  ctx.setOutput(0, ctx.reshape(ctx.input(0), shape));
  return success();
}

LogicalResult convertFlatten(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank();
  int64_t axis = ctx.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.error("axis " + Twine(axis) + " is out of range [" +
                     Twine(-rank) + ", " + Twine(rank) + "]");
  if (axis < 0)
    axis += rank;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= type.getDimSize(d);
  ctx.setOutput(0, ctx.reshape(ctx.input(0),
                               {outer, type.getNumElements() / std::max<int64_t>(outer, 1)}));
  return success();
}

/// Axes from the `axes` input (opset >= 13) or attribute (older).
FailureOr<SmallVector<int64_t>> axesOperand(NodeContext &ctx, unsigned input) {
  if (ctx.hasInput(input))
    return ctx.constantInts(input, "axes");
  return ctx.getInts("axes");
}

LogicalResult convertSqueeze(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> axes = axesOperand(ctx, 1);
  if (failed(axes))
    return failure();
  RankedTensorType type = ctx.inputType(0);
  SmallVector<bool> drop(type.getRank(), false);
  if (axes->empty()) {
    for (int64_t d = 0; d < type.getRank(); ++d)
      drop[d] = type.getDimSize(d) == 1;
  }
  for (int64_t axis : *axes) {
    FailureOr<int64_t> d = ctx.normalizedAxis(axis, type.getRank());
    if (failed(d))
      return failure();
    if (type.getDimSize(*d) != 1)
      return ctx.error("cannot squeeze dimension " + Twine(*d) + " of size " +
                       Twine(type.getDimSize(*d)));
    drop[*d] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!drop[d])
      shape.push_back(type.getDimSize(d));
  ctx.setOutput(0, ctx.reshape(ctx.input(0), shape));
  return success();
}

LogicalResult convertUnsqueeze(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> axes = axesOperand(ctx, 1);
  if (failed(axes))
    return failure();
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    FailureOr<int64_t> d = ctx.normalizedAxis(axis, rank);
    if (failed(d))
      return failure();
    if (inserted[*d])
      return ctx.error("axis " + Twine(axis) + " appears twice");
    inserted[*d] = true;
  }
  SmallVector<int64_t> shape;
  auto dims = type.getShape().begin();
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(inserted[d] ? 1 : *dims++);
  ctx.setOutput(0, ctx.reshape(ctx.input(0), shape));
  return success();
}

LogicalResult convertTranspose(NodeContext &ctx) {
  int64_t rank = ctx.inputType(0).getRank();
  SmallVector<int64_t> permutation = ctx.getInts("perm");
  if (permutation.empty())
    for (int64_t d = rank - 1; d >= 0; --d)
      permutation.push_back(d);
  ctx.setOutput(0, ctx.create<eff::TransposeOp>(ctx.input(0), permutation));
  return success();
}

LogicalResult convertExpand(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> target = ctx.constantInts(1, "shape");
  if (failed(target))
    return failure();
  RankedTensorType type = ctx.inputType(0);
  // Expand broadcasts both ways: the result is broadcast(input, shape).
  std::optional<SmallVector<int64_t>> shape =
      eff::broadcastShapes(type.getShape(), *target);
  if (!shape)
    return ctx.error("cannot expand " + eff::formatShape(type.getShape()) +
                     " to " + eff::formatShape(*target));
  Value input = ctx.input(0);
  if (type.getShape() != ArrayRef<int64_t>(*shape))
    input = ctx.create<eff::BroadcastToOp>(type.clone(*shape), input);
  ctx.setOutput(0, input);
  return success();
}

LogicalResult convertConcat(NodeContext &ctx) {
  SmallVector<Value> inputs;
  for (int i = 0; i < ctx.node.input_size(); ++i)
    if (ctx.hasInput(i))
      inputs.push_back(ctx.input(i));
  int64_t rank = ctx.inputType(0).getRank();
  if (llvm::any_of(inputs, [&](Value input) {
        return cast<RankedTensorType>(input.getType()).getRank() != rank;
      }))
    return ctx.error("inputs must have the same rank");
  FailureOr<int64_t> axis = ctx.normalizedAxis(ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  // Concat accepts empty pieces; eff does not need them.
  SmallVector<Value> nonEmpty;
  for (Value input : inputs)
    if (cast<RankedTensorType>(input.getType()).getDimSize(*axis) != 0)
      nonEmpty.push_back(input);
  if (nonEmpty.empty())
    nonEmpty.push_back(inputs.front());
  ctx.setOutput(0, ctx.create<eff::ConcatOp>(nonEmpty, *axis));
  return success();
}

LogicalResult convertSlice(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank();
  FailureOr<SmallVector<int64_t>> starts = ctx.constantInts(1, "starts");
  FailureOr<SmallVector<int64_t>> ends = ctx.constantInts(2, "ends");
  if (failed(starts) || failed(ends))
    return failure();
  SmallVector<int64_t> axes, steps;
  if (ctx.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = ctx.constantInts(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (ctx.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> s = ctx.constantInts(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  } else {
    steps.assign(starts->size(), 1);
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return ctx.error("starts, ends, axes and steps must have the same length");

  SmallVector<int64_t> sliceStarts(rank, 0), limits(type.getShape()),
      strides(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> d = ctx.normalizedAxis(axes[i], rank);
    if (failed(d))
      return failure();
    int64_t size = type.getDimSize(*d), step = steps[i];
    if (step == 0)
      return ctx.error("step of axis " + Twine(*d) + " is 0");
    int64_t start = (*starts)[i], end = (*ends)[i];
    // ONNX clamping rules (numpy-like, with INT64_MAX/MIN as "to the end").
    if (start < 0)
      start += size;
    if (end < 0 && end > std::numeric_limits<int64_t>::min() + size)
      end += size;
    else if (end < 0)
      end = -1;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, size);
      end = std::clamp<int64_t>(end, 0, size);
    } else {
      start = std::clamp<int64_t>(start, 0, size - 1);
      end = std::clamp<int64_t>(end, -1, size - 1);
    }
    sliceStarts[*d] = start;
    limits[*d] = end;
    strides[*d] = step;
  }
  ctx.setOutput(0, ctx.create<eff::SliceOp>(ctx.input(0), sliceStarts, limits,
                                            strides));
  return success();
}

LogicalResult convertSplit(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  FailureOr<int64_t> axis =
      ctx.normalizedAxis(ctx.getInt("axis", 0), type.getRank());
  if (failed(axis))
    return failure();
  FailureOr<SmallVector<int64_t>> sizes =
      ctx.splitSizes(type.getDimSize(*axis));
  if (failed(sizes))
    return failure();
  int64_t pieces = sizes->size();
  SmallVector<Type> resultTypes;
  for (int64_t size : *sizes) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = size;
    resultTypes.push_back(type.clone(shape));
  }
  auto split = ctx.build<eff::SplitOp>(resultTypes, ctx.input(0), *axis);
  if (!split)
    return failure();
  for (int64_t i = 0; i < pieces; ++i)
    ctx.setOutput(i, split.getResult(i));
  return success();
}

LogicalResult convertGather(NodeContext &ctx) {
  int64_t rank = ctx.inputType(0).getRank();
  FailureOr<int64_t> axis = ctx.normalizedAxis(ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  ctx.setOutput(0, ctx.create<eff::GatherOp>(ctx.input(0), ctx.input(1), *axis));
  return success();
}

LogicalResult convertConstant(NodeContext &ctx) {
  const onnx::AttributeProto *attr = nullptr;
  for (const onnx::AttributeProto &a : ctx.node.attribute())
    attr = &a;
  if (!attr || ctx.node.attribute_size() != 1)
    return ctx.error("needs exactly one value attribute");
  OpBuilder &b = ctx.builder;
  StringRef name = attr->name();
  DenseElementsAttr value;
  if (name == "value") {
    const onnx::TensorProto &tensor = attr->t();
    Type elementType = convertElementType(tensor.data_type(), ctx.context());
    if (!elementType)
      return ctx.unsupportedAttribute("value",
                                      "of type " + dataTypeName(tensor.data_type()));
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
      return ctx.error("constants with external data are not supported");
    SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    if (!boundedElementCount(dims))
      return ctx.error("value of shape " + eff::formatShape(dims) +
                       " has a negative dimension or more than " +
                       Twine(kMaxTensorElements) + " elements");
    auto type = RankedTensorType::get(dims, elementType);
    ArrayRef<char> raw(tensor.raw_data().data(), tensor.raw_data().size());
    FailureOr<DenseElementsAttr> dense = tensorToDenseAttr(
        tensor, type, raw, "constant value", [&] { return emitError(ctx.loc()); });
    if (failed(dense))
      return failure();
    value = *dense;
  } else if (name == "value_float") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   attr->f());
  } else if (name == "value_floats") {
    SmallVector<float> floats(attr->floats().begin(), attr->floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(floats.size())},
                              b.getF32Type()),
        ArrayRef<float>(floats));
  } else if (name == "value_int") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   static_cast<int64_t>(attr->i()));
  } else if (name == "value_ints") {
    SmallVector<int64_t> ints(attr->ints().begin(), attr->ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(ints.size())},
                              b.getI64Type()),
        ArrayRef<int64_t>(ints));
  } else {
    return ctx.unsupportedAttribute(name, "(only numeric constants)");
  }
  ctx.setOutput(0, ctx.constant(value));
  return success();
}

LogicalResult convertConstantOfShape(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> shape = ctx.constantInts(0, "input");
  if (failed(shape))
    return failure();
  if (!boundedElementCount(*shape))
    return ctx.error("shape " + eff::formatShape(*shape) +
                     " has a negative dimension or more than " +
                     Twine(kMaxTensorElements) + " elements");
  Attribute element = FloatAttr::get(ctx.builder.getF32Type(), 0.0);
  if (const onnx::AttributeProto *attr = ctx.attribute("value")) {
    const onnx::TensorProto &tensor = attr->t();
    Type elementType = convertElementType(tensor.data_type(), ctx.context());
    if (!elementType)
      return ctx.unsupportedAttribute("value",
                                      "of type " + dataTypeName(tensor.data_type()));
    ArrayRef<char> raw(tensor.raw_data().data(), tensor.raw_data().size());
    FailureOr<DenseElementsAttr> dense = tensorToDenseAttr(
        tensor, RankedTensorType::get({1}, elementType), raw, "value",
        [&] { return emitError(ctx.loc()); });
    if (failed(dense))
      return failure();
    element = *dense->getValues<Attribute>().begin();
  }
  auto type =
      RankedTensorType::get(*shape, cast<TypedAttr>(element).getType());
  ctx.setOutput(0, ctx.constant(DenseElementsAttr::get(type, element)));
  return success();
}

/// Range with constant operands (positions in transformers) folds here.
LogicalResult convertRange(NodeContext &ctx) {
  std::optional<double> start = ctx.constantScalar(0),
                        limit = ctx.constantScalar(1),
                        delta = ctx.constantScalar(2);
  if (!start || !limit || !delta)
    return ctx.error("start, limit and delta must be constant scalars");
  Type elementType = ctx.inputType(0).getElementType();
  double s = *start, l = *limit, d = *delta;
  if (d == 0)
    return ctx.error("delta is 0");
  double steps = std::ceil((l - s) / d);
  if (!(steps <= kMaxComputedElements))
    return ctx.error("the range from " + std::to_string(s) + " to " +
                     std::to_string(l) + " by " + std::to_string(d) +
                     " has more than " + Twine(kMaxComputedElements) +
                     " elements");
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(steps));
  auto type = RankedTensorType::get({count}, elementType);
  SmallVector<Attribute> elements;
  for (int64_t i = 0; i < count; ++i) {
    double v = s + i * d;
    if (isa<FloatType>(elementType))
      elements.push_back(FloatAttr::get(elementType, v));
    else
      elements.push_back(IntegerAttr::get(elementType, static_cast<int64_t>(v)));
  }
  ctx.setOutput(0, ctx.constant(DenseElementsAttr::get(type, elements)));
  return success();
}

/// Pads `value` along `axis` by `low`/`high` >= 0 copies of its edge
/// element (edge) or of its mirror image without the edge (reflect), as
/// slices concatenated around it.
Value padAxisByCopies(NodeContext &ctx, Value value, int64_t axis, int64_t low,
                      int64_t high, bool reflect) {
  if (!value)
    return {};
  auto type = cast<RankedTensorType>(value.getType());
  int64_t size = type.getDimSize(axis);
  auto slice = [&](int64_t start, int64_t limit, int64_t stride) {
    SmallVector<int64_t> starts(type.getRank(), 0), limits(type.getShape()),
        strides(type.getRank(), 1);
    starts[axis] = start;
    limits[axis] = limit;
    strides[axis] = stride;
    return ctx.create<eff::SliceOp>(value, starts, limits, strides);
  };
  auto repeated = [&](int64_t index, int64_t count) {
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = count;
    return ctx.broadcastTo(slice(index, index + 1, 1), shape);
  };
  SmallVector<Value> pieces;
  if (low > 0)
    // reflect: x[low], x[low - 1], ..., x[1]
    pieces.push_back(reflect ? slice(low, 0, -1) : repeated(0, low));
  pieces.push_back(value);
  if (high > 0)
    // reflect: x[n - 2], ..., x[n - 1 - high]
    pieces.push_back(reflect ? slice(size - 2, size - 2 - high, -1)
                             : repeated(size - 1, high));
  if (pieces.size() == 1)
    return value;
  return ctx.create<eff::ConcatOp>(pieces, axis);
}

LogicalResult convertPad(NodeContext &ctx) {
  std::string mode = ctx.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return ctx.unsupportedAttribute("mode", "'" + mode + "'");
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank();
  FailureOr<SmallVector<int64_t>> pads = ctx.constantInts(1, "pads");
  if (failed(pads))
    return failure();
  SmallVector<int64_t> axes;
  if (ctx.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = ctx.constantInts(3, "axes");
    if (failed(a))
      return failure();
    for (int64_t axis : *a) {
      FailureOr<int64_t> d = ctx.normalizedAxis(axis, rank);
      if (failed(d))
        return failure();
      axes.push_back(*d);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  if (pads->size() != 2 * axes.size())
    return ctx.error("pads has " + Twine(pads->size()) + " entries, expected " +
                     Twine(2 * axes.size()));
  SmallVector<int64_t> low(rank, 0), high(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    low[axes[i]] = (*pads)[i];
    high[axes[i]] = (*pads)[i + axes.size()];
  }
  // Negative pads crop: a slice first, then padding by the positive parts.
  Value value = ctx.input(0);
  SmallVector<int64_t> starts(rank, 0), limits(type.getShape()),
      strides(rank, 1);
  bool crops = false;
  for (int64_t d = 0; d < rank; ++d) {
    if (low[d] < 0) {
      starts[d] = -low[d];
      low[d] = 0;
      crops = true;
    }
    if (high[d] < 0) {
      limits[d] += high[d];
      high[d] = 0;
      crops = true;
    }
    if (starts[d] > limits[d])
      return ctx.error("pads crop more than dimension " + Twine(d) + " holds");
  }
  if (crops)
    value = ctx.create<eff::SliceOp>(value, starts, limits, strides);
  if (!value)
    return failure();
  if (mode != "constant") {
    auto cropped = cast<RankedTensorType>(value.getType());
    for (int64_t d = 0; d < rank; ++d) {
      if (low[d] == 0 && high[d] == 0)
        continue;
      int64_t size = cropped.getDimSize(d);
      if (mode == "reflect" && (low[d] >= size || high[d] >= size))
        return ctx.error("reflect padding of " +
                         Twine(std::max(low[d], high[d])) +
                         " needs dimension " + Twine(d) +
                         " to be larger than " + Twine(size));
      if (mode == "edge" && size == 0)
        return ctx.error("edge padding of an empty dimension " + Twine(d));
      value =
          padAxisByCopies(ctx, value, d, low[d], high[d], mode == "reflect");
    }
    ctx.setOutput(0, value);
    return success();
  }
  double padValue = 0.0;
  if (ctx.hasInput(2)) {
    std::optional<double> value = ctx.constantScalar(2);
    if (!value)
      return ctx.error("input 'constant_value' must be a constant scalar");
    padValue = *value;
  }
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; })) {
    ctx.setOutput(0, value);
    return success();
  }
  ctx.setOutput(
      0, ctx.create<eff::PadOp>(value, ctx.builder.getDenseI64ArrayAttr(low),
                                ctx.builder.getDenseI64ArrayAttr(high),
                                ctx.builder.getF64FloatAttr(padValue)));
  return success();
}

} // namespace

void effopt::onnx_import::populateShapeConverters(ConverterMap &map) {
  map["Shape"] = convertShape;
  map["Size"] = convertSize;
  map["Reshape"] = convertReshape;
  map["Flatten"] = convertFlatten;
  map["Squeeze"] = convertSqueeze;
  map["Unsqueeze"] = convertUnsqueeze;
  map["Transpose"] = convertTranspose;
  map["Expand"] = convertExpand;
  map["Concat"] = convertConcat;
  map["Slice"] = convertSlice;
  map["Split"] = convertSplit;
  map["Gather"] = convertGather;
  map["Constant"] = convertConstant;
  map["ConstantOfShape"] = convertConstantOfShape;
  map["Range"] = convertRange;
  map["Pad"] = convertPad;
}
