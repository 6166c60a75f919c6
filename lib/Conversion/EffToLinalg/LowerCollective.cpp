//===- LowerCollective.cpp - collectives to the runtime's calls -----------===//
//
// A collective runs in the runtime (MPI across processes), so eff.all_reduce
// becomes one call of `effrt_allreduce_sum_f32(ptr, count)` (effrt/Kernels.h)
// on a buffer of its own that holds the whole bucket: each input is copied
// into its contiguous view of a fresh memref (memref.subview, reshaped;
// bufferization.materialize_in_destination), the call sums the buffer in
// place across the ranks, and each result is its view as a tensor
// (bufferization.to_tensor restrict: the views do not overlap). The memory
// plan places the buffer like any other. eff.reduce_scatter,
// eff.all_gather and eff.shard copy their input into a buffer of its own
// the same way, allocate the result's, and call
// `effrt_reduce_scatter_sum_f32` / `effrt_all_gather_f32` /
// `effrt_shard_f32(send, recv, count)` once.
//
// The split collectives (eff.*_start and their eff.wait) lower the same way
// at the start, with the `_start` variant of the call, which returns a
// request; at the wait, `effrt_collective_wait(request, send, recv)` and the
// results as tensors from there. The buffers' last use is then the wait (or
// a reader after it), so the memory plan holds them while in flight.
//
// On the CUDA target (collectives=cuda) the calls are the CUDA runtime's
// `effrt_cuda_*` twins with the same arguments, on device pointers; the
// copies into the buffers are ordinary linalg code, so they become kernels.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Analysis/MemoryReport.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {

/// The runtime's entry points: `effrt_<name>` on host memory (the CPU's,
/// over MPI), `effrt_cuda_<name>` on device memory (the CUDA runtime's, over
/// NCCL), with the same arguments.
struct CollectiveCallees {
  explicit CollectiveCallees(bool cuda)
      : prefix(cuda ? "effrt_cuda_" : "effrt_") {}
  std::string operator()(StringRef name) const { return (prefix + name).str(); }
  StringRef prefix;
};

/// A buffer a collective sends from: eff-fold-collective-copies may let the
/// producers of its contents write into it.
static Value collectiveBuffer(PatternRewriter &rewriter, Location loc,
                              MemRefType type) {
  auto alloc = memref::AllocOp::create(rewriter, loc, type);
  alloc->setAttr(kCollectiveBufferAttrName, rewriter.getUnitAttr());
  return alloc;
}

/// Declares `name` (private, no results) in the module unless it is there.
static void declareCallee(PatternRewriter &rewriter, Operation *op,
                          StringRef name, FunctionType type) {
  auto module = op->getParentOfType<ModuleOp>();
  if (module.lookupSymbol<func::FuncOp>(name))
    return;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto callee = func::FuncOp::create(rewriter, module.getLoc(), name, type);
  callee.setPrivate();
}

/// The aligned base address of `buffer` as an !llvm.ptr.
static Value pointerTo(PatternRewriter &rewriter, Location loc, Value buffer) {
  auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer);
  Value address =
      arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), base);
  return LLVM::IntToPtrOp::create(rewriter, loc, ptrType, address);
}

/// The view of `input` in a bucket's buffer at `offset` (advanced past
/// it), with `input` copied into it.
static Value bucketView(PatternRewriter &rewriter, Location loc, Value buffer,
                        Value input, int64_t &offset, bool several) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t n = type.getNumElements();
  Value view = buffer;
  if (several || type.getRank() != 1) {
    view = memref::SubViewOp::create(
        rewriter, loc, buffer, ArrayRef<int64_t>{offset}, ArrayRef<int64_t>{n},
        ArrayRef<int64_t>{1});
    if (type.getRank() == 0) {
      view = memref::CollapseShapeOp::create(rewriter, loc, view,
                                             ArrayRef<ReassociationIndices>{});
    } else if (type.getRank() != 1) {
      ReassociationIndices all =
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
      view = memref::ExpandShapeOp::create(rewriter, loc, type.getShape(), view,
                                           ArrayRef<ReassociationIndices>{all});
    }
  }
  auto copy = bufferization::MaterializeInDestinationOp::create(rewriter, loc,
                                                                input, view);
  copy.setWritableAttr(rewriter.getUnitAttr());
  offset += n;
  return view;
}

