//===- Effx.h - Reading compiled .effx models -------------------*- C++ -*-===//
//
// EffxFile maps an .effx (see EffxFormat.h and docs/Effx.md) and validates
// all of it when it is opened: the header (magic, version, size, CRC), the
// section table (its CRC; every section aligned, inside the file, not
// overlapping another or the table, unique by kind, target and name, of a
// kind this runtime knows unless optional; every section's CRC), and the
// manifest (well-formed, every tensor inside its region, state entries not
// overlapping, known dtypes and roles, an initial state section holding
// exactly the stored entries). Every problem is an effrt::Error naming the
// file:
//
//   model.effx: truncated: code section ends at byte 9216 but the file has 4096 bytes
//
// Version-1 files (three fixed sections) are read too: their sections are
// presented as a table and their state image as stored entries.
//
// Once a section has been used (checked, parsed, copied, loaded) its pages
// are released from the process (madvise), so an open file costs no
// resident memory beyond what was copied out of it. Devices (Device.h) load
// the code sections for their target; Session copies the initial state.
// Nothing in this file depends on the model.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_EFFX_H
#define EFFRT_EFFX_H

#include "effrt/EffxFormat.h"
#include "effrt/File.h"
#include "effrt/Tensor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  /// `"init": "zeros"`: the entry starts as zeros and has no bytes in the
  /// initial state section (version 2).
  bool zeroInit = false;
  /// `"shard_of": [d0, ...]` (ZeRO stages 1-3): this 1-D f32 entry of S
  /// elements is this rank's shard, elements [rank*S, (rank+1)*S), of the
  /// tensor of this shape flattened and zero-padded to world_size*S
  /// elements (S = ceil(elements / world_size)). Only when `sharded`.
  Shape shardOf;
  bool sharded = false;
  /// `"region": "host"` (effc --offload optimizer): the entry lives in the
  /// host region, `offset` counted from its start.
  bool onHost = false;
  /// `"copy_of": NAME` (effc --offload optimizer under autocast): this
  /// entry is the device's low-precision copy of the state entry NAME (an
  /// fp32 master weight in the host region), which the step keeps equal to
  /// its cast; empty otherwise. Not a weight of its own (a merge skips it).
  std::string copyOf;
  /// The shape and bytes of the whole tensor (checkpoints hold it whole).
  const Shape &wholeShape() const { return sharded ? shardOf : shape; }
  uint64_t wholeByteSize() const;
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
  /// "version" (as the header's) and "minor_version" (0 when absent).
  uint64_t version = 0, minorVersion = 0;
  EffxKind kind = EffxKind::TrainStep;
  int64_t batchSize = 0;
  uint64_t stateBytes = 0, arenaBytes = 0, ioBytes = 0;
  /// `regions.host`: state kept in host memory (0 when absent); the entry
  /// point then takes it as a fourth region.
  uint64_t hostBytes = 0;
  /// The loss scalar in the io region (TrainStep only).
  uint64_t lossOffset = 0;
  DType lossDType = DType::F32;
  /// Graph inputs in ONNX order, in the io region.
  std::vector<EffxTensor> inputs;
  /// Graph outputs in ONNX order, in the io region (Forward only).
  std::vector<EffxTensor> outputs;
  /// State entries in manifest order, in the state region (or the host
  /// region: EffxStateEntry::onHost).
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
  /// "world_size": the ranks the step was compiled for (eff-zero: it
  /// sums its gradients across them); 1 when absent.
  int64_t worldSize = 1;
  /// "lora" (a step compiled with effc --lora): each adapted weight and its
  /// adapters, for merging W + scaling * B A (Session::mergedLoraWeights).
  struct LoraAdapter {
    std::string weight, loraA, loraB;
    double scaling = 0;
    /// The weight is stored in x out (`x @ W`): W + scaling * (B A)^T.
    bool transposed = false;
    /// "nf4": the base weight is stored as `<weight>.nf4` and its scales
    /// (effc --qlora), not mergeable here; empty: stored as itself.
    std::string storage;
  };
  std::vector<LoraAdapter> loraAdapters;
  /// The manifest text as stored.
  std::string json;

  /// The input, output or state entry named `name`, or null.
  const EffxTensor *findInput(const std::string &name) const;
  const EffxTensor *findOutput(const std::string &name) const;
  const EffxStateEntry *findState(const std::string &name) const;
};

