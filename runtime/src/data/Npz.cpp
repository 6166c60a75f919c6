//===- Npz.cpp - numpy .npz archives --------------------------------------===//

#include "effrt/Npz.h"

#include "Zip.h"
#include "effrt/Error.h"
#include "effrt/Npy.h"

#include <unordered_map>

using namespace effrt;

struct NpzFile::Impl {
  std::string path;
  SharedBytes bytes;
  NpzReadOptions options;
  /// The bytes are a read-only mapping of the file (not a caller's buffer).
  bool mapped = false;
  std::vector<zip::Entry> entries;
  std::vector<std::string> names;
  std::unordered_map<std::string, size_t> index;

  const zip::Entry &entry(const std::string &name) const {
    auto it = index.find(name);
    if (it == index.end())
      fail(path, ": no array named ", quoteName(name));
    return entries[it->second];
  }
  std::string what(const std::string &name) const {
    return path + ": array " + quoteName(name);
  }
};

static std::string arrayName(const std::string &entryName) {
  static const std::string suffix = ".npy";
  if (entryName.size() > suffix.size() &&
      entryName.compare(entryName.size() - suffix.size(), suffix.size(),
                        suffix) == 0)
    return entryName.substr(0, entryName.size() - suffix.size());
  return entryName;
}

NpzFile NpzFile::fromBytes(SharedBytes bytes, std::string displayName,
                           NpzReadOptions options) {
  auto impl = std::make_shared<Impl>();
  impl->path = std::move(displayName);
  impl->bytes = std::move(bytes);
  impl->options = options;
  impl->entries =
      zip::readDirectory(impl->bytes.data, impl->bytes.size, impl->path);
  for (size_t i = 0; i < impl->entries.size(); ++i) {
    std::string name = arrayName(impl->entries[i].name);
    if (!impl->index.emplace(name, i).second)
      fail(impl->path, ": archive has two arrays named ", quoteName(name));
    impl->names.push_back(std::move(name));
  }
  return NpzFile(std::move(impl));
}

NpzFile NpzFile::open(const std::string &path, NpzReadOptions options) {
  NpzFile file = fromBytes(mapFile(path), path, options);
  std::const_pointer_cast<Impl>(file.impl_)->mapped = true;
  return file;
}

const std::string &NpzFile::path() const { return impl_->path; }
const std::vector<std::string> &NpzFile::names() const { return impl_->names; }
bool NpzFile::contains(const std::string &name) const {
  return impl_->index.count(name) != 0;
}

/// Checks that the entry holds exactly the header plus the array's bytes.
static void checkDataSize(const NpyHeader &header, uint64_t entrySize,
                          const std::string &what) {
  uint64_t available = entrySize - header.dataOffset;
  if (available != header.dataSize)
    fail(what, ": array of shape ", formatShape(header.shape), " and dtype ",
         dtypeName(header.dtype), " needs ", header.dataSize,
         " bytes of data, the entry has ", available);
}

/// Inflates and parses the .npy preamble and header of a compressed entry.
static NpyHeader readCompressedHeader(zip::Inflater &inflater,
                                      const zip::Entry &entry,
                                      const std::string &what) {
  std::byte preambleBytes[kNpyMaxPreambleSize];
  uint64_t n = std::min<uint64_t>(10, entry.uncompressedSize);
  inflater.read(preambleBytes, n);
  if (n == 10 &&
      (preambleBytes[6] == std::byte{2} || preambleBytes[6] == std::byte{3}) &&
      entry.uncompressedSize >= 12) {
    inflater.read(preambleBytes + 10, 2);
    n = 12;
  }
  NpyPreamble preamble =
      parseNpyPreamble(preambleBytes, static_cast<size_t>(n), what);
  if (entry.uncompressedSize - preamble.size < preamble.headerLength)
    fail(what, ": truncated .npy header (needs ",
         preamble.size + preamble.headerLength, " bytes, the entry has ",
         entry.uncompressedSize, ")");
  std::string dict(static_cast<size_t>(preamble.headerLength), '\0');
  inflater.read(dict.data(), dict.size());
  NpyHeader header = parseNpyHeaderDict(dict, preamble, what);
  checkDataSize(header, entry.uncompressedSize, what);
  return header;
}

