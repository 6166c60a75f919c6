//===- Session.cpp - Training with a compiled .effx -----------------------===//

#include "effrt/Session.h"

#include "effrt/Error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <new>

using namespace effrt;

namespace {
std::string hex8(uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string out(8, '0');
  for (int i = 0; i < 8; ++i)
    out[7 - i] = digits[(value >> (4 * i)) & 15];
  return out;
}

constexpr const char *kCheckpointFormat = "effopt-checkpoint";
constexpr const char *kCheckpointVersion = "1";
} // namespace

struct Session::Impl {
  EffxFile file;
  std::unique_ptr<Device> device;
  std::vector<bool> inputSet;
  int64_t globalStep = 0;
  float lastLoss = 0;
  bool forwardRun = false; // forward() ran at least once
  bool stepInFlight = false; // launchStep() without finishStep()
  std::byte lossBytes[8] = {};

  explicit Impl(EffxFile f) : file(std::move(f)) {}
  const std::string &path() const { return file.path(); }
  const EffxManifest &manifest() const { return file.manifest(); }
  const EffxStateEntry &stateEntry(const std::string &name) const {
    const EffxStateEntry *e = manifest().findState(name);
    if (!e)
      fail(path(), ": the model has no state entry ", quoteName(name));
    return *e;
  }
  /// A view of the entry where the host can address the state (the CPU),
  /// else a copy.
  Tensor stateView(const EffxStateEntry &e) const {
    if (std::byte *state = device->hostPointer(regionOf(e)))
      return Tensor::view(e.dtype, e.shape, state + e.offset, nullptr);
    return readState(e);
  }
  Tensor readState(const EffxStateEntry &e) const {
    Tensor t = Tensor::zeros(e.dtype, e.shape);
    device->copyFromDevice(spanOf(e), t.mutableData());
    return t;
  }
  /// The region a state entry lives in: state, or host memory (effc
  /// --offload optimizer).
  static RegionKind regionOf(const EffxStateEntry &e) {
    return e.onHost ? RegionKind::Host : RegionKind::State;
  }
  static DeviceSpan spanOf(const EffxStateEntry &e) {
    return {regionOf(e), e.offset, e.byteSize};
  }
};

std::string effrt::stateLayoutId(const EffxManifest &manifest) {
  std::vector<const EffxStateEntry *> entries;
  for (const EffxStateEntry &e : manifest.state)
    entries.push_back(&e);
  std::sort(entries.begin(), entries.end(),
            [](const EffxStateEntry *a, const EffxStateEntry *b) {
              return a->name < b->name;
            });
  std::string text;
  for (const EffxStateEntry *e : entries) {
    text += e->name;
    text += ' ';
    text += dtypeName(e->dtype);
    text += ' ';
    text += formatShape(e->wholeShape());
    text += '\n';
  }
  return hex8(crc32(text.data(), text.size()));
}

Session::Session(EffxFile file, SessionOptions options)
    : impl_(std::make_unique<Impl>(std::move(file))) {
  Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  DeviceOptions deviceOptions(s.path(), options.collectives);
  deviceOptions.device = options.device;
  deviceOptions.manifest = &m;
  s.device = options.loadCode ? createDevice(m.target, deviceOptions)
                              : createHostMemoryDevice(deviceOptions);
  s.device->allocate(
      RegionSizes{m.stateBytes, m.arenaBytes, m.ioBytes, m.hostBytes});
  // The regions start as zeros: only the stored entries are copied (of a
  // sharded one, this rank's block).
  for (RegionKind region : {RegionKind::State, RegionKind::Host}) {
    if (region == RegionKind::Host && !m.hostBytes)
      continue;
    s.file.forEachStoredState(
        [&](uint64_t offset, const std::byte *data, uint64_t size) {
          s.device->copyToDevice({region, offset, size}, data);
        },
        s.device->collectives().rank(), region == RegionKind::Host);
  }
  s.inputSet.assign(m.inputs.size(), false);
  if (options.loadCode)
    s.device->loadCode(s.file);
}

Session Session::open(const std::string &effxPath, SessionOptions options) {
  return Session(EffxFile::open(effxPath), options);
}

Session::~Session() = default;
Session::Session(Session &&) noexcept = default;
Session &Session::operator=(Session &&) noexcept = default;

const EffxFile &Session::file() const { return impl_->file; }
const EffxManifest &Session::manifest() const { return impl_->manifest(); }

void Session::setInput(const std::string &name, const Tensor &rows,
                       std::string_view source) {
  Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const EffxTensor &input = m.inputs[i];
    if (input.name != name)
      continue;
    expectTensor(source.empty() ? std::string_view(s.path()) : source, "input",
                 name, rows, input.dtype, input.shape);
    s.device->copyToDevice({RegionKind::Io, input.offset, input.byteSize},
                           rows.data());
    s.inputSet[i] = true;
    return;
  }
  fail(s.path(), ": the model has no input ", quoteName(name));
}

