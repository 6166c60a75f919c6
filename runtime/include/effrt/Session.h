//===- Session.h - Training with a compiled .effx ---------------*- C++ -*-===//
//
// A Session drives one compiled step on a Device (Device.h) made for the
// manifest's target: the device holds the three memory regions — state
// (parameters, buffers, optimizer state, step counter), arena (every
// temporary of the step, at offsets planned by the compiler) and io (the
// batch and the loss, or a forward function's outputs) — allocated once,
// with exactly the sizes the manifest gives, and runs the code. The session
// copies the initial state in, and inputs, outputs, the loss and state out
// of it through the device (zero-copy views on the CPU). Each step():
//
//   setInput("x", rows); setInput("y", labels);   // copy one batch into io
//   float loss = session.step();                  // forward, backward, update
//
// An .effx compiled with `effc --mode forward` is an inference function
// instead: forward() runs it and readOutput("y") copies a graph output.
//
// save() and load() write and read the state as a safetensors checkpoint
// (see docs/Effx.md): every state entry under its manifest name, plus
// metadata identifying the model and its state layout.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SESSION_H
#define EFFRT_SESSION_H

#include "effrt/Device.h"
#include "effrt/Effx.h"
#include "effrt/SafeTensors.h"
#include "effrt/Tensor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace effrt {

struct SessionOptions {
  /// Load the code section (false: a session that can set inputs, save and
  /// load, but not step — for tools and tests on machines of another target).
  bool loadCode = true;
  /// The GPU to run on (effrun --device N); a CPU model refuses one.
  std::optional<int> device;
  /// The ranks of a data-parallel run (null: one rank). The session takes
  /// its rank's block of every sharded entry stored whole (ZeRO-3
  /// parameters) when it starts.
  std::shared_ptr<Collectives> collectives;
};

/// Bytes the session allocated for each region.
struct AllocatedBytes {
  uint64_t state = 0, arena = 0, io = 0;
  /// The libraries' workspace (a GPU's cuBLASLt), planned like the regions.
  uint64_t workspace = 0;
  /// What the device reports it gave (0: unknown; see
  /// Device::measuredDeviceBytes).
  uint64_t measuredDevice = 0;
  /// The host region (optimizer state in host memory, effc --offload
  /// optimizer): not the device's, not in total().
  uint64_t host = 0;
  uint64_t total() const { return state + arena + io + workspace; }
};

class Session {
public:
  /// Allocates the regions, copies the initial state and (by default) loads
  /// the code. Throws Error naming the file.
  explicit Session(EffxFile file, SessionOptions options = {});
  static Session open(const std::string &effxPath, SessionOptions options = {});
  ~Session();
  Session(Session &&) noexcept;
  Session &operator=(Session &&) noexcept;
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  const EffxFile &file() const;
  const EffxManifest &manifest() const;

  /// Copies one batch into input `name`. `rows` must have exactly the
  /// input's dtype and shape; otherwise the error names `source` (the data
  /// file; the .effx when empty), the input, and both shapes and dtypes.
  void setInput(const std::string &name, const Tensor &rows,
                std::string_view source = {});
  /// The same from raw bytes, which must be exactly the input's size.
  void setInputBytes(const std::string &name, const void *data, size_t nbytes);

  /// Runs one training step on the inputs set and returns its loss (the
  /// forward pass's, before the update). Every input must have been set at
  /// least once. The same as launchStep() then finishStep().
  float step();
  /// Starts a training step and returns without waiting for it on a device
  /// that queues work (a GPU; the CPU runs it here). Inputs set before
  /// finishStep() are the next step's: the step in flight keeps its own.
  void launchStep();
  /// Waits for the step launchStep() started and returns its loss, read
  /// back asynchronously after the step.
  float finishStep();

  /// Runs a forward (inference) function — an .effx compiled with
  /// `effc --mode forward` — on the inputs set: every graph output is then
  /// in io (readOutput). The state is not changed and no step is counted.
  /// Every input must have been set at least once.
  void forward();
  /// A copy of graph output `name` after forward() (dtype and shape as in
  /// the manifest's "outputs").
  Tensor readOutput(const std::string &name) const;

  /// Steps taken since the initial state, including those before a
  /// checkpoint this session loaded.
  int64_t globalStep() const;
  /// The optimizer's step counter (state entry "step_counter"), if the
  /// model has one.
  std::optional<int64_t> optimizerStep() const;

  /// Read-only views of the state entries (valid until the next step or
  /// load) in manifest order; copies on a device whose memory the host
  /// cannot address.
  NamedTensors stateTensors() const;
  /// A copy of state entry `name`.
  Tensor readState(const std::string &name) const;
  /// Overwrites state entry `name` (dtype and shape must match).
  void writeState(const std::string &name, const Tensor &value);
  /// The loss of the last step.
  float lastLoss() const;

  /// Whether some state entries are this rank's shards (ZeRO stages 1-2).
  bool hasShardedState() const;
  /// The state as a checkpoint holds it, in manifest order: stateTensors(),
  /// except that sharded entries are gathered from every rank into the
  /// whole tensor (then every rank must call it, in the same order).
  NamedTensors checkpointTensors() const;
  /// Writes a checkpoint atomically (temp file + fsync + rename): the
  /// whole state, as one process holds it, under the same names. With
  /// sharded state every rank calls it (they gather the shards) and rank 0
  /// writes.
  void save(const std::string &path) const;
  /// Restores a checkpoint written by save() for the same model, compiled
  /// for any world size (a sharded entry takes its rank's shard of the
  /// whole tensor). Everything is checked before anything is copied: on
  /// error the state is unchanged.
  void load(const std::string &path);
  /// The checkpoint metadata save() writes (collective as
  /// checkpointTensors()).
  Metadata checkpointMetadata() const;
  /// The metadata of checkpointTensors() `state`.
  Metadata metadataOf(const NamedTensors &state) const;

  /// The model's weights with its LoRA adapters merged (a model compiled
  /// with effc --lora): every trainable, frozen and buffer entry but the
  /// adapters, each adapted weight W replaced by W + scaling * B A (the
  /// product accumulated in double, rounded once). Throws Error when the
  /// model has no adapters.
  NamedTensors mergedLoraWeights() const;
  /// Writes mergedLoraWeights() as safetensors (atomically), under the
  /// original parameter names: the plain model's weights (no optimizer
  /// state), loadable by torch's load_state_dict.
  void saveMergedLora(const std::string &path) const;

  /// Bytes allocated per region (equal to the manifest's "regions").
  AllocatedBytes allocated() const;

  /// The raw regions (for tests and bindings): null on a device whose
  /// memory the host cannot address.
  std::byte *stateRegion();
  std::byte *arenaRegion();
  std::byte *ioRegion();

  /// The device the step runs on (a multi-rank run gives it its
  /// collectives: device().setCollectives(...)).
  Device &device();
  const Device &device() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

/// The layout identifier of a model's state: CRC-32, as 8 lowercase hex
/// digits, of the lines "NAME DTYPE SHAPE\n" of every state entry sorted by
/// name (e.g. "net.0.bias float32 [128]\n"). A checkpoint fits a model iff
/// the identifiers are equal.
std::string stateLayoutId(const EffxManifest &manifest);

} // namespace effrt

#endif // EFFRT_SESSION_H
