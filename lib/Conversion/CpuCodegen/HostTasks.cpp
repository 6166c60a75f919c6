//===- HostTasks.cpp - host-state ops on a worker, overlapped -------------===//
//
// The ops of a step that touch its host region (the optimizer's state in
// host memory, eff-offload-optimizer) run as tasks on one runtime worker
// thread while the step goes on: ZeRO-Offload's overlap of the update with
// the backward, on the CPU. Placement is by the byte ranges the memory plan
// fixed, so waits sit exactly where a later op would touch what a pending
// task touches.
//
// On a GPU (abi=cuda) the same tasks run as host functions on a second
// stream, on pinned copies of the device bytes they touch: the gradients
// come down, the updated weights go back up (ZeRO-Offload's CPU update).
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/Offload.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"
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
constexpr StringLiteral kCudaTaskStart = "effrt_cuda_host_task_start";
constexpr StringLiteral kCudaTaskWait = "effrt_cuda_host_task_wait";
constexpr StringLiteral kCudaTaskCopy = "effrt_cuda_host_task_copy";
/// Alignment of each slot in a cuda task's staging buffer (the device's
/// region alignment: any element type, vector loads on the host).
constexpr int64_t kStagingAlignment = 256;
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
    // A constant global (indices, a mask) is never written: its reads
    // conflict with nothing, as bytes of their own.
    if (auto get = dyn_cast_or_null<memref::GetGlobalOp>(def)) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      if (global && global.getConstant()) {
        Range r;
        r.alloc = global;
        return r;
      }
      return {};
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

/// Rewrites each memref.copy of the entry's body that touches the host
/// region as the linalg.copy it is, so that it runs as a host task like
/// the optimizer's other ops (a GPU's kernels cannot reach host memory).
void hostCopiesToLinalg(func::FuncOp entry) {
  SmallVector<memref::CopyOp> copies;
  for (Operation &op : entry.getBody().front())
    if (auto copy = dyn_cast<memref::CopyOp>(op))
      if (llvm::any_of(footprint(copy, entry), [](const Range &r) {
            return r.region == static_cast<int64_t>(kHostRegionArg);
          }))
        copies.push_back(copy);
  for (memref::CopyOp copy : copies) {
    OpBuilder b(copy);
    linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                           copy.getTarget());
    copy.erase();
  }
}

/// The memref.view of a device region (state, arena, io) that `v` is, or is
/// a view of; null when it is not one.
memref::ViewOp deviceViewOf(Value v, func::FuncOp entry) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      auto base = dyn_cast<BlockArgument>(view.getSource());
      if (base && base.getOwner() == &entry.getBody().front() &&
          base.getArgNumber() < kHostRegionArg)
        return view;
      return {};
    }
    auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
    if (!viewLike)
      return {};
    v = viewLike.getViewSource();
  }
  return {};
}

/// Device bytes a cuda task works on in the staging buffer: [begin, end) of
/// region `region`, at `staging`; copied to the host before the task
/// and/or back to the device after it.
struct Slot {
  int64_t region = 0, begin = 0, end = 0, staging = 0;
  bool toHost = false, toDevice = false;
};

/// A cuda task's staging layout: its slots, and the slot and the offset in
/// the staging buffer of each device view it rebuilds.
struct Staging {
  SmallVector<Slot> slots;
  DenseMap<Operation *, std::pair<unsigned, int64_t>> viewPlace;
  int64_t bytes = 0;
};

struct EffHostTasksPass : impl::EffHostTasksPassBase<EffHostTasksPass> {
  using Base::Base;

