//===- ShapeOps.cpp - data movement ops: types, verifiers, folds ----------===//

#include "ConstantFolding.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::folding;

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Row-major strides of `shape`.
static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

//===----------------------------------------------------------------------===//
// shape_of
//===----------------------------------------------------------------------===//

LogicalResult ShapeOfOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  int64_t rank = tensorType(adaptor.getInput()).getRank();
  types.push_back(RankedTensorType::get({rank}, IntegerType::get(context, 64)));
  return success();
}

OpFoldResult ShapeOfOp::fold(FoldAdaptor) {
  return DenseIntElementsAttr::get(getType(),
                                   getInput().getType().getShape());
}

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("cannot change the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  if (input.getNumElements() != result.getNumElements())
    return emitOpError("cannot reshape ")
           << formatShape(input.getShape()) << " (" << input.getNumElements()
           << " elements) to " << formatShape(result.getShape()) << " ("
           << result.getNumElements() << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // Reshaping dense data is free (same row-major order), whatever its size.
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

namespace {
/// reshape(reshape(x)) -> reshape(x).
struct ComposeReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<ReshapeOp>();
    if (!producer)
      return rewriter.notifyMatchFailure(op, "input is not a reshape");
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(),
                                           producer.getInput());
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                            MLIRContext *context) {
  patterns.add<ComposeReshapes>(context);
}

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

/// Why `permutation` is not a permutation of [0, rank), or an empty string.
static std::string checkPermutation(ArrayRef<int64_t> permutation,
                                    int64_t rank) {
  if (static_cast<int64_t>(permutation.size()) != rank)
    return "permutation has " + std::to_string(permutation.size()) +
           " entries but the input has rank " + std::to_string(rank);
  SmallVector<bool> seen(rank, false);
  for (int64_t p : permutation) {
    if (p < 0 || p >= rank || seen[p])
      return "permutation " + formatShape(permutation) +
             " is not a permutation of [0, " + std::to_string(rank) + ")";
    seen[p] = true;
  }
  return "";
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorType(adaptor.getInput());
  ArrayRef<int64_t> permutation = adaptor.getPermutation();
  std::string error = checkPermutation(permutation, input.getRank());
  if (!error.empty())
    return emitOptionalError(loc, error);
  SmallVector<int64_t> shape;
  for (int64_t p : permutation)
    shape.push_back(input.getDimSize(p));
  types.push_back(input.clone(shape));
  return success();
}

LogicalResult TransposeOp::verify() {
  std::string error =
      checkPermutation(getPermutation(), getInput().getType().getRank());
  if (!error.empty())
    return emitOpError(error);
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> permutation = getPermutation();
  if (llvm::equal(permutation, llvm::seq<int64_t>(0, permutation.size())))
    return getInput();
  DenseElementsAttr input = getFoldable(adaptor.getInput());
  if (!input)
    return {};
  ArrayRef<int64_t> resultShape = getType().getShape();
  SmallVector<int64_t> inputStrides = stridesOf(getInput().getType().getShape());
  return gatherElements(input, getType(), [&](int64_t index) {
    int64_t source = 0;
    for (int64_t d = static_cast<int64_t>(resultShape.size()) - 1; d >= 0; --d) {
      source += (index % resultShape[d]) * inputStrides[permutation[d]];
      index /= resultShape[d];
    }
    return source;
  });
}

namespace {
/// transpose(transpose(x, p), q) -> transpose(x, p∘q).
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<TransposeOp>();
    if (!producer)
      return rewriter.notifyMatchFailure(op, "input is not a transpose");
    ArrayRef<int64_t> inner = producer.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : op.getPermutation())
      composed.push_back(inner[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, producer.getInput(), composed);
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<ComposeTransposes>(context);
}

//===----------------------------------------------------------------------===//
// broadcast_to
//===----------------------------------------------------------------------===//

