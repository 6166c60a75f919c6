//===- Effx.cpp - Reading compiled .effx models ---------------------------===//

#include "effrt/Effx.h"

#include "effrt/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace effrt;
using json = nlohmann::json;

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_EXEC
// Linux 6.3+: ask for an executable memfd where vm.memfd_noexec would
// otherwise make it non-executable. Older kernels reject the flag (EINVAL).
#define MFD_EXEC 0x0010U
#endif

std::string_view effrt::stateRoleName(StateRole role) {
  switch (role) {
  case StateRole::Trainable:
    return "trainable";
  case StateRole::Frozen:
    return "frozen";
  case StateRole::Buffer:
    return "buffer";
  case StateRole::OptimizerState:
    return "optimizer_state";
  }
  return "?";
}

std::optional<StateRole> effrt::stateRoleFromName(std::string_view name) {
  for (StateRole role : {StateRole::Trainable, StateRole::Frozen,
                         StateRole::Buffer, StateRole::OptimizerState})
    if (stateRoleName(role) == name)
      return role;
  return std::nullopt;
}

const char *effrt::hostTarget() {
#if defined(__x86_64__)
  return "cpu-x86_64";
#elif defined(__aarch64__)
  return "cpu-aarch64";
#else
  return "cpu-unknown";
#endif
}

const EffxTensor *EffxManifest::findInput(const std::string &name) const {
  for (const EffxTensor &input : inputs)
    if (input.name == name)
      return &input;
  return nullptr;
}

const EffxTensor *EffxManifest::findOutput(const std::string &name) const {
  for (const EffxTensor &output : outputs)
    if (output.name == name)
      return &output;
  return nullptr;
}

std::string_view effrt::effxKindName(EffxKind kind) {
  return kind == EffxKind::Forward ? "forward" : "train_step";
}

const EffxStateEntry *EffxManifest::findState(const std::string &name) const {
  for (const EffxStateEntry &entry : state)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

struct EffxFile::Impl {
  std::string path;
  SharedBytes bytes;
  EffxHeader header{};
  EffxManifest manifest;
};

//===----------------------------------------------------------------------===//
// Header and sections
//===----------------------------------------------------------------------===//

static std::string hex32(uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string out = "0x00000000";
  for (int i = 0; i < 8; ++i)
    out[9 - i] = digits[(value >> (4 * i)) & 15];
  return out;
}

namespace {
struct NamedSection {
  const char *name;
  EffxSection section;
};
} // namespace

static void checkHeader(const std::string &path, const SharedBytes &bytes,
                        EffxHeader &header) {
  const uint64_t fileSize = bytes.size;
  if (fileSize == 0)
    fail(path, ": truncated: the file is empty (not an .effx)");
  size_t magicBytes = std::min<uint64_t>(fileSize, sizeof(kEffxMagic));
  if (std::memcmp(bytes.data, kEffxMagic, magicBytes) != 0)
    fail(path, ": not an .effx file (bad magic)");
  if (fileSize < sizeof(EffxHeader))
    fail(path, ": truncated: the header needs ", sizeof(EffxHeader),
         " bytes but the file has ", fileSize, " bytes");
  std::memcpy(&header, bytes.data, sizeof(EffxHeader));
  if (header.version != kEffxVersion)
    fail(path, ": unsupported .effx version ", header.version,
         " (this runtime reads version ", kEffxVersion, ")");
  if (header.headerSize != sizeof(EffxHeader))
    fail(path, ": corrupt header: header size is ", header.headerSize,
         ", expected ", sizeof(EffxHeader));
  EffxHeader zeroed = header;
  zeroed.headerCrc = 0;
  uint32_t crc = crc32(&zeroed, sizeof(zeroed));
  if (crc != header.headerCrc)
    fail(path, ": corrupt header: CRC-32 is ", hex32(crc), ", the header says ",
         hex32(header.headerCrc));

  NamedSection sections[] = {{"manifest", header.manifest},
                             {"code", header.code},
                             {"state", header.state}};
  for (const NamedSection &s : sections) {
    const EffxSection &sec = s.section;
    if (sec.offset % kEffxAlignment)
      fail(path, ": corrupt header: ", s.name, " section offset ", sec.offset,
           " is not ", kEffxAlignment, "-byte aligned");
    if (sec.offset < sizeof(EffxHeader))
      fail(path, ": corrupt header: ", s.name, " section offset ", sec.offset,
           " lies inside the header");
    if (sec.size > UINT64_MAX - sec.offset)
      fail(path, ": corrupt header: ", s.name, " section (offset ", sec.offset,
           ", size ", sec.size, ") ends beyond 2^64");
    if (sec.offset + sec.size > fileSize)
      fail(path, ": truncated: ", s.name, " section ends at byte ",
           sec.offset + sec.size, " but the file has ", fileSize, " bytes");
  }
  std::sort(std::begin(sections), std::end(sections),
            [](const NamedSection &a, const NamedSection &b) {
              return a.section.offset < b.section.offset;
            });
  for (size_t i = 0; i + 1 < 3; ++i) {
    const EffxSection &a = sections[i].section, &b = sections[i + 1].section;
    if (a.offset + a.size > b.offset)
      fail(path, ": corrupt header: the ", sections[i].name,
           " section (bytes ", a.offset, "..", a.offset + a.size,
           ") overlaps the ", sections[i + 1].name, " section (from byte ",
           b.offset, ")");
  }
  for (const NamedSection &s : sections) {
    uint32_t c = crc32(bytes.data + s.section.offset, s.section.size);
    if (c != s.section.crc32)
      fail(path, ": corrupt ", s.name, " section: CRC-32 is ", hex32(c),
           ", the header says ", hex32(s.section.crc32));
  }
}

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

namespace {
/// Parses the manifest, failing with "PATH: manifest: ..." messages.
class ManifestParser {
public:
  ManifestParser(const std::string &path) : prefix_(path + ": manifest") {}

  EffxManifest parse(std::string text, uint64_t stateSectionSize);

private:
  template <typename... Parts> [[noreturn]] void error(const Parts &...parts) {
    fail(prefix_, ": ", parts...);
  }

  const json &field(const json &object, const char *key, const std::string &in);
  std::string string(const json &object, const char *key, const std::string &in,
                     bool required = true);
  uint64_t unsignedField(const json &object, const char *key,
                         const std::string &in);
  DType dtype(const json &object, const std::string &in);
  Shape shape(const json &object, const std::string &in);
  EffxTensor tensor(const json &object, const std::string &what,
                    uint64_t regionBytes, const char *region);

  std::string prefix_;
};
} // namespace

const json &ManifestParser::field(const json &object, const char *key,
                                  const std::string &in) {
  auto it = object.find(key);
  if (it == object.end())
    error(in, "'", key, "' is missing");
  return *it;
}

std::string ManifestParser::string(const json &object, const char *key,
                                   const std::string &in, bool required) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required)
      error(in, "'", key, "' is missing");
    return {};
  }
  if (!it->is_string())
    error(in, "'", key, "' must be a string");
  return it->get<std::string>();
}

