//===- CudaEmulatedBackend.cpp - the cuda step, run on this CPU -----------===//
//
// effc --target cuda-emulated: every choice of the cuda target up to its
// formed kernels (lowering policy, alignment, plan, eff-gpu-form-kernels),
// then each kernel emulated thread by thread on the CPU (eff-gpu-emulate-
// launches) and the library calls sent to the CPU runtime's stand-ins
// (eff-gpu-emulated-library-calls): an .effx the CPU device runs, so the
// GPU code is checked against PyTorch where there is no GPU. Slow (one
// thread, every GPU thread a loop iteration); not a way to train.
//
//===----------------------------------------------------------------------===//

#include "CudaTarget.h"

#include "../Cpu/CpuHost.h"

using namespace mlir;

namespace effopt {
namespace {

class CudaEmulatedBackend : public cuda::CudaBackend {
public:
  StringRef getName() const override { return kCudaEmulatedTargetName; }
  StringRef getDescription() const override {
    return "the cuda target's step on this CPU: its kernels emulated thread "
           "by thread, GEMMs, attention and convolutions by the runtime's "
           "CPU stand-ins (checks the GPU code without a GPU; slow)";
  }

  // The offloaded update runs as the CPU target's host tasks (the CPU
  // device's worker thread): the same update ops, on memory the step
  // already shares, so no staging copies.
  llvm::StringRef getHostTaskAbi() const override { return "cpu"; }

  void buildCodegenPipeline(OpPassManager &pm,
                            const CodegenOptions &options) const override {
    pm.addPass(createEffGpuFormKernelsPass());
    EffGpuEmulateLaunchesPassOptions emulate;
    emulate.descending = options.emulateDescending;
    pm.addPass(createEffGpuEmulateLaunchesPass(emulate));
    pm.addPass(createEffGpuEmulatedLibraryCallsPass());
    // Then the host code as the CPU target lowers it. The emulated kernels
    // are plain loops (one thread); host tasks, which keep their linalg
    // ops, get OpenMP threads as on the cuda target.
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    pm.addNestedPass<func::FuncOp>(createEffParallelLoopsPass());
    // Each emulated launch its own function, identical ones shared: LLVM's
    // work per function stays small and a GPT's repeated layers compile
    // once, as on the CPU target.
    pm.addPass(createEffOutlineKernelsPass());
    pm.addPass(createConvertSCFToOpenMPPass());
    pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
    // libm's exp and erf, not the CPU target's polynomials: closer to the
    // GPU's libdevice.
    addCpuHostLowering(pm, /*polynomialMath=*/false);
  }

  FailureOr<TargetArtifacts>
  serialize(ModuleOp module, const CodegenOptions &options) const override {
    // The CPU device runs it; the manifest says what it stands for.
    FailureOr<TargetArtifacts> artifacts =
        serializeCpuHostStep(module, options);
    if (succeeded(artifacts)) {
      artifacts->manifest["emulates"] = kCudaTargetName;
      artifacts->manifest["emulated_order"] =
          options.emulateDescending ? "descending" : "ascending";
    }
    return artifacts;
  }
};

} // namespace

void registerCudaEmulatedTargetBackend() {
  registerTargetBackend(std::make_unique<CudaEmulatedBackend>());
}

} // namespace effopt
