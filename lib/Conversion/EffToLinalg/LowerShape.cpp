//===- LowerShape.cpp - eff data-movement ops to tensor/linalg ------------===//
//
// Reshapes become views (collapse/expand_shape), slices and concatenations
// become extract/insert_slice, and the data-dependent ops (gather, its
// scatter-add gradient, negative-stride slices) index in the loop body.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {




struct ReshapeLowering : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), op.getInput(),
                                     tensorType(op.getResult())));
    return success();
  }
};

struct ShapeOfLowering : OpRewritePattern<ShapeOfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ShapeOfOp op,
                                PatternRewriter &rewriter) const override {
    auto type = tensorType(op.getResult());
    auto value = DenseElementsAttr::get(
        type, llvm::ArrayRef(tensorType(op.getInput()).getShape()));
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    ArrayRef<int64_t> perm = op.getPermutation();
    MLIRContext *ctx = rewriter.getContext();
    // result[i_0, ..] = input[j] with input dim perm[k] read by loop k.
    SmallVector<AffineExpr> inputExprs(perm.size());
    for (auto [k, p] : llvm::enumerate(perm))
      inputExprs[p] = getAffineDimExpr(k, ctx);
    SmallVector<AffineMap> maps{
        AffineMap::get(perm.size(), 0, inputExprs, ctx),
        AffineMap::getMultiDimIdentityMap(perm.size(), ctx)};
    Value init =
        tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                type.getElementType());
    SmallVector<utils::IteratorType> iterators(perm.size(),
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{op.getInput()},
        ValueRange{init}, maps, iterators,
        [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, args[0]);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct BroadcastToLowering : OpRewritePattern<BroadcastToOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastToOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, buildElementwise(rewriter, op.getLoc(), tensorType(op.getResult()),
                             {op.getInput()},
                             [](OpBuilder &, Location, ValueRange args) {
                               return args[0];
                             }));
    return success();
  }
};

struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    int64_t axis = normalizeAxis(op.getAxis(), type.getRank());
    Value result = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                           type.getElementType());
    int64_t offset = 0;
    for (Value input : op.getInputs()) {
      auto inputType = tensorType(input);
      // An empty input adds nothing (and its offset may be the end).
      if (inputType.getNumElements() == 0)
        continue;
      SmallVector<int64_t> offsets(type.getRank(), 0);
      offsets[axis] = offset;
      SmallVector<int64_t> strides(type.getRank(), 1);
      result = tensor::InsertSliceOp::create(
          rewriter, loc, input, result, indexAttrs(rewriter, offsets),
          indexAttrs(rewriter, inputType.getShape()),
          indexAttrs(rewriter, strides));
      offset += inputType.getDimSize(axis);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SplitLowering : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = tensorType(op.getInput());
    int64_t axis = normalizeAxis(op.getAxis(), inputType.getRank());
    SmallVector<Value> results;
    int64_t offset = 0;
    for (Value result : op.getResults()) {
      auto type = tensorType(result);
      // An empty piece (a split of size 0, at the end) is a new empty
      // tensor: extract_slice rejects offsets at the end.
      if (type.getNumElements() == 0) {
        results.push_back(tensor::EmptyOp::create(
            rewriter, loc, type.getShape(), type.getElementType()));
        continue;
      }
      SmallVector<int64_t> offsets(type.getRank(), 0);
      offsets[axis] = offset;
      SmallVector<int64_t> strides(type.getRank(), 1);
      results.push_back(tensor::ExtractSliceOp::create(
          rewriter, loc, type, op.getInput(), indexAttrs(rewriter, offsets),
          indexAttrs(rewriter, type.getShape()),
          indexAttrs(rewriter, strides)));
      offset += type.getDimSize(axis);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// result[i] = input[starts + i * strides]; the general form for negative
/// strides, which extract_slice cannot express.
Value gatherStrided(OpBuilder &b, Location loc, Value input,
                    RankedTensorType type, ArrayRef<int64_t> starts,
                    ArrayRef<int64_t> strides) {
  int64_t rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{}, ValueRange{init},
      SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, ctx)},
      iterators, [&](OpBuilder &nb, Location l, ValueRange) {
        SmallVector<Value> indices;
        for (int64_t d = 0; d < rank; ++d) {
          Value i = linalg::IndexOp::create(nb, l, d);
          Value scaled = arith::MulIOp::create(
              nb, l, i, arith::ConstantIndexOp::create(nb, l, strides[d]));
          indices.push_back(arith::AddIOp::create(
              nb, l, scaled, arith::ConstantIndexOp::create(nb, l, starts[d])));
        }
        linalg::YieldOp::create(
            nb, l, tensor::ExtractOp::create(nb, l, input, indices).getResult());
      });
  return generic.getResult(0);
}

struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto type = tensorType(op.getResult());
    // An empty slice (ONNX clamps out-of-range starts to the end) reads
    // nothing; extract_slice rejects offsets at the end.
    if (type.getNumElements() == 0) {
      rewriter.replaceOpWithNewOp<tensor::EmptyOp>(op, type.getShape(),
                                                   type.getElementType());
      return success();
    }
    if (llvm::any_of(op.getStrides(), [](int64_t s) { return s < 0; })) {
      rewriter.replaceOp(op, gatherStrided(rewriter, op.getLoc(),
                                           op.getInput(), type, op.getStarts(),
                                           op.getStrides()));
      return success();
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, op.getInput(), indexAttrs(rewriter, op.getStarts()),
        indexAttrs(rewriter, type.getShape()),
        indexAttrs(rewriter, op.getStrides()));
    return success();
  }
};

struct SliceGradLowering : OpRewritePattern<SliceGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    auto gradType = tensorType(op.getOutputGrad());
    // A negative stride reads start, start + stride, ..., i.e. the positions
    // start + (n - 1) * stride, ..., start with the positive stride, in
    // reverse: the gradient is reversed along those dimensions and inserted
    // with the positive stride.
    Value grad = op.getOutputGrad();
    SmallVector<int64_t> starts(op.getStarts()), strides(op.getStrides());
    SmallVector<int64_t> flipStarts(gradType.getRank(), 0),
        flipStrides(gradType.getRank(), 1);
    bool flip = false;
    for (int64_t d = 0; d < gradType.getRank(); ++d) {
      if (strides[d] > 0)
        continue;
      int64_t n = gradType.getDimSize(d);
      if (n > 0)
        starts[d] += (n - 1) * strides[d];
      strides[d] = -strides[d];
      flipStarts[d] = std::max<int64_t>(n - 1, 0);
      flipStrides[d] = -1;
      flip = true;
    }
    if (flip)
      grad = gatherStrided(rewriter, loc, grad, gradType, flipStarts,
                           flipStrides);
    Value result = tensor::InsertSliceOp::create(
        rewriter, loc, grad, zeros(rewriter, loc, type),
        indexAttrs(rewriter, starts), indexAttrs(rewriter, gradType.getShape()),
        indexAttrs(rewriter, strides));
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct PadLowering : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    auto inputType = tensorType(op.getInput());
    Value fill = buildFill(rewriter, loc, type,
                           scalarConstant(rewriter, loc, type.getElementType(),
                                          op.getValue().convertToDouble()));
    SmallVector<int64_t> strides(type.getRank(), 1);
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, op.getInput(), fill, indexAttrs(rewriter, op.getLow()),
        indexAttrs(rewriter, inputType.getShape()),
        indexAttrs(rewriter, strides));
    return success();
  }
};

/// An index read from an integer tensor, wrapped like numpy for negatives.
Value wrapIndex(OpBuilder &b, Location loc, Value index, int64_t dimSize) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value size = arith::ConstantIndexOp::create(b, loc, dimSize);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, zero);
  return arith::SelectOp::create(b, loc, negative,
                                 arith::AddIOp::create(b, loc, i, size), i);
}

