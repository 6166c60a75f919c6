//===- SafeTensors.h - The safetensors checkpoint format --------*- C++ -*-===//
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON
//   {"__metadata__": {"step": "10"},
//    "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
// and the data buffer, in which each tensor's [begin, end) offsets are
// relative. Readers check what the reference implementation checks: the
// header fits the file, is a JSON object with well-formed entries, and the
// tensors tile the buffer exactly (contiguous, non-overlapping, covering it)
// with end - begin = elements x dtype size.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SAFETENSORS_H
#define EFFRT_SAFETENSORS_H

#include "effrt/File.h"
#include "effrt/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace effrt {

using Metadata = std::map<std::string, std::string>;

/// Where a tensor lies in the data buffer.
struct TensorEntry {
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

/// An open, validated safetensors file. Tensors are read-only views of the
/// mapping (aligned when the writer aligned them, as effrt and the reference
/// writer do). Cheap to copy; reading is const and thread-safe.
class SafeTensorsFile {
public:
  static SafeTensorsFile open(const std::string &path);
  static SafeTensorsFile fromBytes(SharedBytes bytes, std::string displayName);

  const std::string &path() const;
  /// Tensor names in data order.
  const std::vector<std::string> &names() const;
  bool contains(const std::string &name) const;
  const TensorEntry &entry(const std::string &name) const;
  Tensor read(const std::string &name) const;
  NamedTensors readAll() const;
  /// The "__metadata__" map; empty when absent.
  const Metadata &metadata() const;

  struct Impl;

private:
  explicit SafeTensorsFile(std::shared_ptr<const Impl> impl)
      : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// Writes `tensors` and `metadata` to `path` atomically: the bytes go to
/// PATH.tmp.<pid>, which is fsynced and renamed over PATH, and the directory
/// is fsynced. Tensors are laid out by decreasing element size (then in the
/// given order) after a header padded to 8 bytes, so each is aligned to its
/// element size. Throws Error on empty, duplicate or reserved names.
void writeSafeTensors(const std::string &path, const NamedTensors &tensors,
                      const Metadata &metadata = {});

} // namespace effrt

#endif // EFFRT_SAFETENSORS_H
