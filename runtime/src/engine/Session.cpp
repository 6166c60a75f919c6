//===- Session.cpp - Training with a compiled .effx -----------------------===//

#include "effrt/Session.h"

#include "effrt/Error.h"
#include "effrt/Kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

using namespace effrt;

namespace {
/// A 64-byte aligned, zero-filled region; empty regions have no storage.
class Region {
public:
  Region() = default;
  Region(const std::string &path, const char *name, uint64_t size)
      : size_(size) {
    if (!size)
      return;
    if (size > SIZE_MAX - kEffxAlignment)
      fail(path, ": the ", name, " region of ", size,
           " bytes is too large for this machine");
    data_ = static_cast<std::byte *>(
        std::aligned_alloc(kEffxAlignment, static_cast<size_t>(size)));
    if (!data_)
      fail(path, ": cannot allocate ", size, " bytes for the ", name,
           " region");
    // Touch every page now: the step then runs in committed memory, and
    // what the process uses is what the compiler planned.
    std::memset(data_, 0, static_cast<size_t>(size));
  }
  ~Region() { std::free(data_); }
  Region(Region &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  Region &operator=(Region &&other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }

  std::byte *data() const { return data_; }
  uint64_t size() const { return size_; }
  MemRef1D memref() const {
    return MemRef1D{data_, data_, 0, static_cast<int64_t>(size_), 1};
  }

private:
  std::byte *data_ = nullptr;
  uint64_t size_ = 0;
};

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

// Compiled code imports the kernels from the process. Referencing them here
// links them into every program that runs a Session; such a program must
// export them to loaded code (-rdynamic, CMake's ENABLE_EXPORTS).
extern "C" {
extern void *const effrt_kernel_symbols[];
void *const effrt_kernel_symbols[] = {
    reinterpret_cast<void *>(&effrt_sgemm),
    reinterpret_cast<void *>(&effrt_sgemm_batched)};
}

struct Session::Impl {
  EffxFile file;
  std::optional<EffxCode> code;
  Region state, arena, io;
  std::vector<bool> inputSet;
  int64_t globalStep = 0;
  float lastLoss = 0;
  bool forwardRun = false; // forward() ran at least once

