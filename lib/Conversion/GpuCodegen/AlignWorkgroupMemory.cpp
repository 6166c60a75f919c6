//===- AlignWorkgroupMemory.cpp - workgroup buffers aligned for vectors ---===//
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "llvm/Support/MathExtras.h"

namespace effopt {
#define GEN_PASS_DEF_EFFGPUALIGNWORKGROUPMEMORYPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace {

struct EffGpuAlignWorkgroupMemoryPass
    : effopt::impl::EffGpuAlignWorkgroupMemoryPassBase<
          EffGpuAlignWorkgroupMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      getOperation().emitError()
          << "eff-gpu-align-workgroup-memory: alignment "
          << static_cast<int64_t>(alignment)
          << " is not a power of two";
      return signalPassFailure();
    }
    StringRef name = LLVM::LLVMDialect::getAlignAttrName();
    getOperation().walk([&](gpu::GPUFuncOp func) {
      Builder b(func.getContext());
      for (unsigned i = 0; i < func.getNumWorkgroupAttributions(); ++i) {
        auto current =
            dyn_cast_or_null<IntegerAttr>(func.getWorkgroupAttributionAttr(i, name));
        if (current && current.getInt() >= alignment)
          continue;
        func.setWorkgroupAttributionAttr(i, name,
                                         b.getI64IntegerAttr(alignment));
      }
    });
  }
};

} // namespace
