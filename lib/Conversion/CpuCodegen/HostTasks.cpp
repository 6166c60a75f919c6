//===- HostTasks.cpp - host-state ops on a worker, overlapped -------------===//
//
// The ops of a step that touch its host region (the optimizer's state in
// host memory, eff-offload-optimizer) run as tasks on one runtime worker
// thread while the step goes on: ZeRO-Offload's overlap of the update with
// the backward, on the CPU. Placement is by the byte ranges the memory plan
// fixed, so waits sit exactly where a later op would touch what a pending
// task touches.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace effopt {
#define GEN_PASS_DEF_EFFHOSTTASKLIFETIMESPASS
#define GEN_PASS_DEF_EFFHOSTTASKSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// The runtime's entry points (effrt/Kernels.h).
constexpr StringLiteral kTaskStart = "effrt_host_task_start";
constexpr StringLiteral kTaskWait = "effrt_host_task_wait";
/// The entry point's region arguments: state, arena, io, host.
constexpr unsigned kNumRegions = 4, kHostRegionArg = 3;

/// Bytes [begin, end) of region `region` (an argument index of the entry),
/// or (before the memory plan) the whole of allocation `alloc`; neither:
/// anything (a buffer not traced to a region or an allocation).
struct Range {
  int64_t region = -1, begin = 0, end = 0;
  Operation *alloc = nullptr;
  bool known() const { return region >= 0 || alloc; }
  bool overlaps(const Range &o) const {
    if (!known() || !o.known())
      return true;
    if (alloc || o.alloc)
      return alloc == o.alloc;
    return region == o.region && begin < o.end && o.begin < end;
  }
};

/// The bytes `value` (a memref) addresses: through view-like ops to a
/// memref.view of a region argument at a constant offset (the whole view:
/// a subview stays inside it), or the whole region argument itself.
Range rangeOf(Value value, func::FuncOp entry) {
  Value v = value;
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == &entry.getBody().front() &&
          arg.getArgNumber() < kNumRegions)
        return {arg.getArgNumber(), 0, INT64_MAX};
      return {};
    }
    Operation *def = v.getDefiningOp();
    if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def)) {
      Range r;
      r.alloc = alloc;
      return r;
    }
    if (auto view = dyn_cast_or_null<memref::ViewOp>(def)) {
      auto base = dyn_cast<BlockArgument>(view.getSource());
      std::optional<int64_t> offset =
          getConstantIntValue(view.getByteShift());
      auto type = cast<MemRefType>(view.getType());
      if (!base || base.getOwner() != &entry.getBody().front() ||
          base.getArgNumber() >= kNumRegions || !offset ||
          !type.hasStaticShape())
        return {};
      return {base.getArgNumber(), *offset, *offset + storageBytes(type)};
    }
    auto viewLike = dyn_cast_or_null<ViewLikeOpInterface>(def);
    if (!viewLike)
      return {};
    v = viewLike.getViewSource();
  }
}

