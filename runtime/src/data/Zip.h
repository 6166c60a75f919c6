//===- Zip.h - The zip container of .npz archives ---------------*- C++ -*-===//
//
// Just enough of PKWARE's APPNOTE for .npz: one-disk archives of stored or
// deflated entries, with zip64 sizes, offsets and end records. Internal to
// the runtime; Npz.h is the interface.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_DATA_ZIP_H
#define EFFRT_SRC_DATA_ZIP_H

#include "effrt/File.h"

#include <cstdint>
#include <string>
#include <vector>

#include <zlib.h>

namespace effrt::zip {

inline constexpr uint16_t kStored = 0;
inline constexpr uint16_t kDeflated = 8;

/// One file in the archive, with its data located and bounds-checked.
struct Entry {
  std::string name;
  uint16_t method = kStored;
  uint32_t crc32 = 0;
  uint64_t compressedSize = 0;
  uint64_t uncompressedSize = 0;
  /// Offset of the entry's (possibly compressed) bytes in the archive.
  uint64_t dataOffset = 0;
};

/// Parses and validates the central directory and every local header.
/// Directory entries ("name/") are skipped. `path` prefixes errors.
std::vector<Entry> readDirectory(const std::byte *data, size_t size,
                                 const std::string &path);

/// zlib's crc32 over any number of bytes.
uint32_t crc32(uint32_t crc, const std::byte *data, uint64_t size);

/// Inflates a raw deflate stream in pieces of exact size.
class Inflater {
public:
  Inflater(const std::byte *input, uint64_t inputSize, std::string what);
  ~Inflater();
  Inflater(const Inflater &) = delete;
  Inflater &operator=(const Inflater &) = delete;

  /// Produces exactly `size` bytes or throws Error.
  void read(void *out, uint64_t size);
  /// Throws Error unless the stream ends here.
  void expectEnd();
  /// The input is a read-only file mapping: drop its pages from the
  /// process's resident set once inflated (they stay in the page cache and
  /// fault back in if read again), so inflating an entry does not keep the
  /// compressed bytes resident next to the output.
  void releaseConsumedInput() { release_ = true; }
  /// CRC-32 of everything produced so far.
  uint32_t crc() const { return crc_; }

private:
  /// Runs inflate once into [out, out+size); returns the bytes produced.
  size_t step(std::byte *out, size_t size);

  /// Drops the whole pages of input consumed since the last release.
  void release(bool all);

  z_stream stream_{};
  const std::byte *input_;
  const std::byte *released_;
  bool release_ = false;
  uint64_t inputLeft_;
  std::string what_;
  uint32_t crc_ = 0;
  bool ended_ = false;
};

/// Writes a zip archive into an AtomicFileWriter, entry by entry.
class Writer {
public:
  explicit Writer(AtomicFileWriter &out, bool forceZip64 = false)
      : out_(out), forceZip64_(forceZip64) {}
  ~Writer();
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;

  /// Starts an entry of `size` uncompressed bytes. Stored entries' data
  /// starts at a multiple of 64 bytes in the file (padded with an extra
  /// field), so arrays inside can be mapped aligned.
  void beginEntry(const std::string &name, uint64_t size, bool compress);
  void write(const void *data, size_t size);
  void endEntry();
  /// Writes the central directory and end records.
  void finish();

private:
  struct Written {
    std::string name;
    uint16_t method;
    uint32_t crc32;
    uint64_t compressedSize, uncompressedSize, headerOffset;
  };
  void emitCompressed(int flush);

  AtomicFileWriter &out_;
  bool forceZip64_;
  std::vector<Written> entries_;
  // The entry being written.
  bool open_ = false;
  bool localZip64_ = false;
  uint64_t declaredSize_ = 0;
  uint64_t dataStart_ = 0;
  uint32_t crc_ = 0;
  uint64_t uncompressed_ = 0;
  z_stream deflate_{};
  bool deflating_ = false;
  std::vector<unsigned char> deflateBuffer_;
};

} // namespace effrt::zip

#endif // EFFRT_SRC_DATA_ZIP_H
