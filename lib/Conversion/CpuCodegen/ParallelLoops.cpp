//===- ParallelLoops.cpp - which loop nests run on several threads --------===//
//
// convert-linalg-to-parallel-loops makes an scf.parallel of every run of
// parallel iterators. Only a nest's outermost parallel loop is worth
// threading, and only when the nest does enough work to pay for waking the
// other threads; every other scf.parallel becomes sequential scf.for loops.
// A threaded nest keeps as few leading dimensions parallel as give every
// thread a share; the rest become scf.for loops inside, so the innermost
// loop stays a plain loop LLVM can vectorise. No reduction is ever split
// between threads: each output element is computed by one thread with the
// same instructions in the same order whatever the number of threads.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace effopt {
#define GEN_PASS_DEF_EFFPARALLELLOOPSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// A loop's static trip count, or nothing.
std::optional<int64_t> tripCount(Value lb, Value ub, Value step) {
  auto l = getConstantIntValue(lb), u = getConstantIntValue(ub),
       s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return *u <= *l ? 0 : (*u - *l + *s - 1) / *s;
}

constexpr int64_t kUnknown = int64_t(1) << 40;

int64_t saturatingMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0)
    return 0;
  return a > kUnknown / b ? kUnknown : a * b;
}

/// Innermost iterations of the loops in `block`: a loop counts its trip
/// count times its body; sibling loops count as the largest of them.
int64_t blockWork(Block &block) {
  int64_t work = 1;
  for (Operation &op : block) {
    int64_t w = 1;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      auto trips = tripCount(loop.getLowerBound(), loop.getUpperBound(),
                             loop.getStep());
      w = saturatingMul(trips.value_or(kUnknown), blockWork(*loop.getBody()));
    } else if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      w = blockWork(*loop.getBody());
      for (auto [lb, ub, step] :
           llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
        w = saturatingMul(w, tripCount(lb, ub, step).value_or(kUnknown));
    } else {
      for (Region &region : op.getRegions())
        for (Block &b : region)
          w = std::max(w, blockWork(b));
    }
    work = std::max(work, w);
  }
  return work;
}

/// Replaces dimensions [first, n) of `op` by scf.for loops nested in its
/// body (all of them: `op` itself is then removed).
void sequentializeFrom(scf::ParallelOp op, unsigned first) {
  unsigned n = op.getNumLoops();
  Location loc = op.getLoc();
  OpBuilder b(op);
  Block *outerBody = nullptr;
  SmallVector<Value> newIvs;
  scf::ParallelOp kept;
  if (first > 0) {
    kept = scf::ParallelOp::create(
        b, loc, op.getLowerBound().take_front(first),
        op.getUpperBound().take_front(first), op.getStep().take_front(first));
    outerBody = kept.getBody();
    llvm::append_range(newIvs, kept.getInductionVars());
    b.setInsertionPointToStart(outerBody);
  }
  for (unsigned d = first; d < n; ++d) {
    auto loop = scf::ForOp::create(b, loc, op.getLowerBound()[d],
                                   op.getUpperBound()[d], op.getStep()[d]);
    newIvs.push_back(loop.getInductionVar());
    b.setInsertionPointToStart(loop.getBody());
  }
  // Move the body (without its scf.reduce terminator) to the innermost loop.
  Block *body = op.getBody();
  Block *target = b.getInsertionBlock();
  for (auto [oldIv, newIv] : llvm::zip(op.getInductionVars(), newIvs))
    oldIv.replaceAllUsesWith(newIv);
  target->getOperations().splice(b.getInsertionPoint(), body->getOperations(),
                                 body->begin(), std::prev(body->end()));
  op->erase();
}

/// Whether `op` is a nest of the step itself: directly in the function, or
/// in eff-grad-accum's micro-batch loop (whose body is the step's body run
/// once per micro-batch).
bool isStepLevel(Operation *op) {
  Operation *parent = op->getParentOp();
  while (auto loop = dyn_cast_or_null<scf::ForOp>(parent)) {
    if (!loop->hasAttr(eff::kAccumulationLoopAttrName))
      return false;
    parent = loop->getParentOp();
  }
  return isa_and_nonnull<FunctionOpInterface>(parent);
}

struct EffParallelLoopsPass
    : impl::EffParallelLoopsPassBase<EffParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    // Post-order: inner loops are handled (made sequential) before the
    // nests that hold them are measured.
    getOperation()->walk([&](scf::ParallelOp op) { loops.push_back(op); });
    for (scf::ParallelOp op : loops) {
      if (op.getNumResults() != 0 || op.getNumLoops() == 0)
        continue;
      bool topLevel = isStepLevel(op);
      int64_t work = blockWork(*op.getBody());
      SmallVector<int64_t> trips;
      for (auto [lb, ub, step] :
           llvm::zip(op.getLowerBound(), op.getUpperBound(), op.getStep()))
        trips.push_back(tripCount(lb, ub, step).value_or(kUnknown));
      for (int64_t t : trips)
        work = saturatingMul(work, t);
      if (!topLevel || work < minWork) {
        sequentializeFrom(op, 0);
        ++numSequential;
        continue;
      }
      // As few leading dimensions as give `minChunks` independent chunks.
      unsigned keep = 1;
      int64_t chunks = trips[0];
      while (keep < trips.size() && chunks < minChunks)
        chunks = saturatingMul(chunks, trips[keep++]);
      if (chunks < 2) {
        sequentializeFrom(op, 0);
        ++numSequential;
        continue;
      }
      if (keep < op.getNumLoops())
        sequentializeFrom(op, keep);
      ++numParallel;
    }
  }
};

} // namespace
} // namespace effopt
