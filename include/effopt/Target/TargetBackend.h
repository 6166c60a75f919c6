//===- TargetBackend.h - what a compilation target implements ---*- C++ -*-===//
//
// The training step is built and lowered the same way for every target up to
// the memory plan (eff passes, eff -> linalg, fusion, bufferization, library
// calls, the step entry, one arena). A TargetBackend supplies what differs:
//
//   - the alignment of every offset in the regions and the arena;
//   - the lowering policy, where numerics are the target's choice
//     (accumulator type, how f16/bf16 products compute, convolutions);
//   - its code generation pipeline, from the memory-planned module on;
//   - serialization: the .effx sections of its code and the manifest fields
//     that name the target and the entry point.
//
// Backends register by name (effc --target NAME, TrainStepOptions::target).
// docs/Architecture.md draws the seam.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_TARGET_TARGETBACKEND_H
#define EFFOPT_TARGET_TARGETBACKEND_H

#include "effopt/Conversion/Passes.h"
#include "effopt/Target/Effx.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/JSON.h"

#include <memory>
#include <string>
#include <vector>

namespace effopt {

/// How a backend generates code (effc --arch/--cpu, --opt-level).
struct CodegenOptions {
  /// The processor to generate code for: a CPU name, or "native" for the
  /// compiling machine's; a GPU architecture for a GPU target.
  std::string arch = "native";
  /// LLVM's optimization level, 0-3.
  unsigned optLevel = 3;
  /// f32 GEMMs may round their operands to TF32 (effc --allow-tf32; a GPU
  /// target records it for its runtime, PyTorch's
  /// torch.backends.cuda.matmul.allow_tf32). The CPU ignores it.
  bool allowTf32 = false;
  /// cuda-emulated: run each kernel's blocks and threads in descending
  /// order of their ids (effc --emulated-order=descending), so races the
  /// ascending order hides show. Other targets ignore it.
  bool emulateDescending = false;
};

/// What a backend contributes to the .effx.
struct TargetArtifacts {
  /// Its code: host code, device binaries.
  std::vector<EffxSectionData> sections;
  /// Manifest fields that describe the code: at least "target" (what the
  /// runtime's device is chosen by) and "entry".
  llvm::json::Object manifest;
};

class TargetBackend {
public:
  virtual ~TargetBackend();

  /// The name users pick it by ("cpu").
  virtual llvm::StringRef getName() const = 0;
  /// One line for --help and error messages.
  virtual llvm::StringRef getDescription() const = 0;

  /// Byte alignment (a power of two) of every region offset, region size
  /// and arena buffer: what its loads, vector units and libraries need.
  virtual int64_t getAlignment() const = 0;

  /// convert-eff-to-linalg's options: the numerics the target chooses.
  virtual ConvertEffToLinalgPassOptions getLoweringPolicy() const = 0;

  /// eff-linalg-to-blas's options: which runtime GEMM the products call.
  virtual EffLinalgToBlasPassOptions getBlasOptions() const { return {}; }

  /// Bytes of scratch space the target's libraries get once, at load (a
  /// GEMM library's workspace), besides the state, arena and io regions.
  /// The memory plan and report count them, so the planned bytes are what
  /// the device allocates.
  virtual int64_t getLibraryWorkspaceBytes() const { return 0; }

  /// Whether the memory plan lets an elementwise op write over a buffer it
  /// reads element for element for the last time (eff-memory-plan
  /// in-place): right where the target's loops read before they write and
  /// nothing assumes the two do not overlap.
  virtual bool planElementwiseInPlace() const { return false; }

  /// Whether the target runs a step whose optimizer state lives in host
  /// memory (eff-offload-optimizer, effc --offload optimizer): its update
  /// must then run where the state is.
  virtual bool supportsOptimizerOffload() const { return true; }

  /// Whether the target's runtime runs host tasks (eff-host-tasks,
  /// effc --offload-overlap): the CPU's worker thread.
  virtual bool runsHostTasks() const { return false; }

  /// Where the device regions a host task touches live, eff-host-tasks'
  /// `abi`: "cpu" (the host's own memory) or "cuda" (GPU memory, staged
  /// through pinned host buffers).
  virtual llvm::StringRef getHostTaskAbi() const { return "cpu"; }

  /// Whether the update of offloaded state always runs as host tasks
  /// (the device cannot compute on host memory), --offload-overlap or not.
  bool offloadNeedsHostTasks() const { return getHostTaskAbi() != "cpu"; }

  /// Whether the target runs collectives (--world-size > 1, --zero).
  virtual bool supportsCollectives() const { return true; }

  /// Whether the target has a kernel for eff.attention (eff-fuse-attention
  /// runs only where it does).
  virtual bool supportsFusedAttention() const { return true; }

  /// The target's own attention kernels ("": the tiled linalg lowering
  /// every target can run). Named, eff-fuse-attention fuses only what they
  /// run (kernels=<name>), eff-autocast runs attention in low precision and
  /// eff.attention lowers to them (convert-eff-to-linalg attention=<name>).
  virtual llvm::StringRef getAttentionKernels() const { return ""; }

  /// The value of convert-eff-to-linalg's `convolution` that calls the
  /// target's convolution library ("library": oneDNN on cpu, "cudnn" on
  /// cuda; "": none), the one `--convolution` value besides im2col and
  /// direct that the target accepts.
  virtual llvm::StringRef getLibraryConvolution() const { return ""; }

  /// The most bytes of arguments one of the target's kernels may take (0:
  /// no limit): eff-fuse-elementwise fuses no further (CUDA kernel
  /// parameters hold 4352 bytes).
  virtual int64_t getMaxKernelArgumentBytes() const { return 0; }

  /// Appends passes that reshape the fused linalg ops on tensors for the
  /// target (after eff-fuse-elementwise, before bufferization: whatever
  /// temporaries they add are planned like any other). None by default.
  virtual void buildTensorPipeline(mlir::OpPassManager &pm) const {}

  /// Appends passes over the bufferized step once its library calls are
  /// formed, before eff-memory-plan (whatever buffers they add are planned
  /// like any other). None by default.
  virtual void buildBufferPipeline(mlir::OpPassManager &pm) const {}

  /// Appends the passes that take the memory-planned module (after
  /// eff-memory-plan: one entry function over the state, arena and io
  /// regions) to what serialize() reads. `options` are effc's (a GPU
  /// target's device code generation follows its optimization level).
  virtual void
  buildCodegenPipeline(mlir::OpPassManager &pm,
                       const CodegenOptions &options = {}) const = 0;

  /// The code of `module` (the codegen pipeline's output) as .effx sections
  /// and manifest fields. Errors are diagnostics on the module.
  virtual mlir::FailureOr<TargetArtifacts>
  serialize(mlir::ModuleOp module, const CodegenOptions &options) const = 0;
};

/// Makes `backend` available under its name (a second one of the same name
/// replaces the first).
void registerTargetBackend(std::unique_ptr<TargetBackend> backend);

/// The backend registered as `name`, or null.
const TargetBackend *lookupTargetBackend(llvm::StringRef name);

/// The registered names, sorted.
std::vector<std::string> getRegisteredTargetNames();

/// Drops the module's discardable eff.* attributes (the step ABI's), which
/// mean nothing to LLVM: what every serialize() does before translating.
void dropStepAbiAttributes(mlir::ModuleOp module);

} // namespace effopt

#endif // EFFOPT_TARGET_TARGETBACKEND_H
