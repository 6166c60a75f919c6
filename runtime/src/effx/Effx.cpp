//===- Effx.cpp - Reading compiled .effx models ---------------------------===//

#include "effrt/Effx.h"

#include "effrt/Error.h"

#include <nlohmann/json.hpp>

#include <climits>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>

#include <sys/mman.h>
#include <unistd.h>

using namespace effrt;
using json = nlohmann::json;

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
  /// The bytes are a read-only mapping of the file (open()), whose pages
  /// release() drops; not for bytes given to fromBytes().
  bool fileMapped = false;
  uint32_t version = 0;
  std::vector<EffxSection> sections;
  size_t stateSection = 0; // index of the initial_state section
  EffxManifest manifest;

  void release(uint64_t offset, uint64_t size) const;
};

//===----------------------------------------------------------------------===//
// Header and section table
//===----------------------------------------------------------------------===//

static std::string hex32(uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string out = "0x00000000";
  for (int i = 0; i < 8; ++i)
    out[9 - i] = digits[(value >> (4 * i)) & 15];
  return out;
}

std::string effrt::effxSectionKindName(EffxSectionKind kind) {
  switch (kind) {
  case EffxSectionKind::Manifest:
    return "manifest";
  case EffxSectionKind::HostCode:
    return "host_code";
  case EffxSectionKind::DeviceCode:
    return "device_code";
  case EffxSectionKind::InitialState:
    return "initial_state";
  }
  return "kind " + std::to_string(static_cast<uint32_t>(kind));
}

bool effrt::isKnownEffxSectionKind(EffxSectionKind kind) {
  switch (kind) {
  case EffxSectionKind::Manifest:
  case EffxSectionKind::HostCode:
  case EffxSectionKind::DeviceCode:
  case EffxSectionKind::InitialState:
    return true;
  }
  return false;
}

/// The short word messages use for a section of `kind`.
static std::string kindWord(EffxSectionKind kind) {
  switch (kind) {
  case EffxSectionKind::Manifest:
    return "manifest";
  case EffxSectionKind::HostCode:
    return "code";
  case EffxSectionKind::DeviceCode:
    return "device code";
  case EffxSectionKind::InitialState:
    return "state";
  }
  return "kind " + std::to_string(static_cast<uint32_t>(kind));
}

static std::string describeSection(const std::vector<EffxSection> &sections,
                                   const EffxSection &s) {
  std::string text = kindWord(s.kind);
  size_t sameKind = std::count_if(
      sections.begin(), sections.end(),
      [&](const EffxSection &other) { return other.kind == s.kind; });
  if (sameKind > 1 || !isKnownEffxSectionKind(s.kind)) {
    text += " " + quoteName(s.name);
    if (!s.target.empty())
      text += " for " + s.target;
  }
  return text;
}

/// Pages of a file mapping are released in pieces of this size while a
/// section is checked or copied, so loading never holds more of the file.
static constexpr uint64_t kReleaseChunk = uint64_t(16) << 20;

/// A fixed-size NUL-padded string of a section entry, or nullopt when it is
/// not one (a byte after the first NUL, or a byte outside printable ASCII).
static std::optional<std::string> paddedString(const char *field, size_t n) {
  size_t length = 0;
  while (length < n && field[length])
    ++length;
  for (size_t i = length; i < n; ++i)
    if (field[i])
      return std::nullopt;
  for (size_t i = 0; i < length; ++i)
    if (field[i] < 0x21 || field[i] > 0x7e)
      return std::nullopt;
  return std::string(field, length);
}

namespace {
/// Validates the header and sections of one file and fills `sections`.
class SectionChecker {
public:
  SectionChecker(const std::string &path, const SharedBytes &bytes,
                 const std::function<void(uint64_t, uint64_t)> &release)
      : path_(path), bytes_(bytes), release_(release) {}

