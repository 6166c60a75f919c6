//===- ConvertIndexing.cpp - index-driven ONNX ops composed from eff ops
//---===//
//
// ONNX ops that select, place or repeat elements by index: Trilu, OneHot,
// Tile, GatherElements, ScatterElements, ScatterND, CumSum, DepthToSpace,
// SpaceToDepth and Resize. eff has no op of their own; each is written with
// eff's data-movement ops (reshape, broadcast_to, transpose, slice, gather,
// concat) or as a comparison against positions followed by `where` and a
// reduction ("one-hot" form), so every composition is exact and autodiff
// differentiates it with existing rules.
//
// The one-hot forms cost O(indices x axis size) memory; they fit the sizes
// training graphs use these ops at (label gathers, masks, short scans).
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include <cmath>

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Inserts a size-1 dimension at `axis`.
Value unsqueeze(NodeContext &ctx, Value value, int64_t axis) {
  if (!value)
    return {};
  SmallVector<int64_t> shape(typeOf(value).getShape());
  shape.insert(shape.begin() + axis, 1);
  return ctx.reshape(value, shape);
}

/// `indices` (any integer type) as i64 with negative entries counted from
/// `size`, as ONNX's indexing ops define them.
Value normalizeIndices(NodeContext &ctx, Value indices, int64_t size) {
  Type i64 = ctx.builder.getI64Type();
  indices = ctx.cast(indices, i64);
  Value negative = ctx.compare(eff::CmpPredicate::lt, indices, 0.0);
  Value wrapped = ctx.create<eff::AddOp>(indices, ctx.splat(size, i64));
  return ctx.create<eff::WhereOp>(negative, wrapped, indices);
}

/// A static slice of `value` along `axis`.
Value sliceAxis(NodeContext &ctx, Value value, int64_t axis, int64_t start,
                int64_t limit, int64_t stride = 1) {
  if (!value)
    return {};
  RankedTensorType type = typeOf(value);
  SmallVector<int64_t> starts(type.getRank(), 0), limits(type.getShape()),
      strides(type.getRank(), 1);
  starts[axis] = start;
  limits[axis] = limit;
  strides[axis] = stride;
  return ctx.create<eff::SliceOp>(value, starts, limits, strides);
}

//===----------------------------------------------------------------------===//
// Masks and one-hot selections
//===----------------------------------------------------------------------===//

/// Trilu(x, k): keeps the upper (j - i >= k) or lower (j - i <= k) triangle
/// of the last two dimensions and zeroes the rest.
/// EyeLike(x): ones on diagonal k of a 2-D tensor shaped like x, zeros
/// elsewhere. Only x's shape is read: under static shapes it is a constant
/// (torch.diagonal exports as x * EyeLike(x) summed over a row).
LogicalResult convertEyeLike(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (type.getRank() != 2)
    return ctx.error("input must have rank 2, not " + Twine(type.getRank()));
  Type elementType = type.getElementType();
  if (const onnx::AttributeProto *dtype = ctx.attribute("dtype")) {
    elementType = convertElementType(dtype->i(), ctx.context());
    if (!elementType)
      return ctx.error("unsupported dtype " + Twine(dtype->i()));
  }
  if (!elementType.isIntOrFloat())
    return ctx.error("dtype must be numeric");
  if (failed(ctx.checkComputedSize(type.getShape(), "the identity matrix")))
    return failure();
  int64_t k = ctx.getInt("k", 0);
  auto resultType = RankedTensorType::get(type.getShape(), elementType);
  Attribute one, zero;
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    one = FloatAttr::get(floatType, 1.0);
    zero = FloatAttr::get(floatType, 0.0);
  } else {
    one = IntegerAttr::get(elementType, 1);
    zero = IntegerAttr::get(elementType, 0);
  }
  SmallVector<Attribute> elements;
  for (int64_t i = 0; i < type.getDimSize(0); ++i)
    for (int64_t j = 0; j < type.getDimSize(1); ++j)
      elements.push_back(j - i == k ? one : zero);
  ctx.setOutput(0, ctx.constant(DenseElementsAttr::get(resultType, elements)));
  return success();
}