  bool onCuda() const { return abi == "cuda"; }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (abi != "cpu" && abi != "cuda") {
      module.emitError("eff-host-tasks: abi must be cpu or cuda, got '")
          << abi << "'";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> entries;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(eff::kArenaArgAttrName) && !func.isExternal() &&
          func.getNumArguments() == kNumRegions)
        entries.push_back(func);
    for (func::FuncOp entry : entries)
      if (failed(run(module, entry)))
        return signalPassFailure();
    if (onCuda() && stagingBytes > 0)
      module->setAttr(eff::kHostStagingBytesAttrName,
                      IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                       stagingBytes));
  }

  /// The largest staging layout of a cuda task.
  int64_t stagingBytes = 0;

  /// The ops (views, constants) a task of `op` rebuilds, defs first.
  static SetVector<Operation *> rebuiltOps(Operation *op, func::FuncOp entry) {
    SetVector<Operation *> ops;
    std::function<void(Value)> visit = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || ops.contains(def))
        return;
      for (Value operand : def->getOperands())
        visit(operand);
      ops.insert(def);
    };
    for (Value v : usedFromAbove(op))
      visit(v);
    return ops;
  }

  /// The staging layout of the cuda task of `op`: one slot per run of
  /// overlapping device views it rebuilds; what it reads (or writes in
  /// part) is copied in, what it writes out. Fails when a device region
  /// is used other than through a view at a constant offset.
  static FailureOr<Staging> stagingOf(Operation *op, func::FuncOp entry) {
    struct ViewBytes {
      Operation *view;
      int64_t region, begin, end;
    };
    SmallVector<ViewBytes> views;
    SetVector<Operation *> rebuilt = rebuiltOps(op, entry);
    auto isDeviceRegion = [&](Value v) {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner() == &entry.getBody().front() &&
             arg.getArgNumber() < kHostRegionArg;
    };
    for (Value operand : op->getOperands())
      if (isDeviceRegion(operand))
        return failure();
    for (Operation *def : rebuilt) {
      auto view = dyn_cast<memref::ViewOp>(def);
      for (Value operand : def->getOperands())
        if (isDeviceRegion(operand) &&
            !(view && operand == view.getSource()))
          return failure();
      if (!view || !isDeviceRegion(view.getSource()))
        continue;
      std::optional<int64_t> offset = getConstantIntValue(view.getByteShift());
      auto type = cast<MemRefType>(view.getType());
      if (!offset || !type.hasStaticShape())
        return failure();
      views.push_back({view,
                       cast<BlockArgument>(view.getSource()).getArgNumber(),
                       *offset, *offset + storageBytes(type)});
    }
    llvm::sort(views, [](const ViewBytes &a, const ViewBytes &b) {
      return std::tie(a.region, a.begin) < std::tie(b.region, b.begin);
    });
    Staging staging;
    for (const ViewBytes &v : views) {
      if (staging.slots.empty() || staging.slots.back().region != v.region ||
          v.begin >= staging.slots.back().end)
        staging.slots.push_back({v.region, v.begin, v.end});
      Slot &slot = staging.slots.back();
      slot.end = std::max(slot.end, v.end);
      staging.viewPlace[v.view] = {staging.slots.size() - 1,
                                   v.begin - slot.begin};
    }
    for (Slot &slot : staging.slots) {
      slot.staging = staging.bytes;
      staging.bytes += llvm::alignTo(slot.end - slot.begin, kStagingAlignment);
    }
    // Directions, from how the op uses each operand.
    auto slotOf = [&](Value v) -> Slot * {
      memref::ViewOp view = deviceViewOf(v, entry);
      if (!view)
        return nullptr;
      return &staging.slots[staging.viewPlace.lookup(view).first];
    };
    auto linalgOp = cast<linalg::LinalgOp>(op);
    for (OpOperand *input : linalgOp.getDpsInputOperands())
      if (Slot *slot = slotOf(input->get()))
        slot->toHost = true;
    for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
      Slot *slot = slotOf(init.get());
      if (!slot)
        continue;
      slot->toDevice = true;
      // The bytes the op leaves alone go back up as they came down.
      int64_t written = storageBytes(cast<MemRefType>(init.get().getType()));
      if (linalgOp.payloadUsesValueFromOperand(&init) ||
          written != slot->end - slot->begin)
        slot->toHost = true;
    }
    return staging;
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
  func::FuncOp outline(func::FuncOp entry, Operation *op, unsigned index,
                       const Staging *staging) {
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
      // abi=cuda: a device view becomes a view of the staging buffer (the
      // first argument) at its place in the task's layout.
      if (staging) {
        if (auto it = staging->viewPlace.find(def);
            it != staging->viewPlace.end()) {
          const Slot &slot = staging->slots[it->second.first];
          Value at = arith::ConstantIndexOp::create(
              builder, def->getLoc(), slot.staging + it->second.second);
          auto view = cast<memref::ViewOp>(def);
          map.map(v, memref::ViewOp::create(builder, def->getLoc(),
                                            view.getType(), body->getArgument(0),
                                            at, ValueRange{})
                         .getResult());
          return;
        }
      }
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
    if (onCuda())
      hostCopiesToLinalg(entry);
    Block &body = entry.getBody().front();
    auto i64 = IntegerType::get(ctx, 64);
    auto taskType = FunctionType::get(ctx, entry.getArgumentTypes(), {});
    auto i32 = IntegerType::get(ctx, 32);
    func::FuncOp start, wait, copy;
    auto declare = [&]() {
      if (start)
        return;
      OpBuilder b(module.getBodyRegion());
      b.setInsertionPointToEnd(module.getBody());
      auto lookupOrDeclare = [&](StringRef name, FunctionType type) {
        auto f = module.lookupSymbol<func::FuncOp>(name);
        if (!f) {
          f = func::FuncOp::create(b, module.getLoc(), name, type);
          f.setPrivate();
        }
        return f;
      };
      start = lookupOrDeclare(onCuda() ? kCudaTaskStart : kTaskStart,
                              FunctionType::get(ctx, {taskType}, {i64}));
      wait = lookupOrDeclare(onCuda() ? kCudaTaskWait : kTaskWait,
                             FunctionType::get(ctx, {i64}, {}));
      if (onCuda())
        copy = lookupOrDeclare(
            kCudaTaskCopy,
            FunctionType::get(ctx, {i32, i32, i64, i64, i64}, {}));
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
        std::optional<Staging> staging;
        if (onCuda()) {
          FailureOr<Staging> layout = stagingOf(&op, entry);
          if (failed(layout))
            return op.emitOpError()
                   << "eff-host-tasks: touches the host region but uses a "
                      "device region other than through a view at a "
                      "constant offset; it cannot run on the host (abi=cuda)";
          staging = std::move(*layout);
          stagingBytes = std::max(stagingBytes, staging->bytes);
        }
        func::FuncOp task =
            outline(entry, &op, index++, staging ? &*staging : nullptr);
        OpBuilder b(&op);
        if (staging) {
          auto constant = [&](Type type, int64_t v) -> Value {
            return arith::ConstantOp::create(b, op.getLoc(),
                                             IntegerAttr::get(type, v));
          };
          // Down first, then up: the runtime copies every slot marked
          // to-host before the task and every one marked to-device after.
          for (bool toHost : {true, false})
            for (const Slot &slot : staging->slots) {
              if (toHost ? !slot.toHost : !slot.toDevice)
                continue;
              func::CallOp::create(
                  b, op.getLoc(), copy,
                  ValueRange{constant(i32, toHost), constant(i32, slot.region),
                             constant(i64, slot.begin),
                             constant(i64, slot.staging),
                             constant(i64, slot.end - slot.begin)});
              numStagedBytes += slot.end - slot.begin;
            }
        }
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
      SmallVector<Range> ranges;
      if (onCuda() || !pending.empty())
        ranges = footprint(&op, entry);
      // On a GPU nothing but a task can reach host memory.
      if (onCuda() && llvm::any_of(ranges, [](const Range &r) {
            return r.region == static_cast<int64_t>(kHostRegionArg);
          }))
        return op.emitOpError()
               << "eff-host-tasks: touches the host region (the optimizer's "
                  "offloaded state) but is not a linalg op over views of the "
                  "regions, so it cannot run as a host task (abi=cuda)";
      if (pending.empty() || ranges.empty())
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
  using Base::Base;

  /// The bytes an op reads and those it writes: a linalg op's inputs (and
  /// the outputs whose old values its payload reads) and its outputs, plus
  /// what the ops in its payload load (or, for anything else they do,
  /// touch); any other op reads and writes its whole footprint.
  struct Access {
    SmallVector<Range> reads, writes;
  };
  static Access accessOf(Operation *op, func::FuncOp entry) {
    Access a;
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp || !linalgOp.hasPureBufferSemantics()) {
      a.reads = footprint(op, entry);
      a.writes = a.reads;
      return a;
    }
    for (OpOperand *input : linalgOp.getDpsInputOperands())
      if (isa<MemRefType>(input->get().getType()))
        a.reads.push_back(rangeOf(input->get(), entry));
    for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
      a.writes.push_back(rangeOf(init.get(), entry));
      if (linalgOp.payloadUsesValueFromOperand(&init))
        a.reads.push_back(rangeOf(init.get(), entry));
    }
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &inner : block) {
          if (auto load = dyn_cast<memref::LoadOp>(inner)) {
            a.reads.push_back(rangeOf(load.getMemRef(), entry));
            continue;
          }
          SmallVector<Range> touched = footprint(&inner, entry);
          a.reads.append(touched);
          a.writes.append(touched);
        }
    return a;
  }
  /// Whether two ops' order matters: one writes bytes the other touches.
  static bool conflict(const Access &a, const Access &b) {
    return overlap(a.writes, b.reads) || overlap(a.writes, b.writes) ||
           overlap(b.writes, a.reads);
  }

  /// Moves `op` up to right after the last earlier op of its block it
  /// depends on (see the pass's `hoist`), copying the pure ops (views,
  /// constants) that define what it reads and moving the allocations it
  /// uses. Returns whether it moved.
  static bool hoistOp(Operation *op, func::FuncOp entry) {
    Access access = accessOf(op, entry);
    SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
    getUsedValuesDefinedAbove(op->getRegions(), used);
    // The pure ops between the new place and `op` that define (through
    // each other) what it reads: copied to the new place.
    SetVector<Operation *> pureDefs;
    std::function<bool(Value, Operation *)> needs = [&](Value v,
                                                        Operation *p) {
      if (v.getDefiningOp() == p)
        return true;
      Operation *def = v.getDefiningOp();
      return def && pureDefs.contains(def) &&
             llvm::any_of(def->getOperands(),
                          [&](Value o) { return needs(o, p); });
    };
    // The allocations it uses between there and here: moved up with it
    // (before the plan an allocation's place is only where it is defined).
    SmallVector<Operation *> allocs;
    Operation *after = nullptr;
    for (Operation *p = op->getPrevNode(); p; p = p->getPrevNode()) {
      bool defines = llvm::any_of(used, [&](Value v) { return needs(v, p); });
      if (defines && isPure(p) && p->getNumRegions() == 0) {
        pureDefs.insert(p);
        continue;
      }
      if (defines && isa<memref::AllocOp>(p) && p->getNumOperands() == 0) {
        allocs.push_back(p);
        continue;
      }
      if (defines || conflict(accessOf(p, entry), access)) {
        after = p;
        break;
      }
    }
    if (after == op->getPrevNode())
      return false;
    // The allocations first, in their order, then the copies, then `op`
    // (an allocation may be the op right after `after`: chain them).
    Block *block = op->getBlock();
    Operation *anchor = after;
    for (Operation *alloc : llvm::reverse(allocs)) {
      if (anchor)
        alloc->moveAfter(anchor);
      else if (alloc != &block->front())
        alloc->moveBefore(&block->front());
      anchor = alloc;
    }
    OpBuilder b(block, anchor ? std::next(anchor->getIterator())
                              : block->begin());
    IRMapping map;
    // Defs first: pureDefs holds them latest first.
    for (Operation *def : llvm::reverse(pureDefs))
      b.clone(*def, map);
    Operation *moved = b.clone(*op, map);
    op->replaceAllUsesWith(moved);
    op->erase();
    // The originals nothing reads any more (latest first: a view before the
    // view it is taken of).
    for (Operation *def : pureDefs)
      if (def->use_empty())
        def->erase();
    return true;
  }

  void runOnOperation() override {
    if (abi != "cpu" && abi != "cuda") {
      getOperation().emitError(
          "eff-host-task-lifetimes: abi must be cpu or cuda, got '")
          << abi << "'";
      return signalPassFailure();
    }
    for (auto entry : getOperation().getOps<func::FuncOp>()) {
      if (!entry->hasAttr(eff::kArenaArgAttrName) || entry.isExternal() ||
          entry.getNumArguments() != kNumRegions)
        continue;
      if (abi == "cuda")
        hostCopiesToLinalg(entry);
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
      if (hoist) {
        SmallVector<Operation *> candidates;
        for (Operation &op : body)
          if (willBeTask(&op) ||
              (isa<linalg::LinalgOp>(op) &&
               eff::provenanceOf(op.getLoc()) == eff::Provenance::Optimizer))
            candidates.push_back(&op);
        for (Operation *op : candidates)
          numHoisted += hoistOp(op, entry);
      }
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
        // (A constant global's range names the global: nothing to keep.)
        SetVector<Operation *> allocs;
        for (const Range &r : ranges)
          if (isa_and_nonnull<memref::AllocOp>(r.alloc))
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