ArrayInfo NpzFile::info(const std::string &name) const {
  const zip::Entry &e = impl_->entry(name);
  std::string what = impl_->what(name);
  const std::byte *p = impl_->bytes.data + e.dataOffset;
  if (e.method == zip::kStored) {
    NpyHeader header = parseNpyHeader(p, e.uncompressedSize, what);
    checkDataSize(header, e.uncompressedSize, what);
    return ArrayInfo{header.dtype, header.shape, false};
  }
  zip::Inflater inflater(p, e.compressedSize, what);
  NpyHeader header = readCompressedHeader(inflater, e, what);
  return ArrayInfo{header.dtype, header.shape, true};
}

Tensor NpzFile::read(const std::string &name) const {
  const zip::Entry &e = impl_->entry(name);
  std::string what = impl_->what(name);
  const std::byte *p = impl_->bytes.data + e.dataOffset;
  bool verify = impl_->options.verifyChecksums;

  if (e.method == zip::kStored) {
    if (verify && zip::crc32(0, p, e.uncompressedSize) != e.crc32)
      fail(what, ": CRC-32 mismatch, the entry is corrupt");
    NpyHeader header = parseNpyHeader(p, e.uncompressedSize, what);
    checkDataSize(header, e.uncompressedSize, what);
    return Tensor::view(header.dtype, header.shape, p + header.dataOffset,
                        impl_->bytes.owner);
  }

  zip::Inflater inflater(p, e.compressedSize, what);
  if (impl_->mapped)
    inflater.releaseConsumedInput();
  NpyHeader header = readCompressedHeader(inflater, e, what);
  Tensor tensor;
  try {
    tensor = Tensor::allocate(header.dtype, header.shape);
  } catch (const std::bad_alloc &) {
    fail(what, ": cannot allocate ", header.dataSize, " bytes");
  }
  inflater.read(tensor.mutableData(), header.dataSize);
  inflater.expectEnd();
  if (verify && inflater.crc() != e.crc32)
    fail(what, ": CRC-32 mismatch, the entry is corrupt");
  return tensor;
}

NamedTensors NpzFile::readAll() const {
  NamedTensors out;
  for (const std::string &name : impl_->names)
    out.emplace_back(name, read(name));
  return out;
}

void effrt::writeNpz(const std::string &path, const NamedTensors &arrays,
                     const NpzWriteOptions &options) {
  std::vector<std::string> headers;
  std::unordered_map<std::string, int> seen;
  for (const auto &[name, tensor] : arrays) {
    if (name.empty())
      fail(path, ": array names must not be empty");
    if (name.find('\0') != std::string::npos)
      fail(path, ": array name ", quoteName(name), " contains a NUL byte");
    if (!seen.emplace(name, 0).second)
      fail(path, ": two arrays named ", quoteName(name));
    if (dtypeNumpyCode(tensor.dtype()).empty())
      fail(path, ": array ", quoteName(name), " has dtype ",
           dtypeName(tensor.dtype()),
           ", which numpy cannot store; convert it first");
    headers.push_back(formatNpyHeader(tensor.dtype(), tensor.shape()));
  }

  AtomicFileWriter out(path);
  zip::Writer zip(out, options.forceZip64);
  for (size_t i = 0; i < arrays.size(); ++i) {
    const Tensor &tensor = arrays[i].second;
    zip.beginEntry(arrays[i].first + ".npy",
                   headers[i].size() + tensor.byteSize(), options.compress);
    zip.write(headers[i].data(), headers[i].size());
    zip.write(tensor.data(), tensor.byteSize());
    zip.endEntry();
  }
  zip.finish();
  out.commit();
}
