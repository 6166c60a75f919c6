//===- MemoryPlanPass.cpp - the eff-memory-plan pass ----------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Analysis/MemoryPlan.h"
#include "effopt/Analysis/MemoryReport.h"
#include "effopt/Dialect/Eff/IR/EffDialect.h"

#include "llvm/Support/Format.h"

namespace effopt {
#define GEN_PASS_DEF_EFFMEMORYPLANPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

struct EffMemoryPlanPass : impl::EffMemoryPlanPassBase<EffMemoryPlanPass> {
  using Base::Base;

  /// The target's alignment eff-step-abi recorded on the module; its
  /// default for IR laid out by hand.
  int64_t alignment() {
    if (auto recorded =
            getOperation()->getAttrOfType<IntegerAttr>(eff::kAlignmentAttrName))
      return recorded.getInt();
    return EffStepAbiPassOptions().alignment;
  }

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      auto arenaArg = func->getAttrOfType<IntegerAttr>(eff::kArenaArgAttrName);
      if (!arenaArg || func.isExternal())
        return;
      if (failed(plan(func, arenaArg.getInt())))
        signalPassFailure();
    });
  }

  LogicalResult plan(func::FuncOp func, int64_t arenaIndex) {
    if (arenaIndex < 0 || arenaIndex >= func.getNumArguments())
      return func.emitError("eff.arena_arg ")
             << arenaIndex << " is not an argument";
    Value arena = func.getArgument(arenaIndex);
    auto arenaType = dyn_cast<MemRefType>(arena.getType());
    if (!arenaType || arenaType.getRank() != 1 ||
        !arenaType.getElementType().isInteger(8))
      return func.emitError("the arena argument must be memref<?xi8>, got ")
             << arena.getType();

    Block &body = func.getBody().front();
    MemoryPlan memoryPlan = MemoryPlan::compute(body, alignment(), inPlace);
    for (memref::AllocOp alloc : memoryPlan.escapingBuffers())
      return alloc.emitError("this buffer is yielded to the next iteration "
                             "of its loop: it has no single place in the "
                             "arena (the loop-carried value was not updated "
                             "in place)");
    if (print) {
      auto [where, peak] = memoryPlan.peak();
      llvm::errs() << "memory plan of @" << func.getName() << ": "
                   << memoryPlan.buffers().size() << " buffers, arena "
                   << memoryPlan.arenaBytes() << " bytes, peak " << peak
                   << " bytes at op " << where << "\n";
      llvm::errs() << "    offset      bytes  first   last  type\n";
      for (PlannedBuffer b : memoryPlan.buffers())
        llvm::errs() << llvm::format("%10lld %10lld %6lld %6lld  ",
                                     (long long)b.offset, (long long)b.bytes,
                                     (long long)b.first, (long long)b.last)
                     << b.alloc.getType() << (b.inPlace ? "  in place" : "")
                     << "\n";
    }
    if (report || attachReport) {
      // Before the allocs become views: the report reads their locations
      // and readers.
      MemoryReport memoryReport = MemoryReport::fromPlan(memoryPlan);
      if (report)
        memoryReport.printTable(llvm::errs());
      if (attachReport) {
        std::string json;
        llvm::raw_string_ostream os(json);
        os << memoryReport.toJSON();
        getOperation()->setAttr(kMemoryReportAttrName,
                                StringAttr::get(func.getContext(), json));
      }
    }
    for (PlannedBuffer b : memoryPlan.buffers()) {
      OpBuilder builder(b.alloc);
      Value offset =
          arith::ConstantIndexOp::create(builder, b.alloc.getLoc(), b.offset);
      Value view = memref::ViewOp::create(builder, b.alloc.getLoc(),
                                          b.alloc.getType(), arena, offset,
                                          ValueRange{});
      b.alloc.getResult().replaceAllUsesWith(view);
      b.alloc.erase();
      ++numPlacedBuffers;
    }
    // Deallocations of planned buffers are meaningless now.
    func.walk([&](memref::DeallocOp dealloc) {
      if (dealloc.getMemref().getDefiningOp<memref::ViewOp>())
        dealloc.erase();
    });
    func->setAttr(eff::kArenaBytesAttrName,
                  IntegerAttr::get(IntegerType::get(func.getContext(), 64),
                                   memoryPlan.arenaBytes()));
    return success();
  }
};

} // namespace
} // namespace effopt