uint64_t ManifestParser::unsignedField(const json &object, const char *key,
                                       const std::string &in) {
  const json &value = field(object, key, in);
  if (!value.is_number_unsigned())
    error(in, "'", key, "' must be a non-negative integer");
  return value.get<uint64_t>();
}

DType ManifestParser::dtype(const json &object, const std::string &in) {
  std::string name = string(object, "dtype", in);
  std::optional<DType> dtype = dtypeFromName(name);
  if (!dtype)
    error(in, "unknown dtype ", quoteName(name));
  return *dtype;
}

Shape ManifestParser::shape(const json &object, const std::string &in) {
  const json &value = field(object, "shape", in);
  if (!value.is_array())
    error(in, "'shape' must be an array of non-negative integers");
  Shape shape;
  for (const json &dim : value) {
    if (!dim.is_number_unsigned() ||
        dim.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      error(in, "'shape' must be an array of non-negative integers");
    shape.push_back(static_cast<int64_t>(dim.get<uint64_t>()));
  }
  return shape;
}

EffxTensor ManifestParser::tensor(const json &object, const std::string &what,
                                  uint64_t regionBytes, const char *region) {
  if (!object.is_object())
    error(what, " is not a JSON object");
  std::string in = what + ": ";
  EffxTensor t;
  t.dtype = dtype(object, in);
  t.shape = shape(object, in);
  t.offset = unsignedField(object, "offset", in);
  std::optional<uint64_t> bytes = checkedByteSize(t.dtype, t.shape);
  if (!bytes)
    error(in, "shape ", formatShape(t.shape), " is too large");
  t.byteSize = *bytes;
  if (t.offset % dtypeSize(t.dtype))
    error(in, "offset ", t.offset, " is not aligned to its ",
          dtypeName(t.dtype), " elements");
  if (t.byteSize > regionBytes || t.offset > regionBytes - t.byteSize)
    error(in, "bytes ", t.offset, "..", t.offset + t.byteSize, " (",
          dtypeName(t.dtype), " ", formatShape(t.shape), ") lie outside the ",
          region, " region of ", regionBytes, " bytes");
  return t;
}

/// Fails if two of the named byte ranges overlap (empty ranges never do).
static void checkDisjoint(const std::string &prefix, const char *what,
                          std::vector<const EffxTensor *> tensors) {
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                               [](const EffxTensor *t) { return !t->byteSize; }),
                tensors.end());
  std::sort(tensors.begin(), tensors.end(),
            [](const EffxTensor *a, const EffxTensor *b) {
              return a->offset < b->offset;
            });
  for (size_t i = 0; i + 1 < tensors.size(); ++i) {
    const EffxTensor &a = *tensors[i], &b = *tensors[i + 1];
    if (a.offset + a.byteSize > b.offset)
      fail(prefix, ": ", what, " ", quoteName(a.name), " (bytes ", a.offset,
           "..", a.offset + a.byteSize, ") overlaps ", quoteName(b.name),
           " (bytes ", b.offset, "..", b.offset + b.byteSize, ")");
  }
}