/// The bytes a pointer operand of a library call addresses: the buffer it
/// is the aligned pointer of (memref.extract_aligned_pointer_as_index,
/// cast to an integer and to a pointer), whole.
Range rangeOfPointer(Value pointer, func::FuncOp entry) {
  Value v = pointer;
  while (Operation *def = v.getDefiningOp()) {
    if (isa<LLVM::IntToPtrOp, arith::IndexCastOp, arith::IndexCastUIOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    if (auto aligned = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(def)) {
      Value buffer = aligned.getSource();
      if (auto meta = buffer.getDefiningOp<memref::ExtractStridedMetadataOp>())
        buffer = meta.getSource();
      return rangeOf(buffer, entry);
    }
    break;
  }
  return {};
}

/// Every range an op (and the ops nested in it) may read or write: the
/// buffers of every op with memory effects, through memrefs or the
/// pointers handed to library calls; an op with effects on something not
/// traced to a region may touch anything.
SmallVector<Range> footprint(Operation *op, func::FuncOp entry) {
  SmallVector<Range> ranges;
  op->walk([&](Operation *inner) {
    // Views address memory without touching it; an allocation's bytes
    // are its own (the memory plan places them).
    if (isa<ViewLikeOpInterface, memref::AllocOp, memref::DeallocOp>(inner) ||
        (isMemoryEffectFree(inner) && !isa<CallOpInterface>(inner)))
      return;
    bool traced = false;
    for (Value operand : inner->getOperands()) {
      if (isa<MemRefType>(operand.getType())) {
        ranges.push_back(rangeOf(operand, entry));
        traced = true;
      } else if (isa<LLVM::LLVMPointerType>(operand.getType())) {
        ranges.push_back(rangeOfPointer(operand, entry));
        traced = true;
      }
    }
    // Ops with regions (a loop) are seen through the ops inside them.
    if (!traced && inner->getNumRegions() == 0 &&
        !inner->hasTrait<OpTrait::IsTerminator>())
      ranges.push_back(Range{});
  });
  return ranges;
}

bool overlap(ArrayRef<Range> a, ArrayRef<Range> b) {
  for (const Range &x : a)
    for (const Range &y : b)
      if (x.overlaps(y))
        return true;
  return false;
}

struct EffHostTasksPass : impl::EffHostTasksPassBase<EffHostTasksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> entries;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(eff::kArenaArgAttrName) && !func.isExternal() &&
          func.getNumArguments() == kNumRegions)
        entries.push_back(func);
    for (func::FuncOp entry : entries)
      if (failed(run(module, entry)))
        return signalPassFailure();
  }

  /// The values `op` reads that are defined outside it.
  static SetVector<Value> usedFromAbove(Operation *op) {
    SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
    getUsedValuesDefinedAbove(op->getRegions(), used);
    return used;
  }

  /// Whether `v` can be rebuilt in a task from the region arguments: an
  /// entry region argument, or the result of a pure op (a view, a
  /// constant) whose operands can.
  static bool rebuildable(Value v, func::FuncOp entry) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getOwner() == &entry.getBody().front() &&
             arg.getArgNumber() < kNumRegions;
    Operation *def = v.getDefiningOp();
    if (!isPure(def) || def->getNumRegions())
      return false;
    return llvm::all_of(def->getOperands(),
                        [&](Value o) { return rebuildable(o, entry); });
  }

  /// Whether `op` becomes a task: a linalg op of the step's own body whose
  /// every buffer is traced to a region, one of them the host's, and whose
  /// every input can be rebuilt from the regions.
  static bool isTask(Operation *op, func::FuncOp entry) {
    if (!isa<linalg::LinalgOp>(op) || op->getNumResults() != 0)
      return false;
    SmallVector<Range> ranges = footprint(op, entry);
    bool host = false;
    for (const Range &r : ranges) {
      if (!r.known())
        return false;
      host |= r.region == static_cast<int64_t>(kHostRegionArg);
    }
    return host && llvm::all_of(usedFromAbove(op), [&](Value v) {
             return rebuildable(v, entry);
           });
  }

  /// The function a task runs: `op` with the views and constants it reads,
  /// rebuilt from the region arguments.
  func::FuncOp outline(func::FuncOp entry, Operation *op, unsigned index) {
    MLIRContext *ctx = &getContext();
    OpBuilder builder(ctx);
    builder.setInsertionPointAfter(entry);
    auto task = func::FuncOp::create(
        builder, op->getLoc(),
        (entry.getName() + "_host_task_" + Twine(index)).str(),
        FunctionType::get(ctx, entry.getArgumentTypes(), {}));
    task.setPrivate();
    Block *body = task.addEntryBlock();
    builder.setInsertionPointToStart(body);
    IRMapping map;
    for (unsigned i = 0; i < kNumRegions; ++i)
      map.map(entry.getArgument(i), body->getArgument(i));
    std::function<void(Value)> materialize = [&](Value v) {
      if (map.contains(v))
        return;
      Operation *def = v.getDefiningOp();
      for (Value operand : def->getOperands())
        materialize(operand);
      builder.clone(*def, map);
    };
    for (Value v : usedFromAbove(op))
      materialize(v);
    builder.clone(*op, map);
    func::ReturnOp::create(builder, op->getLoc());
    return task;
  }

  LogicalResult run(ModuleOp module, func::FuncOp entry) {
    MLIRContext *ctx = &getContext();
    Block &body = entry.getBody().front();
    auto i64 = IntegerType::get(ctx, 64);
    auto taskType = FunctionType::get(ctx, entry.getArgumentTypes(), {});
    func::FuncOp start, wait;
    auto declare = [&]() {
      if (start)
        return;
      OpBuilder b(module.getBodyRegion());
      b.setInsertionPointToEnd(module.getBody());
      start = module.lookupSymbol<func::FuncOp>(kTaskStart);
      if (!start) {
        start = func::FuncOp::create(b, module.getLoc(), kTaskStart,
                                     FunctionType::get(ctx, {taskType}, {i64}));
        start.setPrivate();
      }
      wait = module.lookupSymbol<func::FuncOp>(kTaskWait);
      if (!wait) {
        wait = func::FuncOp::create(b, module.getLoc(), kTaskWait,
                                    FunctionType::get(ctx, {i64}, {}));
        wait.setPrivate();
      }
    };

    struct Pending {
      Value handle;
      SmallVector<Range> ranges;
    };
    SmallVector<Pending> pending; // in start order
    // Waits for pending task `upTo` (and so every earlier one) before `at`.
    auto waitFor = [&](size_t upTo, Operation *at) {
      OpBuilder b(at);
      func::CallOp::create(b, at->getLoc(), wait,
                           ValueRange{pending[upTo].handle});
      pending.erase(pending.begin(), pending.begin() + upTo + 1);
      ++numWaits;
    };

    unsigned index = 0;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (op.hasTrait<OpTrait::IsTerminator>()) {
        if (!pending.empty())
          waitFor(pending.size() - 1, &op);
        break;
      }
      if (isTask(&op, entry)) {
        declare();
        func::FuncOp task = outline(entry, &op, index++);
        OpBuilder b(&op);
        Value fn = func::ConstantOp::create(b, op.getLoc(), taskType,
                                            task.getSymName());
        Value handle =
            func::CallOp::create(b, op.getLoc(), start, ValueRange{fn})
                .getResult(0);
        pending.push_back({handle, footprint(&op, entry)});
        op.erase();
        ++numTasks;
        continue;
      }
      if (pending.empty())
        continue;
      SmallVector<Range> ranges = footprint(&op, entry);
      if (ranges.empty())
        continue;
      // The latest pending task this op conflicts with.
      std::optional<size_t> latest;
      for (size_t i = 0; i < pending.size(); ++i)
        if (overlap(ranges, pending[i].ranges))
          latest = i;
      if (latest)
        waitFor(*latest, &op);
    }
    return success();
  }
};