/// A 1-D f32 collective with one input and one result (reduce_scatter,
/// all_gather, shard) -> the input copied into a buffer of its own, a
/// buffer for the result, one call `callee(send, recv, count)` with
/// `count` the elements of the smaller of the two.
template <typename OpTy>
struct BlockCollectiveLowering : OpRewritePattern<OpTy> {
  BlockCollectiveLowering(MLIRContext *context, std::string callee)
      : OpRewritePattern<OpTy>(context), callee(std::move(callee)) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    auto outType = cast<RankedTensorType>(op.getResult().getType());
    auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
    declareCallee(
        rewriter, op, callee,
        rewriter.getFunctionType({ptrType, ptrType, rewriter.getI64Type()},
                                 {}));
    Value send = collectiveBuffer(
        rewriter, loc, MemRefType::get(inType.getShape(), inType.getElementType()));
    auto copy = bufferization::MaterializeInDestinationOp::create(
        rewriter, loc, op.getInput(), send);
    copy.setWritableAttr(rewriter.getUnitAttr());
    Value recv = memref::AllocOp::create(
        rewriter, loc,
        MemRefType::get(outType.getShape(), outType.getElementType()));
    int64_t count = std::min(inType.getNumElements(), outType.getNumElements());
    func::CallOp::create(
        rewriter, loc, callee, TypeRange{},
        ValueRange{pointerTo(rewriter, loc, send), pointerTo(rewriter, loc, recv),
                   arith::ConstantIntOp::create(rewriter, loc, count, 64)});
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               rewriter, loc, outType, recv, /*restrict=*/true,
                               /*writable=*/true));
    return success();
  }
  std::string callee;
};

/// eff.all_reduce (f32) -> copy the bucket into one buffer, call the
/// runtime on it once.
struct AllReduceLowering : OpRewritePattern<AllReduceOp> {
  AllReduceLowering(MLIRContext *context, std::string callee)
      : OpRewritePattern<AllReduceOp>(context), callee(std::move(callee)) {}
  LogicalResult matchAndRewrite(AllReduceOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t total = 0;
    for (Value input : op.getInputs()) {
      auto type = cast<RankedTensorType>(input.getType());
      if (!type.hasStaticShape() || !type.getElementType().isF32())
        return rewriter.notifyMatchFailure(op, "needs static f32 tensors");
      total += type.getNumElements();
    }
    auto module = op->getParentOfType<ModuleOp>();
    auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
    auto calleeType =
        rewriter.getFunctionType({ptrType, rewriter.getI64Type()}, {});
    if (!module.lookupSymbol<func::FuncOp>(callee)) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      auto declaration =
          func::FuncOp::create(rewriter, module.getLoc(), callee, calleeType);
      declaration.setPrivate();
    }

    // One buffer; each input a contiguous view of it, in order.
    Value buffer = collectiveBuffer(
        rewriter, loc, MemRefType::get({total}, rewriter.getF32Type()));
    SmallVector<Value> views;
    int64_t offset = 0;
    for (Value input : op.getInputs())
      views.push_back(bucketView(rewriter, loc, buffer, input, offset,
                                 op.getInputs().size() > 1));

    Value base =
        memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer);
    Value address =
        arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), base);
    Value pointer = LLVM::IntToPtrOp::create(rewriter, loc, ptrType, address);
    Value count = arith::ConstantIntOp::create(rewriter, loc, total, 64);
    func::CallOp::create(rewriter, loc, callee, TypeRange{},
                         ValueRange{pointer, count});
    SmallVector<Value> results;
    for (auto [input, view] : llvm::zip_equal(op.getInputs(), views))
      results.push_back(bufferization::ToTensorOp::create(
          rewriter, loc, input.getType(), view, /*restrict=*/true,
          /*writable=*/true));
    rewriter.replaceOp(op, results);
    return success();
  }
  std::string callee;
};

/// Copies `input` into a fresh buffer of its own (the send buffer of a
/// gather or scatter).
static Value copyToBuffer(PatternRewriter &rewriter, Location loc,
                          Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  Value buffer = collectiveBuffer(
      rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()));
  auto copy = bufferization::MaterializeInDestinationOp::create(rewriter, loc,
                                                                input, buffer);
  copy.setWritableAttr(rewriter.getUnitAttr());
  return buffer;
}

