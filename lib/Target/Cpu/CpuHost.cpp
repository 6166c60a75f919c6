//===- CpuHost.cpp - host code the CPU device runs ------------------------===//

#include "CpuHost.h"

#include "CpuObject.h"

#include "effopt/Conversion/Passes.h"
#include "effopt/Target/Cpu/CpuBackend.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;

namespace effopt {

void addCpuHostLowering(OpPassManager &pm, bool polynomialMath) {
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // f16/bf16 arithmetic left in the loops (the lowering computes each eff
  // op in f32; what remains are exact ops such as max, compare, select)
  // runs in f32 with one rounding per op, math functions too; bf16
  // conversions become integer code (no AVX512-BF16 or libgcc libcall
  // needed, PyTorch's rounding bit for bit).
  math::MathExtendToSupportedTypesOptions extend;
  extend.targetTypeStr = "f32";
  pm.addPass(math::createMathExtendToSupportedTypes(extend));
  // exp/erf/tanh as polynomials, so their loops vectorise (not libm).
  if (polynomialMath)
    pm.addPass(createEffVectorizableMathPass());
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16", "f16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  pm.addPass(createEffExpandBF16ConversionsPass());
  // Views at dynamic offsets (a micro-batch's rows of a batch input)
  // leave affine.apply behind.
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

FailureOr<TargetArtifacts> serializeCpuHostStep(ModuleOp module,
                                                const CodegenOptions &options) {
  dropStepAbiAttributes(module);
  CpuCodegenOptions codegen;
  codegen.cpu = options.arch;
  codegen.optLevel = options.optLevel;
  FailureOr<CpuCode> code = emitCpuSharedObject(module, codegen);
  if (failed(code))
    return failure();
  // The runtime picks its CPU device by this name (effrt hostTarget()).
  std::string target =
      (kCpuTargetName + "-" + llvm::Triple(code->triple).getArchName()).str();
  TargetArtifacts artifacts;
  artifacts.sections.push_back(EffxSectionData{
      effrt::EffxSectionKind::HostCode, target, "step",
      std::move(code->sharedObject)});
  artifacts.manifest["target"] = target;
  artifacts.manifest["cpu"] = code->cpu;
  artifacts.manifest["entry"] = effrt::kEffxEntrySymbol;
  return artifacts;
}

} // namespace effopt