LogicalResult BroadcastToOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("cannot change the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  if (!isBroadcastableTo(input.getShape(), result.getShape()))
    return emitOpError("cannot broadcast ")
           << formatShape(input.getShape()) << " to "
           << formatShape(result.getShape());
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  DenseElementsAttr input = getFoldable(adaptor.getInput());
  if (!input)
    return {};
  ArrayRef<int64_t> resultShape = getType().getShape();
  ArrayRef<int64_t> inputShape = getInput().getType().getShape();
  return gatherElements(input, getType(), [&](int64_t index) {
    return broadcastSourceIndex(index, resultShape, inputShape);
  });
}

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "needs at least one input");
  RankedTensorType first = tensorType(inputs.front());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), first.getRank());
  if (!axis)
    return emitOptionalError(loc, "axis ", adaptor.getAxis(),
                             " is out of range [", -first.getRank(), ", ",
                             first.getRank() - 1, "]");
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value input : inputs) {
    RankedTensorType type = tensorType(input);
    if (type.getRank() != first.getRank() ||
        type.getElementType() != first.getElementType())
      return emitOptionalError(loc, "inputs must share rank and element type");
    for (int64_t d = 0; d < first.getRank(); ++d) {
      if (d == *axis)
        continue;
      if (type.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, "input shapes ",
                                 formatShape(first.getShape()), " and ",
                                 formatShape(type.getShape()),
                                 " differ outside axis ", *axis);
    }
    shape[*axis] += type.getDimSize(*axis);
  }
  types.push_back(first.clone(shape));
  return success();
}

LogicalResult ConcatOp::verify() { return success(); }

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  SmallVector<DenseElementsAttr> inputs;
  for (Attribute attr : adaptor.getInputs()) {
    DenseElementsAttr dense = getFoldable(attr);
    if (!dense)
      return {};
    inputs.push_back(dense);
  }
  RankedTensorType type = getType();
  if (type.getNumElements() > kMaxFoldedElements)
    return {};
  int64_t axis = *normalizeAxis(getAxis(), type.getRank());
  // Each input contributes contiguous blocks of `dim(axis) * inner` elements.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= type.getDimSize(d);
  for (int64_t d = axis + 1; d < type.getRank(); ++d)
    inner *= type.getDimSize(d);
  SmallVector<Attribute> values;
  values.reserve(type.getNumElements());
  for (int64_t o = 0; o < outer; ++o) {
    for (DenseElementsAttr input : inputs) {
      int64_t block = input.getType().getDimSize(axis) * inner;
      auto elements = input.getValues<Attribute>();
      for (int64_t i = 0; i < block; ++i)
        values.push_back(input.isSplat() ? elements[0]
                                         : elements[o * block + i]);
    }
  }
  return DenseElementsAttr::get(type, values);
}

//===----------------------------------------------------------------------===//
// slice
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorType(adaptor.getInput());
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits(),
                    strides = adaptor.getStrides();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOptionalError(loc, "starts, limits and strides need ", rank,
                             " entries each (the input rank)");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (strides[d] == 0)
      return emitOptionalError(loc, "stride of dimension ", d, " is zero");
    shape.push_back(sliceLength(starts[d], limits[d], strides[d]));
  }
  types.push_back(input.clone(shape));
  return success();
}

LogicalResult SliceOp::verify() {
  RankedTensorType input = getInput().getType();
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t length = getType().getDimSize(d);
    if (length == 0)
      continue;
    int64_t first = getStarts()[d];
    int64_t last = first + (length - 1) * getStrides()[d];
    int64_t size = input.getDimSize(d);
    if (first < 0 || first >= size || last < 0 || last >= size)
      return emitOpError("dimension ")
             << d << " reads indices " << first << " to " << last
             << " outside [0, " << size << ")";
  }
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getStrides(), [](int64_t s) { return s == 1; }))
    return getInput();
  DenseElementsAttr input = getFoldable(adaptor.getInput());
  if (!input)
    return {};
  ArrayRef<int64_t> resultShape = getType().getShape();
  SmallVector<int64_t> inputStrides = stridesOf(getInput().getType().getShape());
  ArrayRef<int64_t> starts = getStarts(), steps = getStrides();
  return gatherElements(input, getType(), [&](int64_t index) {
    int64_t source = 0;
    for (int64_t d = static_cast<int64_t>(resultShape.size()) - 1; d >= 0; --d) {
      int64_t coordinate = index % resultShape[d];
      index /= resultShape[d];
      source += (starts[d] + coordinate * steps[d]) * inputStrides[d];
    }
    return source;
  });
}