  explicit Impl(EffxFile f) : file(std::move(f)) {}
  const std::string &path() const { return file.path(); }
  const EffxManifest &manifest() const { return file.manifest(); }
  const EffxStateEntry &stateEntry(const std::string &name) const {
    const EffxStateEntry *e = manifest().findState(name);
    if (!e)
      fail(path(), ": the model has no state entry ", quoteName(name));
    return *e;
  }
  Tensor stateView(const EffxStateEntry &e) const {
    return Tensor::view(e.dtype, e.shape, state.data() + e.offset, nullptr);
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
    text += formatShape(e->shape);
    text += '\n';
  }
  return hex8(crc32(text.data(), text.size()));
}

Session::Session(EffxFile file, SessionOptions options)
    : impl_(std::make_unique<Impl>(std::move(file))) {
  Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  s.state = Region(s.path(), "state", m.stateBytes);
  s.arena = Region(s.path(), "arena", m.arenaBytes);
  s.io = Region(s.path(), "io", m.ioBytes);
  if (m.stateBytes)
    std::memcpy(s.state.data(), s.file.initialState(), m.stateBytes);
  s.inputSet.assign(m.inputs.size(), false);
  if (options.loadCode)
    s.code = s.file.loadCode();
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
    if (input.byteSize)
      std::memcpy(s.io.data() + input.offset, rows.data(), input.byteSize);
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
      std::memcpy(s.io.data() + input.offset, data, nbytes);
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

/// Calls the entry point once on the session's regions, after checking
/// that the code is loaded and every input was set.
static void callEntry(Session::Impl &s, const char *what) {
  const EffxManifest &m = s.manifest();
  if (!s.code)
    fail(s.path(), ": this session was opened without its code; it cannot ",
         what);
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (!s.inputSet[i])
      fail(s.path(), ": input ", quoteName(m.inputs[i].name),
           " was not set before the ", what);
  MemRef1D state = s.state.memref(), arena = s.arena.memref(),
           io = s.io.memref();
  s.code->entry()(&state, &arena, &io);
}

float Session::step() {
  Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  if (m.kind != EffxKind::TrainStep)
    fail(s.path(), ": this is a forward (inference) function compiled with "
                   "effc --mode forward, not a training step: run it with "
                   "effrt_session_forward (Session::forward)");
  callEntry(s, "step");
  s.lastLoss = readLoss(s.io.data() + m.lossOffset, m.lossDType);
  ++s.globalStep;
  return s.lastLoss;
}

void Session::forward() {
  Impl &s = *impl_;
  if (s.manifest().kind != EffxKind::Forward)
    fail(s.path(), ": this is a training step; forward() runs only a forward "
                   "function (effc --mode forward)");
  callEntry(s, "forward run");
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
  return Tensor::view(out->dtype, out->shape, s.io.data() + out->offset,
                      nullptr)
      .clone();
}

int64_t Session::globalStep() const { return impl_->globalStep; }

std::optional<int64_t> Session::optimizerStep() const {
  const Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  if (!m.stepCounter)
    return std::nullopt;
  int64_t value;
  std::memcpy(&value, s.state.data() + m.state[*m.stepCounter].offset, 8);
  return value;
}

NamedTensors Session::stateTensors() const {
  NamedTensors out;
  for (const EffxStateEntry &e : impl_->manifest().state)
    out.emplace_back(e.name, impl_->stateView(e));
  return out;
}

Tensor Session::readState(const std::string &name) const {
  return impl_->stateView(impl_->stateEntry(name)).clone();
}

void Session::writeState(const std::string &name, const Tensor &value) {
  Impl &s = *impl_;
  const EffxStateEntry &e = s.stateEntry(name);
  expectTensor(s.path(), "state entry", name, value, e.dtype, e.shape);
  if (e.byteSize)
    std::memcpy(s.state.data() + e.offset, value.data(), e.byteSize);
}

float Session::lastLoss() const { return impl_->lastLoss; }

AllocatedBytes Session::allocated() const {
  return AllocatedBytes{impl_->state.size(), impl_->arena.size(),
                        impl_->io.size()};
}

std::byte *Session::stateRegion() { return impl_->state.data(); }
std::byte *Session::arenaRegion() { return impl_->arena.data(); }
std::byte *Session::ioRegion() { return impl_->io.data(); }

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

/// CRC-32 of the entries' bytes in manifest order, as read by `bytesOf`.
template <typename BytesOf>
static uint32_t stateCrc(const EffxManifest &m, BytesOf bytesOf) {
  uint32_t crc = 0;
  for (const EffxStateEntry &e : m.state)
    crc = crc32(bytesOf(e), e.byteSize, crc);
  return crc;
}

Metadata Session::checkpointMetadata() const {
  const Impl &s = *impl_;
  const EffxManifest &m = s.manifest();
  uint32_t crc = stateCrc(m, [&](const EffxStateEntry &e) {
    return static_cast<const void *>(s.state.data() + e.offset);
  });
  return Metadata{{"format", kCheckpointFormat},
                  {"version", kCheckpointVersion},
                  {"model", m.model},
                  {"layout", stateLayoutId(m)},
                  {"step", std::to_string(s.globalStep)},
                  {"state_crc32", hex8(crc)}};
}

void Session::save(const std::string &path) const {
  writeSafeTensors(path, stateTensors(), checkpointMetadata());
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
    if (t.dtype != e.dtype || t.shape != e.shape) {
      mismatch = "its " + quoteName(e.name) + " is " +
                 describe(t.dtype, t.shape) + ", the model's is " +
                 describe(e.dtype, e.shape);
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

  for (const EffxStateEntry &e : m.state)
    if (e.byteSize)
      std::memcpy(s.state.data() + e.offset, file.read(e.name).data(),
                  e.byteSize);
  s.globalStep = step;
}
