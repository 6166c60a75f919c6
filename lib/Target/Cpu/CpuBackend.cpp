//===- CpuBackend.cpp - the CPU target ------------------------------------===//
//
// The CPU's choices: 64-byte alignment (a cache line, AVX-512 loads);
// PyTorch's CPU numerics (f32 sums in f64; f16/bf16 GEMM operands widened to
// f32, since the BLAS has only an f32 GEMM; convolutions through oneDNN
// where effopt was built with it, as PyTorch's CPU convolutions are, else
// im2col + GEMM);
// loops as native code through LLVM, the outermost parallel loop of each
// large nest on OpenMP threads; one ELF shared object as the .effx host code.
//
//===----------------------------------------------------------------------===//

#include "effopt/Target/Cpu/CpuBackend.h"

#include "CpuHost.h"
#include "CpuObject.h"

#include "effopt/Conversion/Passes.h"
#include "effopt/Target/TargetBackend.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToOpenMP/SCFToOpenMP.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;

namespace effopt {
namespace {

class CpuBackend : public TargetBackend {
public:
  StringRef getName() const override { return kCpuTargetName; }
  StringRef getDescription() const override {
    return "native code for this machine's CPU (or --cpu NAME): LLVM, "
           "OpenMP threads, OpenBLAS GEMMs";
  }

  int64_t getAlignment() const override { return 64; }
  // The CPU device's worker thread (effrt_host_task_start).
  bool runsHostTasks() const override { return true; }

  llvm::StringRef getLibraryConvolution() const override { return "library"; }

  ConvertEffToLinalgPassOptions getLoweringPolicy() const override {
    ConvertEffToLinalgPassOptions policy;
    policy.f32Accumulator = "f64";
    policy.lowPrecisionProducts = "widen";
    // oneDNN's kernels beat im2col + GEMM on every measured shape but
    // stride-1 1x1 (which the library lowering leaves a GEMM itself);
    // docs/CpuBackend.md has the figures.
    policy.convolution =
        libraryConvolutionsAvailable() ? "library" : "im2col";
    return policy;
  }

  void buildCodegenPipeline(OpPassManager &pm,
                            const CodegenOptions &) const override {
    // Loops: the outermost parallel loop of each large nest runs on OpenMP
    // threads, everything else is sequential; one kernel function per nest.
    // Before that, nests get long innermost loops LLVM vectorises (scalars
    // hoisted, contiguous dimensions collapsed) and reductions their
    // parallel dimensions outside, where threads can take them.
    pm.addPass(createEffShapeLoopNestsPass());
    pm.addPass(createConvertLinalgToParallelLoopsPass());
    pm.addPass(createEffParallelLoopsPass());
    pm.addPass(createEffOutlineKernelsPass());
    pm.addPass(createConvertSCFToOpenMPPass());
    pm.addPass(createCanonicalizerPass());
    addCpuHostLowering(pm, /*polynomialMath=*/true);
  }

  FailureOr<TargetArtifacts>
  serialize(ModuleOp module, const CodegenOptions &options) const override {
    return serializeCpuHostStep(module, options);
  }
};

} // namespace

void registerCpuTargetBackend() {
  registerTargetBackend(std::make_unique<CpuBackend>());
}

} // namespace effopt