  /// Returns the version; fills `sections` (version 1: translated).
  uint32_t check(std::vector<EffxSection> &sections);

private:
  template <typename... Parts> [[noreturn]] void error(const Parts &...parts) {
    fail(path_, ": ", parts...);
  }
  void checkV1(std::vector<EffxSection> &sections);
  void checkV2(std::vector<EffxSection> &sections);
  /// The header of a version (EffxHeaderV1, EffxHeader), its size and CRC
  /// checked.
  template <typename Header> Header checkedHeader() {
    Header header;
    std::memcpy(&header, bytes_.data, sizeof header);
    if (header.headerSize != sizeof(Header))
      error("corrupt header: header size is ", header.headerSize,
            ", expected ", sizeof(Header));
    Header zeroed = header;
    zeroed.headerCrc = 0;
    uint32_t crc = crc32(&zeroed, sizeof(zeroed));
    if (crc != header.headerCrc)
      error("corrupt header: CRC-32 is ", hex32(crc), ", the header says ",
            hex32(header.headerCrc));
    return header;
  }
  /// Placement (aligned, after `headerEnd`, inside the file, disjoint from
  /// each other and `reserved`) and then every CRC.
  void checkPlacement(const std::vector<EffxSection> &sections,
                      uint64_t headerEnd, const char *where,
                      std::optional<std::pair<uint64_t, uint64_t>> table);

  const std::string &path_;
  const SharedBytes &bytes_;
  const std::function<void(uint64_t, uint64_t)> &release_;
};
} // namespace

uint32_t SectionChecker::check(std::vector<EffxSection> &sections) {
  const uint64_t fileSize = bytes_.size;
  if (fileSize == 0)
    error("truncated: the file is empty (not an .effx)");
  size_t magicBytes = std::min<uint64_t>(fileSize, sizeof(kEffxMagic));
  if (std::memcmp(bytes_.data, kEffxMagic, magicBytes) != 0)
    error("not an .effx file (bad magic)");
  uint32_t version = 0;
  if (fileSize >= 12)
    std::memcpy(&version, bytes_.data + 8, 4);
  size_t needed =
      version == kEffxVersion1 ? sizeof(EffxHeaderV1) : sizeof(EffxHeader);
  if (fileSize < needed)
    error("truncated: the header needs ", needed, " bytes but the file has ",
          fileSize, " bytes");
  if (version == kEffxVersion1)
    checkV1(sections);
  else if (version == kEffxVersion)
    checkV2(sections);
  else
    error("unsupported .effx version ", version, " (this runtime reads ",
          "versions ", kEffxVersion1, " and ", kEffxVersion,
          version > kEffxVersion ? "; it needs a newer runtime)" : ")");
  return version;
}

void SectionChecker::checkV1(std::vector<EffxSection> &sections) {
  EffxHeaderV1 header = checkedHeader<EffxHeaderV1>();
  // The three fixed sections as a table; the code's target is the
  // manifest's, filled in once it is parsed.
  auto entry = [](EffxSectionKind kind, const char *name,
                  const EffxSectionV1 &s) {
    EffxSection e;
    e.kind = kind;
    e.flags = kEffxSectionRequired;
    e.name = name;
    e.offset = s.offset;
    e.size = s.size;
    e.crc32 = s.crc32;
    return e;
  };
  sections = {entry(EffxSectionKind::Manifest, "manifest", header.manifest),
              entry(EffxSectionKind::HostCode, "step", header.code),
              entry(EffxSectionKind::InitialState, "state", header.state)};
  checkPlacement(sections, sizeof(EffxHeaderV1), "header", std::nullopt);
}