void Session::setInputBytes(const std::string &name, const void *data,
                            size_t nbytes) {
  Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const EffxTensor &input = m.inputs[i];
    if (input.name != name)
      continue;
    if (nbytes != input.byteSize)
      fail(s.path(), ": input ", quoteName(name), " takes ", input.byteSize,
           " bytes (", dtypeName(input.dtype), " ", formatShape(input.shape),
           "), got ", nbytes);
    if (nbytes && !data)
      fail(s.path(), ": input ", quoteName(name), ": data is null");
    if (nbytes)
      s.device->copyToDevice({RegionKind::Io, input.offset, nbytes}, data);
    s.inputSet[i] = true;
    return;
  }
  fail(s.path(), ": the model has no input ", quoteName(name));
}

static float readLoss(const std::byte *p, DType dtype) {
  switch (dtype) {
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return static_cast<float>(v);
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return dtype == DType::F16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
  }
  default:
    return 0; // The manifest check admits only floating-point losses.
  }
}

/// Starts the code once on the session's regions, after checking that the
/// code is loaded and every input was set.
static void launchEntry(Session::Impl &s, const char *what) {
  const EffxManifest &m = s.manifest();
  if (!s.device->codeLoaded())
    fail(s.path(), ": this session was opened without its code; it cannot ",
         what);
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (!s.inputSet[i])
      fail(s.path(), ": input ", quoteName(m.inputs[i].name),
           " was not set before the ", what);
  s.device->launch();
}

float Session::step() {
  launchStep();
  return finishStep();
}

void Session::launchStep() {
  Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  if (m.kind != EffxKind::TrainStep)
    fail(s.path(), ": this is a forward (inference) function compiled with "
                   "effc --mode forward, not a training step: run it with "
                   "effrt_session_forward (Session::forward)");
  if (s.stepInFlight)
    fail(s.path(), ": a step is already in flight (finish it first)");
  launchEntry(s, "step");
  s.stepInFlight = true;
  s.device->copyFromDeviceAsync(
      {RegionKind::Io, m.lossOffset, dtypeSize(m.lossDType)}, s.lossBytes);
}

float Session::finishStep() {
  Impl &s = *impl_;
  if (!s.stepInFlight)
    fail(s.path(), ": no step is in flight (launchStep first)");
  s.stepInFlight = false;
  s.device->synchronize();
  s.lastLoss = readLoss(s.lossBytes, s.manifest().lossDType);
  ++s.globalStep;
  return s.lastLoss;
}

void Session::forward() {
  Impl &s = *impl_;
  if (s.manifest().kind != EffxKind::Forward)
    fail(s.path(), ": this is a training step; forward() runs only a forward "
                   "function (effc --mode forward)");
  launchEntry(s, "forward run");
  s.device->synchronize();
  s.forwardRun = true;
}

Tensor Session::readOutput(const std::string &name) const {
  const Impl &s = *impl_;
  const EffxTensor *out = s.manifest().findOutput(name);
  if (!out)
    fail(s.path(), ": the model has no output ", quoteName(name));
  if (!s.forwardRun)
    fail(s.path(), ": output ", quoteName(name),
         " is read before the first forward run");
  Tensor t = Tensor::zeros(out->dtype, out->shape);
  s.device->copyFromDevice({RegionKind::Io, out->offset, out->byteSize},
                           t.mutableData());
  return t;
}

int64_t Session::globalStep() const { return impl_->globalStep; }

std::optional<int64_t> Session::optimizerStep() const {
  const Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  if (!m.stepCounter)
    return std::nullopt;
  int64_t value;
  const EffxStateEntry &counter = m.state[*m.stepCounter];
  s.device->copyFromDevice({Impl::regionOf(counter), counter.offset, 8},
                           &value);
  return value;
}

NamedTensors Session::stateTensors() const {
  NamedTensors out;
  for (const EffxStateEntry &e : impl_->manifest().state)
    out.emplace_back(e.name, impl_->stateView(e));
  return out;
}

Tensor Session::readState(const std::string &name) const {
  return impl_->readState(impl_->stateEntry(name));
}

void Session::writeState(const std::string &name, const Tensor &value) {
  Impl &s = *impl_;
  const EffxStateEntry &e = s.stateEntry(name);
  expectTensor(s.path(), "state entry", name, value, e.dtype, e.shape);
  s.device->copyToDevice(Impl::spanOf(e), value.data());
}

float Session::lastLoss() const { return impl_->lastLoss; }

