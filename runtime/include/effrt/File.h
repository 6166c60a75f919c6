//===- File.h - Mapped input files and atomic output files ------*- C++ -*-===//
//
// Inputs are memory-mapped read-only and handed around as SharedBytes, whose
// owner keeps the mapping alive for as long as any tensor views it. Outputs
// go through AtomicFileWriter: bytes go to PATH.tmp.<pid> in the same
// directory, and commit() fsyncs the file, renames it over PATH and fsyncs
// the directory, so a process killed at any point leaves either the old PATH
// or the complete new one, never a torn file.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_FILE_H
#define EFFRT_FILE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace effrt {

/// Read-only bytes and the owner that keeps them alive.
struct SharedBytes {
  const std::byte *data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};

/// Maps the regular file at `path` read-only. An empty file gives size 0.
/// Throws Error ("PATH: cannot open: No such file or directory").
///
/// As with any mapping, the file must not be truncated while it is mapped.
SharedBytes mapFile(const std::string &path);

/// Takes ownership of an in-memory buffer (tests, fuzzers, inflated data).
SharedBytes bytesFromVector(std::vector<std::byte> bytes);

/// CRC-32 (zlib's, as in zip and PNG) of `size` bytes, continuing `crc`.
uint32_t crc32(const void *data, uint64_t size, uint32_t crc = 0);

/// Writes a file atomically; see the file comment.
class AtomicFileWriter {
public:
  /// Creates PATH.tmp.<pid>. Throws Error if it cannot.
  explicit AtomicFileWriter(std::string path);
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;

  /// Appends bytes (buffered).
  void write(const void *data, size_t size);
  /// Appends `count` zero bytes.
  void writeZeros(size_t count);
  /// Overwrites bytes already written at `offset` (e.g. a header patched
  /// once sizes are known).
  void writeAt(uint64_t offset, const void *data, size_t size);
  /// Bytes written so far.
  uint64_t offset() const { return offset_; }

  /// Flushes, fsyncs, renames over the final path and fsyncs its directory.
  void commit();

  const std::string &path() const { return path_; }
  const std::string &tempPath() const { return tempPath_; }

private:
  void flush();
  void writeAll(const void *data, size_t size);

  std::string path_;
  std::string tempPath_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::vector<std::byte> buffer_;
  bool committed_ = false;
};

} // namespace effrt

#endif // EFFRT_FILE_H