void SectionChecker::checkV2(std::vector<EffxSection> &sections) {
  const uint64_t fileSize = bytes_.size;
  EffxHeader header = checkedHeader<EffxHeader>();
  if (header.sectionEntrySize != sizeof(EffxSectionEntry))
    error("corrupt header: section entry size is ", header.sectionEntrySize,
          ", expected ", sizeof(EffxSectionEntry));
  // Enough for any file a compiler writes; bounds the work of a bad one.
  constexpr uint32_t kMaxSections = 4096;
  if (header.sectionCount == 0 || header.sectionCount > kMaxSections)
    error("corrupt header: ", header.sectionCount,
          " sections (expected 1 to ", kMaxSections, ")");
  const uint64_t tableOffset = header.sectionTableOffset;
  const uint64_t tableBytes =
      uint64_t(header.sectionCount) * sizeof(EffxSectionEntry);
  if (tableOffset % 8)
    error("corrupt header: section table offset ", tableOffset,
          " is not 8-byte aligned");
  if (tableOffset < sizeof(EffxHeader))
    error("corrupt header: section table offset ", tableOffset,
          " lies inside the header");
  if (tableOffset > fileSize || tableBytes > fileSize - tableOffset)
    error("truncated: the section table ends at byte ",
          tableOffset > UINT64_MAX - tableBytes ? UINT64_MAX
                                                : tableOffset + tableBytes,
          " but the file has ", fileSize, " bytes");
  uint32_t crc = crc32(bytes_.data + tableOffset, tableBytes);
  if (crc != header.sectionTableCrc)
    error("corrupt section table: CRC-32 is ", hex32(crc),
          ", the header says ", hex32(header.sectionTableCrc));

  sections.clear();
  for (uint32_t i = 0; i < header.sectionCount; ++i) {
    EffxSectionEntry raw;
    std::memcpy(&raw, bytes_.data + tableOffset + i * sizeof raw, sizeof raw);
    EffxSection s;
    s.kind = static_cast<EffxSectionKind>(raw.kind);
    s.flags = raw.flags;
    std::optional<std::string> target =
        paddedString(raw.target, sizeof raw.target);
    std::optional<std::string> name = paddedString(raw.name, sizeof raw.name);
    if (!target || !name)
      error("corrupt section table: the ", !target ? "target" : "name",
            " of section ", i,
            " is not printable ASCII padded with NUL bytes");
    s.target = *target;
    s.name = *name;
    s.offset = raw.offset;
    s.size = raw.size;
    s.crc32 = raw.crc32;
    sections.push_back(std::move(s));
  }
  for (const EffxSection &s : sections) {
    if (s.flags & ~kEffxSectionKnownFlags)
      error("needs a newer runtime: the ", describeSection(sections, s),
            " section has flags ", hex32(s.flags),
            " (this runtime knows ", hex32(kEffxSectionKnownFlags), ")");
    if (!isKnownEffxSectionKind(s.kind) && s.required())
      error("needs a newer runtime: section ",
            describeSection(sections, s),
            " is required and this runtime does not know its kind");
  }
  for (size_t i = 0; i < sections.size(); ++i)
    for (size_t j = i + 1; j < sections.size(); ++j)
      if (sections[i].kind == sections[j].kind &&
          sections[i].target == sections[j].target &&
          sections[i].name == sections[j].name)
        error("corrupt section table: two ", kindWord(sections[i].kind),
              " sections named ", quoteName(sections[i].name),
              sections[i].target.empty() ? std::string()
                                         : " for " + sections[i].target);
  for (EffxSectionKind kind :
       {EffxSectionKind::Manifest, EffxSectionKind::InitialState}) {
    size_t n = std::count_if(
        sections.begin(), sections.end(),
        [&](const EffxSection &s) { return s.kind == kind; });
    if (n != 1)
      error("corrupt section table: ", n, " ", kindWord(kind),
            " sections (expected exactly one)");
    for (const EffxSection &s : sections)
      if (s.kind == kind && !s.target.empty())
        error("corrupt section table: the ", kindWord(kind),
              " section has target ", quoteName(s.target),
              " (expected none)");
  }
  checkPlacement(sections, sizeof(EffxHeader), "section table",
                 std::make_pair(tableOffset, tableBytes));
}

