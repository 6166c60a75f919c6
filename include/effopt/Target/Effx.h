//===- Effx.h - writing the .effx compiled-model file -----------*- C++ -*-===//
//
// The layout of the training step (which tensor lives where in the state and
// io regions) is read from @train_step after eff-step-abi, together with the
// initial values of the persistent tensors; after lowering, the arena size
// completes it. A target backend supplies the code as sections (host code,
// device binaries) and the manifest fields that name the target ("target",
// "entry", ...); writeEffx adds the manifest and the initial state. The
// container format is runtime/include/effrt/EffxFormat.h, shared with the
// runtime.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_TARGET_EFFX_H
#define EFFOPT_TARGET_EFFX_H

#include "effrt/EffxFormat.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace effopt {

struct StepTensor {
  std::string name;
  std::string role; // trainable | frozen | buffer | optimizer_state | input
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t bytes = 0;
  /// A state entry in the host region (eff-offload-optimizer): `offset` is
  /// in the host region, its initial bytes in StepLayout::hostInitialState.
  bool onHost = false;
  /// The device's low-precision copy of the state entry of this name (an
  /// fp32 master weight in the host region); empty otherwise.
  std::string copyOf;
  /// ZeRO: the whole shape this 1-D state entry is one rank's shard of
  /// (flattened, zero-padded to a multiple of the world size); empty when
  /// every rank holds the whole tensor.
  std::optional<std::vector<int64_t>> shardOf;
  /// ZeRO-3: the whole tensor's initial bytes of a sharded parameter (the
  /// .effx stores them whole; each rank takes its block at the start).
  std::vector<char> wholeInitial;
};

struct StepLayout {
  /// "train_step" (one training step, the loss in io) or "forward" (the
  /// imported @forward: every graph output in io, state read-only).
  std::string kind = "train_step";
  std::vector<StepTensor> state;
  std::vector<StepTensor> inputs;
  /// Graph outputs in ONNX order, in io ("forward" only).
  std::vector<StepTensor> outputs;
  int64_t stateBytes = 0, ioBytes = 0, arenaBytes = 0;
  /// The host region (state kept in host memory, eff-offload-optimizer);
  /// 0 when the step has none.
  int64_t hostBytes = 0;
  /// The target libraries' scratch space, allocated once at load besides
  /// the regions (TargetBackend::getLibraryWorkspaceBytes).
  int64_t workspaceBytes = 0;
  /// Pinned host memory a GPU's host tasks stage device bytes in
  /// (eff-host-tasks abi=cuda); 0 when the step has none.
  int64_t hostStagingBytes = 0;
  int64_t lossOffset = 0;
  std::string lossDtype; // "train_step" only
  std::string stepCounter; // empty without an optimizer step counter
  int64_t batchSize = 0;
  std::vector<char> initialState; // stateBytes bytes
  std::vector<char> hostInitialState; // hostBytes bytes
};

/// Reads the layout eff-step-abi recorded on @train_step (or on @forward
/// with eff-step-abi{mode=forward}) and copies every persistent tensor's
/// initial value into `initialState` (unless `withInitialState` is false:
/// planning a model whose weights are never needed, e.g. effopt.plan on a
/// billion parameters, copies nothing).
mlir::FailureOr<StepLayout> readStepLayout(mlir::ModuleOp module,
                                           bool withInitialState = true);

/// The dtype name the runtime uses for an element type ("float32", "bool").
std::string dtypeName(mlir::Type elementType);

/// One section a target backend contributes to an .effx: host code (for
/// "cpu-x86_64" the ELF shared object), a device binary, ...
struct EffxSectionData {
  effrt::EffxSectionKind kind = effrt::EffxSectionKind::HostCode;
  /// Up to 24 bytes; empty: not target-specific.
  std::string target;
  /// Up to 40 bytes; (kind, target, name) is unique in a file.
  std::string name;
  std::vector<char> bytes;
  /// A runtime that does not know `kind` refuses the file (true) or skips
  /// the section (false).
  bool required = true;
};

/// Writes the .effx file atomically (temporary file + rename): the manifest
/// (`description`'s fields, which must name the "target" and the "entry",
/// plus the layout), `codeSections`, and the initial state section, which
/// holds the bytes of every state entry that does not start as zeros (those
/// are marked `"init": "zeros"`).
mlir::LogicalResult writeEffx(llvm::StringRef path, const StepLayout &layout,
                              llvm::ArrayRef<EffxSectionData> codeSections,
                              const llvm::json::Object &description,
                              mlir::Location loc);

} // namespace effopt

#endif // EFFOPT_TARGET_EFFX_H