/// One section of an .effx, as its table entry says.
struct EffxSection {
  /// May be a kind this runtime does not know (then the section is
  /// optional: it was validated like any other and is otherwise ignored).
  EffxSectionKind kind = EffxSectionKind::Manifest;
  uint32_t flags = 0;
  std::string target, name;
  uint64_t offset = 0, size = 0;
  uint32_t crc32 = 0;

  bool required() const { return flags & kEffxSectionRequired; }
};

/// "manifest", "host_code", "device_code", "initial_state", or "kind N".
std::string effxSectionKindName(EffxSectionKind kind);
/// Whether this runtime knows `kind`.
bool isKnownEffxSectionKind(EffxSectionKind kind);

/// An open, validated .effx file. Cheap to copy; copies share the mapping.
class EffxFile {
public:
  /// Maps and validates `path`. Throws Error naming the file.
  static EffxFile open(const std::string &path);
  /// Validates an .effx held in memory; `displayName` stands for the path.
  static EffxFile fromBytes(SharedBytes bytes, std::string displayName);

  const std::string &path() const;
  /// The version in the header (1 or 2).
  uint32_t version() const;
  const EffxManifest &manifest() const;

  /// Every section in table order (version 1: manifest, code, state).
  const std::vector<EffxSection> &sections() const;
  /// The section of this kind, target and name, or null.
  const EffxSection *findSection(EffxSectionKind kind,
                                 std::string_view target,
                                 std::string_view name) const;
  /// The sections of this kind and target, in table order.
  std::vector<const EffxSection *> sectionsFor(EffxSectionKind kind,
                                               std::string_view target) const;
  /// How messages name a section: "code", "state", "manifest", "device
  /// code", "kind 7", with its name and target when the file has several of
  /// that kind ("code 'step' for cpu-x86_64").
  std::string describe(const EffxSection &section) const;
  /// The section's bytes, valid while any copy of this EffxFile lives.
  /// Reading them again after releaseSection() brings them back from the file.
  const std::byte *sectionData(const EffxSection &section) const;
  /// Drops the section's pages from this process's resident memory (a file
  /// opened with open(); nothing for bytes given to fromBytes()).
  void releaseSection(const EffxSection &section) const;

  /// Bytes of initial state the file stores (version 2: the entries not
  /// marked `"init": "zeros"`; version 1: the whole state region).
  uint64_t storedStateBytes() const;
  /// Calls `write(offset, data, size)` for every stored range of the
  /// initial state (in pieces of at most 16 MiB), `offset` in the state
  /// region, releasing each piece's pages once written. Bytes of the state
  /// region outside these ranges start as zero. A sharded entry (ZeRO-3
  /// parameters) stores its whole tensor: rank `rank` gets its block of it
  /// (the bytes past the whole tensor, padding, stay zero).
  /// With `host`, the same for the entries in the host region (offsets
  /// in it) instead of the state region's.
  void forEachStoredState(
      const std::function<void(uint64_t offset, const std::byte *data,
                               uint64_t size)> &write,
      int rank = 0, bool host = false) const;
  /// Writes the initial state of rank `rank` into `region`
  /// (manifest().stateBytes bytes, host memory): zeros, then every stored
  /// range. With `host`, the host region's (manifest().hostBytes bytes).
  void copyInitialState(std::byte *region, int rank = 0,
                        bool host = false) const;

  struct Impl;

private:
  explicit EffxFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  static EffxFile fromBytesImpl(SharedBytes bytes, std::string displayName,
                                bool fileMapped);
  std::shared_ptr<const Impl> impl_;
};

/// The target of this machine's CPU ("cpu-x86_64" on x86-64 hosts): what
/// the CPU device runs (Device.h).
const char *hostTarget();

} // namespace effrt

#endif // EFFRT_EFFX_H
