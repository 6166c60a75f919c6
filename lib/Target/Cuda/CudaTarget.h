//===- CudaTarget.h - the CUDA target's backend class -----------*- C++ -*-===//
//
// The CUDA target (CudaBackend.cpp registers it), shared with its emulated
// twin (CudaEmulatedBackend.cpp), which keeps every choice up to the
// formed kernels and runs them on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_TARGET_CUDA_CUDATARGET_H
#define EFFOPT_LIB_TARGET_CUDA_CUDATARGET_H

#include "effopt/Target/Cuda/CudaBackend.h"

#include "../Cpu/CpuObject.h"

#include "effopt/Conversion/GpuCodegen/RowGroups.h"
#include "effopt/Conversion/Passes.h"
#include "effopt/Target/TargetBackend.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToOpenMP/SCFToOpenMP.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

#include <cstdlib>


namespace effopt::cuda {

// This header is the two cuda backends' only: their code reads as in a .cpp.
using namespace mlir;

class CudaBackend : public TargetBackend {
public:
  StringRef getName() const override { return kCudaTargetName; }
  StringRef getDescription() const override {
    return "NVIDIA GPUs sm_80/sm_90: kernels through MLIR's NVVM path and "
           "the CUDA toolkit, GEMMs through cuBLASLt";
  }

  int64_t getAlignment() const override { return 256; }

  ConvertEffToLinalgPassOptions getLoweringPolicy() const override {
    ConvertEffToLinalgPassOptions policy;
    // PyTorch's CUDA reductions accumulate f32 in f32.
    policy.f32Accumulator = "f32";
    // bf16/fp16 operands go to the tensor cores as they are; cuBLASLt
    // accumulates in f32.
    policy.lowPrecisionProducts = "native";
    // cuDNN: on an H100 ResNet-18's bf16 step took 1.74-2.07x cuDNN's
    // time as im2col + cuBLASLt, whose columns were also the plan's
    // largest buffers (docs/CudaBackend.md).
    policy.convolution = "cudnn";
    // Collectives on device buffers, queued on the GPU by the runtime
    // (NCCL; docs/Distributed.md).
    policy.collectives = "cuda";
    // A cross-entropy's max and sum of exponentials in one read of the
    // logits (GPT-2: 16 chunks x 206 MB read once less).
    policy.onlineLogSumExp = true;
    return policy;
  }

  EffLinalgToBlasPassOptions getBlasOptions() const override {
    EffLinalgToBlasPassOptions options;
    options.abi = "cuda";
    return options;
  }

  int64_t getLibraryWorkspaceBytes() const override {
    return kCudaWorkspaceBytes;
  }

  // Collectives run through NCCL (the runtime's effrt_cuda_* entry
  // points). Attention runs on the runtime's FlashAttention-2 kernels
  // (runtime/src/cuda/Attention.cu; verified against PyTorch on an H100).
  // The update of offloaded state runs on the host as tasks on a second
  // stream, overlapped with the step: the bytes each reads copied down,
  // those it writes copied up (eff-host-tasks abi=cuda).
  bool runsHostTasks() const override { return true; }
  llvm::StringRef getHostTaskAbi() const override { return "cuda"; }
  llvm::StringRef getAttentionKernels() const override { return "cuda"; }
  llvm::StringRef getLibraryConvolution() const override { return "cudnn"; }

  // Each kernel thread reads its elements before it writes them.
  bool planElementwiseInPlace() const override { return true; }

  // Row groups and small batches keep to the same bound.
  int64_t getMaxKernelArgumentBytes() const override {
    return kMaxKernelArgumentBytes;
  }

  // A library call reads a constant from device memory, not the host
  // global: a copy kernel stages it right before the call.
  void buildBufferPipeline(OpPassManager &pm) const override {
    pm.addPass(createEffGpuStageConstantsPass());
  }

  void buildTensorPipeline(OpPassManager &pm) const override {
    // A bf16 product whose f32 result is only rounded back to bf16 writes
    // bf16 (cuBLASLt rounds once, as the cast did); the widening a loss
    // reads it through then fuses into each reader, so GPT-2's logits are
    // stored once in bf16, not twice in f32.
    pm.addPass(createEffGpuNarrowProductsPass());
    EffFuseElementwisePassOptions fusion;
    fusion.maxKernelArgumentBytes = getMaxKernelArgumentBytes();
    pm.addPass(createEffFuseElementwisePass(fusion));
    pm.addPass(createCanonicalizerPass());
    // A bias its reader adds per column goes into the GEMM (cuBLASLt's
    // bias epilogue): the product is not read and written again for it.
    // After the fusion, which would otherwise pull the bias's rounding
    // into the broadcast that stands for the epilogue.
    pm.addPass(createEffGpuFoldBiasIntoProductsPass());
    pm.addPass(createCanonicalizerPass());
    // A LayerNorm's scale and bias gradients read its output gradient
    // once, as one reduction with two outputs.
    pm.addPass(createEffMergeSiblingReductionsPass());
    // Bias and LayerNorm weight gradients (768 sums of 32768 rows) would
    // run as 768 serial threads: partial sums first, planned like any
    // temporary.
    pm.addPass(createEffGpuSplitReductionsPass());
  }

