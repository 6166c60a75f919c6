//===- OverlapCollectives.cpp - eff-overlap-collectives: start, then wait -===//
//
// A blocking collective holds the step until every rank has sent and
// received. Split into a start and a wait, the runtime moves the data on its
// communication thread while the ops between them compute. Where the two
// go decides how much overlaps and how many bytes are held meanwhile:
// sums start as soon as their tensors are final and are waited for where
// the next sum starts (one bucket moving while the next is computed);
// gathers start `prefetch` gathers ahead (ZeRO-3: the next parameter moves
// while the current layer computes) and are waited for right before their
// reader. See Passes.td for the contract.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace effopt {
#define GEN_PASS_DEF_EFFOVERLAPCOLLECTIVESPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt;
using namespace effopt::eff;

namespace {

/// One split collective.
struct Pair {
  Operation *start;
  WaitOp wait;
  bool gathers;
};

struct EffOverlapCollectivesPass
    : effopt::impl::EffOverlapCollectivesPassBase<EffOverlapCollectivesPass> {
  using EffOverlapCollectivesPassBase::EffOverlapCollectivesPassBase;
  void runOnOperation() override;
  void overlapBlock(Block &block);
};

/// `op` replaced by its start and a wait right after it.
Pair split(Operation *op) {
  OpBuilder builder(op);
  Operation *start = nullptr;
  bool gathers = false;
  if (auto sum = dyn_cast<AllReduceOp>(op)) {
    start = AllReduceStartOp::create(builder, op->getLoc(), sum.getInputs(),
                                     sum.getWorldSizeAttr());
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    start = ReduceScatterStartOp::create(builder, op->getLoc(),
                                         scatter.getType(), scatter.getInput(),
                                         scatter.getWorldSizeAttr());
  } else {
    auto gather = cast<AllGatherOp>(op);
    start =
        AllGatherStartOp::create(builder, op->getLoc(), gather.getType(),
                                 gather.getInput(), gather.getWorldSizeAttr());
    gathers = true;
  }
  // Other attributes (eff.recomputed on a backward gather) go with it.
  for (NamedAttribute attr : op->getDiscardableAttrs())
    start->setAttr(attr.getName(), attr.getValue());
  auto wait = WaitOp::create(builder, op->getLoc(), start->getResults());
  op->replaceAllUsesWith(wait.getResults());
  op->erase();
  return {start, wait, gathers};
}

/// The last op of `block` (or an ancestor in it) that produces an operand
/// of `op`, or null if all come from outside the block.
Operation *lastProducer(Operation *op, Block &block) {
  Operation *last = nullptr;
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    Operation *inBlock = def ? block.findAncestorOpInBlock(*def) : nullptr;
    if (inBlock && (!last || last->isBeforeInBlock(inBlock)))
      last = inBlock;
  }
  return last;
}

/// Moves `op` up to just after `after` if that is earlier.
void hoistAfter(Operation *op, Operation *after) {
  if (after && after->isBeforeInBlock(op) && after->getNextNode() != op)
    op->moveAfter(after);
}

/// Whether `op` (or an op nested in it) reads a value in `values`.
bool reads(Operation *op, const llvm::SmallPtrSetImpl<Value> &values) {
  bool found = false;
  op->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (values.contains(operand)) {
        found = true;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return found;
}

} // namespace