struct EffHostTaskLifetimesPass
    : impl::EffHostTaskLifetimesPassBase<EffHostTaskLifetimesPass> {
  void runOnOperation() override {
    for (auto entry : getOperation().getOps<func::FuncOp>()) {
      if (!entry->hasAttr(eff::kArenaArgAttrName) || entry.isExternal() ||
          entry.getNumArguments() != kNumRegions)
        continue;
      Block &body = entry.getBody().front();
      // Before the plan views of allocations are not rebuildable yet;
      // whether an op will be a task is decided on its buffers alone.
      auto willBeTask = [&](Operation *op) {
        if (!isa<linalg::LinalgOp>(op) || op->getNumResults() != 0)
          return false;
        bool host = false;
        for (const Range &r : footprint(op, entry)) {
          if (!r.known())
            return false;
          host |= r.region == static_cast<int64_t>(kHostRegionArg);
        }
        return host;
      };
      for (Operation &task : body) {
        if (!willBeTask(&task))
          continue;
        SmallVector<Range> ranges = footprint(&task, entry);
        // Where the task is waited for: the first later op (not a task:
        // tasks run in order) that touches its bytes, else the end.
        Operation *waitAt = body.getTerminator();
        for (Operation *later = task.getNextNode(); later != waitAt;
             later = later->getNextNode()) {
          if (willBeTask(later))
            continue;
          if (overlap(footprint(later, entry), ranges)) {
            waitAt = later;
            break;
          }
        }
        SetVector<Operation *> allocs;
        for (const Range &r : ranges)
          if (r.alloc)
            allocs.insert(r.alloc);
        OpBuilder b(waitAt);
        for (Operation *alloc : allocs) {
          memref::DeallocOp::create(b, task.getLoc(), alloc->getResult(0));
          ++numExtended;
        }
      }
    }
  }
};

} // namespace
} // namespace effopt