//===----------------------------------------------------------------------===//
// split
//===----------------------------------------------------------------------===//

LogicalResult SplitOp::verify() {
  RankedTensorType input = getInput().getType();
  std::optional<int64_t> axis = normalizeAxis(getAxis(), input.getRank());
  if (!axis)
    return emitOpError("axis ") << getAxis() << " is out of range ["
                                << -input.getRank() << ", "
                                << input.getRank() - 1 << "]";
  if (getResults().empty())
    return emitOpError("needs at least one result");
  int64_t total = 0;
  for (Value result : getResults()) {
    RankedTensorType type = tensorType(result);
    if (type.getRank() != input.getRank() ||
        type.getElementType() != input.getElementType())
      return emitOpError("results must have the input's rank and element type");
    for (int64_t d = 0; d < input.getRank(); ++d)
      if (d != *axis && type.getDimSize(d) != input.getDimSize(d))
        return emitOpError("result shape ")
               << formatShape(type.getShape()) << " differs from the input "
               << formatShape(input.getShape()) << " outside axis " << *axis;
    total += type.getDimSize(*axis);
  }
  if (total != input.getDimSize(*axis))
    return emitOpError("pieces along axis ")
           << *axis << " add up to " << total << ", but the input has "
           << input.getDimSize(*axis);
  return success();
}

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  RankedTensorType data = tensorType(adaptor.getData());
  RankedTensorType indices = tensorType(adaptor.getIndices());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), data.getRank());
  if (!axis)
    return emitOptionalError(loc, "axis ", adaptor.getAxis(),
                             " is out of range [", -data.getRank(), ", ",
                             data.getRank() - 1, "]");
  SmallVector<int64_t> shape(data.getShape().take_front(*axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*axis + 1));
  types.push_back(data.clone(shape));
  return success();
}

LogicalResult GatherOp::verify() { return success(); }

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = getFoldable(adaptor.getData());
  DenseElementsAttr indices = getFoldable(adaptor.getIndices());
  if (!data || !indices)
    return {};
  RankedTensorType dataType = getData().getType();
  int64_t axis = *normalizeAxis(getAxis(), dataType.getRank());
  int64_t axisSize = dataType.getDimSize(axis);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < dataType.getRank(); ++d)
    inner *= dataType.getDimSize(d);
  int64_t numIndices = indices.getNumElements();
  SmallVector<int64_t> indexValues;
  for (APInt index : indices.getValues<APInt>()) {
    int64_t value = index.getSExtValue();
    if (value < 0)
      value += axisSize;
    if (value < 0 || value >= axisSize)
      return {}; // Out of range: leave it for the runtime to report.
    indexValues.push_back(value);
  }
  return gatherElements(data, getType(), [&](int64_t index) {
    int64_t innerIndex = index % inner;
    int64_t rest = index / inner;
    int64_t indexPosition = rest % numIndices;
    int64_t outerIndex = rest / numIndices;
    return (outerIndex * axisSize + indexValues[indexPosition]) * inner +
           innerIndex;
  });
}

//===----------------------------------------------------------------------===//
// pad
//===----------------------------------------------------------------------===//

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorType(adaptor.getInput());
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  if (static_cast<int64_t>(low.size()) != input.getRank() ||
      static_cast<int64_t>(high.size()) != input.getRank())
    return emitOptionalError(loc, "low and high need ", input.getRank(),
                             " entries each (the input rank)");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (low[d] < 0 || high[d] < 0)
      return emitOptionalError(loc, "padding of dimension ", d,
                               " is negative");
    shape.push_back(input.getDimSize(d) + low[d] + high[d]);
  }
  types.push_back(input.clone(shape));
  return success();
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}