struct GatherLowering : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    auto dataType = tensorType(op.getData());
    auto indicesType = tensorType(op.getIndices());
    int64_t axis = normalizeAxis(op.getAxis(), dataType.getRank());
    int64_t rank = type.getRank();
    int64_t indexRank = indicesType.getRank();
    MLIRContext *ctx = rewriter.getContext();
    // Loops over the result: [data dims before axis, index dims, data dims
    // after axis]; the indices are read at the middle loops.
    SmallVector<AffineExpr> indexExprs;
    for (int64_t d = 0; d < indexRank; ++d)
      indexExprs.push_back(getAffineDimExpr(axis + d, ctx));
    SmallVector<AffineMap> maps{
        AffineMap::get(rank, 0, indexExprs, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    Value data = op.getData();
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{op.getIndices()},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          SmallVector<Value> at;
          for (int64_t d = 0; d < axis; ++d)
            at.push_back(linalg::IndexOp::create(b, l, d));
          at.push_back(wrapIndex(b, l, args[0], dataType.getDimSize(axis)));
          for (int64_t d = axis + 1; d < dataType.getRank(); ++d)
            at.push_back(linalg::IndexOp::create(b, l, d - 1 + indexRank));
          linalg::YieldOp::create(
              b, l, tensor::ExtractOp::create(b, l, data, at).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Scatter-add: not a parallel loop (indices repeat), so a sequential loop
/// nest over the output gradient that accumulates into the result.
struct GatherGradLowering : OpRewritePattern<GatherGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    auto gradType = tensorType(op.getOutputGrad());
    auto indicesType = tensorType(op.getIndices());
    int64_t axis = normalizeAxis(op.getAxis(), type.getRank());
    int64_t indexRank = indicesType.getRank();
    Value indices = op.getIndices();
    Value grad = op.getOutputGrad();
    SmallVector<Value> lbs, ubs, steps;
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    for (int64_t d : gradType.getShape()) {
      lbs.push_back(zero);
      ubs.push_back(arith::ConstantIndexOp::create(rewriter, loc, d));
      steps.push_back(one);
    }
    // f16/bf16 gradients add up in f32 (indices repeat) and round once.
    Type sumType = computeType(type.getElementType());
    Value init = zeros(rewriter, loc, type.clone(sumType));
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{init},
        [&](OpBuilder &b, Location l, ValueRange ivs,
            ValueRange iterArgs) -> scf::ValueVector {
          SmallVector<Value> indexAt(ivs.begin() + axis,
                                     ivs.begin() + axis + indexRank);
          Value index = tensor::ExtractOp::create(b, l, indices, indexAt);
          SmallVector<Value> at(ivs.begin(), ivs.begin() + axis);
          at.push_back(wrapIndex(b, l, index, type.getDimSize(axis)));
          at.append(ivs.begin() + axis + indexRank, ivs.end());
          Value old = tensor::ExtractOp::create(b, l, iterArgs[0], at);
          Value add = castScalar(
              b, l, tensor::ExtractOp::create(b, l, grad, ivs), sumType);
          Value sum = arith::AddFOp::create(b, l, old, add);
          return {tensor::InsertOp::create(b, l, sum, iterArgs[0], at)
                      .getResult()};
        });
    rewriter.replaceOp(op, convertElements(rewriter, loc, nest.results[0],
                                           type.getElementType()));
    return success();
  }
};

} // namespace

void populateShapeLowering(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, ShapeOfLowering, TransposeLowering,
               BroadcastToLowering, ConcatLowering, SplitLowering,
               SliceLowering, SliceGradLowering, PadLowering, GatherLowering,
               GatherGradLowering>(patterns.getContext());
}

} // namespace effopt::lowering
