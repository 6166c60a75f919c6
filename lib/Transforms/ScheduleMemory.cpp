//===- ScheduleMemory.cpp - eff-schedule-memory: an order for a lower peak ===//
//
// The memory plan gives each buffer the lifetime from its op to its last
// reader, in the order of the block. That order comes from how the step was
// built: the forward, the backward in reverse, then every optimizer update,
// so every gradient stays alive until the end of the backward. At the eff
// level every op is a pure function of its operands, so any order that
// respects the data flow computes the same values; this pass picks one with
// lower live bytes by two moves that never raise them anywhere (see
// Passes.td), on a model of what the planner will see.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Analysis/MemoryPlan.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Support/StorageBytes.h"

#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

#include <limits>
#include <set>
#include <tuple>

namespace effopt {
#define GEN_PASS_DEF_EFFSCHEDULEMEMORYPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// At most this many not-yet-run ops are pulled up with an op that frees
/// memory (the learning rate an optimizer update waits for); more would be
/// reordering the computation, not freeing early.
constexpr size_t kMaxPulledOps = 16;

/// The second candidate order pulls up only ops allocating at most this
/// much in all (scalars: a learning rate, a loss scale's checks).
constexpr int64_t kMaxPulledScalarBytes = 4096;

/// The live temporary bytes of an order: their largest sum at one
/// position, and their sum over all positions.
struct LiveProfile {
  int64_t peak = 0;
  int64_t integral = 0;
  /// The first position where the peak is live.
  size_t peakPosition = 0;
};

/// Ops whose result is a view of (or the same buffer as) their operand (an
/// NF4 weight: of its storage, which is state).
bool isAlias(Operation *op) {
  return isa<eff::SaveOp, eff::ReshapeOp, eff::NF4PackOp>(op);
}

/// Ops that stay where they are and that nothing moves across: regions
/// (a loop over micro-batches is one unit), side effects, writes into a
/// destination, the terminator.
bool isBarrier(Operation *op) {
  return op->getNumRegions() > 0 || !isMemoryEffectFree(op) ||
         isa<DestinationStyleOpInterface>(op) ||
         op->hasTrait<OpTrait::IsTerminator>();
}

class MemoryScheduler {
public:
  explicit MemoryScheduler(Block &block) : block(block) {}

  /// Reorders the block; returns how many ops changed position.
  int64_t run(int64_t &peakBefore, int64_t &peakAfter) {
    build();
    std::vector<unsigned> original(ops.size());
    for (unsigned i = 0; i < ops.size(); ++i)
      original[i] = i;
    // Two candidate orders, tried in turn: pulling up whatever an early
    // free waits for (within what it frees), then pulling up only scalars
    // (the learning rate). The first frees more when the pulled ops free in
    // turn; the second is the fallback when the pulled ops' results are
    // live together just before the free, above a peak the old order
    // avoided (a chain of the backward's first ops hoisted ahead of the
    // loss's readers). The first that beats the old order on the model --
    // a lower peak, or the same peak with fewer live bytes over the step --
    // wins.
    LiveProfile best = profile(original);
    peakBefore = best.peak;
    std::vector<unsigned> order = original;
    std::vector<std::vector<unsigned>> candidates;
    for (int64_t pullCap : {std::numeric_limits<int64_t>::max(),
                            kMaxPulledScalarBytes}) {
      std::vector<unsigned> candidate = freeEarly(pullCap);
      for (int round = 0; round < 4 && sink(candidate); ++round) {
      }
      candidates.push_back(std::move(candidate));
    }
    // Then each of them after the old order's peak only: the old order up
    // to its peak (which keeps every position before it as it was), the
    // rest in the candidate's order. The moves may raise the peak where
    // they interleave what the old order ran apart (the chunks of a loss)
    // and still free early after it (gradients sharded as their sums
    // arrive).
    for (size_t i = 0, e = candidates.size(); i < e; ++i)
      candidates.push_back(afterPosition(original, best.peakPosition,
                                         candidates[i]));
    for (std::vector<unsigned> &candidate : candidates) {
      LiveProfile live = profile(candidate);
      if (std::tie(live.peak, live.integral) <
          std::tie(best.peak, best.integral)) {
        best = live;
        order = std::move(candidate);
        break;
      }
    }
    peakAfter = best.peak;
    int64_t moved = 0;
    Operation *terminator = ops.back();
    for (auto [position, id] : llvm::enumerate(order)) {
      moved += position != id;
      if (ops[id] != terminator)
        ops[id]->moveBefore(terminator);
    }
    return moved;
  }

private:
  /// `prefix` up to and including position `position`, then the other ops
  /// in the order `rest` has them (both orders respect the data flow, and
  /// a prefix of one is closed under it, so the result does too).
  static std::vector<unsigned> afterPosition(ArrayRef<unsigned> prefix,
                                             size_t position,
                                             ArrayRef<unsigned> rest) {
    size_t keep = std::min(position + 1, prefix.size());
    std::vector<unsigned> result(prefix.begin(), prefix.begin() + keep);
    llvm::DenseSet<unsigned> kept(result.begin(), result.end());
    for (unsigned o : rest)
      if (!kept.contains(o))
        result.push_back(o);
    return result;
  }

