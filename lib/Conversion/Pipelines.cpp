//===- Pipelines.cpp - the registered compilation pipelines ---------------===//

#include "effopt/Conversion/Pipelines.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/EffGradientInterface.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace effopt {

std::string cpuLoweringPipeline(const CpuPipelineOptions &options) {
  std::string pipeline =
      // Expects eff-step-abi to have fixed the interface; eff-level cleanup
      // first drops the dead forward outputs.
      "canonicalize,cse,"
      // eff -> linalg on tensors; fuse elementwise chains into one loop nest.
      // No CSE from here on: eff.save lowers to nothing, so a value that
      // eff-remat recomputes in the backward would be merged back into its
      // forward twin and kept alive (CSE ran on eff, where saves differ).
      "convert-eff-to-linalg,canonicalize,eff-fuse-elementwise,"
      "canonicalize,"
      // Bufferize with in-place updates of the state arguments.
      "eliminate-empty-tensors,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "canonicalize,"
      // GEMMs to the runtime's BLAS; entry point; one arena.
      "eff-linalg-to-blas,eff-cpu-entry,inline,symbol-dce,canonicalize,";
  pipeline += options.attachMemoryReport
                  ? "eff-memory-plan{attach-report=true}"
                  : "eff-memory-plan";
  if (options.stopAfterMemoryPlan)
    return pipeline;
  pipeline += ","
      // Loops: the outermost parallel loop of each large nest runs on
      // OpenMP threads, everything else is sequential; one kernel function
      // per nest. Then LLVM.
      "convert-linalg-to-parallel-loops,eff-parallel-loops,eff-outline-kernels,"
      "convert-scf-to-openmp,canonicalize,lower-affine,convert-scf-to-cf,"
      // f16/bf16 arithmetic left in the loops (the lowering computes each
      // eff op in f32; what remains are exact ops such as max, compare,
      // select) runs in f32 with one rounding per op, math functions too;
      // bf16 conversions become integer code (no AVX512-BF16 or libgcc
      // libcall needed, PyTorch's rounding bit for bit).
      "math-extend-to-supported-types{target-type=f32},"
      "arith-emulate-unsupported-floats{source-types=bf16,f16 "
      "target-type=f32},"
      "eff-expand-bf16-conversions,"
      // Views at dynamic offsets (a micro-batch's rows of a batch input)
      // leave affine.apply behind.
      "expand-strided-metadata,lower-affine,finalize-memref-to-llvm,"
      "math-expand-ops{ops=rsqrt},convert-math-to-libm,"
      "convert-to-llvm,reconcile-unrealized-casts";
  return pipeline;
}

void registerEffoptPipelines() {
  static mlir::PassPipelineRegistration<> cpu(
      "effopt-cpu-lowering",
      "Lower @train_step (after eff-step-abi) to the LLVM dialect with the "
      "effx_step entry point, as effc --target cpu does",
      [](mlir::OpPassManager &pm) {
        if (mlir::failed(mlir::parsePassPipeline(cpuLoweringPipeline(), pm)))
          llvm::report_fatal_error("invalid built-in pipeline");
      });
}

void registerCompilerDialects(mlir::DialectRegistry &registry) {
  registry.insert<eff::EffDialect>();
  eff::registerGradientInterfaceModels(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
}

} // namespace effopt
