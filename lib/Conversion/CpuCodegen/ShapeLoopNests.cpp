//===- ShapeLoopNests.cpp - loop nests LLVM can vectorise and thread ------===//
//
// Bufferized linalg.generic ops become loop nests in the order of their
// iteration dimensions, and LLVM vectorises only the innermost loop. Three
// rewrites, each leaving every computed value and every sum's order as it
// was, give those nests long innermost loops and threads:
//
// - a 0-d buffer read by every iteration (a learning rate, a step counter)
//   is loaded once before the op: in the loop it is a load from memory the
//   loop's stores may alias, which LLVM reloads per element and which keeps
//   it from vectorising;
// - when the innermost dimension is a reduction, the parallel dimensions
//   move outside all reductions (batch-norm statistics over N, H, W of
//   NCHW become one thread per channel); each output element's sum keeps
//   its order, since the reduction dimensions keep theirs;
// - adjacent dimensions of the same kind that are contiguous in every
//   operand collapse into one: an update of a [512, 256, 3, 3] filter is
//   one loop of 1179648 elements, not an innermost loop of 3; inputs
//   broadcast over size-1 dimensions (per-channel [1, C, 1, 1] operands of
//   NCHW) are first read through views without those dimensions, so H and
//   W of a batch norm's or a bias's loop collapse too.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace effopt {
#define GEN_PASS_DEF_EFFSHAPELOOPNESTSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// Replaces each 0-d buffer input of `op` that is not also one of its
/// outputs by a scalar loaded before it.
bool hoistScalarInputs(RewriterBase &rewriter, linalg::GenericOp op) {
  bool changed = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    if (!type || type.getRank() != 0)
      continue;
    if (llvm::any_of(op.getDpsInits(),
                     [&](Value init) { return init == input->get(); }))
      continue;
    rewriter.setInsertionPoint(op);
    Value scalar =
        memref::LoadOp::create(rewriter, op.getLoc(), input->get()).getResult();
    rewriter.modifyOpInPlace(op, [&] { input->set(scalar); });
    changed = true;
  }
  return changed;
}

/// Reads each input that `op` broadcasts over size-1 dimensions (a batch
/// norm's [1, C, 1, 1] scale over NCHW, indexed (0, c, 0, 0)) through a
/// view without them (indexed (c)), so the op's indexing is plain again and
/// H and W collapse into one loop.
bool dropBroadcastUnitDims(RewriterBase &rewriter, linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool changed = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    if (!type || type.getRank() < 2)
      continue;
    AffineMap map = maps[input->getOperandNumber()];
    SmallVector<AffineExpr> kept;
    SmallVector<ReassociationIndices> groups;
    ReassociationIndices pending;
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      pending.push_back(i);
      auto constant = dyn_cast<AffineConstantExpr>(expr);
      if (constant && constant.getValue() == 0 && type.getDimSize(i) == 1)
        continue;
      kept.push_back(expr);
      groups.push_back(pending);
      pending.clear();
    }
    if (kept.empty() || kept.size() == map.getNumResults())
      continue;
    llvm::append_range(groups.back(), pending);
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(type, groups))
      continue;
    rewriter.setInsertionPoint(op);
    Value view = memref::CollapseShapeOp::create(rewriter, op.getLoc(),
                                                 input->get(), groups);
    maps[input->getOperandNumber()] =
        AffineMap::get(map.getNumDims(), 0, kept, op.getContext());
    rewriter.modifyOpInPlace(op, [&] {
      input->set(view);
      op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
    changed = true;
  }
  return changed;
}

/// When the innermost dimension of `op` is a reduction: its dimensions
/// reordered parallel first, each kind in its order. Returns the reordered
/// op; fails (leaving `op` as it is) when there is nothing to reorder.
FailureOr<linalg::GenericOp> parallelOutward(RewriterBase &rewriter,
                                             linalg::GenericOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.size() < 2 || iterators.back() != utils::IteratorType::reduction)
    return failure();
  SmallVector<unsigned> order;
  for (auto [d, kind] : llvm::enumerate(iterators))
    if (kind == utils::IteratorType::parallel)
      order.push_back(d);
  for (auto [d, kind] : llvm::enumerate(iterators))
    if (kind != utils::IteratorType::parallel)
      order.push_back(d);
  if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
    return failure();
  return linalg::interchangeGenericOp(rewriter, op, order);
}

/// Whether iteration dimensions `d` and `d + 1` of `op` can be one: the
/// same kind, and wherever an operand is indexed by one of them it is
/// indexed by both, `d` right before `d + 1`, and (for a buffer) with
/// `d`'s stride the extent times the stride of `d + 1`.
bool collapsible(linalg::GenericOp op, unsigned d) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators[d] != iterators[d + 1])
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    std::optional<unsigned> first = map.getResultPosition(
                                getAffineDimExpr(d, op.getContext())),
                            second = map.getResultPosition(
                                getAffineDimExpr(d + 1, op.getContext()));
    if (!first && !second)
      continue;
    if (!first || !second || *second != *first + 1)
      return false;
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)))
      return false;
    int64_t size = type.getDimSize(*second);
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(strides[*first]) ||
        ShapedType::isDynamic(strides[*second]) ||
        strides[*first] != size * strides[*second])
      return false;
  }
  return true;
}

/// Collapses every run of collapsible dimensions of `op` into one; fails
/// (leaving `op` as it is) when there is none.
LogicalResult collapseDims(RewriterBase &rewriter, linalg::GenericOp op) {
  unsigned rank = op.getNumLoops();
  if (rank < 2)
    return failure();
  // Only plain indexing (projected permutations: no window arithmetic,
  // no repeated dimension) is collapsed.
  if (!llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
        return map.isProjectedPermutation();
      }))
    return failure();
  SmallVector<ReassociationIndices> groups{{0}};
  for (unsigned d = 0; d + 1 < rank; ++d) {
    if (collapsible(op, d))
      groups.back().push_back(d + 1);
    else
      groups.push_back({static_cast<int64_t>(d + 1)});
  }
  if (groups.size() == rank ||
      !linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), groups))
    return failure();
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::CollapseResult> collapsed =
      linalg::collapseOpIterationDims(op, groups, rewriter);
  if (failed(collapsed))
    return failure();
  rewriter.replaceOp(op, collapsed->results);
  return success();
}

struct EffShapeLoopNestsPass
    : impl::EffShapeLoopNestsPassBase<EffShapeLoopNestsPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() &&
          isa<linalg::GenericOp, linalg::FillOp>(op.getOperation()))
        ops.push_back(op);
    });
    for (linalg::LinalgOp linalgOp : ops) {
      auto op = dyn_cast<linalg::GenericOp>(linalgOp.getOperation());
      if (!op) {
        // A fill of more than one dimension: as a generic, so it collapses.
        if (linalgOp.getNumLoops() < 2)
          continue;
        rewriter.setInsertionPoint(linalgOp);
        FailureOr<linalg::GenericOp> generic =
            linalg::generalizeNamedOp(rewriter, linalgOp);
        if (failed(generic))
          continue;
        op = *generic;
      }
      if (hoistScalarInputs(rewriter, op))
        ++numScalarsHoisted;
      if (dropBroadcastUnitDims(rewriter, op))
        ++numBroadcastsNarrowed;
      if (FailureOr<linalg::GenericOp> reordered =
              parallelOutward(rewriter, op);
          succeeded(reordered)) {
        op = *reordered;
        ++numReordered;
      }
      if (succeeded(collapseDims(rewriter, op)))
        ++numCollapsed;
    }
  }
};

} // namespace
} // namespace effopt
