//===- ShapeGradients.cpp - gradient rules of data movement and reductions ===//

#include "GradientRule.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::gradients;

namespace {

LogicalResult reshapeGrad(ReshapeOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.reshape(ctx.resultGrad(),
                             op.getInput().getType().getShape()));
  return success();
}

LogicalResult transposeGrad(TransposeOp op, GradientContext &ctx) {
  ArrayRef<int64_t> permutation = op.getPermutation();
  SmallVector<int64_t> inverse(permutation.size());
  for (auto [i, p] : llvm::enumerate(permutation))
    inverse[p] = i;
  ctx.setGrad(0, ctx.create<TransposeOp>(ctx.resultGrad(), inverse));
  return success();
}

/// setGrad sums the broadcast dimensions back.
LogicalResult broadcastToGrad(BroadcastToOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.resultGrad());
  return success();
}

LogicalResult saveGrad(SaveOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.resultGrad());
  return success();
}

/// Each input's gradient is its slice of the output gradient.
LogicalResult concatGrad(ConcatOp op, GradientContext &ctx) {
  RankedTensorType type = op.getType();
  int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
  int64_t offset = 0;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    int64_t size = ctx.typeOf(input).getDimSize(axis);
    if (ctx.need(i)) {
      SmallVector<int64_t> starts(type.getRank(), 0),
          limits(type.getShape()), strides(type.getRank(), 1);
      starts[axis] = offset;
      limits[axis] = offset + size;
      ctx.setGrad(i, ctx.create<SliceOp>(ctx.resultGrad(), starts, limits,
                                         strides));
    }
    offset += size;
  }
  return success();
}

LogicalResult sliceGrad(SliceOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<SliceGradOp>(op.getInput().getType(),
                                         ctx.resultGrad(), op.getStarts(),
                                         op.getLimits(), op.getStrides()));
  return success();
}

/// The pieces' gradients concatenated (zeros for pieces without one).
LogicalResult splitGrad(SplitOp op, GradientContext &ctx) {
  SmallVector<Value> pieces;
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    Value g = ctx.resultGrad(i);
    pieces.push_back(g ? g : ctx.zerosLike(result));
  }
  ctx.setGrad(0, ctx.create<ConcatOp>(pieces, op.getAxis()));
  return success();
}

/// Embedding gradient: scatter-add into the table.
LogicalResult gatherGrad(GatherOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<GatherGradOp>(op.getData().getType(),
                                          op.getIndices(), ctx.resultGrad(),
                                          op.getAxis()));
  return success();
}

LogicalResult padGrad(PadOp op, GradientContext &ctx) {
  RankedTensorType input = op.getInput().getType();
  SmallVector<int64_t> starts(op.getLow()), limits, strides(input.getRank(), 1);
  for (int64_t d = 0; d < input.getRank(); ++d)
    limits.push_back(op.getLow()[d] + input.getDimSize(d));
  ctx.setGrad(0, ctx.create<SliceOp>(ctx.resultGrad(), starts, limits, strides));
  return success();
}

/// The output gradient with the reduced dimensions restored as size 1.
template <typename OpTy>
Value keepDimsGrad(OpTy op, GradientContext &ctx) {
  RankedTensorType input = op.getInput().getType();
  SmallVector<int64_t> shape(input.getShape());
  for (int64_t axis : op.getAxes())
    shape[*normalizeAxis(axis, input.getRank())] = 1;
  return ctx.reshape(ctx.resultGrad(), shape);
}

LogicalResult reduceSumGrad(ReduceSumOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.broadcastTo(keepDimsGrad(op, ctx),
                                 op.getInput().getType().getShape()));
  return success();
}

LogicalResult reduceMeanGrad(ReduceMeanOp op, GradientContext &ctx) {
  RankedTensorType input = op.getInput().getType();
  int64_t count = 1;
  for (int64_t axis : op.getAxes())
    count *= input.getDimSize(*normalizeAxis(axis, input.getRank()));
  Value g = ctx.scale(keepDimsGrad(op, ctx), 1.0 / count);
  ctx.setGrad(0, ctx.broadcastTo(g, input.getShape()));
  return success();
}

/// amax/amin: the gradient is shared evenly by the elements equal to the
/// extremum (PyTorch's amax/amin backward).
template <typename OpTy>
LogicalResult reduceExtremumGrad(OpTy op, GradientContext &ctx) {
  RankedTensorType input = op.getInput().getType();
  Type elementType = input.getElementType();
  Value g = keepDimsGrad(op, ctx);
  SmallVector<int64_t> keptShape(ctx.typeOf(g).getShape());
  Value extremum = ctx.reshape(op.getResult(), keptShape);
  Value isExtremum = ctx.cmp(CmpPredicate::eq, op.getInput(), extremum);
  Value hits = ctx.castTo(isExtremum, elementType);
  Value count = ctx.create<ReduceSumOp>(hits, op.getAxes(), /*keep_dims=*/true);
  ctx.setGrad(0, ctx.mul(hits, ctx.div(g, count)));
  return success();
}


/// The ranks' losses add up: every rank's block of the gathered tensor
/// flows back to its owner, summed over the ranks (a reduce-scatter).
LogicalResult allGatherGrad(AllGatherOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<ReduceScatterOp>(op.getInput().getType(),
                                             ctx.resultGrad(),
                                             op.getWorldSizeAttr()));
  return success();
}

/// Every rank's input reached every rank's block of the sum: its gradient
/// is every rank's result gradient in rank order (an all-gather).
LogicalResult reduceScatterGrad(ReduceScatterOp op, GradientContext &ctx) {
  ctx.setGrad(0, ctx.create<AllGatherOp>(op.getInput().getType(),
                                         ctx.resultGrad(),
                                         op.getWorldSizeAttr()));
  return success();
}

} // namespace

void effopt::eff::gradients::registerShapeGradients(MLIRContext *context) {
  attachRule<ReshapeOp, reshapeGrad>(context);
  attachRule<TransposeOp, transposeGrad>(context);
  attachRule<BroadcastToOp, broadcastToGrad>(context);
  attachRule<SaveOp, saveGrad>(context);
  attachRule<ConcatOp, concatGrad>(context);
  attachRule<SliceOp, sliceGrad>(context);
  attachRule<SplitOp, splitGrad>(context);
  attachRule<GatherOp, gatherGrad, onlyFirstOperand>(context);
  attachRule<PadOp, padGrad>(context);
  attachRule<ReduceSumOp, reduceSumGrad>(context);
  attachRule<ReduceMeanOp, reduceMeanGrad>(context);
  attachRule<ReduceMaxOp, reduceExtremumGrad<ReduceMaxOp>>(context);
  attachRule<ReduceMinOp, reduceExtremumGrad<ReduceMinOp>>(context);
  attachRule<AllGatherOp, allGatherGrad>(context);
  attachRule<ReduceScatterOp, reduceScatterGrad>(context);
}
