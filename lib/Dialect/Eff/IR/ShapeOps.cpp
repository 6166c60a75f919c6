//===- ShapeOps.cpp - data movement ops: types, verifiers, folds ----------===//

#include "ConstantFolding.h"
#include "OpUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/CheckedArithmetic.h"

#include <limits>

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::folding;

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
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input =
      getRankedType(RuleDiagnoser(loc), adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  types.push_back(RankedTensorType::get({input->getRank()},
                                        IntegerType::get(context, 64)));
  return success();
}

int64_t ShapeOfOp::getFlops() { return 0; }
int64_t ShapeOfOp::getBytesRead() { return 0; }

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
  // Same row-major data, but a new attribute holds a copy of it: only small
  // constants (and splats) are reshaped, like every other folder.
  if (DenseElementsAttr dense = getFoldable(adaptor.getInput()))
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

/// Type rule of `eff.transpose`.
static LogicalResult inferTransposeType(const RuleDiagnoser &emitError,
                                       TransposeOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input =
      getRankedType(emitError, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> permutation = adaptor.getPermutation();
  std::string error = checkPermutation(permutation, input->getRank());
  if (!error.empty())
    return emitError(error);
  SmallVector<int64_t> shape;
  for (int64_t p : permutation)
    shape.push_back(input->getDimSize(p));
  types.push_back(input->clone(shape));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferTransposeType(loc, adaptor, types);
}

LogicalResult TransposeOp::verify() {
  return verifyTypeRule(*this, inferTransposeType);
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

/// Whether `bias` of a linear op reads the same after transposing the
/// result: absent, or one element broadcast everywhere.
static bool isTransposeInvariantBias(Value bias) {
  if (!bias)
    return true;
  auto type = cast<RankedTensorType>(bias.getType());
  return type.hasStaticShape() && type.getNumElements() == 1;
}

/// transpose(linear(a, b, c)) -> linear(b, a, transpose(c)) with the flags
/// swapped and negated: `(op(A) op(B))^T = op(B)^T op(A)^T`, which a GEMM
/// computes by reading its operands the other way. The weight gradient of
/// `x @ W.T` (every `torch.nn.Linear`, tied embeddings) is computed as
/// `x^T dy` and transposed; folded here it is produced in W's layout, so the
/// optimizer reads it coalesced instead of column by column. The bias must
/// be one element, or the single-use result of a product (an accumulation
/// chain of `eff-chunk-cross-entropy`), which this pattern then transposes
/// in turn.
struct TransposeLinearIntoOperands : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!llvm::equal(op.getPermutation(), ArrayRef<int64_t>{1, 0}))
      return rewriter.notifyMatchFailure(op, "not a 2-D transpose");
    auto linear = op.getInput().getDefiningOp<LinearOp>();
    if (!linear || !linear->hasOneUse())
      return rewriter.notifyMatchFailure(op, "input is not a single-use linear");
    Value bias = linear.getBias();
    auto biasProduct = bias ? bias.getDefiningOp<LinearOp>() : LinearOp();
    bool biasFolds =
        biasProduct && biasProduct->hasOneUse() &&
        cast<RankedTensorType>(bias.getType()).getShape() ==
            linear.getType().getShape();
    if (!isTransposeInvariantBias(bias) && !biasFolds)
      return rewriter.notifyMatchFailure(op, "bias would need a transpose");
    if (biasFolds)
      bias = TransposeOp::create(rewriter, op.getLoc(), bias,
                                 op.getPermutation());
    auto swapped = LinearOp::create(
        rewriter, linear.getLoc(), op.getType(), linear.getB(), linear.getA(),
        bias, !linear.getTransposeB(), !linear.getTransposeA(),
        linear.getAlpha(), linear.getBeta());
    swapped->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, swapped.getResult());
    return success();
  }
};

/// transpose(cast(x)) -> cast(transpose(x)) when x is a single-use product
/// or transpose, so the transpose reaches an op that absorbs it (autocast
/// rounds a weight gradient to bf16 between its GEMM and the transpose).
struct TransposeBeforeCast : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto castOp = op.getInput().getDefiningOp<CastOp>();
    if (!castOp || !castOp->hasOneUse())
      return rewriter.notifyMatchFailure(op, "input is not a single-use cast");
    Value source = castOp.getInput();
    Operation *producer = source.getDefiningOp();
    if (!producer || !source.hasOneUse() ||
        !isa<LinearOp, TransposeOp>(producer))
      return rewriter.notifyMatchFailure(op, "nothing absorbs the transpose");
    auto transposed =
        TransposeOp::create(rewriter, op.getLoc(), source, op.getPermutation());
    auto resultType = cast<RankedTensorType>(op.getType());
    auto converted = CastOp::create(rewriter, castOp.getLoc(), resultType,
                                    transposed.getResult());
    converted->setDiscardableAttrs(castOp->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, converted.getResult());
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<ComposeTransposes, TransposeLinearIntoOperands,
               TransposeBeforeCast>(context);
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