EffxManifest ManifestParser::parse(std::string text,
                                   uint64_t stateSectionSize) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    std::string message = e.what();
    size_t close = message.find("] ");
    if (!message.empty() && message[0] == '[' && close != std::string::npos)
      message = message.substr(close + 2);
    error("not valid JSON: ", message);
  }
  if (!root.is_object())
    error("not a JSON object");

  EffxManifest m;
  m.json = std::move(text);
  std::string format = string(root, "format", "");
  if (format != "effx")
    error("'format' is ", quoteName(format), ", expected 'effx'");
  const json &version = field(root, "version", "");
  if (!version.is_number_unsigned() || version.get<uint64_t>() != kEffxVersion)
    error("'version' is ", version.dump(), ", expected ", kEffxVersion);
  if (auto minor = root.find("minor_version"); minor != root.end()) {
    if (!minor->is_number_unsigned())
      error("'minor_version' must be a non-negative integer");
    m.minorVersion = minor->get<uint64_t>();
  }
  std::string kind = string(root, "kind", "", false);
  if (kind.empty() || kind == "train_step")
    m.kind = EffxKind::TrainStep;
  else if (kind == "forward")
    m.kind = EffxKind::Forward;
  else
    error("unknown 'kind' ", quoteName(kind),
          " (expected train_step or forward)");
  m.model = string(root, "model", "");
  m.target = string(root, "target", "");
  m.entry = string(root, "entry", "");
  if (m.entry.empty())
    error("'entry' is empty");
  m.source = string(root, "source", "", false);
  m.compiler = string(root, "compiler", "", false);

  const json &batch = field(root, "batch_size", "");
  if (!batch.is_number_unsigned() || batch.get<uint64_t>() == 0 ||
      batch.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    error("'batch_size' must be a positive integer");
  m.batchSize = static_cast<int64_t>(batch.get<uint64_t>());

  const json &regions = field(root, "regions", "");
  if (!regions.is_object())
    error("'regions' is not a JSON object");
  m.stateBytes = unsignedField(regions, "state", "regions: ");
  m.arenaBytes = unsignedField(regions, "arena", "regions: ");
  m.ioBytes = unsignedField(regions, "io", "regions: ");
  for (auto [name, size] : {std::pair<const char *, uint64_t>{"state", m.stateBytes},
                            {"arena", m.arenaBytes},
                            {"io", m.ioBytes}})
    if (size % kEffxAlignment)
      error("regions: '", name, "' is ", size, " bytes, not a multiple of ",
            kEffxAlignment);
  if (m.stateBytes != stateSectionSize)
    error("the state region is ", m.stateBytes,
          " bytes but the initial state section holds ", stateSectionSize);

  EffxTensor lossTensor;
  if (m.kind == EffxKind::TrainStep) {
    const json &loss = field(root, "loss", "");
    if (!loss.is_object())
      error("'loss' is not a JSON object");
    m.lossDType = dtype(loss, "loss: ");
    if (!isFloatingPoint(m.lossDType))
      error("loss: dtype ", dtypeName(m.lossDType),
            " is not a floating-point type");
    m.lossOffset = unsignedField(loss, "offset", "loss: ");
    if (m.lossOffset % dtypeSize(m.lossDType) || m.lossOffset > m.ioBytes ||
        m.ioBytes - m.lossOffset < dtypeSize(m.lossDType))
      error("loss: offset ", m.lossOffset,
            " is misaligned or outside the io region of ", m.ioBytes,
            " bytes");
    lossTensor.name = "loss";
    lossTensor.dtype = m.lossDType;
    lossTensor.offset = m.lossOffset;
    lossTensor.byteSize = dtypeSize(m.lossDType);
  }

  // Named io tensors: "inputs" (every kind) and "outputs" (forward).
  auto ioTensors = [&](const char *key, const char *singular,
                       std::vector<EffxTensor> &out) {
    const json &array = field(root, key, "");
    if (!array.is_array())
      error("'", key, "' is not an array");
    std::set<std::string> names;
    for (size_t i = 0; i < array.size(); ++i) {
      std::string what = std::string(singular) + " " + std::to_string(i);
      if (array[i].is_object() && array[i].contains("name") &&
          array[i]["name"].is_string())
        what = std::string(singular) + " " +
               quoteName(array[i]["name"].get<std::string>());
      EffxTensor t = tensor(array[i], what, m.ioBytes, "io");
      t.name = string(array[i], "name", what + ": ");
      if (t.name.empty())
        error(what, ": 'name' is empty");
      if (!names.insert(t.name).second)
        error("two ", key, " are named ", quoteName(t.name));
      out.push_back(std::move(t));
    }
  };
  ioTensors("inputs", "input", m.inputs);
  if (m.kind == EffxKind::Forward)
    ioTensors("outputs", "output", m.outputs);
  std::vector<const EffxTensor *> io;
  if (m.kind == EffxKind::TrainStep)
    io.push_back(&lossTensor);
  for (const EffxTensor &t : m.inputs)
    io.push_back(&t);
  for (const EffxTensor &t : m.outputs)
    io.push_back(&t);
  checkDisjoint(prefix_, "io entry", io);

  const json &state = field(root, "state", "");
  if (!state.is_array())
    error("'state' is not an array");
  std::set<std::string> names;
  for (size_t i = 0; i < state.size(); ++i) {
    std::string what = "state entry " + std::to_string(i);
    if (state[i].is_object() && state[i].contains("name") &&
        state[i]["name"].is_string())
      what = "state entry " + quoteName(state[i]["name"].get<std::string>());
    EffxStateEntry e;
    static_cast<EffxTensor &>(e) = tensor(state[i], what, m.stateBytes, "state");
    e.name = string(state[i], "name", what + ": ");
    if (e.name.empty())
      error(what, ": 'name' is empty");
    if (!names.insert(e.name).second)
      error("two state entries are named ", quoteName(e.name));
    std::string role = string(state[i], "role", what + ": ");
    std::optional<StateRole> r = stateRoleFromName(role);
    if (!r)
      error(what, ": unknown role ", quoteName(role),
            " (expected trainable, frozen, buffer or optimizer_state)");
    e.role = *r;
    m.state.push_back(std::move(e));
  }
  std::vector<const EffxTensor *> entries;
  for (const EffxStateEntry &e : m.state)
    entries.push_back(&e);
  checkDisjoint(prefix_, "state entry", entries);

  std::string counter = string(root, "step_counter", "", false);
  if (!counter.empty()) {
    for (size_t i = 0; i < m.state.size(); ++i)
      if (m.state[i].name == counter)
        m.stepCounter = i;
    if (!m.stepCounter)
      error("'step_counter' names ", quoteName(counter),
            ", which is not a state entry");
    const EffxStateEntry &e = m.state[*m.stepCounter];
    if (e.dtype != DType::I64 || e.byteSize != 8)
      error("'step_counter' ", quoteName(counter), " is ", dtypeName(e.dtype),
            " ", formatShape(e.shape), ", expected an int64 scalar");
  }
  if (auto scaling = root.find("loss_scaling"); scaling != root.end()) {
    if (!scaling->is_object())
      error("'loss_scaling' is not a JSON object");
    EffxManifest::LossScaling ls;
    std::string mode = string(*scaling, "mode", "loss_scaling: ");
    if (mode != "dynamic" && mode != "static")
      error("loss_scaling: 'mode' is ", quoteName(mode),
            ", expected dynamic or static");
    ls.dynamic = mode == "dynamic";
    const json &min = field(*scaling, "min_scale", "loss_scaling: ");
    if (!min.is_number() || !(min.get<double>() >= 0))
      error("loss_scaling: 'min_scale' must be a number >= 0");
    ls.minScale = min.get<double>();
    for (const char *name : {"loss_scale.scale", "loss_scale.last_step_skipped",
                             "loss_scale.skipped_steps"})
      if (!m.findState(name))
        error("loss_scaling: the state has no ", quoteName(name));
    m.lossScaling = ls;
  }
  return m;
}

