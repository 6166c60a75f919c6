//===- StageConstants.cpp - constants a library call reads, on the device --===//
//
// A library call is handed addresses computed on the host; a constant
// global's address is host memory. Each such read gets a buffer that a copy
// kernel fills from the global (which kernels read on the device) right
// before it. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace effopt {
#define GEN_PASS_DEF_EFFGPUSTAGECONSTANTSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// True for an op that stays on the host and reads the memref's address.
bool readsAddressOnHost(Operation *op) {
  return isa<memref::ExtractStridedMetadataOp,
             memref::ExtractAlignedPointerAsIndexOp, CallOpInterface>(op);
}

/// A pure view of its source (subview, reshape, cast), not an address read.
bool isPureView(Operation *op, Value source) {
  auto view = dyn_cast<ViewLikeOpInterface>(op);
  return view && !readsAddressOnHost(op) && view.getViewSource() == source &&
         isMemoryEffectFree(op);
}

/// The uses of `value`, a constant global or a view of one, that read its
/// address on the host.
void collectHostReads(Value value, SmallVectorImpl<OpOperand *> &reads) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (readsAddressOnHost(user))
      reads.push_back(&use);
    else if (isPureView(user, value))
      for (Value result : user->getResults())
        collectHostReads(result, reads);
  }
}

struct EffGpuStageConstantsPass
    : impl::EffGpuStageConstantsPassBase<EffGpuStageConstantsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<memref::GetGlobalOp> globals;
    getOperation().walk([&](memref::GetGlobalOp get) { globals.push_back(get); });
    for (memref::GetGlobalOp get : globals) {
      SmallVector<OpOperand *> reads;
      collectHostReads(get.getResult(), reads);
      for (OpOperand *read : reads)
        stage(get, *read);
    }
  }

  /// Points `read` at a copy of the global made right before its owner,
  /// through the same views.
  void stage(memref::GetGlobalOp get, OpOperand &read) {
    SmallVector<Operation *> views;
    for (Value v = read.get(); v != get.getResult();) {
      Operation *view = v.getDefiningOp();
      views.push_back(view);
      v = cast<ViewLikeOpInterface>(view).getViewSource();
    }
    OpBuilder b(read.getOwner());
    Location loc = get.getLoc();
    auto type = cast<MemRefType>(get.getType());
    Value global = b.clone(*get)->getResult(0);
    Value buffer = memref::AllocOp::create(b, loc, type);
    memref::CopyOp::create(b, loc, global, buffer);
    IRMapping mapping;
    mapping.map(get.getResult(), buffer);
    for (Operation *view : llvm::reverse(views))
      b.clone(*view, mapping);
    read.set(mapping.lookup(read.get()));
    // The views the read went through may have no other reader now.
    for (Operation *view : views)
      if (view->use_empty())
        view->erase();
    ++numStaged;
  }
};

} // namespace
} // namespace effopt