/// Type rule of `eff.concat`.
static LogicalResult inferConcatType(const RuleDiagnoser &emitError,
                                    ConcatOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitError("needs at least one input");
  SmallVector<RankedTensorType> inputTypes;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    FailureOr<RankedTensorType> type =
        getRankedType(emitError, input, "input #" + std::to_string(i));
    if (failed(type))
      return failure();
    inputTypes.push_back(*type);
  }
  RankedTensorType first = inputTypes.front();
  std::optional<int64_t> axis =
      normalizeAxis(adaptor.getAxis(), first.getRank());
  if (!axis)
    return emitError(formatAxisOutOfRange(adaptor.getAxis(), first.getRank()));
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (RankedTensorType type : inputTypes) {
    if (type.getElementType() != first.getElementType())
      return emitError("inputs must have the same element type, got ",
                       first.getElementType(), " and ", type.getElementType());
    if (type.getRank() != first.getRank())
      return emitError("inputs must have the same rank, got ",
                       formatShape(first.getShape()), " and ",
                       formatShape(type.getShape()));
    for (int64_t d = 0; d < first.getRank(); ++d) {
      if (d == *axis)
        continue;
      if (type.getDimSize(d) != first.getDimSize(d))
        return emitError("input shapes ", formatShape(first.getShape()),
                         " and ", formatShape(type.getShape()),
                         " differ outside axis ", *axis);
    }
    shape[*axis] += type.getDimSize(*axis);
  }
  types.push_back(first.clone(shape));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferConcatType(loc, adaptor, types);
}

LogicalResult ConcatOp::verify() {
  return verifyTypeRule(*this, inferConcatType);
}

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

/// Type rule of `eff.slice`.
static LogicalResult inferSliceType(const RuleDiagnoser &emitError,
                                   SliceOp::Adaptor adaptor,
                                   SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input =
      getRankedType(emitError, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits(),
                    strides = adaptor.getStrides();
  int64_t rank = input->getRank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitError("starts, limits and strides need ", rank,
                     " entries each (the input rank)");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (strides[d] == 0)
      return emitError("stride of dimension ", d, " is zero");
    if (strides[d] == std::numeric_limits<int64_t>::min() ||
        !llvm::checkedSub(limits[d], starts[d]))
      return emitError("the bounds of dimension ", d, " overflow");
    shape.push_back(sliceLength(starts[d], limits[d], strides[d]));
  }
  types.push_back(input->clone(shape));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferSliceType(loc, adaptor, types);
}

LogicalResult SliceOp::verify() {
  SmallVector<Type> types;
  if (failed(inferSliceType(getOperation(), Adaptor(*this), types)))
    return failure();
  // Every index read must be inside the input; the inferred length says how
  // many are read.
  RankedTensorType input = getInput().getType();
  auto inferred = cast<RankedTensorType>(types.front());
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t length = inferred.getDimSize(d);
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
    return emitOpError(formatAxisOutOfRange(getAxis(), input.getRank()));
  if (getResults().empty())
    return emitOpError("needs at least one result");
  int64_t total = 0;
  for (Value result : getResults()) {
    RankedTensorType type = tensorType(result);
    if (type.getElementType() != input.getElementType())
      return emitOpError("results must have the input's element type ")
             << input.getElementType() << ", got " << type.getElementType();
    if (type.getRank() != input.getRank())
      return emitOpError("results must have the input's rank ")
             << input.getRank() << ", got " << formatShape(type.getShape());
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

/// Type rule of `eff.gather`.
static LogicalResult inferGatherType(const RuleDiagnoser &emitError,
                                    GatherOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> data =
      getRankedType(emitError, adaptor.getData(), "data");
  if (failed(data))
    return failure();
  FailureOr<RankedTensorType> indices =
      getRankedType(emitError, adaptor.getIndices(), "indices");
  if (failed(indices))
    return failure();
  std::optional<int64_t> axis =
      normalizeAxis(adaptor.getAxis(), data->getRank());
  if (!axis)
    return emitError(formatAxisOutOfRange(adaptor.getAxis(), data->getRank()));
  SmallVector<int64_t> shape(data->getShape().take_front(*axis));
  llvm::append_range(shape, indices->getShape());
  llvm::append_range(shape, data->getShape().drop_front(*axis + 1));
  types.push_back(data->clone(shape));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferGatherType(loc, adaptor, types);
}

LogicalResult GatherOp::verify() {
  return verifyTypeRule(*this, inferGatherType);
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = getFoldable(adaptor.getData());
  DenseElementsAttr indices = getFoldable(adaptor.getIndices());
  if (!data || !indices || indices.getNumElements() > kMaxFoldedElements)
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

/// Type rule of `eff.pad`.
static LogicalResult inferPadType(const RuleDiagnoser &emitError,
                                 PadOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input =
      getRankedType(emitError, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  int64_t rank = input->getRank();
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  if (static_cast<int64_t>(low.size()) != rank ||
      static_cast<int64_t>(high.size()) != rank)
    return emitError("low and high need ", rank,
                     " entries each (the input rank)");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (low[d] < 0 || high[d] < 0)
      return emitError("padding of dimension ", d, " is negative");
    std::optional<int64_t> size =
        llvm::checkedAdd(input->getDimSize(d), low[d]);
    if (size)
      size = llvm::checkedAdd(*size, high[d]);
    if (!size)
      return emitError("padding of dimension ", d, " overflows");
    shape.push_back(*size);
  }
  types.push_back(input->clone(shape));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  return inferPadType(loc, adaptor, types);
}

LogicalResult PadOp::verify() {
  if (failed(verifyTypeRule(*this, inferPadType)))
    return failure();
  auto integer = dyn_cast<IntegerType>(getType().getElementType());
  if (!integer)
    return success();
  // The value must convert exactly: an integer within the type's range.
  APSInt converted(integer.getWidth(), isUnsignedInteger(integer));
  bool isExact = false;
  if (getValue().convertToInteger(converted, APFloat::rmTowardZero,
                                  &isExact) != APFloat::opOK ||
      !isExact)
    return emitOpError("padding value ")
           << formatNumber(getValue().convertToDouble())
           << " is not representable in " << integer;
  return success();
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}