//===----------------------------------------------------------------------===//
// EffxFile
//===----------------------------------------------------------------------===//

EffxFile EffxFile::fromBytes(SharedBytes bytes, std::string displayName) {
  auto impl = std::make_shared<Impl>();
  impl->path = std::move(displayName);
  impl->bytes = std::move(bytes);
  checkHeader(impl->path, impl->bytes, impl->header);
  const EffxSection &man = impl->header.manifest;
  std::string text(reinterpret_cast<const char *>(impl->bytes.data + man.offset),
                   man.size);
  impl->manifest = ManifestParser(impl->path).parse(std::move(text),
                                                    impl->header.state.size);
  return EffxFile(std::move(impl));
}

EffxFile EffxFile::open(const std::string &path) {
  return fromBytes(mapFile(path), path);
}

const std::string &EffxFile::path() const { return impl_->path; }
const EffxHeader &EffxFile::header() const { return impl_->header; }
const EffxManifest &EffxFile::manifest() const { return impl_->manifest; }
const std::byte *EffxFile::codeData() const {
  return impl_->bytes.data + impl_->header.code.offset;
}
uint64_t EffxFile::codeSize() const { return impl_->header.code.size; }
const std::byte *EffxFile::initialState() const {
  return impl_->bytes.data + impl_->header.state.offset;
}

