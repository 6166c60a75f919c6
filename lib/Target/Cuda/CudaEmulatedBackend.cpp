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

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "llvm/TargetParser/Triple.h"

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
                            const CodegenOptions &) const override {
    pm.addPass(createEffGpuFormKernelsPass());
    pm.addPass(createEffGpuEmulateLaunchesPass());
    pm.addPass(createEffGpuEmulatedLibraryCallsPass());
    // Then the host code as the CPU target lowers it. The emulated kernels
    // are plain loops (one thread); host tasks, which keep their linalg
    // ops, get OpenMP threads as on the cuda target.
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    pm.addNestedPass<func::FuncOp>(createEffParallelLoopsPass());
    pm.addPass(createConvertSCFToOpenMPPass());
    pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createSCFToControlFlowPass());
    math::MathExtendToSupportedTypesOptions extend;
    extend.targetTypeStr = "f32";
    pm.addPass(math::createMathExtendToSupportedTypes(extend));
    arith::ArithEmulateUnsupportedFloatsOptions emulate;
    emulate.sourceTypeStrs = {"bf16", "f16"};
    emulate.targetTypeStr = "f32";
    pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
    pm.addPass(createEffExpandBF16ConversionsPass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createFinalizeMemRefToLLVMConversionPass());
    math::MathExpandOpsPassOptions expand;
    expand.opMnemonics = {"rsqrt"};
    pm.addPass(math::createMathExpandOpsPass(expand));
    pm.addPass(createConvertMathToLibmPass());
    pm.addPass(createConvertToLLVMPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
  }

  FailureOr<TargetArtifacts>
  serialize(ModuleOp module, const CodegenOptions &options) const override {
    dropStepAbiAttributes(module);
    CpuCodegenOptions codegen;
    codegen.cpu = options.arch;
    codegen.optLevel = options.optLevel;
    FailureOr<CpuCode> code = emitCpuSharedObject(module, codegen);
    if (failed(code))
      return failure();
    // The CPU device runs it (effrt hostTarget()'s name).
    std::string target =
        ("cpu-" + llvm::Triple(code->triple).getArchName()).str();
    TargetArtifacts artifacts;
    artifacts.sections.push_back(EffxSectionData{
        effrt::EffxSectionKind::HostCode, target, "step",
        std::move(code->sharedObject)});
    artifacts.manifest["target"] = target;
    artifacts.manifest["emulates"] = kCudaTargetName;
    artifacts.manifest["cpu"] = code->cpu;
    artifacts.manifest["entry"] = effrt::kEffxEntrySymbol;
    return artifacts;
  }
};

} // namespace

void registerCudaEmulatedTargetBackend() {
  registerTargetBackend(std::make_unique<CudaEmulatedBackend>());
}

} // namespace effopt
