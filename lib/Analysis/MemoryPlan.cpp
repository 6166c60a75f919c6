//===- MemoryPlan.cpp - static placement of temporaries in one arena ------===//

#include "effopt/Analysis/MemoryPlan.h"

#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <map>

using namespace mlir;

namespace effopt {

namespace {
/// The step's schedule: the operations of the function body in order, the
/// body of each scf.for (eff-grad-accum's micro-batch loop) laid out right
/// after the loop itself. A buffer allocated in a loop body lives within one
/// iteration; one allocated before a loop and used in it lives to the end of
/// the loop's body.
struct Schedule {
  std::vector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  /// The last position inside an op (its own position unless it is a loop).
  DenseMap<Operation *, int64_t> end;

  void add(Block &block) {
    for (Operation &op : block) {
      position[&op] = static_cast<int64_t>(ops.size());
      ops.push_back(&op);
      if (auto loop = dyn_cast<scf::ForOp>(op))
        add(*loop.getBody());
      end[&op] = static_cast<int64_t>(ops.size()) - 1;
    }
  }
};
} // namespace

/// The last schedule position that uses `alloc` or a view derived from it,
/// as seen from the block it is allocated in. Sets `escapes` when the
/// buffer is yielded to the next iteration of its loop.
static int64_t lastUse(memref::AllocOp alloc, const Schedule &schedule,
                       bool &escapes) {
  Block &block = *alloc->getBlock();
  int64_t last = -1;
  SmallVector<Value> worklist{alloc.getResult()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (Operation *top = block.findAncestorOpInBlock(*user)) {
        last = std::max(last, schedule.end.lookup(top));
        if (isa<scf::YieldOp>(top))
          escapes = true;
      }
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == v)
          llvm::append_range(worklist, user->getResults());
    }
  }
  return last;
}

MemoryPlan MemoryPlan::compute(Block &body, int64_t alignment) {
  MemoryPlan plan;
  Schedule schedule;
  schedule.add(body);
  plan.scheduleOps = schedule.ops;

  for (Operation *op : schedule.ops) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc || !alloc.getType().hasStaticShape() ||
        !alloc.getType().getLayout().isIdentity())
      continue;
    MemRefType type = alloc.getType();
    PlannedBuffer buffer;
    buffer.alloc = alloc;
    buffer.bytes = storageBytes(type);
    buffer.first = schedule.position.lookup(op);
    bool escapes = false;
    buffer.last = std::max(buffer.first, lastUse(alloc, schedule, escapes));
    if (escapes) {
      plan.escaping.push_back(alloc);
      continue;
    }
    plan.planned.push_back(buffer);
  }

  // Largest first; each at the lowest aligned offset that overlaps no placed
  // buffer whose lifetime intersects its own.
  std::vector<size_t> order(plan.planned.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return plan.planned[a].bytes > plan.planned[b].bytes;
  });
  std::vector<size_t> placed;
  auto alignUp = [&](int64_t v) { return alignBytes(v, alignment); };
  for (size_t i : order) {
    PlannedBuffer &buffer = plan.planned[i];
    SmallVector<std::pair<int64_t, int64_t>> busy; // [offset, end)
    for (size_t j : placed) {
      const PlannedBuffer &other = plan.planned[j];
      if (other.first <= buffer.last && buffer.first <= other.last)
        busy.push_back({other.offset, other.offset + other.bytes});
    }
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + buffer.bytes <= begin)
        break;
      offset = std::max(offset, alignUp(end));
    }
    buffer.offset = offset;
    plan.size = std::max(plan.size, alignUp(offset + buffer.bytes));
    placed.push_back(i);
  }
  return plan;
}

std::pair<int64_t, int64_t> MemoryPlan::peak() const {
  std::map<int64_t, int64_t> delta;
  for (const PlannedBuffer &b : planned) {
    delta[b.first] += b.bytes;
    delta[b.last + 1] -= b.bytes;
  }
  int64_t live = 0, best = 0, where = 0;
  for (auto [pos, d] : delta) {
    live += d;
    if (live > best) {
      best = live;
      where = pos;
    }
  }
  return {where, best};
}

} // namespace effopt