//===----------------------------------------------------------------------===//
// Code loading
//===----------------------------------------------------------------------===//

struct EffxCode::Handle {
  void *library = nullptr;
  // The descriptor whose /proc/self/fd path names the library. It stays open
  // while the library is loaded: the dynamic loader recognises libraries by
  // path, so the number must not be reused for another model meanwhile.
  int fd = -1;
  std::string tempPath;
  ~Handle() {
    if (library)
      ::dlclose(library);
    if (fd >= 0)
      ::close(fd);
    if (!tempPath.empty())
      ::unlink(tempPath.c_str());
  }
};

static bool writeAllBytes(int fd, const std::byte *data, uint64_t size) {
  while (size) {
    size_t chunk = size < (uint64_t(1) << 30) ? size : (size_t(1) << 30);
    ssize_t n = ::write(fd, data, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += n;
    size -= static_cast<uint64_t>(n);
  }
  return true;
}

EffxCode EffxFile::loadCode() const {
  const std::string &path = impl_->path;
  const EffxManifest &m = impl_->manifest;
  if (m.target != hostTarget())
    fail(path, ": compiled for target ", quoteName(m.target),
         ", which this runtime cannot run (it runs ", hostTarget(), ")");
  if (codeSize() == 0)
    fail(path, ": the code section is empty");

  auto handle = std::make_shared<EffxCode::Handle>();
  std::string libraryPath;
  int fd = ::memfd_create("effx-code", MFD_CLOEXEC | MFD_EXEC);
  if (fd < 0 && errno == EINVAL)
    fd = ::memfd_create("effx-code", MFD_CLOEXEC);
  if (fd >= 0) {
    handle->fd = fd;
    libraryPath = "/proc/self/fd/" + std::to_string(fd);
  } else {
    // No memfd (old kernel, seccomp): a temporary file, removed on unload.
    const char *dir = std::getenv("TMPDIR");
    std::string pattern =
        std::string(dir && *dir ? dir : "/tmp") + "/effx-code-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    fd = ::mkstemp(buf.data());
    if (fd < 0)
      fail(path, ": cannot create a file for the code section: ",
           errnoMessage(errno));
    handle->fd = fd;
    handle->tempPath = libraryPath = buf.data();
  }
  if (!writeAllBytes(fd, codeData(), codeSize()))
    fail(path, ": cannot write the code section to ", libraryPath, ": ",
         errnoMessage(errno));

  ::dlerror();
  handle->library = ::dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle->library) {
    const char *why = ::dlerror();
    fail(path, ": cannot load the code section: ", why ? why : "unknown error");
  }
  ::dlerror();
  void *symbol = ::dlsym(handle->library, m.entry.c_str());
  if (!symbol) {
    const char *why = ::dlerror();
    fail(path, ": the code section has no entry point ", quoteName(m.entry),
         why ? std::string(" (") + why + ")" : std::string());
  }
  EffxStepFn entry;
  static_assert(sizeof(entry) == sizeof(symbol), "function pointer size");
  std::memcpy(&entry, &symbol, sizeof(entry));
  return EffxCode(std::move(handle), entry);
}
