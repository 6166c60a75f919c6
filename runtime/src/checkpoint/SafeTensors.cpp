//===- SafeTensors.cpp - The safetensors checkpoint format ----------------===//

#include "effrt/SafeTensors.h"

#include "effrt/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

using namespace effrt;
using json = nlohmann::json;

/// The reference implementation's limit; a larger length means the file is
/// not safetensors or is corrupt.
static constexpr uint64_t kMaxHeaderLength = 100'000'000;
static constexpr const char *kMetadataKey = "__metadata__";

struct SafeTensorsFile::Impl {
  std::string path;
  SharedBytes bytes;
  const std::byte *buffer = nullptr; // Start of the data buffer.
  std::vector<std::string> names;
  std::unordered_map<std::string, TensorEntry> entries;
  Metadata metadata;

  const TensorEntry &entry(const std::string &name) const {
    auto it = entries.find(name);
    if (it == entries.end())
      fail(path, ": no tensor named ", quoteName(name));
    return it->second;
  }
};

/// nlohmann's messages start with "[json.exception.parse_error.101] ".
static std::string jsonMessage(const std::exception &e) {
  std::string message = e.what();
  if (!message.empty() && message[0] == '[') {
    size_t close = message.find("] ");
    if (close != std::string::npos)
      message = message.substr(close + 2);
  }
  return message;
}

static uint64_t readU64(const json &value, const std::string &what,
                        const char *field) {
  if (!value.is_number_unsigned())
    fail(what, ": '", field, "' must hold non-negative integers");
  return value.get<uint64_t>();
}

static TensorEntry parseEntry(const json &value, const std::string &what) {
  if (!value.is_object())
    fail(what, ": header entry is not a JSON object");
  auto dtypeIt = value.find("dtype"), shapeIt = value.find("shape"),
       offsetsIt = value.find("data_offsets");
  if (dtypeIt == value.end() || shapeIt == value.end() ||
      offsetsIt == value.end())
    fail(what, ": header entry lacks '",
         dtypeIt == value.end()   ? "dtype"
         : shapeIt == value.end() ? "shape"
                                  : "data_offsets",
         "'");
  if (!dtypeIt->is_string())
    fail(what, ": 'dtype' is not a string");
  const std::string &code = dtypeIt->get_ref<const std::string &>();
  std::optional<DType> dtype = dtypeFromSafeTensorsCode(code);
  if (!dtype)
    fail(what, ": dtype ", quoteName(code), " is not supported");
  if (!shapeIt->is_array())
    fail(what, ": 'shape' is not an array");
  TensorEntry entry;
  entry.dtype = *dtype;
  for (const json &d : *shapeIt) {
    uint64_t dim = readU64(d, what, "shape");
    if (dim > static_cast<uint64_t>(INT64_MAX))
      fail(what, ": shape dimension ", dim, " is too large");
    entry.shape.push_back(static_cast<int64_t>(dim));
  }
  if (!offsetsIt->is_array() || offsetsIt->size() != 2)
    fail(what, ": 'data_offsets' is not an array of two integers");
  entry.begin = readU64((*offsetsIt)[0], what, "data_offsets");
  entry.end = readU64((*offsetsIt)[1], what, "data_offsets");
  if (entry.end < entry.begin)
    fail(what, ": data_offsets [", entry.begin, ", ", entry.end,
         "] end before they begin");
  std::optional<uint64_t> bytes = checkedByteSize(entry.dtype, entry.shape);
  if (!bytes)
    fail(what, ": shape ", formatShape(entry.shape), " is too large");
  if (*bytes != entry.end - entry.begin)
    fail(what, ": shape ", formatShape(entry.shape), " of ", code, " needs ",
         *bytes, " bytes but data_offsets [", entry.begin, ", ", entry.end,
         "] span ", entry.end - entry.begin);
  return entry;
}

