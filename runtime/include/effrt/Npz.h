//===- Npz.h - numpy .npz archives ------------------------------*- C++ -*-===//
//
// An .npz is a zip archive of .npy files, one per array, written by
// np.savez (stored) or np.savez_compressed (deflate). NpzFile maps the
// archive, validates its directory up front and decodes arrays on demand:
// stored arrays are views into the mapping (no copy), compressed ones are
// inflated into owned buffers. writeNpz writes an archive numpy reads back.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_NPZ_H
#define EFFRT_NPZ_H

#include "effrt/File.h"
#include "effrt/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace effrt {

struct NpzReadOptions {
  /// Check each entry's CRC-32 when it is read. For stored arrays this reads
  /// every byte once (a few GB/s); a data loader that trusts its input may
  /// turn it off.
  bool verifyChecksums = true;
};

/// The dtype and shape of an array, known without decoding its data.
struct ArrayInfo {
  DType dtype = DType::F32;
  Shape shape;
  bool compressed = false;
};

/// An open .npz archive. Cheap to copy; copies share the mapping. Reading is
/// const and thread-safe.
class NpzFile {
public:
  /// Maps and validates `path`. Throws Error naming the file.
  static NpzFile open(const std::string &path, NpzReadOptions options = {});
  /// An archive held in memory; `displayName` stands for the path in errors.
  static NpzFile fromBytes(SharedBytes bytes, std::string displayName,
                           NpzReadOptions options = {});

  const std::string &path() const;
  /// Array names in archive order, without the ".npy" suffix.
  const std::vector<std::string> &names() const;
  bool contains(const std::string &name) const;

  /// Parses only the array's .npy header.
  ArrayInfo info(const std::string &name) const;
  /// Decodes an array. Throws Error if the name is absent or the entry is
  /// not a valid .npy of a supported dtype in C order. Each call decodes
  /// (and checks the CRC) again: keep the Tensor.
  Tensor read(const std::string &name) const;
  /// Every array, in archive order.
  NamedTensors readAll() const;

  struct Impl;

private:
  explicit NpzFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

struct NpzWriteOptions {
  /// Deflate entries like np.savez_compressed.
  bool compress = false;
  /// Use zip64 records even for small archives (tests of the zip64 paths).
  bool forceZip64 = false;
};

/// Writes `arrays` as NAME.npy entries, atomically (see AtomicFileWriter).
/// Stored arrays start 64-byte aligned in the file. Throws Error on empty or
/// duplicate names and on dtypes numpy lacks (bfloat16).
void writeNpz(const std::string &path, const NamedTensors &arrays,
              const NpzWriteOptions &options = {});

} // namespace effrt

#endif // EFFRT_NPZ_H
