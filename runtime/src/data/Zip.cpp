//===- Zip.cpp - The zip container of .npz archives -----------------------===//

#include "Zip.h"

#include "effrt/Error.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include <sys/mman.h>
#include <unistd.h>

using namespace effrt;
using namespace effrt::zip;

static constexpr uint32_t kLocalSig = 0x04034b50;
static constexpr uint32_t kCentralSig = 0x02014b50;
static constexpr uint32_t kEndSig = 0x06054b50;
static constexpr uint32_t kEnd64Sig = 0x06064b50;
static constexpr uint32_t kEnd64LocatorSig = 0x07064b50;
static constexpr uint16_t kZip64ExtraId = 0x0001;
/// The extra field Android's zipalign uses to pad local headers.
static constexpr uint16_t kAlignExtraId = 0xd935;
static constexpr size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22;
static constexpr size_t kEnd64Size = 56, kEnd64LocatorSize = 20;
static constexpr uint32_t kMax32 = 0xffffffffu;
static constexpr uint16_t kMax16 = 0xffffu;
static constexpr uint64_t kDataAlignment = 64;

static uint64_t le(const std::byte *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
static uint16_t le16(const std::byte *p) {
  return static_cast<uint16_t>(le(p, 2));
}
static uint32_t le32(const std::byte *p) {
  return static_cast<uint32_t>(le(p, 4));
}
static uint64_t le64(const std::byte *p) { return le(p, 8); }

uint32_t effrt::crc32(const void *data, uint64_t size, uint32_t crc) {
  return zip::crc32(crc, static_cast<const std::byte *>(data), size);
}

uint32_t zip::crc32(uint32_t crc, const std::byte *data, uint64_t size) {
  // zlib's crc32 takes a uInt length: go in 1 GiB pieces.
  while (size) {
    uInt n = static_cast<uInt>(std::min<uint64_t>(size, 1u << 30));
    crc = static_cast<uint32_t>(
        ::crc32(crc, reinterpret_cast<const Bytef *>(data), n));
    data += n;
    size -= n;
  }
  return crc;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
/// Bounds-checked view of the archive.
struct Archive {
  const std::byte *data;
  uint64_t size;
  const std::string &path;

  const std::byte *at(uint64_t offset, uint64_t length,
                      const char *what) const {
    if (offset > size || length > size - offset)
      fail(path, ": not a valid .npz (zip) archive: ", what, " at offset ",
           offset, " runs past the end of the file (", size, " bytes)");
    return data + offset;
  }
};

struct EndRecord {
  uint64_t entries, cdSize, cdOffset;
};
} // namespace

static EndRecord findEndRecord(const Archive &ar) {
  if (ar.size < kEndSize) {
    if (ar.size >= 4 && le32(ar.data) == kLocalSig)
      fail(ar.path, ": truncated .npz (zip) archive: no end of central "
                    "directory record");
    fail(ar.path, ": not a .npz (zip) archive (file is ", ar.size, " bytes)");
  }
  // The end record is the last thing in the file, followed only by a
  // comment of at most 64 KiB.
  uint64_t lowest =
      ar.size - kEndSize > kMax16 ? ar.size - kEndSize - kMax16 : 0;
  uint64_t pos = ar.size - kEndSize;
  for (;; --pos) {
    const std::byte *p = ar.data + pos;
    if (le32(p) == kEndSig && pos + kEndSize + le16(p + 20) <= ar.size)
      break;
    if (pos == lowest) {
      if (le32(ar.data) == kLocalSig)
        fail(ar.path, ": truncated .npz (zip) archive: no end of central "
                      "directory record");
      fail(ar.path, ": not a .npz (zip) archive (no end of central "
                    "directory record)");
    }
  }
  const std::byte *end = ar.data + pos;
  if (le16(end + 4) != 0 || le16(end + 6) != 0)
    fail(ar.path, ": multi-disk zip archives are not supported");
  EndRecord rec{le16(end + 10), le32(end + 12), le32(end + 16)};

  // A zip64 end record, when present, is found through the locator just
  // before the classic end record and supersedes its saturated fields.
  if (pos >= kEnd64LocatorSize &&
      le32(ar.data + pos - kEnd64LocatorSize) == kEnd64LocatorSig) {
    const std::byte *loc = ar.data + pos - kEnd64LocatorSize;
    uint64_t off = le64(loc + 8);
    const std::byte *e64 = ar.at(off, kEnd64Size, "zip64 end record");
    if (le32(e64) != kEnd64Sig)
      fail(ar.path, ": not a valid .npz (zip) archive: bad zip64 end record "
                    "signature");
    if (le32(e64 + 16) != 0 || le32(e64 + 20) != 0)
      fail(ar.path, ": multi-disk zip archives are not supported");
    rec = EndRecord{le64(e64 + 32), le64(e64 + 40), le64(e64 + 48)};
  }
  ar.at(rec.cdOffset, rec.cdSize, "central directory");
  if (rec.cdOffset + rec.cdSize > pos)
    fail(ar.path, ": not a valid .npz (zip) archive: central directory "
                  "overlaps the end record");
  return rec;
}

/// Reads the zip64 extra field's values for the fields saturated at 0xffffffff.
static void applyZip64Extra(const Archive &ar, const std::byte *extra,
                            size_t extraSize, const std::string &name,
                            uint64_t &uncompressed, uint64_t &compressed,
                            uint64_t &offset, bool wantOffset) {
  bool needU = uncompressed == kMax32, needC = compressed == kMax32;
  bool needO = wantOffset && offset == kMax32;
  if (!needU && !needC && !needO)
    return;
  size_t pos = 0;
  while (pos + 4 <= extraSize) {
    uint16_t id = le16(extra + pos), len = le16(extra + pos + 2);
    if (pos + 4 + len > extraSize)
      break;
    if (id == kZip64ExtraId) {
      const std::byte *v = extra + pos + 4;
      size_t avail = len;
      auto take = [&](uint64_t &field) {
        if (avail < 8)
          fail(ar.path,
               ": not a valid .npz (zip) archive: short zip64 "
               "field for entry ",
               quoteName(name));
        field = le64(v);
        v += 8;
        avail -= 8;
      };
      if (needU)
        take(uncompressed);
      if (needC)
        take(compressed);
      if (needO)
        take(offset);
      return;
    }
    pos += 4 + len;
  }
  fail(ar.path, ": not a valid .npz (zip) archive: entry ", quoteName(name),
       " lacks its zip64 sizes");
}

std::vector<Entry> zip::readDirectory(const std::byte *data, size_t size,
                                      const std::string &path) {
  Archive ar{data, size, path};
  EndRecord rec = findEndRecord(ar);
  std::vector<Entry> entries;
  std::unordered_set<std::string> seen;
  // Each entry takes at least 46 directory bytes: bound the count first so
  // a corrupt count cannot make us reserve absurd memory.
  if (rec.entries > rec.cdSize / kCentralSize)
    fail(path, ": not a valid .npz (zip) archive: directory of ", rec.cdSize,
         " bytes cannot hold ", rec.entries, " entries");
  entries.reserve(static_cast<size_t>(rec.entries));
  uint64_t pos = rec.cdOffset, cdEnd = rec.cdOffset + rec.cdSize;
  for (uint64_t i = 0; i < rec.entries; ++i) {
    if (pos + kCentralSize > cdEnd)
      fail(path,
           ": not a valid .npz (zip) archive: central directory is "
           "shorter than its ",
           rec.entries, " entries");
    const std::byte *c = ar.data + pos;
    if (le32(c) != kCentralSig)
      fail(path,
           ": not a valid .npz (zip) archive: bad central directory "
           "entry signature at offset ",
           pos);
    uint16_t flags = le16(c + 8), method = le16(c + 10);
    uint32_t crc = le32(c + 16);
    uint64_t compressed = le32(c + 20), uncompressed = le32(c + 24);
    uint16_t nameLen = le16(c + 28), extraLen = le16(c + 30),
             commentLen = le16(c + 32);
    uint64_t offset = le32(c + 42);
    uint64_t recordSize = kCentralSize + nameLen + extraLen + commentLen;
    if (pos + recordSize > cdEnd)
      fail(path,
           ": not a valid .npz (zip) archive: central directory entry "
           "at offset ",
           pos, " runs past the directory");
    std::string name(reinterpret_cast<const char *>(c + kCentralSize), nameLen);
    applyZip64Extra(ar, c + kCentralSize + nameLen, extraLen, name,
                    uncompressed, compressed, offset, /*wantOffset=*/true);
    pos += recordSize;

    if (!name.empty() && name.back() == '/')
      continue; // A directory.
    if (flags & 1)
      fail(path, ": entry ", quoteName(name), " is encrypted");
    if (method != kStored && method != kDeflated)
      fail(path, ": entry ", quoteName(name), " uses compression method ",
           method, "; only stored (0) and deflate (8) are supported");
    if (method == kStored && compressed != uncompressed)
      fail(path, ": entry ", quoteName(name),
           " is stored but its sizes differ (", compressed, " vs ",
           uncompressed, ")");
    // Deflate expands at most 1032:1; a larger claim is corrupt, and
    // rejecting it bounds what a reader allocates for the entry.
    if (method == kDeflated && uncompressed / 1032 > compressed + 1024)
      fail(path, ": entry ", quoteName(name), " claims ", uncompressed,
           " bytes inflated from ", compressed,
           ", more than deflate can produce");
    if (!seen.insert(name).second)
      fail(path, ": archive has two entries named ", quoteName(name));

    // The local header repeats the name; its extra field may differ.
    const std::byte *l = ar.at(offset, kLocalSize, "local header");
    if (le32(l) != kLocalSig)
      fail(path,
           ": not a valid .npz (zip) archive: bad local header "
           "signature for entry ",
           quoteName(name));
    uint16_t localNameLen = le16(l + 26), localExtraLen = le16(l + 28);
    const std::byte *localName =
        ar.at(offset + kLocalSize, localNameLen, "local header name");
    if (localNameLen != nameLen || std::memcmp(localName, name.data(), nameLen))
      fail(path,
           ": not a valid .npz (zip) archive: local header name of "
           "entry ",
           quoteName(name), " differs");
    uint64_t dataOffset = offset + kLocalSize + localNameLen + localExtraLen;
    if (dataOffset > rec.cdOffset || compressed > rec.cdOffset - dataOffset)
      fail(path, ": truncated or corrupt .npz: data of entry ", quoteName(name),
           " (", compressed, " bytes at offset ", dataOffset,
           ") runs past the start of the central directory");
    entries.push_back(Entry{std::move(name), method, crc, compressed,
                            uncompressed, dataOffset});
  }
  return entries;
}

//===----------------------------------------------------------------------===//
// Inflater
//===----------------------------------------------------------------------===//

static constexpr uint64_t kChunk = 1u << 30;
/// Output per inflate call, and so how often consumed input is released.
static constexpr uint64_t kReleaseChunk = 64u << 20;

Inflater::Inflater(const std::byte *input, uint64_t inputSize, std::string what)
    : input_(input), released_(input), inputLeft_(inputSize),
      what_(std::move(what)) {
  if (inflateInit2(&stream_, -MAX_WBITS) != Z_OK)
    fail(what_, ": cannot initialize zlib");
}

Inflater::~Inflater() { inflateEnd(&stream_); }

void Inflater::release(bool all) {
  if (!release_)
    return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto consumed = reinterpret_cast<uintptr_t>(
      all ? input_ : reinterpret_cast<const std::byte *>(stream_.next_in));
  // Whole pages only: the first and last may hold other entries' bytes,
  // which are still released safely (a read-only mapping refaults them).
  uintptr_t begin = (reinterpret_cast<uintptr_t>(released_) + page - 1) & ~(page - 1);
  uintptr_t end = consumed & ~(page - 1);
  if (end >= begin + kReleaseChunk / 4 || (all && end > begin)) {
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
    released_ = reinterpret_cast<const std::byte *>(end);
  }
}

size_t Inflater::step(std::byte *out, size_t size) {
  if (stream_.avail_in == 0 && inputLeft_) {
    uInt n = static_cast<uInt>(std::min(inputLeft_, kChunk));
    stream_.next_in =
        reinterpret_cast<Bytef *>(const_cast<std::byte *>(input_));
    stream_.avail_in = n;
    input_ += n;
    inputLeft_ -= n;
  }
  stream_.next_out = reinterpret_cast<Bytef *>(out);
  stream_.avail_out = static_cast<uInt>(size);
  int ret = inflate(&stream_, Z_NO_FLUSH);
  size_t produced = size - stream_.avail_out;
  crc_ = zip::crc32(crc_, out, produced);
  switch (ret) {
  case Z_OK:
    break;
  case Z_STREAM_END:
    ended_ = true;
    break;
  case Z_BUF_ERROR:
    if (stream_.avail_in == 0 && inputLeft_ == 0)
      fail(what_, ": truncated compressed data");
    break;
  case Z_MEM_ERROR:
    fail(what_, ": out of memory while inflating");
  default:
    fail(what_, ": corrupt compressed data (",
         stream_.msg ? stream_.msg : "zlib error", ")");
  }
  if (!produced && !ended_ && stream_.avail_in == 0 && inputLeft_ == 0)
    fail(what_, ": truncated compressed data");
  return produced;
}

void Inflater::read(void *out, uint64_t size) {
  auto *p = static_cast<std::byte *>(out);
  while (size) {
    if (ended_)
      fail(what_, ": corrupt compressed data (the stream ends before the "
                  "entry does)");
    size_t produced = step(
        p, static_cast<size_t>(std::min(size, release_ ? kReleaseChunk : kChunk)));
    p += produced;
    size -= produced;
    release(false);
  }
}

void Inflater::expectEnd() {
  std::byte scratch[1];
  while (!ended_) {
    if (step(scratch, sizeof(scratch)))
      fail(what_, ": compressed data is longer than its header says");
  }
  release(true);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {
/// Little-endian byte builder.
struct Bytes {
  std::string s;
  Bytes &u16(uint64_t v) { return put(v, 2); }
  Bytes &u32(uint64_t v) { return put(v, 4); }
  Bytes &u64(uint64_t v) { return put(v, 8); }
  Bytes &put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      s += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  Bytes &str(const std::string &t) {
    s += t;
    return *this;
  }
};
} // namespace

static constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1; // 1980-01-01
static constexpr uint16_t kDosTime = 0;

static uint16_t nameFlags(const std::string &name) {
  // Bit 11: the name is UTF-8.
  for (char c : name)
    if (static_cast<unsigned char>(c) >= 0x80)
      return 1 << 11;
  return 0;
}

Writer::~Writer() {
  if (deflating_)
    deflateEnd(&deflate_);
}

void Writer::beginEntry(const std::string &name, uint64_t size, bool compress) {
  if (open_)
    fail(out_.path(), ": internal error: zip entry not ended");
  if (name.size() > kMax16)
    fail(out_.path(), ": entry name is too long");
  open_ = true;
  declaredSize_ = size;
  crc_ = 0;
  uncompressed_ = 0;
  // Like Python's zipfile, reserve zip64 sizes when the entry may get near
  // 4 GiB (deflate can expand incompressible data slightly).
  localZip64_ = forceZip64_ || size > kMax32 / 105 * 100;

  Written w{name, compress ? kDeflated : kStored, 0, 0, size, out_.offset()};
  entries_.push_back(w);

  Bytes extra;
  if (localZip64_)
    extra.u16(kZip64ExtraId).u16(16).u64(0).u64(0);
  if (!compress) {
    uint64_t base = out_.offset() + kLocalSize + name.size() + extra.s.size();
    uint64_t payload =
        (kDataAlignment - (base + 6) % kDataAlignment) % kDataAlignment + 2;
    extra.u16(kAlignExtraId).u16(payload).u16(kDataAlignment);
    extra.s.append(payload - 2, '\0');
  }
  Bytes local;
  local.u32(kLocalSig)
      .u16(localZip64_ ? 45 : 20)
      .u16(nameFlags(name))
      .u16(w.method)
      .u16(kDosTime)
      .u16(kDosDate)
      .u32(0) // crc32, patched by endEntry
      .u32(localZip64_ ? kMax32 : 0)
      .u32(localZip64_ ? kMax32 : 0)
      .u16(name.size())
      .u16(extra.s.size())
      .str(name)
      .str(extra.s);
  out_.write(local.s.data(), local.s.size());
  dataStart_ = out_.offset();

  if (compress) {
    deflate_ = z_stream{};
    if (deflateInit2(&deflate_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS,
                     8, Z_DEFAULT_STRATEGY) != Z_OK)
      fail(out_.path(), ": cannot initialize zlib");
    deflating_ = true;
    deflateBuffer_.resize(1 << 18);
  }
}

void Writer::emitCompressed(int flush) {
  int ret;
  do {
    deflate_.next_out = deflateBuffer_.data();
    deflate_.avail_out = static_cast<uInt>(deflateBuffer_.size());
    ret = deflate(&deflate_, flush);
    if (ret == Z_STREAM_ERROR)
      fail(out_.path(), ": internal zlib error");
    out_.write(deflateBuffer_.data(),
               deflateBuffer_.size() - deflate_.avail_out);
  } while (deflate_.avail_out == 0 ||
           (flush == Z_FINISH && ret != Z_STREAM_END));
}

void Writer::write(const void *data, size_t size) {
  if (!open_)
    fail(out_.path(), ": internal error: zip write outside an entry");
  const auto *p = static_cast<const std::byte *>(data);
  crc_ = zip::crc32(crc_, p, size);
  uncompressed_ += size;
  if (!deflating_) {
    out_.write(p, size);
    return;
  }
  while (size) {
    uInt n = static_cast<uInt>(std::min<uint64_t>(size, kChunk));
    deflate_.next_in = reinterpret_cast<Bytef *>(const_cast<std::byte *>(p));
    deflate_.avail_in = n;
    emitCompressed(Z_NO_FLUSH);
    p += n;
    size -= n;
  }
}

void Writer::endEntry() {
  if (!open_)
    fail(out_.path(), ": internal error: no zip entry to end");
  if (uncompressed_ != declaredSize_)
    fail(out_.path(), ": internal error: zip entry size differs from declared");
  if (deflating_) {
    deflate_.next_in = nullptr;
    deflate_.avail_in = 0;
    emitCompressed(Z_FINISH);
    deflateEnd(&deflate_);
    deflating_ = false;
  }
  Written &w = entries_.back();
  w.crc32 = crc_;
  w.compressedSize = out_.offset() - dataStart_;
  if (!localZip64_ &&
      (w.compressedSize >= kMax32 || w.uncompressedSize >= kMax32))
    fail(out_.path(), ": internal error: zip entry outgrew 32-bit sizes");
  Bytes crc;
  crc.u32(w.crc32);
  out_.writeAt(w.headerOffset + 14, crc.s.data(), 4);
  Bytes sizes;
  if (localZip64_) {
    sizes.u64(w.uncompressedSize).u64(w.compressedSize);
    out_.writeAt(w.headerOffset + kLocalSize + w.name.size() + 4,
                 sizes.s.data(), 16);
  } else {
    sizes.u32(w.compressedSize).u32(w.uncompressedSize);
    out_.writeAt(w.headerOffset + 18, sizes.s.data(), 8);
  }
  open_ = false;
}

void Writer::finish() {
  if (open_)
    fail(out_.path(), ": internal error: zip entry not ended");
  uint64_t cdOffset = out_.offset();
  for (const Written &w : entries_) {
    bool zip64 = forceZip64_ || w.compressedSize >= kMax32 ||
                 w.uncompressedSize >= kMax32 || w.headerOffset >= kMax32;
    Bytes extra;
    if (zip64)
      extra.u16(kZip64ExtraId)
          .u16(24)
          .u64(w.uncompressedSize)
          .u64(w.compressedSize)
          .u64(w.headerOffset);
    Bytes c;
    c.u32(kCentralSig)
        .u16((3 << 8) | (zip64 ? 45 : 20)) // made by: Unix
        .u16(zip64 ? 45 : 20)
        .u16(nameFlags(w.name))
        .u16(w.method)
        .u16(kDosTime)
        .u16(kDosDate)
        .u32(w.crc32)
        .u32(zip64 ? kMax32 : w.compressedSize)
        .u32(zip64 ? kMax32 : w.uncompressedSize)
        .u16(w.name.size())
        .u16(extra.s.size())
        .u16(0)              // comment
        .u16(0)              // disk
        .u16(0)              // internal attributes
        .u32(0100644u << 16) // regular file, rw-r--r--
        .u32(zip64 ? kMax32 : w.headerOffset)
        .str(w.name)
        .str(extra.s);
    out_.write(c.s.data(), c.s.size());
  }
  uint64_t cdSize = out_.offset() - cdOffset;
  uint64_t count = entries_.size();
  bool zip64 =
      forceZip64_ || count >= kMax16 || cdSize >= kMax32 || cdOffset >= kMax32;
  if (zip64) {
    uint64_t end64Offset = out_.offset();
    Bytes e;
    e.u32(kEnd64Sig)
        .u64(kEnd64Size - 12)
        .u16((3 << 8) | 45)
        .u16(45)
        .u32(0)
        .u32(0)
        .u64(count)
        .u64(count)
        .u64(cdSize)
        .u64(cdOffset);
    e.u32(kEnd64LocatorSig).u32(0).u64(end64Offset).u32(1);
    out_.write(e.s.data(), e.s.size());
  }
  Bytes end;
  end.u32(kEndSig)
      .u16(0)
      .u16(0)
      .u16(std::min<uint64_t>(count, kMax16))
      .u16(std::min<uint64_t>(count, kMax16))
      .u32(std::min<uint64_t>(cdSize, kMax32))
      .u32(std::min<uint64_t>(cdOffset, kMax32))
      .u16(0);
  out_.write(end.s.data(), end.s.size());
}