SafeTensorsFile SafeTensorsFile::fromBytes(SharedBytes bytes,
                                           std::string displayName) {
  auto impl = std::make_shared<Impl>();
  impl->path = std::move(displayName);
  impl->bytes = std::move(bytes);
  const std::string &path = impl->path;
  const std::byte *data = impl->bytes.data;
  uint64_t size = impl->bytes.size;

  if (size < 8)
    fail(path, ": not a safetensors file (", size,
         " bytes, too short for the 8-byte header length)");
  uint64_t headerLength = 0;
  for (int i = 0; i < 8; ++i)
    headerLength |= static_cast<uint64_t>(data[i]) << (8 * i);
  if (headerLength > kMaxHeaderLength)
    fail(path, ": not a safetensors file (header length ", headerLength,
         " exceeds the 100000000-byte limit)");
  if (headerLength > size - 8)
    fail(path, ": truncated safetensors file: header length ", headerLength,
         " exceeds the ", size - 8, " bytes that follow");
  const char *text = reinterpret_cast<const char *>(data + 8);
  if (headerLength == 0 || text[0] != '{')
    fail(path, ": not a safetensors file (header does not start with '{')");

  json header;
  try {
    // Reject duplicate top-level keys, which a plain parse would merge.
    std::unordered_set<std::string> keys;
    json::parser_callback_t onEvent = [&](int depth, json::parse_event_t event,
                                          json &parsed) {
      if (depth == 1 && event == json::parse_event_t::key &&
          !keys.insert(parsed.get<std::string>()).second)
        fail(path, ": safetensors header names ",
             quoteName(parsed.get<std::string>()), " twice");
      return true;
    };
    header = json::parse(text, text + headerLength, onEvent);
  } catch (const json::exception &e) {
    fail(path, ": invalid safetensors JSON header: ", jsonMessage(e));
  }
  if (!header.is_object())
    fail(path, ": safetensors header is not a JSON object");

  uint64_t bufferSize = size - 8 - headerLength;
  impl->buffer = data + 8 + headerLength;
  struct Span {
    uint64_t begin, end;
    const std::string *name;
  };
  std::vector<Span> spans;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    if (name == kMetadataKey) {
      if (!it->is_object())
        fail(path, ": '__metadata__' is not a JSON object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          fail(path, ": metadata value of ", quoteName(m.key()),
               " is not a string");
        impl->metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    std::string what = path + ": tensor " + quoteName(name);
    TensorEntry entry = parseEntry(*it, what);
    auto [pos, inserted] = impl->entries.emplace(name, std::move(entry));
    spans.push_back(Span{pos->second.begin, pos->second.end, &pos->first});
  }

  // The tensors must tile the buffer: sorted by offsets, each starts where
  // the previous one ended, and the last ends at the end of the file.
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return std::tie(a.begin, a.end, *a.name) <
           std::tie(b.begin, b.end, *b.name);
  });
  uint64_t expected = 0;
  for (const Span &s : spans) {
    if (s.begin != expected)
      fail(path, ": tensor ", quoteName(*s.name), " starts at byte ", s.begin,
           " of the data buffer, expected ", expected,
           " (tensors must be contiguous and must not overlap)");
    expected = s.end;
    impl->names.push_back(*s.name);
  }
  if (expected > bufferSize)
    fail(path, ": truncated safetensors file: tensors need ", expected,
         " bytes of data, the file holds ", bufferSize);
  if (expected < bufferSize)
    fail(path, ": safetensors file has ", bufferSize - expected,
         " bytes after the last tensor");
  return SafeTensorsFile(std::move(impl));
}

SafeTensorsFile SafeTensorsFile::open(const std::string &path) {
  return fromBytes(mapFile(path), path);
}

const std::string &SafeTensorsFile::path() const { return impl_->path; }
const std::vector<std::string> &SafeTensorsFile::names() const {
  return impl_->names;
}
bool SafeTensorsFile::contains(const std::string &name) const {
  return impl_->entries.count(name) != 0;
}
const TensorEntry &SafeTensorsFile::entry(const std::string &name) const {
  return impl_->entry(name);
}
const Metadata &SafeTensorsFile::metadata() const { return impl_->metadata; }

Tensor SafeTensorsFile::read(const std::string &name) const {
  const TensorEntry &e = impl_->entry(name);
  return Tensor::view(e.dtype, e.shape, impl_->buffer + e.begin,
                      impl_->bytes.owner);
}

NamedTensors SafeTensorsFile::readAll() const {
  NamedTensors out;
  for (const std::string &name : impl_->names)
    out.emplace_back(name, read(name));
  return out;
}

void effrt::writeSafeTensors(const std::string &path,
                             const NamedTensors &tensors,
                             const Metadata &metadata) {
  std::unordered_set<std::string> seen;
  for (const auto &[name, tensor] : tensors) {
    if (name.empty())
      fail(path, ": tensor names must not be empty");
    if (name == kMetadataKey)
      fail(path, ": '__metadata__' is reserved and cannot name a tensor");
    if (!seen.insert(name).second)
      fail(path, ": two tensors named ", quoteName(name));
  }

  // Largest elements first: with the buffer 8-aligned, every tensor then
  // starts at a multiple of its element size.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    size_t sa = dtypeSize(tensors[a].second.dtype());
    size_t sb = dtypeSize(tensors[b].second.dtype());
    return sa != sb ? sa > sb : a < b;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (size_t i : order) {
    const Tensor &t = tensors[i].second;
    header[tensors[i].first] = {
        {"dtype", std::string(dtypeSafeTensorsCode(t.dtype()))},
        {"shape", t.shape()},
        {"data_offsets", {offset, offset + t.byteSize()}}};
    offset += t.byteSize();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception &e) {
    fail(path, ": cannot write the header: ", jsonMessage(e));
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  AtomicFileWriter out(path);
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  out.write(length, 8);
  out.write(text.data(), text.size());
  for (size_t i : order)
    out.write(tensors[i].second.data(), tensors[i].second.byteSize());
  out.commit();
}
