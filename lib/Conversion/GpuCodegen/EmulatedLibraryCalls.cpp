//===- EmulatedLibraryCalls.cpp - the cuda step's calls to CPU stand-ins --===//
//
// The cuda-emulated target runs the cuda step on the CPU: its kernels are
// emulated (eff-gpu-emulate-launches) and its calls into the CUDA runtime's
// libraries go to the CPU runtime's stand-ins, effrt_emulated_cuda_*
// (runtime/src/cpu/EmulatedCuda.cpp), which take the same arguments.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringSet.h"

namespace effopt {
#define GEN_PASS_DEF_EFFGPUEMULATEDLIBRARYCALLSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// The CUDA runtime entry points the CPU runtime has stand-ins for.
const llvm::StringSet<> &emulatedCalls() {
  static const llvm::StringSet<> calls = {
      "gemm",
      "gemm_batched",
      "gemm_bias",
      "attention_fwd",
      "attention_bwd",
      "attention_fwd_strided",
      "attention_bwd_strided",
      "conv2d_fwd",
      "conv2d_bwd_data",
      "conv2d_bwd_weights",
      "allreduce_sum_f32",
      "reduce_scatter_sum_f32",
      "all_gather_f32",
      "shard_f32",
      "allreduce_sum_f32_start",
      "reduce_scatter_sum_f32_start",
      "all_gather_f32_start",
      "collective_wait",
  };
  return calls;
}

struct EffGpuEmulatedLibraryCallsPass
    : impl::EffGpuEmulatedLibraryCallsPassBase<EffGpuEmulatedLibraryCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    constexpr llvm::StringLiteral prefix = "effrt_cuda_";
    SmallVector<func::FuncOp> declarations;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isExternal() && func.getSymName().starts_with(prefix))
        declarations.push_back(func);
    for (func::FuncOp func : declarations) {
      StringRef entry = func.getSymName().drop_front(prefix.size());
      if (!emulatedCalls().contains(entry)) {
        func.emitError() << "cuda-emulated: the CPU runtime has no stand-in "
                            "for @"
                         << func.getSymName()
                         << " (the emulation runs GEMMs, attention, "
                            "convolutions and collectives, not host tasks)";
        return signalPassFailure();
      }
      auto name =
          StringAttr::get(&getContext(), "effrt_emulated_cuda_" + entry);
      if (failed(SymbolTable::replaceAllSymbolUses(func, name, module)))
        return signalPassFailure();
      SymbolTable::setSymbolName(func, name);
    }
  }
};

} // namespace
} // namespace effopt