void SectionChecker::checkPlacement(
    const std::vector<EffxSection> &sections, uint64_t headerEnd,
    const char *where,
    std::optional<std::pair<uint64_t, uint64_t>> table) {
  const uint64_t fileSize = bytes_.size;
  for (const EffxSection &s : sections) {
    std::string what = describeSection(sections, s);
    if (s.offset % kEffxAlignment)
      error("corrupt ", where, ": ", what, " section offset ", s.offset,
            " is not ", kEffxAlignment, "-byte aligned");
    if (s.offset < headerEnd)
      error("corrupt ", where, ": ", what, " section offset ", s.offset,
            " lies inside the header");
    if (s.size > UINT64_MAX - s.offset)
      error("corrupt ", where, ": ", what, " section (offset ", s.offset,
            ", size ", s.size, ") ends beyond 2^64");
  }
  // Of the sections past the end, the one ending last says how long the
  // file should be.
  const EffxSection *past = nullptr;
  for (const EffxSection &s : sections)
    if (s.offset + s.size > fileSize &&
        (!past || s.offset + s.size > past->offset + past->size))
      past = &s;
  if (past)
    error("truncated: ", describeSection(sections, *past),
          " section ends at byte ", past->offset + past->size,
          " but the file has ", fileSize, " bytes");

  struct Range {
    std::string what;
    uint64_t begin, end;
  };
  std::vector<Range> ranges;
  if (table && table->second)
    ranges.push_back(
        {"section table", table->first, table->first + table->second});
  for (const EffxSection &s : sections)
    if (s.size)
      ranges.push_back({describeSection(sections, s) + " section", s.offset,
                        s.offset + s.size});
  std::sort(ranges.begin(), ranges.end(),
            [](const Range &a, const Range &b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  for (size_t i = 0; i + 1 < ranges.size(); ++i)
    if (ranges[i].end > ranges[i + 1].begin)
      error("corrupt ", where, ": the ", ranges[i].what, " (bytes ",
            ranges[i].begin, "..", ranges[i].end, ") overlaps the ",
            ranges[i + 1].what, " (from byte ", ranges[i + 1].begin, ")");

  for (const EffxSection &s : sections) {
    uint32_t c = 0;
    for (uint64_t done = 0; done < s.size;) {
      uint64_t n = std::min(kReleaseChunk, s.size - done);
      c = crc32(bytes_.data + s.offset + done, n, c);
      release_(s.offset + done, n);
      done += n;
    }
    if (c != s.crc32)
      error("corrupt ", describeSection(sections, s), " section: CRC-32 is ",
            hex32(c), ", the header says ", hex32(s.crc32));
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

  /// `version` is the header's; `stateSectionSize` the initial state
  /// section's size.
  EffxManifest parse(std::string text, uint32_t version,
                     uint64_t stateSectionSize);

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

EffxManifest ManifestParser::parse(std::string text, uint32_t fileVersion,
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
  if (!version.is_number_unsigned() || version.get<uint64_t>() != fileVersion)
    error("'version' is ", version.dump(), ", expected ", fileVersion,
          " (the header's)");
  m.version = fileVersion;
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
  // Optional: state kept in host memory (effc --offload optimizer).
  if (regions.contains("host"))
    m.hostBytes = unsignedField(regions, "host", "regions: ");
  for (auto [name, size] : {std::pair<const char *, uint64_t>{"state", m.stateBytes},
                            {"arena", m.arenaBytes},
                            {"io", m.ioBytes},
                            {"host", m.hostBytes}})
    if (size % kEffxAlignment)
      error("regions: '", name, "' is ", size, " bytes, not a multiple of ",
            kEffxAlignment);
  // Version 1 stores the image of the whole state region.
  if (fileVersion == kEffxVersion1 && m.stateBytes != stateSectionSize)
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
    std::string region = string(state[i], "region", what + ": ", false);
    if (!region.empty() && region != "state" && region != "host")
      error(what, ": unknown 'region' ", quoteName(region),
            " (expected state or host)");
    e.onHost = region == "host";
    static_cast<EffxTensor &>(e) =
        e.onHost ? tensor(state[i], what, m.hostBytes, "host")
                 : tensor(state[i], what, m.stateBytes, "state");
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
    // Version 1 has no "init": every byte is in the state image.
    std::string init = string(state[i], "init", what + ": ", false);
    if (fileVersion != kEffxVersion1 && !init.empty()) {
      if (init != "zeros")
        error(what, ": unknown 'init' ", quoteName(init), " (expected zeros)");
      e.zeroInit = true;
    }
    e.copyOf = string(state[i], "copy_of", what + ": ", false);
    if (state[i].contains("shard_of")) {
      json wrapped = {{"shape", state[i]["shard_of"]}};
      e.shardOf = shape(wrapped, what + ": 'shard_of': ");
      e.sharded = true;
      std::optional<uint64_t> whole = checkedByteSize(e.dtype, e.shardOf);
      // f32 (parameters, optimizer state) or i8 (the codes of block-wise
      // 8-bit optimizer state).
      if ((e.dtype != DType::F32 && e.dtype != DType::I8) ||
          e.shape.size() != 1 || !whole)
        error(what, ": 'shard_of' needs a 1-D f32 or i8 entry of a whole "
                    "shape that fits, not ", dtypeName(e.dtype), " ",
              formatShape(e.shape), " of ", formatShape(e.shardOf));
    }
    m.state.push_back(std::move(e));
  }
  for (const EffxStateEntry &e : m.state) {
    if (e.copyOf.empty())
      continue;
    const EffxStateEntry *master = m.findState(e.copyOf);
    if (!master || master == &e || master->shape != e.shape)
      error("state entry ", quoteName(e.name), ": 'copy_of' ",
            quoteName(e.copyOf),
            " is not another state entry of its shape");
  }
  std::vector<const EffxTensor *> entries, hostEntries;
  for (const EffxStateEntry &e : m.state)
    (e.onHost ? hostEntries : entries).push_back(&e);
  checkDisjoint(prefix_, "state entry", entries);
  checkDisjoint(prefix_, "host state entry", hostEntries);
  if (fileVersion != kEffxVersion1) {
    uint64_t stored = 0;
    for (const EffxStateEntry &e : m.state)
      if (!e.zeroInit)
        // A sharded entry stores its whole tensor (ZeRO-3 parameters); the
        // whole size was checked to fit.
        stored += e.wholeByteSize();
    if (stored != stateSectionSize)
      error("the state entries not marked 'init': 'zeros' take ", stored,
            " bytes but the initial state section holds ", stateSectionSize);
  }

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
  if (auto lora = root.find("lora"); lora != root.end()) {
    if (!lora->is_object())
      error("'lora' is not a JSON object");
    const json &adapters = field(*lora, "adapters", "lora: ");
    if (!adapters.is_array())
      error("lora: 'adapters' is not a JSON array");
    for (const json &a : adapters) {
      if (!a.is_object())
        error("lora: an adapter is not a JSON object");
      EffxManifest::LoraAdapter adapter;
      adapter.weight = string(a, "weight", "lora: ");
      adapter.loraA = string(a, "lora_A", "lora: ");
      adapter.loraB = string(a, "lora_B", "lora: ");
      const json &scaling = field(a, "scaling", "lora: ");
      if (!scaling.is_number())
        error("lora: 'scaling' of ", quoteName(adapter.weight),
              " is not a number");
      adapter.scaling = scaling.get<double>();
      if (auto t = a.find("transposed"); t != a.end()) {
        if (!t->is_boolean())
          error("lora: 'transposed' of ", quoteName(adapter.weight),
                " is not a boolean");
        adapter.transposed = t->get<bool>();
      }
      if (auto storage = a.find("storage"); storage != a.end()) {
        if (!storage->is_string() || storage->get<std::string>() != "nf4")
          error("lora: 'storage' of ", quoteName(adapter.weight),
                " must be \"nf4\"");
        adapter.storage = "nf4";
      }
      std::string weightEntry =
          adapter.storage.empty() ? adapter.weight : adapter.weight + ".nf4";
      const EffxStateEntry *w = m.findState(weightEntry);
      const EffxStateEntry *ea = m.findState(adapter.loraA);
      const EffxStateEntry *eb = m.findState(adapter.loraB);
      if (!w || !ea || !eb)
        error("lora: the state has no ",
              quoteName(!w ? weightEntry : !ea ? adapter.loraA
                                               : adapter.loraB));
      if (!adapter.storage.empty()) {
        // The packed weight has no out x in shape to check against.
        if (ea->shape.size() != 2 || eb->shape.size() != 2 ||
            ea->shape[0] != eb->shape[1] || ea->dtype != eb->dtype)
          error("lora: the adapters of ", quoteName(adapter.weight), " ",
                formatShape(ea->shape), " and ", formatShape(eb->shape),
                " do not fit each other");
        m.loraAdapters.push_back(std::move(adapter));
        continue;
      }
      // W is out x in (in x out when transposed), A rank x in, B out x rank.
      bool fits = w->dtype == ea->dtype && w->dtype == eb->dtype &&
                  w->shape.size() == 2 && ea->shape.size() == 2 &&
                  eb->shape.size() == 2;
      if (fits) {
        int64_t out = w->shape[adapter.transposed ? 1 : 0];
        int64_t in = w->shape[adapter.transposed ? 0 : 1];
        fits = ea->shape[1] == in && eb->shape[0] == out &&
               ea->shape[0] == eb->shape[1];
      }
      if (!fits)
        error("lora: ", quoteName(adapter.weight), " (",
              dtypeName(w->dtype), " ", formatShape(w->shape),
              ") does not fit its adapters ", formatShape(ea->shape), " and ",
              formatShape(eb->shape));
      m.loraAdapters.push_back(std::move(adapter));
    }
  }
  if (auto world = root.find("world_size"); world != root.end()) {
    if (!world->is_number_unsigned() || world->get<uint64_t>() == 0 ||
        world->get<uint64_t>() > static_cast<uint64_t>(INT_MAX))
      error("'world_size' must be a positive integer");
    m.worldSize = static_cast<int64_t>(world->get<uint64_t>());
  }
  // A shard holds at least ceil(elements / world_size) elements of the
  // whole (more where the compiler cut it on whole blocks or rows), so the
  // world_size shards cover it.
  for (const EffxStateEntry &e : m.state) {
    if (!e.sharded)
      continue;
    uint64_t whole = e.wholeByteSize() / dtypeSize(e.dtype);
    uint64_t n = static_cast<uint64_t>(m.worldSize);
    if (static_cast<uint64_t>(e.shape[0]) < (whole + n - 1) / n)
      error("state entry ", quoteName(e.name), ": a shard of ",
            formatShape(e.shardOf), " across ", n, " ranks has at least ",
            (whole + n - 1) / n, " elements, not ", e.shape[0]);
  }
  return m;
}

uint64_t EffxStateEntry::wholeByteSize() const {
  if (!sharded)
    return byteSize;
  uint64_t elements = 1;
  for (int64_t d : shardOf)
    elements *= static_cast<uint64_t>(d);
  return elements * dtypeSize(dtype);
}

//===----------------------------------------------------------------------===//
// EffxFile
//===----------------------------------------------------------------------===//

/// Drops the pages of [offset, offset + size) of a read-only file mapping
/// from the process: they are clean, so the kernel simply unmaps them, and a
/// later read faults them in again from the page cache or the file.
static void releaseMappedRange(const std::byte *base, uint64_t offset,
                               uint64_t size) {
  static const uint64_t page = [] {
    long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t(4096);
  }();
  auto address = reinterpret_cast<uintptr_t>(base) + offset;
  uintptr_t begin = (address + page - 1) / page * page;
  uintptr_t end = (address + size) / page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

EffxFile EffxFile::fromBytes(SharedBytes bytes, std::string displayName) {
  return fromBytesImpl(std::move(bytes), std::move(displayName), false);
}

EffxFile EffxFile::fromBytesImpl(SharedBytes bytes, std::string displayName,
                                 bool fileMapped) {
  auto impl = std::make_shared<Impl>();
  impl->path = std::move(displayName);
  impl->bytes = std::move(bytes);
  impl->fileMapped = fileMapped;
  const Impl &view = *impl;
  std::function<void(uint64_t, uint64_t)> release =
      [&view](uint64_t offset, uint64_t size) { view.release(offset, size); };
  impl->version = SectionChecker(impl->path, impl->bytes, release)
                      .check(impl->sections);
  const EffxSection *man = nullptr, *state = nullptr;
  for (const EffxSection &s : impl->sections) {
    if (s.kind == EffxSectionKind::Manifest)
      man = &s;
    if (s.kind == EffxSectionKind::InitialState)
      state = &s;
  }
  std::string text(reinterpret_cast<const char *>(impl->bytes.data + man->offset),
                   man->size);
  impl->release(man->offset, man->size);
  impl->manifest = ManifestParser(impl->path).parse(
      std::move(text), impl->version, state->size);
  impl->stateSection = static_cast<size_t>(state - impl->sections.data());
  if (impl->version == kEffxVersion1)
    for (EffxSection &s : impl->sections)
      if (s.kind == EffxSectionKind::HostCode)
        s.target = impl->manifest.target;
  return EffxFile(std::move(impl));
}

EffxFile EffxFile::open(const std::string &path) {
  return fromBytesImpl(mapFile(path), path, true);
}

void EffxFile::Impl::release(uint64_t offset, uint64_t size) const {
  if (fileMapped && size)
    releaseMappedRange(bytes.data, offset, size);
}

const std::string &EffxFile::path() const { return impl_->path; }
uint32_t EffxFile::version() const { return impl_->version; }
const EffxManifest &EffxFile::manifest() const { return impl_->manifest; }
const std::vector<EffxSection> &EffxFile::sections() const {
  return impl_->sections;
}

const EffxSection *EffxFile::findSection(EffxSectionKind kind,
                                         std::string_view target,
                                         std::string_view name) const {
  for (const EffxSection &s : impl_->sections)
    if (s.kind == kind && s.target == target && s.name == name)
      return &s;
  return nullptr;
}

std::vector<const EffxSection *>
EffxFile::sectionsFor(EffxSectionKind kind, std::string_view target) const {
  std::vector<const EffxSection *> out;
  for (const EffxSection &s : impl_->sections)
    if (s.kind == kind && s.target == target)
      out.push_back(&s);
  return out;
}

std::string EffxFile::describe(const EffxSection &section) const {
  return describeSection(impl_->sections, section);
}

const std::byte *EffxFile::sectionData(const EffxSection &section) const {
  return impl_->bytes.data + section.offset;
}

void EffxFile::releaseSection(const EffxSection &section) const {
  impl_->release(section.offset, section.size);
}

uint64_t EffxFile::storedStateBytes() const {
  return impl_->sections[impl_->stateSection].size;
}

void EffxFile::forEachStoredState(
    const std::function<void(uint64_t, const std::byte *, uint64_t)> &write,
    int rank, bool host) const {
  const EffxSection &section = impl_->sections[impl_->stateSection];
  const std::byte *data = sectionData(section);
  // Hands out `size` bytes at `at` in the section for region offset
  // `offset`, in pieces whose pages are released once written: the file
  // never stays resident next to the region.
  auto give = [&](uint64_t offset, uint64_t at, uint64_t size) {
    for (uint64_t done = 0; done < size;) {
      uint64_t n = std::min(kReleaseChunk, size - done);
      write(offset + done, data + at + done, n);
      impl_->release(section.offset + at + done, n);
      done += n;
    }
  };
  if (impl_->version == kEffxVersion1) {
    if (!host)
      give(0, 0, section.size);
  } else {
    // The manifest check made the section exactly the stored entries.
    uint64_t at = 0;
    for (const EffxStateEntry &e : impl_->manifest.state) {
      if (e.zeroInit || !e.byteSize)
        continue;
      if (e.onHost != host) {
        at += e.wholeByteSize();
        continue;
      }
      if (!e.sharded) {
        give(e.offset, at, e.byteSize);
        at += e.byteSize;
        continue;
      }
      // This rank's block [rank*S, (rank+1)*S) of the whole tensor.
      uint64_t whole = e.wholeByteSize();
      uint64_t first = static_cast<uint64_t>(rank) * e.byteSize;
      if (first < whole)
        give(e.offset, at + first, std::min(e.byteSize, whole - first));
      at += whole;
    }
  }
  releaseSection(section);
}

void EffxFile::copyInitialState(std::byte *region, int rank,
                                bool host) const {
  uint64_t bytes =
      host ? impl_->manifest.hostBytes : impl_->manifest.stateBytes;
  if (bytes)
    std::memset(region, 0, static_cast<size_t>(bytes));
  forEachStoredState(
      [&](uint64_t offset, const std::byte *data, uint64_t n) {
        std::memcpy(region + offset, data, static_cast<size_t>(n));
      },
      rank, host);
}
