//===- MemoryPlan.cpp - static placement of temporaries in one arena ------===//

#include "effopt/Analysis/MemoryPlan.h"

#include "mlir/Interfaces/ViewLikeInterface.h"

#include <map>

using namespace mlir;

namespace effopt {

int64_t storageBytes(Type elementType) {
  return std::max<int64_t>(1, (elementType.getIntOrFloatBitWidth() + 7) / 8);
}

/// The last schedule position that uses `value` or a view derived from it.
static int64_t lastUse(Value value, Block &schedule,
                       const DenseMap<Operation *, int64_t> &position) {
  int64_t last = -1;
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (Operation *top = schedule.findAncestorOpInBlock(*user))
        last = std::max(last, position.lookup(top));
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == v)
          llvm::append_range(worklist, user->getResults());
    }
  }
  return last;
}

MemoryPlan MemoryPlan::compute(Block &schedule, int64_t alignment) {
  MemoryPlan plan;
  DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : schedule)
    position[&op] = index++;

  for (Operation &op : schedule) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc || !alloc.getType().hasStaticShape() ||
        !alloc.getType().getLayout().isIdentity())
      continue;
    MemRefType type = alloc.getType();
    PlannedBuffer buffer;
    buffer.alloc = alloc;
    buffer.bytes = type.getNumElements() * storageBytes(type.getElementType());
    buffer.first = position[&op];
    buffer.last = std::max(buffer.first, lastUse(alloc, schedule, position));
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
  auto alignUp = [&](int64_t v) {
    return (v + alignment - 1) / alignment * alignment;
  };
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