AllocatedBytes Session::allocated() const {
  const Device &device = *impl_->device;
  const RegionSizes &sizes = device.sizes();
  return AllocatedBytes{sizes.state, sizes.arena, sizes.io,
                        device.libraryWorkspaceBytes(),
                        device.measuredDeviceBytes(), sizes.host};
}

std::byte *Session::stateRegion() {
  return impl_->device->hostPointer(RegionKind::State);
}
std::byte *Session::arenaRegion() {
  return impl_->device->hostPointer(RegionKind::Arena);
}
std::byte *Session::ioRegion() {
  return impl_->device->hostPointer(RegionKind::Io);
}
Device &Session::device() { return *impl_->device; }
const Device &Session::device() const { return *impl_->device; }

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

/// CRC-32 of the entries' whole bytes in manifest order, as read by
/// `bytesOf`.
template <typename BytesOf>
static uint32_t stateCrc(const EffxManifest &m, BytesOf bytesOf) {
  uint32_t crc = 0;
  for (const EffxStateEntry &e : m.state)
    crc = crc32(bytesOf(e), e.wholeByteSize(), crc);
  return crc;
}

bool Session::hasShardedState() const {
  const EffxManifest &m = impl_->manifest();
  return std::any_of(m.state.begin(), m.state.end(),
                     [](const EffxStateEntry &e) { return e.sharded; });
}

NamedTensors Session::checkpointTensors() const {
  const Impl &s = *impl_;
  if (!hasShardedState())
    return stateTensors();
  // ZeRO: every rank's shard gathered, the padding dropped, in the whole
  // shape: what one process would hold.
  Collectives &collectives = s.device->collectives();
  const uint64_t n = static_cast<uint64_t>(collectives.worldSize());
  NamedTensors out;
  for (const EffxStateEntry &e : s.manifest().state) {
    if (!e.sharded) {
      out.emplace_back(e.name, s.stateView(e));
      continue;
    }
    Tensor shard = s.readState(e);
    std::vector<std::byte> all(e.byteSize * n);
    collectives.allGatherHost(shard.data(), all.data(), e.byteSize);
    out.emplace_back(e.name, Tensor::copyOf(e.dtype, e.shardOf, all.data(),
                                            e.wholeByteSize()));
  }
  return out;
}

Metadata Session::checkpointMetadata() const {
  return metadataOf(checkpointTensors());
}

Metadata Session::metadataOf(const NamedTensors &state) const {
  const Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  size_t i = 0;
  uint32_t crc = stateCrc(m, [&](const EffxStateEntry &) {
    return static_cast<const void *>(state[i++].second.data());
  });
  return Metadata{{"format", kCheckpointFormat},
                  {"version", kCheckpointVersion},
                  {"model", m.model},
                  {"layout", stateLayoutId(m)},
                  {"step", std::to_string(s.globalStep)},
                  {"state_crc32", hex8(crc)}};
}

void Session::save(const std::string &path) const {
  NamedTensors state = checkpointTensors();
  // Sharded state: every rank took part in gathering it; rank 0 writes.
  if (hasShardedState() && impl_->device->collectives().rank() != 0)
    return;
  writeSafeTensors(path, state, metadataOf(state));
}

NamedTensors Session::mergedLoraWeights() const {
  const Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  if (m.loraAdapters.empty())
    fail(s.path(), ": the model has no LoRA adapters (compile it with effc "
                   "--lora) to merge");
  for (const EffxManifest::LoraAdapter &a : m.loraAdapters)
    if (!a.storage.empty())
      fail(s.path(), ": cannot merge the LoRA adapters of ",
           quoteName(a.weight), ": its base weight is stored as ", a.storage,
           " (effc --qlora); the checkpoint holds the adapters under peft's "
           "names, to merge into the original weights");
  std::map<std::string, const EffxManifest::LoraAdapter *> byWeight;
  std::set<std::string> adapterNames;
  for (const EffxManifest::LoraAdapter &a : m.loraAdapters) {
    byWeight[a.weight] = &a;
    adapterNames.insert(a.loraA);
    adapterNames.insert(a.loraB);
  }
  NamedTensors merged;
  for (const EffxStateEntry &e : m.state) {
    // Optimizer state, the adapters, and device copies of master weights
    // (effc --offload optimizer) are not weights of the merged model.
    if (e.role == StateRole::OptimizerState || adapterNames.count(e.name) ||
        !e.copyOf.empty())
      continue;
    Tensor value = readState(e.name);
    auto it = byWeight.find(e.name);
    if (it != byWeight.end()) {
      const EffxManifest::LoraAdapter &a = *it->second;
      if (e.dtype != DType::F32)
        fail(s.path(), ": cannot merge the LoRA adapters of ",
             quoteName(e.name), ": it is ", dtypeName(e.dtype),
             " (merging supports float32)");
      Tensor A = readState(a.loraA), B = readState(a.loraB);
      const int64_t rank = A.shape()[0], in = A.shape()[1],
                    out = B.shape()[0];
      float *w = reinterpret_cast<float *>(value.mutableData());
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
          double sum = 0;
          for (int64_t r = 0; r < rank; ++r)
            sum += static_cast<double>(B.load<float>(o * rank + r)) *
                   static_cast<double>(A.load<float>(r * in + i));
          // out x in, or in x out for a weight read as x @ W.
          int64_t at = a.transposed ? i * out + o : o * in + i;
          w[at] = static_cast<float>(static_cast<double>(w[at]) +
                                     a.scaling * sum);
        }
    }
    merged.emplace_back(e.name, std::move(value));
  }
  return merged;
}

