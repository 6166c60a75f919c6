//===- Effx.h - Reading compiled .effx models -------------------*- C++ -*-===//
//
// EffxFile maps an .effx (see EffxFormat.h and docs/Effx.md) and validates
// all of it when it is opened: the header (magic, version, size, CRC), the
// three sections (aligned, inside the file, not overlapping, CRCs), and the
// manifest (well-formed, every tensor inside its region, state entries not
// overlapping, known dtypes and roles, an initial state as large as the
// state region). Every problem is an effrt::Error naming the file:
//
//   model.effx: truncated: code section ends at byte 9216 but the file has 4096 bytes
//
// loadCode() then loads the code section into the process (memfd + dlopen)
// and finds the entry point. Nothing in this file depends on the model.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_EFFX_H
#define EFFRT_EFFX_H

#include "effrt/EffxFormat.h"
#include "effrt/File.h"
#include "effrt/Tensor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace effrt {

/// What a state entry is for. Only trainable parameters are updated by the
/// optimizer; every role is saved in checkpoints.
enum class StateRole { Trainable, Frozen, Buffer, OptimizerState };

/// "trainable", "frozen", "buffer", "optimizer_state".
std::string_view stateRoleName(StateRole role);
std::optional<StateRole> stateRoleFromName(std::string_view name);

/// A tensor at a fixed byte offset inside one of the regions.
struct EffxTensor {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t offset = 0;   ///< bytes from the start of its region
  uint64_t byteSize = 0; ///< elements x dtype size
};

struct EffxStateEntry : EffxTensor {
  StateRole role = StateRole::Trainable;
};

/// What the code computes: one training step, or a forward (inference)
/// function (effc --mode forward).
enum class EffxKind { TrainStep, Forward };

/// "train_step", "forward".
std::string_view effxKindName(EffxKind kind);

/// The manifest, parsed and checked. Informative fields the runtime does not
/// interpret ("training", "pipeline") stay in `json`.
struct EffxManifest {
  std::string model, source, target, compiler, entry;
  /// "minor_version" (0 when absent).
  uint64_t minorVersion = 0;
  EffxKind kind = EffxKind::TrainStep;
  int64_t batchSize = 0;
  uint64_t stateBytes = 0, arenaBytes = 0, ioBytes = 0;
  /// The loss scalar in the io region (TrainStep only).
  uint64_t lossOffset = 0;
  DType lossDType = DType::F32;
  /// Graph inputs in ONNX order, in the io region.
  std::vector<EffxTensor> inputs;
  /// Graph outputs in ONNX order, in the io region (Forward only).
  std::vector<EffxTensor> outputs;
  /// State entries in manifest order, in the state region.
  std::vector<EffxStateEntry> state;
  /// Index into `state` of the int64 optimizer step counter, if any.
  std::optional<size_t> stepCounter;
  /// "loss_scaling" (a step compiled with eff-loss-scaling): its state is
  /// the `loss_scale.*` entries.
  struct LossScaling {
    bool dynamic = true;
    /// The scale never goes below this (0: no floor).
    double minScale = 0;
  };
  std::optional<LossScaling> lossScaling;
  /// The manifest text as stored.
  std::string json;

  /// The input, output or state entry named `name`, or null.
  const EffxTensor *findInput(const std::string &name) const;
  const EffxTensor *findOutput(const std::string &name) const;
  const EffxStateEntry *findState(const std::string &name) const;
};

/// The loaded code of an .effx: keeps the shared object loaded while any
/// copy is alive.
class EffxCode {
public:
  EffxStepFn entry() const { return entry_; }

  struct Handle;

private:
  friend class EffxFile;
  EffxCode(std::shared_ptr<Handle> handle, EffxStepFn entry)
      : handle_(std::move(handle)), entry_(entry) {}
  std::shared_ptr<Handle> handle_;
  EffxStepFn entry_ = nullptr;
};

/// An open, validated .effx file. Cheap to copy; copies share the mapping.
class EffxFile {
public:
  /// Maps and validates `path`. Throws Error naming the file.
  static EffxFile open(const std::string &path);
  /// Validates an .effx held in memory; `displayName` stands for the path.
  static EffxFile fromBytes(SharedBytes bytes, std::string displayName);

  const std::string &path() const;
  const EffxHeader &header() const;
  const EffxManifest &manifest() const;

  /// The code section (for "cpu-x86_64": an ELF shared object).
  const std::byte *codeData() const;
  uint64_t codeSize() const;
  /// The initial bytes of the state region (manifest().stateBytes bytes).
  const std::byte *initialState() const;

  /// Loads the code into this process and resolves the entry point. The
  /// process must provide effrt_sgemm, effrt_sgemm_batched and libm (effrun
  /// and libeffrt.so do). Throws Error naming the file (and dlerror()) when
  /// the target is not this machine's or the code cannot be loaded.
  EffxCode loadCode() const;

  struct Impl;

private:
  explicit EffxFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// The target string of code this runtime can load ("cpu-x86_64" on
/// x86-64 hosts).
const char *hostTarget();

} // namespace effrt

#endif // EFFRT_EFFX_H
