//===- MemoryPlan.cpp - static placement of temporaries in one arena ------===//

#include "effopt/Analysis/MemoryPlan.h"

#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
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
/// buffer is yielded to the next iteration of its loop. A buffer whose
/// address is taken as an integer (`memref.extract_aligned_pointer_as_index`,
/// for a library call) is used by whatever that integer reaches through
/// pure ops (casts, offsets, `llvm.inttoptr`): the call reads the buffer,
/// wherever the address computation was placed.
static int64_t lastUse(memref::AllocOp alloc, const Schedule &schedule,
                       bool &escapes) {
  Block &block = *alloc->getBlock();
  int64_t last = -1;
  SmallVector<Value> worklist{alloc.getResult()};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    bool isAddress = !isa<BaseMemRefType>(v.getType());
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (Operation *top = block.findAncestorOpInBlock(*user)) {
        last = std::max(last, schedule.end.lookup(top));
        if (isa<scf::YieldOp>(top))
          escapes = true;
      }
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == v)
          llvm::append_range(worklist, user->getResults());
      } else if (isa<memref::ExtractAlignedPointerAsIndexOp>(user) ||
                 (isAddress && isMemoryEffectFree(user))) {
        llvm::append_range(worklist, user->getResults());
      }
    }
  }
  return last;
}

/// The op of `block` that uses `alloc` (or a view of it) first, and
/// whether that use is of `alloc` itself.
static std::pair<Operation *, bool>
firstUse(memref::AllocOp alloc, const Schedule &schedule) {
  Block &block = *alloc->getBlock();
  Operation *first = nullptr;
  bool direct = false;
  SmallVector<Value> worklist{alloc.getResult()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *top = block.findAncestorOpInBlock(*use.getOwner());
      if (!top)
        continue;
      int64_t at = schedule.position.lookup(top);
      if (!first || at < schedule.position.lookup(first) ||
          (top == first && v != alloc.getResult())) {
        first = top;
        direct = v == alloc.getResult() && top == use.getOwner();
      }
      if (auto view = dyn_cast<ViewLikeOpInterface>(use.getOwner()))
        if (view.getViewSource() == v)
          llvm::append_range(worklist, use.getOwner()->getResults());
    }
  }
  return {first, direct};
}

/// The buffer `writer` may be computed over: `writer` is an elementwise
/// linalg.generic whose first write of `output` ignores its old contents,
/// and it reads `input` (same shape, same element size) through the same
/// indexing map as `output`, nowhere else, for the last time. Each element
/// is then read before it is written, by the same iteration, so the two
/// can share bytes. Returns the input operand's value or null.
static Value inPlaceInput(Operation *writer, Value output,
                          const DenseMap<Value, int64_t> &lastOf,
                          int64_t writerPosition) {
  auto generic = dyn_cast<linalg::GenericOp>(writer);
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumLoops() == 0 ||
      generic.getNumLoops() != generic.getNumParallelLoops())
    return {};
  OpOperand *init = nullptr;
  for (OpOperand &operand : generic->getOpOperands())
    if (operand.get() == output) {
      if (init || !generic.isDpsInit(&operand))
        return {};
      init = &operand;
    }
  if (!init || generic.payloadUsesValueFromOperand(init))
    return {};
  AffineMap map = generic.getMatchingIndexingMap(init);
  auto outputType = cast<MemRefType>(output.getType());
  for (OpOperand *input : generic.getDpsInputOperands()) {
    Value candidate = input->get();
    auto type = dyn_cast<MemRefType>(candidate.getType());
    auto last = lastOf.find(candidate);
    if (!type || last == lastOf.end() || last->second != writerPosition ||
        type.getShape() != outputType.getShape() ||
        storageBytes(type.getElementType(), 1) !=
            storageBytes(outputType.getElementType(), 1))
      continue;
    // Every use of the candidate by the writer is an input read through
    // the output's map (none inside its body, none as another output).
    bool elementForElement = llvm::all_of(candidate.getUses(), [&](OpOperand &use) {
      if (!generic->isAncestor(use.getOwner()))
        return true;
      return use.getOwner() == generic.getOperation() &&
             generic.isDpsInput(&use) &&
             generic.getMatchingIndexingMap(&use) == map;
    });
    if (elementForElement)
      return candidate;
  }
  return {};
}