LogicalResult convertTrilu(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (type.getRank() < 2)
    return ctx.error("input must have rank >= 2");
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> kValue = ctx.constantInts(1, "k");
    if (failed(kValue))
      return failure();
    if (kValue->size() != 1)
      return ctx.error("input 'k' must hold one value");
    k = kValue->front();
  }
  bool upper = ctx.getInt("upper", 1) != 0;
  int64_t rows = type.getDimSize(type.getRank() - 2);
  int64_t columns = type.getDimSize(type.getRank() - 1);
  if (failed(ctx.checkComputedSize({rows, columns}, "the triangle mask")))
    return failure();
  SmallVector<bool> keep;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j)
      keep.push_back(upper ? j - i >= k : j - i <= k);
  // A constant input (torch.triu of a full -inf matrix, the causal mask of
  // nn.Transformer.generate_square_subsequent_mask) folds to the mask.
  if (DenseElementsAttr input = ctx.constantInput(0)) {
    if (failed(ctx.checkComputedSize(type.getShape(), "the folded input")))
      return failure();
    Attribute zero =
        isa<FloatType>(type.getElementType())
            ? Attribute(FloatAttr::get(type.getElementType(), 0.0))
            : Attribute(IntegerAttr::get(type.getElementType(), 0));
    SmallVector<Attribute> elements;
    int64_t matrix = rows * columns;
    for (auto [i, element] : llvm::enumerate(input.getValues<Attribute>()))
      elements.push_back(keep[i % matrix] ? element : zero);
    ctx.setOutput(0, ctx.constant(DenseElementsAttr::get(type, elements)));
    return success();
  }
  auto maskType =
      RankedTensorType::get({rows, columns}, ctx.builder.getI1Type());
  Value mask = ctx.constant(DenseElementsAttr::get(maskType, keep));
  Value zero = ctx.splat(0, type.getElementType());
  ctx.setOutput(0, ctx.create<eff::WhereOp>(mask, ctx.input(0), zero));
  return success();
}

/// A scalar element `index` of a rank-1 tensor.
Value elementOf(NodeContext &ctx, Value vector, int64_t index) {
  return ctx.reshape(sliceAxis(ctx, vector, 0, index, index + 1), {});
}