  /// The op of this block that `v` is defined by, or null.
  Operation *producerInBlock(Value v) const {
    Operation *def = v.getDefiningOp();
    return def && def->getBlock() == &block ? def : nullptr;
  }

  Value rootOf(Value v) const {
    while (Operation *def = producerInBlock(v)) {
      if (!isAlias(def))
        break;
      v = def->getOperand(0);
    }
    return v;
  }

  /// Bytes of temporary memory `v` takes, 0 if none (arguments, constants,
  /// values written into an argument in place).
  int64_t bytesOf(Value v) const {
    Operation *def = producerInBlock(v);
    if (!def || isAlias(def) || def->hasTrait<OpTrait::ConstantLike>())
      return 0;
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape() ||
        !type.getElementType().isIntOrFloat())
      return 0;
    for (OpOperand &use : v.getUses())
      if (auto write =
              dyn_cast<bufferization::MaterializeInDestinationOp>(use.getOwner()))
        if (write.getSource() == v)
          return 0;
    return storageBytes(type);
  }

  void build() {
    for (Operation &op : block) {
      id[&op] = ops.size();
      ops.push_back(&op);
    }
    size_t n = ops.size();
    preds.resize(n);
    succs.resize(n);
    usedRoots.resize(n);
    resultRoots.resize(n);
    barrier.resize(n);
    for (unsigned o = 0; o < n; ++o) {
      barrier[o] = isBarrier(ops[o]);
      for (Value result : ops[o]->getResults())
        if (int64_t bytes = bytesOf(result)) {
          rootId[result] = rootBytes.size();
          resultRoots[o].push_back(rootBytes.size());
          rootBytes.push_back(bytes);
          rootProducer.push_back(o);
          rootConsumers.emplace_back();
        }
    }
    // Data flow, including values used inside an op's regions.
    for (unsigned o = 0; o < n; ++o) {
      Operation *op = ops[o];
      llvm::SetVector<Value> used;
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          if (inner == op || !op->isAncestor(v.getParentBlock()->getParentOp()))
            used.insert(v);
      });
      for (Value v : used) {
        if (Operation *def = producerInBlock(v))
          addEdge(id[def], o);
        if (isAlias(op))
          continue; // its readers read the root
        auto it = rootId.find(rootOf(v));
        if (it != rootId.end() &&
            !llvm::is_contained(usedRoots[o], it->second)) {
          usedRoots[o].push_back(it->second);
          rootConsumers[it->second].push_back(o);
        }
      }
    }
    // An op whose result is written into a destination in place runs after
    // every other reader of that destination: bufferization writes its
    // result there directly, and an earlier write would force a copy.
    for (unsigned o = 0; o < n; ++o) {
      auto write = dyn_cast<bufferization::MaterializeInDestinationOp>(ops[o]);
      if (!write)
        continue;
      Operation *producer = producerInBlock(write.getSource());
      if (!producer || barrier[id[producer]])
        continue;
      unsigned p = id[producer];
      llvm::DenseSet<unsigned> after = descendants(p);
      for (Operation *user : write.getDest().getUsers()) {
        Operation *reader = block.findAncestorOpInBlock(*user);
        if (!reader || reader == producer)
          continue;
        unsigned r = id[reader];
        if (!after.contains(r))
          addEdge(r, p);
      }
    }
  }

  void addEdge(unsigned from, unsigned to) {
    if (from == to || llvm::is_contained(succs[from], to))
      return;
    succs[from].push_back(to);
    preds[to].push_back(from);
  }

  llvm::DenseSet<unsigned> descendants(unsigned from) const {
    llvm::DenseSet<unsigned> seen;
    SmallVector<unsigned> worklist{from};
    while (!worklist.empty())
      for (unsigned s : succs[worklist.pop_back_val()])
        if (seen.insert(s).second)
          worklist.push_back(s);
    return seen;
  }

  int64_t allocated(unsigned o) const {
    int64_t bytes = 0;
    for (unsigned r : resultRoots[o])
      bytes += rootBytes[r];
    return bytes;
  }

  /// List scheduling, segment by segment: the old order, except that an op
  /// freeing at least what it allocates runs as soon as it can.
  std::vector<unsigned> freeEarly(int64_t pullCap) {
    size_t n = ops.size();
    std::vector<unsigned> order;
    std::vector<bool> scheduled(n, false);
    std::vector<int64_t> remaining(rootBytes.size());
    for (size_t r = 0; r < rootBytes.size(); ++r)
      remaining[r] = rootConsumers[r].size();
    std::set<unsigned> candidates; // may free something now
    for (size_t r = 0; r < rootBytes.size(); ++r)
      if (remaining[r] == 1)
        candidates.insert(rootConsumers[r].front());

    auto schedule = [&](unsigned o) {
      assert(!scheduled[o] && "an op placed twice");
      scheduled[o] = true;
      order.push_back(o);
      for (unsigned r : usedRoots[o])
        if (--remaining[r] == 1)
          for (unsigned c : rootConsumers[r])
            if (!scheduled[c])
              candidates.insert(c);
    };
    auto freed = [&](unsigned o) {
      int64_t bytes = 0;
      for (unsigned r : usedRoots[o])
        if (remaining[r] == 1)
          bytes += rootBytes[r];
      return bytes;
    };
    /// The ops `o` still waits for, if few and cheap enough to pull up and
    /// all before `end`, the end of o's segment. (A reader of a destination
    /// runs before the producer of what is written there: that edge can
    /// point back from a later segment, whose ops are placed with it.)
    auto pulled = [&](unsigned o, unsigned end, int64_t budget,
                      SmallVectorImpl<unsigned> &wait) {
      llvm::DenseSet<unsigned> seen;
      SmallVector<unsigned> worklist{o};
      int64_t bytes = 0;
      while (!worklist.empty()) {
        for (unsigned p : preds[worklist.pop_back_val()]) {
          if (scheduled[p] || !seen.insert(p).second)
            continue;
          bytes += allocated(p);
          if (barrier[p] || p >= end || seen.size() > kMaxPulledOps ||
              bytes > budget)
            return false;
          wait.push_back(p);
          worklist.push_back(p);
        }
      }
      // In an order every edge among them respects, the old order among
      // the rest: a reader-before-write edge points from a later op to an
      // earlier one, so the old order alone is not enough.
      llvm::sort(wait);
      SmallVector<unsigned> sorted;
      llvm::DenseSet<unsigned> placed;
      while (sorted.size() < wait.size())
        for (unsigned p : wait)
          if (!placed.contains(p) &&
              llvm::all_of(preds[p], [&](unsigned q) {
                return scheduled[q] || placed.contains(q) || !seen.contains(q);
              })) {
            sorted.push_back(p);
            placed.insert(p);
            break;
          }
      wait.assign(sorted.begin(), sorted.end());
      return true;
    };

    unsigned next = 0;
    while (next < n) {
      if (barrier[next]) {
        schedule(next++);
        continue;
      }
      // The segment [next, end): ops between two barriers.
      unsigned end = next;
      while (!barrier[end])
        ++end;
      std::vector<unsigned> waiting(end - next, 0);
      std::set<unsigned> ready;
      for (unsigned o = next; o < end; ++o) {
        for (unsigned p : preds[o])
          waiting[o - next] += p >= next && p < end;
        if (!waiting[o - next])
          ready.insert(o);
      }
      auto place = [&](unsigned o) {
        schedule(o);
        ready.erase(o);
        for (unsigned s : succs[o])
          if (s >= next && s < end && --waiting[s - next] == 0)
            ready.insert(s);
      };
      for (unsigned left = end - next; left > 0;) {
        bool hoisted = false;
        for (auto it = candidates.begin(); it != candidates.end();) {
          unsigned o = *it;
          if (o >= end)
            break; // a later segment's
          if (scheduled[o]) {
            it = candidates.erase(it);
            continue;
          }
          int64_t free = freed(o), alloc = allocated(o);
          if (alloc >= free) {
            it = candidates.erase(it);
            continue;
          }
          SmallVector<unsigned> wait;
          if (!pulled(o, end, std::min(free - alloc, pullCap), wait)) {
            ++it;
            continue;
          }
          for (unsigned p : wait)
            place(p);
          place(o);
          left -= wait.size() + 1;
          candidates.erase(o);
          hoisted = true;
          break;
        }
        if (!hoisted) {
          place(*ready.begin());
          --left;
        }
      }
      next = end;
    }
    return order;
  }

  /// Moves every op that allocates more than it frees down to just before
  /// its first reader (within its segment). Returns whether any moved.
  bool sink(std::vector<unsigned> &order) {
    size_t n = order.size();
    std::vector<unsigned> pos(ops.size());
    for (unsigned i = 0; i < n; ++i)
      pos[order[i]] = i;
    /// The last position where `r` is needed by another op than `o`.
    auto lastUseBesides = [&](unsigned r, unsigned o) {
      unsigned last = pos[rootProducer[r]];
      for (unsigned c : rootConsumers[r])
        if (c != o)
          last = std::max(last, pos[c]);
      return last;
    };
    bool changed = false;
    unsigned segmentEnd = n - 1; // the terminator
    for (int i = static_cast<int>(n) - 1; i >= 0; --i) {
      unsigned o = order[i];
      if (barrier[o]) {
        segmentEnd = i;
        continue;
      }
      int64_t alloc = allocated(o);
      if (alloc == 0)
        continue;
      unsigned limit = segmentEnd;
      for (unsigned s : succs[o])
        limit = std::min(limit, pos[s]);
      if (limit <= static_cast<unsigned>(i) + 1)
        continue;
      // Inputs needed nowhere else up to the new place live longer; the
      // move pays only if its result outweighs all of them.
      int64_t extended = 0;
      for (unsigned r : usedRoots[o])
        if (lastUseBesides(r, o) < limit - 1)
          extended += rootBytes[r];
      if (alloc <= extended)
        continue;
      // Move o from i to limit - 1.
      for (unsigned k = i; k + 1 < limit; ++k) {
        order[k] = order[k + 1];
        pos[order[k]] = k;
      }
      order[limit - 1] = o;
      pos[o] = limit - 1;
      changed = true;
    }
    return changed;
  }

  /// The live temporary bytes of `order`, on the pass's model.
  LiveProfile profile(ArrayRef<unsigned> order) const {
    std::vector<unsigned> pos(ops.size());
    for (auto [i, o] : llvm::enumerate(order))
      pos[o] = i;
    std::vector<int64_t> delta(order.size() + 1, 0);
    for (size_t r = 0; r < rootBytes.size(); ++r) {
      unsigned first = pos[rootProducer[r]], last = first;
      for (unsigned c : rootConsumers[r])
        last = std::max(last, pos[c]);
      delta[first] += rootBytes[r];
      delta[last + 1] -= rootBytes[r];
    }
    LiveProfile result;
    int64_t live = 0;
    for (auto [position, d] : llvm::enumerate(delta)) {
      live += d;
      if (live > result.peak) {
        result.peak = live;
        result.peakPosition = position;
      }
      result.integral += live;
    }
    return result;
  }

  Block &block;
  std::vector<Operation *> ops;
  DenseMap<Operation *, unsigned> id;
  std::vector<SmallVector<unsigned>> preds, succs;
  std::vector<bool> barrier;
  /// Buffers of the model ("roots": results that are not views).
  DenseMap<Value, unsigned> rootId;
  std::vector<int64_t> rootBytes;
  std::vector<unsigned> rootProducer;
  std::vector<SmallVector<unsigned>> rootConsumers;
  /// Per op: the roots it reads (directly or through views) and defines.
  std::vector<SmallVector<unsigned>> usedRoots, resultRoots;
};

struct EffScheduleMemoryPass
    : impl::EffScheduleMemoryPassBase<EffScheduleMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      for (Block &block : func.getBody()) {
        if (block.empty() ||
            !block.back().hasTrait<OpTrait::IsTerminator>())
          continue;
        int64_t before = 0, after = 0;
        numMovedOps += MemoryScheduler(block).run(before, after);
        numModelPeakBytesBefore += before;
        numModelPeakBytesAfter += after;
      }
    });
  }
};

} // namespace
} // namespace effopt
