//===- Npy.h - The .npy array format ----------------------------*- C++ -*-===//
//
// An .npy file is a preamble ("\x93NUMPY", major and minor version, a 2-byte
// (v1) or 4-byte (v2, v3) little-endian header length), a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (10, 64), }
// padded with spaces and ended by '\n', then the raw array bytes. effrt
// reads v1, v2 and v3 with the little-endian dtypes of DType in C order and
// writes v1 (v2 when the header needs it).
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_NPY_H
#define EFFRT_NPY_H

#include "effrt/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace effrt {

/// The preamble: 8 bytes of magic and version, then the header length.
struct NpyPreamble {
  int majorVersion = 0;
  /// Bytes of magic, version and length field: 10 (v1) or 12 (v2, v3).
  size_t size = 0;
  /// Bytes of the header dict that follow the preamble.
  uint64_t headerLength = 0;
};

/// What the header says about the array.
struct NpyHeader {
  DType dtype = DType::F32;
  Shape shape;
  /// Bytes from the start of the .npy to the array data.
  uint64_t dataOffset = 0;
  /// numElements * dtypeSize.
  uint64_t dataSize = 0;
};

/// Bytes needed to read the preamble (the v2/v3 size; a v1 preamble is
/// shorter and parsePreamble accepts 10 bytes for it).
inline constexpr size_t kNpyMaxPreambleSize = 12;

/// Parses the preamble from the first `size` bytes. `what` prefixes errors
/// ("data.npz: array 'x'"). Throws Error on bad magic, an unknown version or
/// too few bytes.
NpyPreamble parseNpyPreamble(const std::byte *data, size_t size,
                             const std::string &what);

/// Parses the header dict (the headerLength bytes after the preamble).
/// Rejects Fortran order, structured and non-little-endian dtypes, and
/// shapes whose byte size overflows. dataOffset is set from `preamble`.
NpyHeader parseNpyHeaderDict(std::string_view dict, const NpyPreamble &preamble,
                             const std::string &what);

/// Preamble and dict together, from a buffer holding at least the header.
NpyHeader parseNpyHeader(const std::byte *data, size_t size,
                         const std::string &what);

/// The preamble and header for an array, padded so that the data starts at a
/// multiple of 64 bytes from the start of the .npy. Throws Error for
/// bfloat16, which numpy cannot represent.
std::string formatNpyHeader(DType dtype, const Shape &shape);

/// Reads a whole .npy file; the tensor views the mapped file.
Tensor readNpy(const std::string &path);

} // namespace effrt

#endif // EFFRT_NPY_H