void EffOverlapCollectivesPass::overlapBlock(Block &block) {
  SmallVector<Operation *> blocking;
  for (Operation &op : block)
    if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op))
      blocking.push_back(&op);
  if (blocking.empty())
    return;
  SmallVector<Pair> pairs;
  for (Operation *op : blocking)
    pairs.push_back(split(op));
  numSplit += pairs.size();

  // Starts: sums right after their last producer; gathers `prefetch`
  // gathers ahead (after the wait of the gather that many before), never
  // before their input nor before the gather before them (the first
  // `prefetch` start together where the first was).
  SmallVector<Pair *> gathers;
  for (Pair &pair : pairs) {
    Operation *after = lastProducer(pair.start, block);
    if (pair.gathers) {
      auto later = [&](Operation *op) {
        if (op && (!after || after->isBeforeInBlock(op)))
          after = op;
      };
      size_t k = gathers.size();
      size_t ahead = static_cast<size_t>(prefetch);
      if (ahead == 0 || k == 0) {
        after = nullptr; // starts where it was
      } else {
        if (k >= ahead)
          later(gathers[k - ahead]->wait);
        later(gathers[k - 1]->start);
      }
      gathers.push_back(&pair);
    }
    hoistAfter(pair.start, after);
  }

  // Waits: each, with the ops after it that depend on its results, moves
  // down to the next start of its kind, or before the next op with regions
  // or the terminator -- or before an in-place write into a tensor that
  // one of those ops reads (the step counter, a parameter): moved past it,
  // the op would read the new value.
  for (Pair &pair : pairs) {
    Operation *fence = pair.wait->getNextNode();
    for (; fence; fence = fence->getNextNode()) {
      if (fence->hasTrait<OpTrait::IsTerminator>() ||
          fence->getNumRegions() > 0)
        break;
      if (pair.gathers ? isa<AllGatherStartOp>(fence)
                       : isa<AllReduceStartOp, ReduceScatterStartOp>(fence))
        break;
    }
    if (!fence)
      continue;
    // A collective whose results the next start needs (the global count of
    // targets that weighs the gradients of the next bucket): moving its
    // readers down to that start would only delay them (and keep what they
    // read live); its wait goes right before its first reader instead.
    {
      llvm::SmallPtrSet<Value, 16> cone(pair.wait->result_begin(),
                                        pair.wait->result_end());
      Operation *firstReader = nullptr;
      for (Operation *op = pair.wait->getNextNode(); op != fence;
           op = op->getNextNode())
        if (reads(op, cone)) {
          if (!firstReader)
            firstReader = op;
          cone.insert(op->result_begin(), op->result_end());
        }
      if (reads(fence, cone)) {
        pair.wait->moveBefore(firstReader ? firstReader : fence);
        continue;
      }
    }
    SmallVector<Operation *> moved;
    for (;;) {
      moved = {pair.wait};
      llvm::SmallPtrSet<Value, 16> cone(pair.wait->result_begin(),
                                        pair.wait->result_end());
      SmallVector<Operation *> writes;
      for (Operation *op = pair.wait->getNextNode(); op != fence;
           op = op->getNextNode()) {
        if (reads(op, cone)) {
          moved.push_back(op);
          cone.insert(op->result_begin(), op->result_end());
        } else if (isa<bufferization::MaterializeInDestinationOp>(op)) {
          writes.push_back(op);
        }
      }
      Operation *clash = nullptr;
      for (Operation *write : writes) {
        Value dest =
            cast<bufferization::MaterializeInDestinationOp>(write).getDest();
        if (llvm::any_of(moved, [&](Operation *op) {
              return op->isBeforeInBlock(write) &&
                     llvm::is_contained(op->getOperands(), dest);
            })) {
          clash = write;
          break;
        }
      }
      if (!clash)
        break;
      fence = clash;
    }
    // A sum's wait goes after the next sum's start (unless that reads what
    // moves), so that every sum starts right after its last tensor and at
    // most two are in flight; a gather's before the next gather's start,
    // which `prefetch` already placed.
    bool after =
        !pair.gathers && isa<AllReduceStartOp, ReduceScatterStartOp>(fence);
    if (after) {
      llvm::SmallPtrSet<Value, 16> movedValues;
      for (Operation *op : moved)
        movedValues.insert(op->result_begin(), op->result_end());
      after = !reads(fence, movedValues);
    }
    Operation *anchor = fence;
    for (Operation *op : moved) {
      if (after)
        op->moveAfter(anchor);
      else
        op->moveBefore(fence);
      anchor = op;
    }
  }

  for (Pair &pair : pairs)
    for (Operation *op = pair.start->getNextNode(); op != pair.wait;
         op = op->getNextNode())
      if (!isa<WaitOp, AllReduceStartOp, ReduceScatterStartOp,
               AllGatherStartOp>(op))
        ++numOverlappedOps;
}

void EffOverlapCollectivesPass::runOnOperation() {
  if (prefetch < 0) {
    getOperation().emitError(
        "eff-overlap-collectives: prefetch must be at least 0, got ")
        << static_cast<int64_t>(prefetch);
    return signalPassFailure();
  }
  // Blocks in the order they appear; each block's collectives stay in it.
  SmallVector<Block *> blocks;
  getOperation().walk([&](func::FuncOp func) {
    func.walk([&](Block *block) { blocks.push_back(block); });
  });
  for (Block *block : blocks)
    overlapBlock(*block);
}
