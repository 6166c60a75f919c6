//===- EmulateGpuLaunches.cpp - run gpu.launch bodies as host loops -------===//
//
// Checks the semantics of the kernels eff-gpu-form-kernels forms on a
// machine without a GPU: every 1-D gpu.launch becomes host loops over its
// blocks and threads, so the CPU pipeline runs it -- in lit (mlir-runner,
// against the same function lowered for the CPU) and in the cuda-emulated
// target (a whole training step, against PyTorch).
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace effopt {
#define GEN_PASS_DEF_EFFGPUEMULATELAUNCHESPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace {

/// `lhs combine rhs` for an all_reduce operation kind.
static Value combine(OpBuilder &b, Location loc, gpu::AllReduceOperation kind,
                     Value lhs, Value rhs) {
  bool isFloat = isa<FloatType>(lhs.getType());
  switch (kind) {
  case gpu::AllReduceOperation::ADD:
    return isFloat ? Value(arith::AddFOp::create(b, loc, lhs, rhs))
                   : Value(arith::AddIOp::create(b, loc, lhs, rhs));
  case gpu::AllReduceOperation::MUL:
    return isFloat ? Value(arith::MulFOp::create(b, loc, lhs, rhs))
                   : Value(arith::MulIOp::create(b, loc, lhs, rhs));
  case gpu::AllReduceOperation::MAXIMUMF:
    return arith::MaximumFOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::MINIMUMF:
    return arith::MinimumFOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::MAXNUMF:
    return arith::MaxNumFOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::MINNUMF:
    return arith::MinNumFOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::MAXSI:
    return arith::MaxSIOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::MINSI:
    return arith::MinSIOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::MAXUI:
    return arith::MaxUIOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::MINUI:
    return arith::MinUIOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::AND:
    return arith::AndIOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::OR:
    return arith::OrIOp::create(b, loc, lhs, rhs);
  case gpu::AllReduceOperation::XOR:
    return arith::XOrIOp::create(b, loc, lhs, rhs);
  }
  llvm_unreachable("all_reduce kind");
}

/// Replaces each gpu.launch by `for block { for thread { body } }`. A body
/// with uniform gpu.all_reduce ops (threads exchange values only through
/// them, as in the kernels eff-gpu-form-kernels forms) runs in two phases:
/// every thread computes the reduced operands, combined in thread order;
/// then the ops that use a reduction run once, as thread 0. A body with
/// `gpu.shuffle xor` ops (warp reductions) runs in one phase per shuffle
/// plus a last one: phase j runs every thread up to shuffle j and keeps
/// the value it sends in a buffer; later phases recompute the body and
/// read each earlier shuffle's result from its source lane's entry, as the
/// hardware exchanges them (the same combination order, so the same bits).
struct EffGpuEmulateLaunchesPass
    : effopt::impl::EffGpuEmulateLaunchesPassBase<EffGpuEmulateLaunchesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    for (gpu::LaunchOp launch : launches)
      markAccesses(launch);
    for (gpu::LaunchOp launch : launches)
      if (failed(emulate(launch)))
        return signalPassFailure();
    if (failed(checkAccesses(getOperation())))
      return signalPassFailure();
  }

  static constexpr StringLiteral kAccess = "eff.emulated_access";

  /// The id the `iteration`-th trip of a loop over [0, count) runs: the
  /// iteration itself, or count - 1 - iteration with `descending` (a
  /// kernel correct on a GPU is correct in every order of its blocks and
  /// threads; a race the ascending order hides shows in the other).
  Value idOf(OpBuilder &b, Location loc, Value iteration, Value count) {
    if (!descending)
      return iteration;
    Value last = arith::SubIOp::create(
        b, loc, count, arith::ConstantIndexOp::create(b, loc, 1));
    return arith::SubIOp::create(b, loc, last, iteration);
  }

  /// A loop over the threads [0, count) of a block, `body` emitting each
  /// thread's code for its id.
  void forEachThread(OpBuilder &b, Location loc, Value count,
                     function_ref<void(OpBuilder &, Value)> body) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    scf::ForOp::create(b, loc, zero, count, one, ValueRange{},
                       [&](OpBuilder &nb, Location nloc, Value i, ValueRange) {
                         body(nb, idOf(nb, nloc, i, count));
                         scf::YieldOp::create(nb, nloc);
                       });
  }

  /// The launch's block and grid sizes as its operands, y and z ids as 0.
  static IRMapping baseMapping(gpu::LaunchOp launch, Value zero) {
    IRMapping base;
    gpu::KernelDim3 blocks = launch.getBlockIds(),
                    threads = launch.getThreadIds(),
                    gridSize = launch.getGridSize(),
                    blockSize = launch.getBlockSize();
    base.map(blocks.y, zero);
    base.map(blocks.z, zero);
    base.map(threads.y, zero);
    base.map(threads.z, zero);
    base.map(gridSize.x, launch.getGridSizeX());
    base.map(gridSize.y, launch.getGridSizeY());
    base.map(gridSize.z, launch.getGridSizeZ());
    base.map(blockSize.x, launch.getBlockSizeX());
    base.map(blockSize.y, launch.getBlockSizeY());
    base.map(blockSize.z, launch.getBlockSizeZ());
    return base;
  }

  /// Host buffers for the launch's workgroup attributions (1-D, static,
  /// integer or float elements), mapped in `mapping`.
  static FailureOr<SmallVector<Value>>
  allocateWorkgroupBuffers(OpBuilder &b, gpu::LaunchOp launch,
                           IRMapping &mapping) {
    SmallVector<Value> buffers;
    for (BlockArgument attribution : launch.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(attribution.getType());
      if (!type.hasStaticShape() || type.getRank() != 1 ||
          !type.getElementType().isIntOrFloat())
        return launch.emitOpError(
            "emulation needs 1-D static integer or float workgroup buffers");
      Value buffer = memref::AllocOp::create(
          b, launch.getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()));
      buffers.push_back(buffer);
      mapping.map(attribution, buffer);
    }
    return buffers;
  }

  /// Sets every bit of `buffers` (shared memory starts undefined: a kernel
  /// that reads what it did not write sees ones, NaN for floats).
  static void fillWithOnes(OpBuilder &b, Location loc,
                           ArrayRef<Value> buffers) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    for (Value buffer : buffers) {
      auto type = cast<MemRefType>(buffer.getType());
      Type element = type.getElementType();
      auto bits = b.getIntegerType(element.getIntOrFloatBitWidth());
      Value ones = arith::ConstantOp::create(b, loc, b.getIntegerAttr(bits, -1));
      if (element != bits)
        ones = arith::BitcastOp::create(b, loc, element, ones);
      scf::ForOp::create(
          b, loc, zero,
          arith::ConstantIndexOp::create(b, loc, type.getDimSize(0)), one, {},
          [&](OpBuilder &nb, Location nloc, Value i, ValueRange) {
            memref::StoreOp::create(nb, nloc, ones, buffer, i);
            scf::YieldOp::create(nb, nloc);
          });
    }
  }

  /// Marks the loads and stores of memory in `launch`; their copies in the
  /// emulation's loops keep the mark.
  static void markAccesses(gpu::LaunchOp launch) {
    launch.getBody().walk([&](Operation *op) {
      if (isa<memref::LoadOp, memref::StoreOp, vector::LoadOp,
              vector::StoreOp>(op))
        op->setAttr(kAccess, UnitAttr::get(op->getContext()));
    });
  }

  /// An access's memref, indices, the elements it covers along the last
  /// dimension and the alignment it claims (0: none).
  struct Access {
    Value memref;
    ValueRange indices;
    int64_t width = 1;
    uint64_t alignment = 0;
  };
  static Access accessOf(Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return {load.getMemRef(), load.getIndices()};
    if (auto store = dyn_cast<memref::StoreOp>(op))
      return {store.getMemRef(), store.getIndices()};
    auto vectorAccess = [](Value base, ValueRange indices, VectorType type,
                           std::optional<uint64_t> alignment) {
      return Access{base, indices,
                    type.getRank() == 1 ? type.getDimSize(0) : 0,
                    alignment.value_or(0)};
    };
    if (auto load = dyn_cast<vector::LoadOp>(op))
      return vectorAccess(load.getBase(), load.getIndices(),
                          load.getVectorType(), load.getAlignment());
    auto store = cast<vector::StoreOp>(op);
    return vectorAccess(store.getBase(), store.getIndices(),
                        store.getVectorType(), store.getAlignment());
  }

  /// Before each marked access (now in the emulation's host loops), checks
  /// of what a GPU would not forgive and a CPU would: every index within
  /// its dimension (a 1-D vector's last element too), and a vector access
  /// claiming an alignment at an address that has it (a misaligned one
  /// faults on a GPU). After emulating, so the phases' rules about what
  /// writes memory do not see the checks.
  static LogicalResult checkAccesses(ModuleOp module) {
    LogicalResult result = success();
    SmallVector<Operation *> accesses;
    module.walk([&](Operation *op) {
      if (op->hasAttr(kAccess))
        accesses.push_back(op);
    });
    for (Operation *op : accesses) {
      op->removeAttr(kAccess);
      Access access = accessOf(op);
      auto type = cast<MemRefType>(access.memref.getType());
      // A multi-dimensional vector's reach is not one index's.
      if (access.width == 0)
        continue;
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value outside;
      for (auto [d, index] : llvm::enumerate(access.indices)) {
        Value last = index;
        if (d + 1 == access.indices.size() && access.width > 1)
          last = arith::AddIOp::create(
              b, loc, index,
              arith::ConstantIndexOp::create(b, loc, access.width - 1));
        Value size = memref::DimOp::create(b, loc, access.memref,
                                           static_cast<int64_t>(d));
        // Unsigned: a negative index is past every size too (and a vector's
        // first element is checked with its last, which a negative start
        // could wrap below the size).
        Value past = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                           index, size);
        if (last != index)
          past = arith::OrIOp::create(
              b, loc, past,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, last,
                                    size));
        outside = outside ? arith::OrIOp::create(b, loc, outside, past) : past;
      }
      if (outside) {
        bool isLoad = isa<memref::LoadOp, vector::LoadOp>(op);
        scf::IfOp::create(
            b, loc, outside, [&](OpBuilder &tb, Location tloc) {
              result = fault(tb, tloc, module,
                    isLoad ? "eff_emulation_load_out_of_bounds"
                           : "eff_emulation_store_out_of_bounds",
                    (Twine("emulation: a kernel ") +
                     (isLoad ? "reads" : "writes") +
                     " past a dimension of a buffer (an index out of "
                     "bounds)\n")
                        .str());
              scf::YieldOp::create(tb, tloc);
            });
        if (failed(result))
          return failure();
      }
      if (!access.alignment || !type.getElementType().isIntOrFloat())
        continue;
      auto metadata =
          memref::ExtractStridedMetadataOp::create(b, loc, access.memref);
      Value element = metadata.getOffset();
      for (auto [index, stride] :
           llvm::zip(access.indices, metadata.getStrides()))
        element = arith::AddIOp::create(
            b, loc, element, arith::MulIOp::create(b, loc, index, stride));
      Value bytes = arith::MulIOp::create(
          b, loc, element,
          arith::ConstantIndexOp::create(
              b, loc, type.getElementTypeBitWidth() / 8));
      Value address = arith::AddIOp::create(
          b, loc,
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, access.memref),
          bytes);
      Value rest = arith::RemUIOp::create(
          b, loc, address,
          arith::ConstantIndexOp::create(
              b, loc, static_cast<int64_t>(access.alignment)));
      Value misaligned = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne, rest, zero);
      scf::IfOp::create(
          b, loc, misaligned, [&](OpBuilder &tb, Location tloc) {
            result = fault(tb, tloc, module,
                  (Twine("eff_emulation_misaligned_") +
                   Twine(access.alignment))
                      .str(),
                  (Twine("emulation: a ") + Twine(access.alignment) +
                   "-byte vector access at an address that is not " +
                   Twine(access.alignment) +
                   "-byte aligned (a GPU faults: misaligned address)\n")
                      .str());
            scf::YieldOp::create(tb, tloc);
          });
      if (failed(result))
        return failure();
    }
    return result;
  }

  /// Writes `text` (one line, kept in the global `name`) on stderr
  /// (unbuffered: the message survives the abort, whatever stdout is) and
  /// aborts.
  static LogicalResult fault(OpBuilder &b, Location loc, ModuleOp module,
                             StringRef name, StringRef text) {
    auto global = module.lookupSymbol<LLVM::GlobalOp>(name);
    Type i8 = b.getI8Type(), i32 = b.getI32Type(), i64 = b.getI64Type();
    if (!global) {
      OpBuilder mb(module.getBodyRegion());
      global = LLVM::GlobalOp::create(
          mb, loc, LLVM::LLVMArrayType::get(i8, text.size()),
          /*isConstant=*/true, LLVM::Linkage::Internal, name,
          mb.getStringAttr(text));
    }
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    FailureOr<LLVM::LLVMFuncOp> write =
        LLVM::lookupOrCreateFn(b, module, "write", {i32, ptr, i64}, i64);
    FailureOr<LLVM::LLVMFuncOp> abortFn = LLVM::lookupOrCreateFn(
        b, module, "abort", {}, LLVM::LLVMVoidType::get(b.getContext()));
    if (failed(write) || failed(abortFn))
      return module.emitError(
          "emulation: the module declares write or abort with other types "
          "than libc's; the access checks need them");
    Value message = LLVM::AddressOfOp::create(b, loc, global);
    LLVM::CallOp::create(
        b, loc, *write,
        ValueRange{LLVM::ConstantOp::create(b, loc, i32,
                                            b.getI32IntegerAttr(2)),
                   message,
                   LLVM::ConstantOp::create(
                       b, loc, i64,
                       b.getI64IntegerAttr(
                           static_cast<int64_t>(text.size())))});
    LLVM::CallOp::create(b, loc, *abortFn, ValueRange{});
    return success();
  }

  LogicalResult emulate(gpu::LaunchOp launch) {
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    Block &body = launch.getBody().front();
    if (!llvm::hasSingleElement(launch.getBody()))
      return launch.emitOpError("emulation needs a single-block body");
    // The y and z dimensions are taken as 0 below.
    for (Value size : {launch.getGridSizeY(), launch.getGridSizeZ(),
                       launch.getBlockSizeY(), launch.getBlockSizeZ()})
      if (getConstantIntValue(size) != std::optional<int64_t>(1))
        return launch.emitOpError("emulation needs 1-D launches (y and z "
                                  "sizes of 1)");
    SmallVector<gpu::ShuffleOp> shuffles;
    for (Operation &op : body.without_terminator())
      if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op))
        shuffles.push_back(shuffle);
    if (!shuffles.empty())
      return emulateShuffles(launch, shuffles);
    bool hasBarrier =
        launch.getBody()
            .walk([](gpu::BarrierOp) { return WalkResult::interrupt(); })
            .wasInterrupted();
    bool hasAllReduce = llvm::any_of(body, [](Operation &op) {
      return isa<gpu::AllReduceOp>(op);
    });
    if (hasBarrier && !hasAllReduce)
      return emulateWithBarriers(launch);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    IRMapping base = baseMapping(launch, zero);
    // A row epilogue after the totals: phases per all_reduce, then the
    // code after the barrier in every thread.
    if (hasBarrier)
      return emulateDependentReduces(launch, base);
    gpu::KernelDim3 blocks = launch.getBlockIds(),
                    threads = launch.getThreadIds();

    // Ops that depend on a reduction's result run once per block.
    DenseSet<Operation *> afterReduce;
    SmallVector<gpu::AllReduceOp> reduces;
    for (Operation &op : body.without_terminator()) {
      if (auto reduce = dyn_cast<gpu::AllReduceOp>(op)) {
        if (!reduce.getUniform() || !reduce.getOp())
          return reduce.emitOpError("emulation needs a uniform all_reduce "
                                    "with an operation attribute");
        // A reduction of what an earlier one's result computed (an online
        // log-sum-exp: the block's max, then the sums rescaled to it).
        if (Operation *def = reduce.getValue().getDefiningOp();
            def && afterReduce.contains(def))
          return emulateDependentReduces(launch, base);
        reduces.push_back(reduce);
        afterReduce.insert(&op);
        continue;
      }
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && afterReduce.contains(def))
          afterReduce.insert(&op);
      op.walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && afterReduce.contains(def))
            afterReduce.insert(&op);
      });
    }

    auto blockLoop =
        scf::ForOp::create(b, loc, zero, launch.getGridSizeX(), one);
    b.setInsertionPointToStart(blockLoop.getBody());
    base.map(blocks.x, idOf(b, loc, blockLoop.getInductionVar(),
                            launch.getGridSizeX()));

    // Phase 1: each thread in order; reduced operands carried and combined.
    SmallVector<Value> initial;
    for (gpu::AllReduceOp reduce : reduces)
      initial.push_back(arith::ConstantOp::create(
          b, loc, b.getZeroAttr(reduce.getValue().getType())));
    auto threadLoop = scf::ForOp::create(
        b, loc, zero, launch.getBlockSizeX(), one, initial,
        [&](OpBuilder &nb, Location nloc, Value i, ValueRange carried) {
          IRMapping mapping = base;
          mapping.map(threads.x, idOf(nb, nloc, i, launch.getBlockSizeX()));
          for (Operation &op : body.without_terminator())
            if (!afterReduce.contains(&op))
              nb.clone(op, mapping);
          // The first thread run starts the total.
          Value isFirst = arith::CmpIOp::create(
              nb, nloc, arith::CmpIPredicate::eq, i, zero);
          SmallVector<Value> next;
          for (auto [reduce, acc] : llvm::zip(reduces, carried)) {
            Value mine = mapping.lookup(reduce.getValue());
            Value combined = combine(nb, nloc, *reduce.getOp(), acc, mine);
            next.push_back(
                arith::SelectOp::create(nb, nloc, isFirst, mine, combined));
          }
          scf::YieldOp::create(nb, nloc, next);
        });
    // Phase 2 (only with reductions): the rest, as thread 0.
    if (!reduces.empty()) {
      IRMapping mapping = base;
      mapping.map(threads.x, zero);
      for (auto [reduce, total] : llvm::zip(reduces, threadLoop.getResults()))
        mapping.map(reduce.getResult(), total);
      for (Operation &op : body.without_terminator())
        if (!afterReduce.contains(&op))
          b.clone(op, mapping);
      for (Operation &op : body.without_terminator())
        if (afterReduce.contains(&op) && !isa<gpu::AllReduceOp>(op))
          b.clone(op, mapping);
    }
    launch.erase();
    return success();
  }

  /// A body whose all_reduces depend on each other, one phase per
  /// all_reduce: phase k runs every thread in order over the ops before the
  /// k-th all_reduce (the earlier ones' totals given) and combines its
  /// operand in thread order; then the whole body runs once, as thread 0,
  /// with every total. The phases run the ops before an all_reduce again,
  /// so those may not write memory.
  ///
  /// A top-level gpu.barrier after the last all_reduce (a log-sum-exp's
  /// row epilogue; the only barrier, nested in nothing) ends what runs as
  /// thread 0: the ops after it run for every thread in turn, and may use
  /// the values before it only where they do not depend on the thread's
  /// id (the totals and what the block computes from them).
  LogicalResult emulateDependentReduces(gpu::LaunchOp launch,
                                        IRMapping base) {
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    Block &body = launch.getBody().front();
    SmallVector<gpu::AllReduceOp> reduces;
    for (Operation &op : body.without_terminator())
      if (auto reduce = dyn_cast<gpu::AllReduceOp>(op))
        reduces.push_back(reduce);
    gpu::BarrierOp barrier;
    WalkResult barriers = body.walk([&](gpu::BarrierOp op) {
      if (barrier || op->getBlock() != &body ||
          op->isBeforeInBlock(reduces.back()))
        return WalkResult::interrupt();
      barrier = op;
      return WalkResult::advance();
    });
    if (barriers.wasInterrupted())
      return launch.emitOpError(
          "emulation needs at most one barrier beside gpu.all_reduce, at "
          "the top level after the last one");
    SmallVector<Operation *> tail;
    if (barrier) {
      // Values before the barrier that depend on the thread's id.
      DenseSet<Value> perThread{launch.getThreadIds().x};
      for (Operation &op : body) {
        if (&op == barrier.getOperation())
          break;
        if (isa<gpu::AllReduceOp>(op))
          continue;
        bool depends = op.walk([&](Operation *nested) {
                             for (Value operand : nested->getOperands())
                               if (perThread.contains(operand))
                                 return WalkResult::interrupt();
                             return WalkResult::advance();
                           })
                           .wasInterrupted();
        if (depends)
          for (Value result : op.getResults())
            perThread.insert(result);
      }
      for (Operation *op = barrier->getNextNode(); op != body.getTerminator();
           op = op->getNextNode()) {
        WalkResult crosses = op->walk([&](Operation *nested) {
          for (Value operand : nested->getOperands())
            if (perThread.contains(operand) &&
                operand != launch.getThreadIds().x)
              return WalkResult::interrupt();
          return WalkResult::advance();
        });
        if (crosses.wasInterrupted())
          return op->emitOpError(
              "emulation: a thread's value is used across a barrier");
        tail.push_back(op);
      }
    }
    // Writes after the last all_reduce only (they run once, as thread 0).
    for (Operation &op : body.without_terminator()) {
      if (!op.isBeforeInBlock(reduces.back()))
        break;
      bool writes = false;
      op.walk([&](Operation *nested) {
        writes |= hasEffect<MemoryEffects::Write>(nested);
      });
      if (writes)
        return op.emitOpError("emulation: a write before a dependent "
                              "all_reduce");
    }
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 blocks = launch.getBlockIds(),
                    threads = launch.getThreadIds();
    auto blockLoop =
        scf::ForOp::create(b, loc, zero, launch.getGridSizeX(), one);
    b.setInsertionPointToStart(blockLoop.getBody());
    base.map(blocks.x, idOf(b, loc, blockLoop.getInductionVar(),
                            launch.getGridSizeX()));
    SmallVector<Value> totals;
    for (gpu::AllReduceOp reduce : reduces) {
      Value initial = arith::ConstantOp::create(
          b, loc, b.getZeroAttr(reduce.getValue().getType()));
      auto threadLoop = scf::ForOp::create(
          b, loc, zero, launch.getBlockSizeX(), one, ValueRange{initial},
          [&](OpBuilder &nb, Location nloc, Value i, ValueRange carried) {
            IRMapping mapping = base;
            mapping.map(threads.x, idOf(nb, nloc, i, launch.getBlockSizeX()));
            for (auto [earlier, total] : llvm::zip(reduces, totals))
              mapping.map(earlier.getResult(), total);
            for (Operation &op : body.without_terminator()) {
              if (&op == reduce.getOperation())
                break;
              if (!isa<gpu::AllReduceOp>(op))
                nb.clone(op, mapping);
            }
            Value isFirst = arith::CmpIOp::create(
                nb, nloc, arith::CmpIPredicate::eq, i, zero);
            Value mine = mapping.lookup(reduce.getValue());
            Value combined =
                combine(nb, nloc, *reduce.getOp(), carried.front(), mine);
            scf::YieldOp::create(
                nb, nloc,
                ValueRange{arith::SelectOp::create(nb, nloc, isFirst, mine,
                                                   combined)});
          });
      totals.push_back(threadLoop.getResult(0));
    }
    IRMapping mapping = base;
    mapping.map(threads.x, zero);
    for (auto [reduce, total] : llvm::zip(reduces, totals))
      mapping.map(reduce.getResult(), total);
    for (Operation &op : body.without_terminator()) {
      if (&op == barrier.getOperation())
        break;
      if (!isa<gpu::AllReduceOp>(op))
        b.clone(op, mapping);
    }
    if (!tail.empty())
      forEachThread(b, loc, launch.getBlockSizeX(),
                    [&](OpBuilder &nb, Value tx) {
                      IRMapping threadMapping = mapping;
                      threadMapping.map(threads.x, tx);
                      for (Operation *op : tail)
                        nb.clone(*op, threadMapping);
                    });
    launch.erase();
    return success();
  }

  /// The phases of a body with top-level shuffles (see the pass comment).
  /// The body may write memory only after its last shuffle, as phases
  /// before that are run again. Top-level barriers after the last shuffle
  /// (a row group's column partial sums, combined through workgroup
  /// memory) split the last phase: the code after each barrier runs for
  /// every thread in turn once all threads ran the code before it, and may
  /// use no value a thread computed before it.
  LogicalResult emulateShuffles(gpu::LaunchOp launch,
                                ArrayRef<gpu::ShuffleOp> shuffles) {
    Location loc = launch.getLoc();
    Block &body = launch.getBody().front();
    for (gpu::ShuffleOp shuffle : shuffles)
      if (shuffle.getMode() != gpu::ShuffleMode::XOR)
        return shuffle.emitOpError("emulation supports xor shuffles only");
    WalkResult nested = body.walk([&](Operation *op) {
      if (isa<gpu::AllReduceOp>(op) ||
          (isa<gpu::ShuffleOp>(op) && op->getBlock() != &body))
        return WalkResult::interrupt();
      if (isa<gpu::BarrierOp>(op) &&
          (op->getBlock() != &body || op->isBeforeInBlock(shuffles.back())))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (nested.wasInterrupted())
      return launch.emitOpError("emulation needs every gpu.shuffle at the top "
                                "level of the body, no gpu.all_reduce beside "
                                "them and barriers only at the top level "
                                "after the last shuffle");
    // The ops between barriers, after the last shuffle's phase: each may
    // use only values of its own segment, block-uniform ones and those
    // defined outside the launch.
    SmallVector<SmallVector<Operation *>> segments;
    for (Operation &op : body.without_terminator()) {
      if (isa<gpu::BarrierOp>(op)) {
        segments.emplace_back();
        continue;
      }
      if (!segments.empty())
        segments.back().push_back(&op);
    }
    gpu::KernelDim3 blockIds = launch.getBlockIds(),
                    threadIds = launch.getThreadIds();
    for (ArrayRef<Operation *> segment : segments) {
      DenseSet<Operation *> inSegment(segment.begin(), segment.end());
      for (Operation *op : segment) {
        WalkResult crosses = op->walk([&](Operation *inner) {
          for (Value operand : inner->getOperands()) {
            Operation *def = operand.getDefiningOp();
            if (!def)
              def = operand.getParentRegion()->getParentOp();
            // Defined outside the launch, or the body's arguments (ids,
            // sizes, workgroup buffers).
            if (def == launch || !launch->isAncestor(def))
              continue;
            Operation *top = body.findAncestorOpInBlock(*def);
            if (!top || !inSegment.contains(top))
              return WalkResult::interrupt();
          }
          return WalkResult::advance();
        });
        if (crosses.wasInterrupted())
          return op->emitOpError(
              "emulation: a thread's value is used across a barrier");
      }
    }
    // Ops before the last shuffle run again in later phases: they may write
    // memory only through memref.store / vector.store, which run in the
    // first phase that reaches them and are dropped from the replays (a
    // replayed op's values then feed only dropped stores and the sends of
    // shuffles whose results come from `sent`: a row group's members
    // exchange values only through shuffles and the same thread's memory).
    for (Operation &op : body) {
      if (&op == shuffles.back())
        break;
      WalkResult writes = op.walk([&](Operation *inner) {
        if (isa<memref::StoreOp, vector::StoreOp>(inner))
          return WalkResult::advance();
        auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
        if (effects ? effects.hasEffect<MemoryEffects::Write>()
                    : !inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      if (writes.wasInterrupted())
        return op.emitOpError("emulation needs the ops before the last "
                              "gpu.shuffle to write memory only by stores");
    }

    OpBuilder b(launch);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value warp = arith::ConstantIndexOp::create(b, loc, 32);
    Value threadCount = launch.getBlockSizeX();
    IRMapping base = baseMapping(launch, zero);
    FailureOr<SmallVector<Value>> workgroup =
        allocateWorkgroupBuffers(b, launch, base);
    if (failed(workgroup))
      return failure();
    // What each thread sends, per shuffle.
    SmallVector<Value> sent;
    for (gpu::ShuffleOp shuffle : shuffles)
      sent.push_back(memref::AllocOp::create(
          b, loc,
          MemRefType::get({ShapedType::kDynamic}, shuffle.getValue().getType()),
          ValueRange{threadCount}));
    gpu::KernelDim3 blocks = launch.getBlockIds(),
                    threads = launch.getThreadIds();
    auto blockLoop =
        scf::ForOp::create(b, loc, zero, launch.getGridSizeX(), one);
    b.setInsertionPointToStart(blockLoop.getBody());
    Value blockId =
        idOf(b, loc, blockLoop.getInductionVar(), launch.getGridSizeX());
    fillWithOnes(b, loc, *workgroup);
    for (size_t phase = 0; phase <= shuffles.size(); ++phase) {
      forEachThread(b, loc, threadCount, [&](OpBuilder &nb, Value tx) {
            Location nloc = loc;
            IRMapping mapping = base;
            mapping.map(blocks.x, blockId);
            mapping.map(threads.x, tx);
            Value lane = arith::RemUIOp::create(nb, nloc, tx, warp);
            Value warpBase = arith::SubIOp::create(nb, nloc, tx, lane);
            // Shuffles passed before `op`: its stores ran in that phase.
            size_t passed = 0;
            for (Operation &op : body.without_terminator()) {
              if (isa<gpu::BarrierOp>(op))
                break;
              auto shuffle = dyn_cast<gpu::ShuffleOp>(op);
              if (!shuffle) {
                Operation *copy = nb.clone(op, mapping);
                if (passed < phase) {
                  SmallVector<Operation *> stores;
                  copy->walk([&](Operation *inner) {
                    if (isa<memref::StoreOp, vector::StoreOp>(inner))
                      stores.push_back(inner);
                  });
                  if (isa<memref::StoreOp, vector::StoreOp>(copy))
                    stores.push_back(copy);
                  for (Operation *store : llvm::reverse(stores))
                    store->erase();
                }
                continue;
              }
              ++passed;
              size_t k = llvm::find(shuffles, shuffle) - shuffles.begin();
              if (k == phase) {
                memref::StoreOp::create(nb, nloc,
                                        mapping.lookup(shuffle.getValue()),
                                        sent[k], ValueRange{tx});
                break;
              }
              // Lane `lane ^ offset` of this warp sent it; a source past
              // `width` (or the block) leaves the thread its own value.
              auto asIndex = [&](Value v) {
                return arith::IndexCastOp::create(nb, nloc, nb.getIndexType(),
                                                  mapping.lookup(v));
              };
              Value source = arith::XOrIOp::create(
                  nb, nloc, lane, asIndex(shuffle.getOffset()));
              Value sourceThread =
                  arith::AddIOp::create(nb, nloc, warpBase, source);
              Value valid = arith::AndIOp::create(
                  nb, nloc,
                  arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ult,
                                        source, asIndex(shuffle.getWidth())),
                  arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ult,
                                        sourceThread, threadCount));
              Value from =
                  arith::SelectOp::create(nb, nloc, valid, sourceThread, tx);
              mapping.map(shuffle.getShuffleResult(),
                          memref::LoadOp::create(nb, nloc, sent[k],
                                                 ValueRange{from}));
              mapping.map(shuffle.getValid(), valid);
            }
          });
    }
    // Each segment after a barrier: the phase loop again, past the
    // shuffles, cloning only the segment's ops.
    for (ArrayRef<Operation *> segment : segments)
      forEachThread(b, loc, threadCount, [&](OpBuilder &nb, Value tx) {
        IRMapping mapping = base;
        mapping.map(blockIds.x, blockId);
        mapping.map(threadIds.x, tx);
        for (Operation *op : segment)
          nb.clone(*op, mapping);
      });
    b.setInsertionPointAfter(blockLoop);
    for (Value buffer : sent)
      memref::DeallocOp::create(b, loc, buffer);
    for (Value buffer : *workgroup)
      memref::DeallocOp::create(b, loc, buffer);
    launch.erase();
    return success();
  }

  /// A body with gpu.barrier ops, at its top level or in scf.for loops
  /// whose bounds every thread of the block agrees on: the code between
  /// barriers runs for each thread in turn (a host loop over the threads),
  /// the loops that hold barriers run once per block around them, and pure
  /// ops of block-uniform values (block ids, sizes, those loops' induction
  /// variables) run once per block. Threads exchange values only through
  /// memory: workgroup attributions become host buffers, filled with ones
  /// when each block starts (shared memory starts undefined). A thread's
  /// value used across a barrier is an error.
  LogicalResult emulateWithBarriers(gpu::LaunchOp launch) {
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    Block &body = launch.getBody().front();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 blocks = launch.getBlockIds(),
                    gridSize = launch.getGridSize(),
                    blockSize = launch.getBlockSize();
    IRMapping mapping = baseMapping(launch, zero);
    uniform.clear();
    for (Value v : {blocks.x, blocks.y, blocks.z, gridSize.x, gridSize.y,
                    gridSize.z, blockSize.x, blockSize.y, blockSize.z})
      uniform.insert(v);
    FailureOr<SmallVector<Value>> allocated =
        allocateWorkgroupBuffers(b, launch, mapping);
    if (failed(allocated))
      return failure();
    SmallVector<Value> buffers = *allocated;
    for (BlockArgument attribution : launch.getWorkgroupAttributions())
      uniform.insert(attribution);
    auto blockLoop =
        scf::ForOp::create(b, loc, zero, launch.getGridSizeX(), one);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(blockLoop.getBody());
      mapping.map(blocks.x, idOf(b, loc, blockLoop.getInductionVar(),
                                 launch.getGridSizeX()));
      fillWithOnes(b, loc, buffers);
      SmallVector<Operation *> ops;
      for (Operation &op : body.without_terminator())
        ops.push_back(&op);
      if (failed(emitPhases(b, launch, ops, mapping)))
        return failure();
    }
    for (Value buffer : buffers)
      memref::DeallocOp::create(b, loc, buffer);
    launch.erase();
    return success();
  }

  static bool holdsBarrier(Operation *op) {
    return op->walk([](gpu::BarrierOp) { return WalkResult::interrupt(); })
        .wasInterrupted();
  }

  bool isUniform(gpu::LaunchOp launch, Value v) {
    return uniform.contains(v) ||
           !launch->isAncestor(v.getParentRegion()->getParentOp());
  }

  /// Emits `ops` (one block's ops, in order) at `b`, per the scheme of
  /// emulateWithBarriers.
  LogicalResult emitPhases(OpBuilder &b, gpu::LaunchOp launch,
                           ArrayRef<Operation *> ops, IRMapping &mapping) {
    SmallVector<Operation *> phase;
    auto flush = [&]() -> LogicalResult {
      if (phase.empty())
        return success();
      DenseSet<Operation *> inPhase(phase.begin(), phase.end());
      for (Operation *op : phase)
        for (Operation *user : op->getUsers()) {
          Operation *top = op->getBlock()->findAncestorOpInBlock(*user);
          if (!top || !inPhase.contains(top))
            return op->emitOpError(
                "emulation: a thread's value is used across a barrier");
        }
      Location loc = launch.getLoc();
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      scf::ForOp::create(
          b, loc, zero, launch.getBlockSizeX(), one, {},
          [&](OpBuilder &nb, Location nloc, Value i, ValueRange) {
            IRMapping threadMapping = mapping;
            threadMapping.map(launch.getThreadIds().x,
                              idOf(nb, nloc, i, launch.getBlockSizeX()));
            for (Operation *op : phase)
              nb.clone(*op, threadMapping);
            scf::YieldOp::create(nb, nloc);
          });
      phase.clear();
      return success();
    };
    for (Operation *op : ops) {
      if (isa<gpu::BarrierOp>(op)) {
        if (failed(flush()))
          return failure();
        continue;
      }
      if (holdsBarrier(op)) {
        if (failed(flush()))
          return failure();
        auto loop = dyn_cast<scf::ForOp>(op);
        if (!loop || !loop.getInitArgs().empty() ||
            !llvm::all_of(loop->getOperands(),
                          [&](Value v) { return isUniform(launch, v); }))
          return op->emitOpError("emulation needs barriers at the top level "
                                 "or in scf.for loops with uniform bounds");
        auto copy = scf::ForOp::create(
            b, loop.getLoc(), mapping.lookupOrDefault(loop.getLowerBound()),
            mapping.lookupOrDefault(loop.getUpperBound()),
            mapping.lookupOrDefault(loop.getStep()));
        mapping.map(loop.getInductionVar(), copy.getInductionVar());
        uniform.insert(loop.getInductionVar());
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(copy.getBody()->getTerminator());
        SmallVector<Operation *> inner;
        for (Operation &nested : loop.getBody()->without_terminator())
          inner.push_back(&nested);
        if (failed(emitPhases(b, launch, inner, mapping)))
          return failure();
        continue;
      }
      if (op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
          llvm::all_of(op->getOperands(),
                       [&](Value v) { return isUniform(launch, v); })) {
        b.clone(*op, mapping);
        for (Value result : op->getResults())
          uniform.insert(result);
        continue;
      }
      phase.push_back(op);
    }
    return flush();
  }

  /// Values every thread of a block agrees on (see emulateWithBarriers).
  DenseSet<Value> uniform;
};

} // namespace