/// A split collective and its eff.wait -> at the start, what the blocking
/// lowering does, with the call `<callee>_start` returning a request (i64);
/// at the wait, `effrt_collective_wait(request, send, recv)`, then the
/// results as tensors. The wait names both buffers, so the memory plan keeps
/// them live while the collective moves them.
template <typename OpTy> struct StartLowering : OpRewritePattern<OpTy> {
  StartLowering(MLIRContext *context, std::string callee, std::string waiter)
      : OpRewritePattern<OpTy>(context), callee(std::move(callee)),
        waiter(std::move(waiter)) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    WaitOp wait;
    for (Operation *user : op->getUsers())
      wait = dyn_cast<WaitOp>(user);
    if (!wait)
      return rewriter.notifyMatchFailure(op, "is not waited for");
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    Type i64 = rewriter.getI64Type();

    Value send, recv;
    SmallVector<Value> views;
    int64_t count = 0;
    if constexpr (std::is_same_v<OpTy, AllReduceStartOp>) {
      for (Value input : op.getInputs()) {
        auto type = cast<RankedTensorType>(input.getType());
        if (!type.hasStaticShape())
          return rewriter.notifyMatchFailure(op, "needs static tensors");
        count += type.getNumElements();
      }
      send = recv = collectiveBuffer(
          rewriter, loc, MemRefType::get({count}, rewriter.getF32Type()));
      int64_t offset = 0;
      for (Value input : op.getInputs())
        views.push_back(bucketView(rewriter, loc, recv, input, offset,
                                   op.getInputs().size() > 1));
    } else {
      auto inType = cast<RankedTensorType>(op.getInput().getType());
      auto outType = cast<RankedTensorType>(op.getResult().getType());
      send = copyToBuffer(rewriter, loc, op.getInput());
      recv = memref::AllocOp::create(
          rewriter, loc,
          MemRefType::get(outType.getShape(), outType.getElementType()));
      views.push_back(recv);
      count = std::min(inType.getNumElements(), outType.getNumElements());
    }
    SmallVector<Value> args;
    SmallVector<Type> argTypes;
    if constexpr (std::is_same_v<OpTy, AllReduceStartOp>) {
      args.push_back(pointerTo(rewriter, loc, recv));
      argTypes.push_back(ptrType);
    } else {
      args = {pointerTo(rewriter, loc, send), pointerTo(rewriter, loc, recv)};
      argTypes = {ptrType, ptrType};
    }
    args.push_back(arith::ConstantIntOp::create(rewriter, loc, count, 64));
    argTypes.push_back(i64);
    std::string startName = callee + "_start";
    declareCallee(rewriter, op, startName,
                  rewriter.getFunctionType(argTypes, {i64}));
    Value request =
        func::CallOp::create(rewriter, loc, startName, TypeRange{i64}, args)
            .getResult(0);

    rewriter.setInsertionPoint(wait);
    Location waitLoc = wait.getLoc();
    declareCallee(rewriter, op, waiter,
                  rewriter.getFunctionType({i64, ptrType, ptrType}, {}));
    func::CallOp::create(rewriter, waitLoc, waiter, TypeRange{},
                         ValueRange{request, pointerTo(rewriter, waitLoc, send),
                                    pointerTo(rewriter, waitLoc, recv)});
    SmallVector<Value> results;
    for (auto [result, view] : llvm::zip_equal(wait.getResults(), views))
      results.push_back(bufferization::ToTensorOp::create(
          rewriter, waitLoc, result.getType(), view, /*restrict=*/true,
          /*writable=*/true));
    rewriter.replaceOp(wait, results);
    rewriter.eraseOp(op);
    return success();
  }
  std::string callee, waiter;
};

} // namespace

void populateCollectiveLowering(RewritePatternSet &patterns,
                                const LoweringPolicy &policy) {
  MLIRContext *context = patterns.getContext();
  CollectiveCallees name(policy.cudaCollectives);
  patterns.add<AllReduceLowering>(context, name("allreduce_sum_f32"));
  patterns.add<BlockCollectiveLowering<ReduceScatterOp>>(
      context, name("reduce_scatter_sum_f32"));
  patterns.add<BlockCollectiveLowering<AllGatherOp>>(context,
                                                     name("all_gather_f32"));
  patterns.add<BlockCollectiveLowering<ShardOp>>(context, name("shard_f32"));
  std::string wait = name("collective_wait");
  patterns.add<StartLowering<AllReduceStartOp>>(
      context, name("allreduce_sum_f32"), wait);
  patterns.add<StartLowering<ReduceScatterStartOp>>(
      context, name("reduce_scatter_sum_f32"), wait);
  patterns.add<StartLowering<AllGatherStartOp>>(context, name("all_gather_f32"),
                                                wait);
}

} // namespace effopt::lowering
