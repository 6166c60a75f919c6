//===- LowerCollective.cpp - eff.all_reduce to the runtime's collective ---===//
//
// A collective runs in the runtime (MPI across processes), so eff.all_reduce
// becomes a call of `effrt_allreduce_sum_f32(ptr, count)` (effrt/Kernels.h)
// on a buffer of its own: the input is copied into a fresh memref
// (bufferization.materialize_in_destination), the call sums it in place
// across the ranks, and the result is that buffer as a tensor
// (bufferization.to_tensor restrict). The memory plan places the buffer
// like any other.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

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

constexpr StringLiteral kAllReduceF32 = "effrt_allreduce_sum_f32";

/// eff.all_reduce (f32) -> copy into a buffer, call the runtime on it.
struct AllReduceLowering : OpRewritePattern<AllReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllReduceOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape() || !type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "needs a static f32 tensor");
    auto module = op->getParentOfType<ModuleOp>();
    auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
    auto calleeType =
        rewriter.getFunctionType({ptrType, rewriter.getI64Type()}, {});
    if (!module.lookupSymbol<func::FuncOp>(kAllReduceF32)) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      auto callee = func::FuncOp::create(rewriter, module.getLoc(),
                                         kAllReduceF32, calleeType);
      callee.setPrivate();
    }

    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    Value buffer = memref::AllocOp::create(rewriter, loc, memrefType);
    auto copy = bufferization::MaterializeInDestinationOp::create(
        rewriter, loc, op.getInput(), buffer);
    copy.setWritableAttr(rewriter.getUnitAttr());
    Value base =
        memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer);
    Value address =
        arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), base);
    Value pointer = LLVM::IntToPtrOp::create(rewriter, loc, ptrType, address);
    Value count =
        arith::ConstantIntOp::create(rewriter, loc, type.getNumElements(), 64);
    func::CallOp::create(rewriter, loc, kAllReduceF32, TypeRange{},
                         ValueRange{pointer, count});
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, type, buffer, /*restrict=*/true, /*writable=*/true);
    return success();
  }
};

} // namespace

void populateCollectiveLowering(RewritePatternSet &patterns) {
  patterns.add<AllReduceLowering>(patterns.getContext());
}

} // namespace effopt::lowering