void Session::saveMergedLora(const std::string &path) const {
  const EffxManifest &m = manifest();
  writeSafeTensors(path, mergedLoraWeights(),
                   Metadata{{"format", "effopt-merged-lora"},
                            {"model", m.model},
                            {"step", std::to_string(impl_->globalStep)}});
}

static std::string describe(DType dtype, const Shape &shape) {
  return std::string(dtypeName(dtype)) + " " + formatShape(shape);
}

void Session::load(const std::string &path) {
  Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  SafeTensorsFile file = SafeTensorsFile::open(path);
  const Metadata &meta = file.metadata();
  auto get = [&](const char *key) -> std::string {
    auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
  };
  if (get("format") != kCheckpointFormat)
    fail(path, ": not an effopt checkpoint (its metadata lacks format '",
         kCheckpointFormat, "')");
  if (get("version") != kCheckpointVersion)
    fail(path, ": unsupported checkpoint version ", quoteName(get("version")),
         " (this runtime reads version ", kCheckpointVersion, ")");

  // Does every tensor fit? Find the first difference, to say what it is.
  std::string mismatch;
  for (const EffxStateEntry &e : m.state) {
    if (!file.contains(e.name)) {
      mismatch = "it has no tensor " + quoteName(e.name);
      break;
    }
    const TensorEntry &t = file.entry(e.name);
    if (t.dtype != e.dtype || t.shape != e.wholeShape()) {
      mismatch = "its " + quoteName(e.name) + " is " +
                 describe(t.dtype, t.shape) + ", the model's is " +
                 describe(e.dtype, e.wholeShape());
      break;
    }
  }
  if (mismatch.empty())
    for (const std::string &name : file.names())
      if (!m.findState(name)) {
        mismatch = "its tensor " + quoteName(name) +
                   " is not part of the model's state";
        break;
      }
  std::string layout = get("layout"), ours = stateLayoutId(m);
  if (mismatch.empty() && layout != ours)
    mismatch = "its state layout is " + quoteName(layout) + ", the model's " +
               quoteName(ours);
  if (!mismatch.empty())
    fail(path, ": checkpoint of model ", quoteName(get("model")),
         " does not fit ", s.path(), " (model ", quoteName(m.model), "): ",
         mismatch);

  int64_t step = -1;
  std::string stepText = get("step");
  if (!stepText.empty() && stepText.size() <= 18 &&
      std::all_of(stepText.begin(), stepText.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    step = std::stoll(stepText);
  if (step < 0)
    fail(path, ": corrupt checkpoint: metadata 'step' is ", quoteName(stepText),
         ", expected a non-negative integer");

  std::string crcText = get("state_crc32");
  if (!crcText.empty()) {
    uint32_t crc = stateCrc(m, [&](const EffxStateEntry &e) {
      return static_cast<const void *>(file.read(e.name).data());
    });
    if (hex8(crc) != crcText)
      fail(path, ": corrupt checkpoint: the tensors' CRC-32 is ", hex8(crc),
           ", the metadata says ", quoteName(crcText));
  }

  for (const EffxStateEntry &e : m.state) {
    if (!e.sharded) {
      s.device->copyToDevice(Impl::spanOf(e), file.read(e.name).data());
      continue;
    }
    // ZeRO: this rank's shard of the whole tensor, zero-padded at the end;
    // the checkpoint may come from any number of ranks.
    std::vector<std::byte> shard(e.byteSize);
    uint64_t first = static_cast<uint64_t>(s.device->collectives().rank()) *
                     e.byteSize;
    uint64_t whole = e.wholeByteSize();
    if (first < whole)
      std::memcpy(shard.data(), file.read(e.name).data() + first,
                  std::min(e.byteSize, whole - first));
    s.device->copyToDevice(Impl::spanOf(e), shard.data());
  }
  s.globalStep = step;
}