/// OneHot(indices, depth, [off, on]): `on` where the position along `axis`
/// equals the index (negative indices count from `depth`), `off` elsewhere.
LogicalResult convertOneHot(NodeContext &ctx) {
  DenseElementsAttr depthAttr = ctx.constantInput(1);
  if (!depthAttr || depthAttr.getNumElements() != 1)
    return ctx.error("input 'depth' must be a constant scalar");
  int64_t depth;
  if (isa<FloatType>(depthAttr.getElementType())) {
    double value = (*depthAttr.getValues<APFloat>().begin()).convertToDouble();
    if (!(value >= 1 && value <= kMaxComputedElements))
      return ctx.error("depth " + std::to_string(value) +
                       " is not a positive count of classes");
    depth = static_cast<int64_t>(value);
  } else {
    depth = (*depthAttr.getValues<APInt>().begin()).getSExtValue();
  }
  if (depth <= 0)
    return ctx.error("depth " + Twine(depth) + " is not positive");
  RankedTensorType valuesType = ctx.inputType(2);
  if (valuesType.getNumElements() != 2)
    return ctx.error("input 'values' must hold [off_value, on_value]");
  int64_t rank = ctx.inputType(0).getRank() + 1;
  FailureOr<int64_t> axis = ctx.normalizedAxis(ctx.getInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  Value indices = ctx.input(0);
  if (isa<FloatType>(ctx.inputType(0).getElementType()))
    indices = ctx.cast(indices, ctx.builder.getI64Type());
  indices = unsqueeze(ctx, normalizeIndices(ctx, indices, depth), *axis);
  Value hot = ctx.create<eff::CmpOp>(
      eff::CmpPredicate::eq, indices,
      ctx.iota(depth, *axis, rank, ctx.builder.getI64Type()));
  Value values = ctx.reshape(ctx.input(2), {2});
  ctx.setOutput(0, ctx.create<eff::WhereOp>(hot, elementOf(ctx, values, 1),
                                            elementOf(ctx, values, 0)));
  return success();
}

/// GatherND(data, indices, batch_dims = b): indices [B..., ..., d] address
/// dimensions b .. b + d - 1 of data [B..., D...] within each batch entry.
/// Written as one Gather along data's first b + d dimensions flattened, at
/// the row-major position of (batch coordinates, index tuple) (torch.diagonal
/// exports as one).
LogicalResult convertGatherND(NodeContext &ctx) {
  RankedTensorType dataType = ctx.inputType(0), indicesType = ctx.inputType(1);
  int64_t batch = ctx.getInt("batch_dims", 0);
  int64_t indicesRank = indicesType.getRank(), dataRank = dataType.getRank();
  if (batch < 0 || batch >= std::min(indicesRank, dataRank))
    return ctx.error("batch_dims " + Twine(batch) +
                     " is not below the ranks of data and indices");
  ArrayRef<int64_t> dataShape = dataType.getShape();
  if (indicesType.getShape().take_front(batch) != dataShape.take_front(batch))
    return ctx.error("the batch dimensions of data and indices differ");
  int64_t depth = indicesType.getShape().back();
  if (depth < 1 || batch + depth > dataRank)
    return ctx.error("index tuples of " + Twine(depth) +
                     " elements do not address data of rank " +
                     Twine(dataRank) + " after " + Twine(batch) +
                     " batch dimensions");
  Type i64 = ctx.builder.getI64Type();
  SmallVector<int64_t> tupleShape(indicesType.getShape().drop_back());
  int64_t tupleRank = tupleShape.size();
  Value flat;
  int64_t stride = 1;
  auto accumulate = [&](Value position) {
    Value scaled = ctx.create<eff::MulOp>(position, ctx.splat(stride, i64));
    flat = flat ? ctx.create<eff::AddOp>(flat, scaled) : scaled;
  };
  for (int64_t k = depth - 1; k >= 0; --k) {
    Value component = ctx.reshape(
        sliceAxis(ctx, ctx.input(1), indicesRank - 1, k, k + 1), tupleShape);
    accumulate(normalizeIndices(ctx, component, dataShape[batch + k]));
    stride *= dataShape[batch + k];
  }
  for (int64_t k = batch - 1; k >= 0; --k) {
    accumulate(ctx.iota(dataShape[k], k, tupleRank, i64));
    stride *= dataShape[k];
  }
  flat = ctx.broadcastTo(flat, tupleShape);
  SmallVector<int64_t> rowsShape{stride};
  llvm::append_range(rowsShape, dataShape.drop_front(batch + depth));
  ctx.setOutput(0, ctx.create<eff::GatherOp>(
                       ctx.reshape(ctx.input(0), rowsShape), flat, int64_t(0)));
  return success();
}

/// GatherElements(data, indices, axis): out[.., j, ..] = data[.., idx, ..].
/// Written as sum over the axis of where(position == index, data, 0), which
/// selects exactly one element (gradient: the scatter PyTorch computes).
LogicalResult convertGatherElements(NodeContext &ctx) {
  RankedTensorType dataType = ctx.inputType(0), indicesType = ctx.inputType(1);
  int64_t rank = dataType.getRank();
  if (indicesType.getRank() != rank)
    return ctx.error("data and indices must have the same rank");
  FailureOr<int64_t> axis = ctx.normalizedAxis(ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  // Other dimensions of indices may be smaller: only that part is read.
  Value data = ctx.input(0);
  for (int64_t d = 0; d < rank; ++d) {
    if (d == *axis || indicesType.getDimSize(d) == dataType.getDimSize(d))
      continue;
    if (indicesType.getDimSize(d) > dataType.getDimSize(d))
      return ctx.error("indices dimension " + Twine(d) + " (" +
                       Twine(indicesType.getDimSize(d)) +
                       ") exceeds the data's (" +
                       Twine(dataType.getDimSize(d)) + ")");
    data = sliceAxis(ctx, data, d, 0, indicesType.getDimSize(d));
  }
  int64_t size = dataType.getDimSize(*axis);
  // indices [.., k, 1, ..] against positions [.., 1, n, ..].
  Value indices =
      unsqueeze(ctx, normalizeIndices(ctx, ctx.input(1), size), *axis + 1);
  Value hot = ctx.create<eff::CmpOp>(
      eff::CmpPredicate::eq, indices,
      ctx.iota(size, *axis + 1, rank + 1, ctx.builder.getI64Type()));
  Value picked =
      ctx.create<eff::WhereOp>(hot, unsqueeze(ctx, data, *axis),
                               ctx.splat(0, dataType.getElementType()));
  ctx.setOutput(0, ctx.create<eff::ReduceSumOp>(
                       picked, ArrayRef<int64_t>{*axis + 1}, false));
  return success();
}

/// ScatterElements(data, indices, updates, axis, reduction): writes (or
/// adds) each update at its index along `axis`.
LogicalResult convertScatterElements(NodeContext &ctx) {
  RankedTensorType dataType = ctx.inputType(0), indicesType = ctx.inputType(1);
  int64_t rank = dataType.getRank();
  if (indicesType.getRank() != rank ||
      ctx.inputType(2) != indicesType.clone(dataType.getElementType()))
    return ctx.error("indices and updates must have the same shape and the "
                     "data's rank");
  FailureOr<int64_t> axis = ctx.normalizedAxis(ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && indicesType.getDimSize(d) != dataType.getDimSize(d))
      return ctx.error("indices dimension " + Twine(d) + " (" +
                       Twine(indicesType.getDimSize(d)) +
                       ") differs from the data's (" +
                       Twine(dataType.getDimSize(d)) + ")");
  std::string reduction = ctx.getString("reduction", "none");
  if (reduction != "none" && reduction != "add")
    return ctx.unsupportedAttribute("reduction", "'" + reduction + "'");
  int64_t size = dataType.getDimSize(*axis);
  Type elementType = dataType.getElementType();
  // updates [.., k, 1, ..] placed on positions [.., 1, n, ..], summed over k.
  Value indices =
      unsqueeze(ctx, normalizeIndices(ctx, ctx.input(1), size), *axis + 1);
  Value hot = ctx.create<eff::CmpOp>(
      eff::CmpPredicate::eq, indices,
      ctx.iota(size, *axis + 1, rank + 1, ctx.builder.getI64Type()));
  Value placed = ctx.create<eff::WhereOp>(
      hot, unsqueeze(ctx, ctx.input(2), *axis + 1), ctx.splat(0, elementType));
  Value scattered =
      ctx.create<eff::ReduceSumOp>(placed, ArrayRef<int64_t>{*axis}, false);
  if (reduction == "add") {
    ctx.setOutput(0, ctx.create<eff::AddOp>(ctx.input(0), scattered));
    return success();
  }
  Value hits = ctx.create<eff::ReduceSumOp>(
      ctx.cast(hot, ctx.builder.getI64Type()), ArrayRef<int64_t>{*axis}, false);
  Value written = ctx.compare(eff::CmpPredicate::gt, hits, 0.0);
  ctx.setOutput(0, ctx.create<eff::WhereOp>(written, scattered, ctx.input(0)));
  return success();
}

/// ScatterND(data, indices, updates) with constant indices (what exporters
/// emit for `x[:, 0] = v`): a constant mask of the written positions and a
/// gather that lays the updates out like the data.
LogicalResult convertScatterND(NodeContext &ctx) {
  RankedTensorType dataType = ctx.inputType(0), indicesType = ctx.inputType(1);
  FailureOr<SmallVector<int64_t>> indices = ctx.constantInts(1, "indices");
  if (failed(indices))
    return failure();
  std::string reduction = ctx.getString("reduction", "none");
  if (reduction != "none" && reduction != "add")
    return ctx.unsupportedAttribute("reduction", "'" + reduction + "'");
  if (indicesType.getRank() == 0)
    return ctx.error("indices must not be a scalar");
  int64_t depth = indicesType.getShape().back();
  int64_t rank = dataType.getRank();
  if (depth < 1 || depth > rank)
    return ctx.error("the last dimension of indices (" + Twine(depth) +
                     ") must be in [1, " + Twine(rank) + "]");
  ArrayRef<int64_t> indexed = dataType.getShape().take_front(depth);
  ArrayRef<int64_t> tail = dataType.getShape().drop_front(depth);
  int64_t updatesCount = indicesType.getNumElements() / depth;
  SmallVector<int64_t> updatesShape(indicesType.getShape().drop_back());
  updatesShape.append(tail.begin(), tail.end());
  if (ctx.inputType(2).getShape() != ArrayRef<int64_t>(updatesShape))
    return ctx.error("updates have shape " +
                     eff::formatShape(ctx.inputType(2).getShape()) +
                     ", expected " + eff::formatShape(updatesShape));
  if (failed(ctx.checkComputedSize(indexed, "the scatter positions")))
    return failure();
  int64_t positions = 1;
  for (int64_t size : indexed)
    positions *= size;
  // For each indexed position: which update writes it (the last one wins).
  SmallVector<int64_t> source(positions, 0);
  SmallVector<bool> written(positions, false);
  for (int64_t u = 0; u < updatesCount; ++u) {
    int64_t flat = 0;
    for (int64_t d = 0; d < depth; ++d) {
      int64_t index = (*indices)[u * depth + d];
      if (index < 0)
        index += indexed[d];
      if (index < 0 || index >= indexed[d])
        return ctx.error("index " + Twine((*indices)[u * depth + d]) +
                         " is out of range for dimension " + Twine(d) +
                         " of size " + Twine(indexed[d]));
      flat = flat * indexed[d] + index;
    }
    if (reduction == "add" && written[flat])
      return ctx.error("ScatterND with reduction 'add' and repeated indices "
                       "is not supported");
    source[flat] = u;
    written[flat] = true;
  }
  Type i64 = ctx.builder.getI64Type();
  SmallVector<int64_t> flatUpdatesShape{updatesCount};
  flatUpdatesShape.append(tail.begin(), tail.end());
  Value updates = ctx.reshape(ctx.input(2), flatUpdatesShape);
  Value sourceIndices = ctx.constant(DenseElementsAttr::get(
      RankedTensorType::get(indexed, i64), ArrayRef<int64_t>(source)));
  Value laidOut = ctx.create<eff::GatherOp>(updates, sourceIndices, 0);
  SmallVector<int64_t> maskShape(indexed);
  maskShape.append(tail.size(), 1);
  Value mask = ctx.constant(DenseElementsAttr::get(
      RankedTensorType::get(maskShape, ctx.builder.getI1Type()), written));
  if (reduction == "add") {
    Value zero = ctx.splat(0, dataType.getElementType());
    ctx.setOutput(
        0, ctx.create<eff::AddOp>(
               ctx.input(0), ctx.create<eff::WhereOp>(mask, laidOut, zero)));
    return success();
  }
  ctx.setOutput(0, ctx.create<eff::WhereOp>(mask, laidOut, ctx.input(0)));
  return success();
}

/// CumSum(x, axis): out[j] = sum of x[i] over i <= j (i < j exclusive;
/// reversed: i >= j), as where(triangle, x, 0) summed over i. A matmul with
/// a 0/1 matrix would turn an infinite x[i] into NaN for every j < i.
LogicalResult convertCumSum(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  FailureOr<SmallVector<int64_t>> axisValue = ctx.constantInts(1, "axis");
  if (failed(axisValue))
    return failure();
  if (axisValue->size() != 1)
    return ctx.error("input 'axis' must hold one value");
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = ctx.normalizedAxis(axisValue->front(), rank);
  if (failed(axis))
    return failure();
  bool exclusive = ctx.getInt("exclusive", 0) != 0;
  bool reverse = ctx.getInt("reverse", 0) != 0;
  int64_t n = type.getDimSize(*axis);
  if (failed(ctx.checkComputedSize({n, n}, "the triangle mask")))
    return failure();
  // triangle[i][j]: does x[i] count towards out[j]? Laid out at dims
  // (axis, axis + 1) of a rank + 1 shape.
  SmallVector<bool> triangle;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      triangle.push_back(reverse ? (exclusive ? i > j : i >= j)
                                 : (exclusive ? i < j : i <= j));
  SmallVector<int64_t> maskShape(rank + 1, 1);
  maskShape[*axis] = n;
  maskShape[*axis + 1] = n;
  Value mask = ctx.constant(DenseElementsAttr::get(
      RankedTensorType::get(maskShape, ctx.builder.getI1Type()), triangle));
  Value terms =
      ctx.create<eff::WhereOp>(mask, unsqueeze(ctx, ctx.input(0), *axis + 1),
                               ctx.splat(0, type.getElementType()));
  ctx.setOutput(
      0, ctx.create<eff::ReduceSumOp>(terms, ArrayRef<int64_t>{*axis}, false));
  return success();
}

//===----------------------------------------------------------------------===//
// Repetition and rearrangement
//===----------------------------------------------------------------------===//

/// Tile(x, repeats): x viewed as [1, d0, 1, d1, ...], broadcast to
/// [r0, d0, r1, d1, ...] and flattened pairwise.
LogicalResult convertTile(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  FailureOr<SmallVector<int64_t>> repeats = ctx.constantInts(1, "repeats");
  if (failed(repeats))
    return failure();
  if (static_cast<int64_t>(repeats->size()) != type.getRank())
    return ctx.error("repeats has " + Twine(repeats->size()) +
                     " entries for an input of rank " + Twine(type.getRank()));
  SmallVector<int64_t> interleaved, broadcast, result;
  for (auto [size, repeat] : llvm::zip(type.getShape(), *repeats)) {
    if (repeat < 0)
      return ctx.error("repeats " + eff::formatShape(*repeats) +
                       " has a negative entry");
    interleaved.append({1, size});
    broadcast.append({repeat, size});
    result.push_back(repeat * size);
  }
  Value value = ctx.reshape(ctx.input(0), interleaved);
  value = ctx.broadcastTo(value, broadcast);
  ctx.setOutput(0, ctx.reshape(value, result));
  return success();
}

/// DepthToSpace: [N, C, H, W] -> [N, C / b^2, H * b, W * b] in DCR or CRD
/// order, as the ONNX definition's reshape / transpose / reshape.
LogicalResult convertDepthToSpace(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (type.getRank() != 4)
    return ctx.error("input must be N x C x H x W");
  int64_t b = ctx.getInt("blocksize", 0);
  auto shape = type.getShape();
  int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  if (b < 1 || c % (b * b))
    return ctx.error("blocksize " + Twine(b) + " does not divide the " +
                     Twine(c) + " channels into blocks");
  std::string mode = ctx.getString("mode", "DCR");
  Value value;
  if (mode == "DCR") {
    value = ctx.reshape(ctx.input(0), {n, b, b, c / (b * b), h, w});
    value = ctx.create<eff::TransposeOp>(value,
                                         ArrayRef<int64_t>{0, 3, 4, 1, 5, 2});
  } else if (mode == "CRD") {
    value = ctx.reshape(ctx.input(0), {n, c / (b * b), b, b, h, w});
    value = ctx.create<eff::TransposeOp>(value,
                                         ArrayRef<int64_t>{0, 1, 4, 2, 5, 3});
  } else {
    return ctx.unsupportedAttribute("mode", "'" + mode + "'");
  }
  ctx.setOutput(0, ctx.reshape(value, {n, c / (b * b), h * b, w * b}));
  return success();
}

/// SpaceToDepth: the inverse rearrangement, [N, C, H, W] -> [N, C b^2, H/b,
/// W/b].
LogicalResult convertSpaceToDepth(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (type.getRank() != 4)
    return ctx.error("input must be N x C x H x W");
  int64_t b = ctx.getInt("blocksize", 0);
  auto shape = type.getShape();
  int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  if (b < 1 || h % b || w % b)
    return ctx.error("blocksize " + Twine(b) +
                     " does not divide the spatial "
                     "dimensions " +
                     Twine(h) + " x " + Twine(w));
  Value value = ctx.reshape(ctx.input(0), {n, c, h / b, b, w / b, b});
  value =
      ctx.create<eff::TransposeOp>(value, ArrayRef<int64_t>{0, 3, 5, 1, 2, 4});
  ctx.setOutput(0, ctx.reshape(value, {n, c * b * b, h / b, w / b}));
  return success();
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// Source coordinate of output position `x` along a dimension resized from
/// `in` to `out` with `scale`, per ONNX's coordinate_transformation_mode.
FailureOr<double> sourceCoordinate(NodeContext &ctx, StringRef mode, double x,
                                   double scale, int64_t in, int64_t out) {
  if (mode == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  // ONNX's reference resizes to in * scale, unrounded, here.
  if (mode == "align_corners")
    return in * scale == 1.0 ? 0.0 : x * (in - 1) / (in * scale - 1);
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  return static_cast<LogicalResult>(ctx.unsupportedAttribute(
      "coordinate_transformation_mode", "'" + mode + "'"));
}

/// The cubic convolution weights of the four neighbours floor(x) - 1 ..
/// floor(x) + 2 at fractional offset `t` (Keys, with coefficient `a`).
std::array<double, 4> cubicWeights(double t, double a) {
  auto near = [&](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
  auto far = [&](double d) {
    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

/// Resizes dimension `axis` of `value` to `out` elements.
FailureOr<Value> resizeAxis(NodeContext &ctx, Value value, int64_t axis,
                            int64_t out, double scale) {
  if (!value)
    return failure();
  RankedTensorType type = typeOf(value);
  int64_t in = type.getDimSize(axis);
  if (failed(ctx.checkComputedSize({out}, "the resized positions")))
    return failure();
  std::string mode = ctx.getString("mode", "nearest");
  std::string coordinates =
      ctx.getString("coordinate_transformation_mode", "half_pixel");
  SmallVector<double> sources;
  for (int64_t x = 0; x < out; ++x) {
    FailureOr<double> source =
        sourceCoordinate(ctx, coordinates, x, scale, in, out);
    if (failed(source))
      return failure();
    sources.push_back(*source);
  }
  auto clampIndex = [&](int64_t i) {
    return std::clamp<int64_t>(i, 0, in - 1);
  };

  if (mode == "nearest") {
    std::string rounding = ctx.getString("nearest_mode", "round_prefer_floor");
    SmallVector<int64_t> indices;
    for (double source : sources) {
      double index;
      if (rounding == "floor")
        index = std::floor(source);
      else if (rounding == "ceil")
        index = std::ceil(source);
      else if (rounding == "round_prefer_floor")
        index = source - std::floor(source) == 0.5 ? std::floor(source)
                                                   : std::round(source);
      else if (rounding == "round_prefer_ceil")
        index = source - std::floor(source) == 0.5 ? std::ceil(source)
                                                   : std::round(source);
      else
        return static_cast<LogicalResult>(
            ctx.unsupportedAttribute("nearest_mode", "'" + rounding + "'"));
      indices.push_back(clampIndex(static_cast<int64_t>(index)));
    }
    Value positions = ctx.constant(DenseElementsAttr::get(
        RankedTensorType::get({out}, ctx.builder.getI64Type()),
        ArrayRef<int64_t>(indices)));
    return ctx.create<eff::GatherOp>(value, positions, axis);
  }

  // Linear and cubic interpolation are linear maps along the axis: a
  // constant [in, out] matrix of weights, applied with a matmul.
  if (!isa<FloatType>(type.getElementType()))
    return static_cast<LogicalResult>(
        ctx.error("mode '" + mode + "' needs a floating-point input"));
  if (failed(ctx.checkComputedSize({in, out}, "the interpolation weights")))
    return failure();
  SmallVector<double> weights(in * out, 0.0);
  for (auto [x, source] : llvm::enumerate(sources)) {
    double base = std::floor(source), t = source - base;
    if (mode == "linear") {
      weights[clampIndex(base) * out + x] += 1 - t;
      weights[clampIndex(base + 1) * out + x] += t;
    } else if (mode == "cubic") {
      std::array<double, 4> w =
          cubicWeights(t, ctx.getFloat("cubic_coeff_a", -0.75));
      bool exclude = ctx.getInt("exclude_outside", 0) != 0;
      double total = 0;
      for (int64_t k = 0; k < 4; ++k) {
        int64_t i = static_cast<int64_t>(base) - 1 + k;
        if (exclude && (i < 0 || i >= in))
          w[k] = 0;
        total += w[k];
      }
      for (int64_t k = 0; k < 4; ++k) {
        int64_t i = static_cast<int64_t>(base) - 1 + k;
        weights[clampIndex(i) * out + x] += exclude ? w[k] / total : w[k];
      }
    } else {
      return static_cast<LogicalResult>(
          ctx.unsupportedAttribute("mode", "'" + mode + "'"));
    }
  }
  Type elementType = type.getElementType();
  SmallVector<Attribute> elements;
  for (double w : weights)
    elements.push_back(FloatAttr::get(elementType, w));
  Value matrix = ctx.constant(DenseElementsAttr::get(
      RankedTensorType::get({in, out}, elementType), elements));
  int64_t last = type.getRank() - 1;
  Value moved = ctx.moveAxis(value, axis, last);
  if (type.getRank() == 1)
    moved = ctx.reshape(moved, {1, in});
  Value resized = ctx.create<eff::MatmulOp>(moved, matrix);
  if (type.getRank() == 1)
    resized = ctx.reshape(resized, {out});
  Value result = ctx.moveAxis(resized, last, axis);
  if (!result)
    return failure();
  return result;
}

/// Resize(X, roi, scales, sizes) with constant scales or sizes, one
/// separable pass per resized dimension.
LogicalResult convertResize(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank();
  if (ctx.hasAttribute("axes") || ctx.hasAttribute("antialias") ||
      ctx.hasAttribute("keep_aspect_ratio_policy"))
    return ctx.error("the opset-18 attributes axes, antialias and "
                     "keep_aspect_ratio_policy are not supported");
  if (ctx.getString("coordinate_transformation_mode", "half_pixel") ==
      "tf_crop_and_resize")
    return ctx.unsupportedAttribute("coordinate_transformation_mode",
                                    "'tf_crop_and_resize'");
  SmallVector<double> scales;
  SmallVector<int64_t> sizes;
  if (ctx.hasInput(3) && ctx.inputType(3).getNumElements() > 0) {
    FailureOr<SmallVector<int64_t>> s = ctx.constantInts(3, "sizes");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (ctx.hasInput(2) && ctx.inputType(2).getNumElements() > 0) {
    DenseElementsAttr attr = ctx.constantInput(2);
    if (!attr || !isa<FloatType>(attr.getElementType()))
      return ctx.error("input 'scales' must be a constant float tensor");
    for (const APFloat &scale : attr.getValues<APFloat>())
      scales.push_back(scale.convertToDouble());
  } else {
    return ctx.error("needs constant 'scales' or 'sizes'");
  }
  if (!sizes.empty() && static_cast<int64_t>(sizes.size()) != rank)
    return ctx.error("sizes has " + Twine(sizes.size()) + " entries for rank " +
                     Twine(rank));
  if (!scales.empty() && static_cast<int64_t>(scales.size()) != rank)
    return ctx.error("scales has " + Twine(scales.size()) +
                     " entries for rank " + Twine(rank));
  Value value = ctx.input(0);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = type.getDimSize(d);
    int64_t out;
    double scale;
    if (!sizes.empty()) {
      out = sizes[d];
      scale = static_cast<double>(out) / in;
    } else {
      scale = scales[d];
      if (!(scale > 0))
        return ctx.error("scale " + std::to_string(scale) + " is not positive");
      double size = std::floor(in * scale);
      if (!(size <= kMaxComputedElements))
        return ctx.error("scale " + std::to_string(scale) +
                         " resizes dimension " + Twine(d) + " beyond " +
                         Twine(kMaxComputedElements) + " elements");
      out = static_cast<int64_t>(size);
    }
    if (out == in && scale == 1.0)
      continue;
    if (out <= 0 || in == 0)
      return ctx.error("cannot resize dimension " + Twine(d) + " from " +
                       Twine(in) + " to " + Twine(out));
    FailureOr<Value> resized = resizeAxis(ctx, value, d, out, scale);
    if (failed(resized))
      return failure();
    value = *resized;
  }
  ctx.setOutput(0, value);
  return success();
}

} // namespace

void effopt::onnx_import::populateIndexingConverters(ConverterMap &map) {
  map["Trilu"] = convertTrilu;
  map["EyeLike"] = convertEyeLike;
  map["OneHot"] = convertOneHot;
  map["GatherElements"] = convertGatherElements;
  map["GatherND"] = convertGatherND;
  map["ScatterElements"] = convertScatterElements;
  map["ScatterND"] = convertScatterND;
  map["CumSum"] = convertCumSum;
  map["Tile"] = convertTile;
  map["DepthToSpace"] = convertDepthToSpace;
  map["SpaceToDepth"] = convertSpaceToDepth;
  map["Resize"] = convertResize;
}