MemoryPlan MemoryPlan::compute(Block &body, int64_t alignment, bool inPlace) {
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

  // Elementwise ops in place: a buffer first written by the last reader of
  // an equal buffer joins that buffer's slot. A slot is a chain of buffers
  // one after another in time, placed as one.
  DenseMap<Value, int64_t> lastOf;
  DenseMap<Value, size_t> indexOf;
  for (auto [i, buffer] : llvm::enumerate(plan.planned)) {
    lastOf[buffer.alloc.getResult()] = buffer.last;
    indexOf[buffer.alloc.getResult()] = i;
  }
  std::vector<size_t> slotOf(plan.planned.size());
  for (size_t i = 0; i < slotOf.size(); ++i)
    slotOf[i] = i;
  DenseSet<size_t> taken;
  for (auto [i, buffer] : llvm::enumerate(plan.planned)) {
    if (!inPlace)
      break;
    auto [writer, direct] = firstUse(buffer.alloc, schedule);
    if (!writer || !direct)
      continue;
    int64_t at = schedule.position.lookup(writer);
    Value input =
        inPlaceInput(writer, buffer.alloc.getResult(), lastOf, at);
    if (!input)
      continue;
    size_t from = indexOf.lookup(input);
    if (plan.planned[from].bytes != buffer.bytes || !taken.insert(from).second)
      continue;
    buffer.first = at;
    buffer.inPlace = true;
    slotOf[i] = from;
  }
  // Chains (each buffer taken over at most once): every buffer to the slot
  // of the first buffer of its chain.
  for (size_t i = 0; i < slotOf.size(); ++i)
    while (slotOf[slotOf[i]] != slotOf[i])
      slotOf[i] = slotOf[slotOf[i]];
  struct Slot {
    int64_t bytes = 0, first = 0, last = 0, offset = 0;
  };
  std::vector<Slot> slots(plan.planned.size());
  std::vector<bool> used(plan.planned.size(), false);
  for (auto [i, buffer] : llvm::enumerate(plan.planned)) {
    Slot &slot = slots[slotOf[i]];
    if (!used[slotOf[i]]) {
      slot = {buffer.bytes, buffer.first, buffer.last, 0};
      used[slotOf[i]] = true;
      continue;
    }
    slot.bytes = std::max(slot.bytes, buffer.bytes);
    slot.first = std::min(slot.first, buffer.first);
    slot.last = std::max(slot.last, buffer.last);
  }

  // Largest first; each at the lowest aligned offset that overlaps no placed
  // slot whose lifetime intersects its own.
  std::vector<size_t> order;
  for (size_t i = 0; i < slots.size(); ++i)
    if (used[i])
      order.push_back(i);
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return slots[a].bytes > slots[b].bytes;
  });
  std::vector<size_t> placed;
  auto alignUp = [&](int64_t v) { return alignBytes(v, alignment); };
  for (size_t i : order) {
    Slot &slot = slots[i];
    SmallVector<std::pair<int64_t, int64_t>> busy; // [offset, end)
    for (size_t j : placed) {
      const Slot &other = slots[j];
      if (other.first <= slot.last && slot.first <= other.last)
        busy.push_back({other.offset, other.offset + other.bytes});
    }
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + slot.bytes <= begin)
        break;
      offset = std::max(offset, alignUp(end));
    }
    slot.offset = offset;
    plan.size = std::max(plan.size, alignUp(offset + slot.bytes));
    placed.push_back(i);
  }
  for (auto [i, buffer] : llvm::enumerate(plan.planned))
    buffer.offset = slots[slotOf[i]].offset;
  return plan;
}

std::pair<int64_t, int64_t> MemoryPlan::peak() const {
  std::map<int64_t, int64_t> delta;
  for (const PlannedBuffer &b : planned) {
    // In place: its first position's bytes are its input's.
    delta[b.inPlace ? b.first + 1 : b.first] += b.bytes;
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