  void buildCodegenPipeline(OpPassManager &pm,
                            const CodegenOptions &options) const override {
    // Every read and write of memory in a gpu.launch, one per fusion group;
    // the host keeps index arithmetic, views, loops over library calls and
    // launches.
    pm.addPass(createEffGpuFormKernelsPass());
    // Shapes and strides are constants of the host code: copied into each
    // kernel, its index divisions become multiplications (as kernel
    // arguments they were 64-bit divisions by a run-time value).
    pm.addPass(createGpuLaunchSinkIndexComputationsPass());
    // One gpu.func per launch, in gpu.modules (eff-cuda-fatbin merges them
    // into one binary); the constants a kernel reads are copied in.
    pm.addPass(createGpuKernelOutliningPass());
    // Shared-memory globals aligned for the 16-byte accesses NVPTX merges
    // scalar ones into.
    pm.addPass(createEffGpuAlignWorkgroupMemoryPass());
    // Identical kernels (a network's repeated layers) compiled once.
    pm.addPass(createEffGpuShareKernelsPass());
    // Host tasks (effc --offload optimizer, eff-host-tasks) run on the CPU
    // as on the CPU target: the outermost parallel loop of a large nest on
    // OpenMP threads (an update of millions of weights), the rest plain
    // loops; f16/bf16 arithmetic in f32 with one rounding per op, bf16
    // conversions integer code. The kernels are gpu.funcs in gpu.modules by
    // now (and have no scf.parallel): these passes, nested on the module's
    // func.funcs, leave them alone.
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    pm.addNestedPass<func::FuncOp>(createEffParallelLoopsPass());
    pm.addPass(createConvertSCFToOpenMPPass());
    // The memref.alloca_scope each threaded body gets holds no alloca:
    // canonicalization inlines it (a scope must keep one block, which the
    // scf.for loops inside would no longer be after scf-to-cf).
    pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
    arith::ArithEmulateUnsupportedFloatsOptions emulate;
    emulate.sourceTypeStrs = {"bf16", "f16"};
    emulate.targetTypeStr = "f32";
    pm.addNestedPass<func::FuncOp>(
        arith::createArithEmulateUnsupportedFloats(emulate));
    pm.addNestedPass<func::FuncOp>(createEffExpandBF16ConversionsPass());
    // Structured control flow and strided views to plain code, on host and
    // device alike; f16/bf16 math runs in f32 (libdevice has only f32/f64).
    pm.addPass(createLowerAffinePass());
    pm.addPass(createSCFToControlFlowPass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    math::MathExtendToSupportedTypesOptions extend;
    extend.targetTypeStr = "f32";
    pm.addPass(math::createMathExtendToSupportedTypes(extend));
    // Kernels to NVVM, then PTX per arch, SASS, one fatbin (a gpu.binary).
    pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
    pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
    pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
    EffCudaFatbinPassOptions fatbin;
    fatbin.toolkit = getCudaToolkitPath();
    for (StringRef arch : kCudaArchs)
      fatbin.archs.push_back(arch.str());
    // NVPTX and ptxas at effc's --opt-level (most of a cuda compile's time).
    fatbin.optLevel = options.optLevel;
    pm.addPass(createEffCudaFatbinPass(fatbin));
    // The host: launches become mgpu* runtime calls (gpu-to-llvm), the rest
    // LLVM like the CPU target's host code.
    pm.addPass(createGpuToLLVMConversionPass());
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
    // eff-cuda-fatbin left exactly one gpu.binary with one fatbin object.
    SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
    if (binaries.size() > 1)
      return module.emitError("the cuda step has ")
             << binaries.size() << " gpu.binary ops; eff-cuda-fatbin makes one";
    std::vector<char> fatbin;
    if (!binaries.empty()) {
      auto objects = binaries.front().getObjects();
      auto object = objects.size() == 1
                        ? dyn_cast<gpu::ObjectAttr>(objects[0])
                        : gpu::ObjectAttr();
      if (!object || object.getFormat() != gpu::CompilationTarget::Fatbin)
        return binaries.front().emitError(
            "expected one fatbin object (eff-cuda-fatbin)");
      StringRef bytes = object.getObject().getValue();
      fatbin.assign(bytes.begin(), bytes.end());
    }
    // Generic x86-64: the .effx runs on whatever host the GPU sits in.
    CpuCodegenOptions codegen;
    codegen.cpu = "x86-64";
    codegen.optLevel = options.optLevel;
    // The host step launches kernels and calls libraries, once per CUDA
    // graph capture: -O0 machine code (GPT-2's host object 5.4 -> 2.9 s, a
    // 100-layer MLP's 21 -> 5.4 s). Host tasks (--offload optimizer's
    // update on the CPU) are loops that run every step: optimised.
    codegen.optimizeMachineCode =
        llvm::any_of(module.getOps<LLVM::LLVMFuncOp>(), [](LLVM::LLVMFuncOp f) {
          return !f.isExternal() && f.getName().contains("_host_task_");
        });
    FailureOr<CpuCode> code = emitCpuSharedObject(module, codegen);
    if (failed(code))
      return failure();
    TargetArtifacts artifacts;
    artifacts.sections.push_back(EffxSectionData{
        effrt::EffxSectionKind::HostCode, kCudaTargetName.str(), "step",
        std::move(code->sharedObject)});
    artifacts.sections.push_back(EffxSectionData{
        effrt::EffxSectionKind::DeviceCode, kCudaTargetName.str(), "kernels",
        std::move(fatbin)});
    artifacts.manifest["target"] = kCudaTargetName;
    artifacts.manifest["entry"] = effrt::kEffxEntrySymbol;
    llvm::json::Array archs;
    for (StringRef arch : kCudaArchs)
      archs.push_back(arch);
    artifacts.manifest["cuda_archs"] = std::move(archs);
    artifacts.manifest["cuda_ptx"] = kCudaPtxArch;
    artifacts.manifest["host_cpu"] = code->cpu;
    artifacts.manifest["allow_tf32"] = options.allowTf32;
    return artifacts;
  }
};


} // namespace effopt::cuda

#endif // EFFOPT_LIB_TARGET_CUDA_CUDATARGET_H
