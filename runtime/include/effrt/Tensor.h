//===- Tensor.h - Element types and host tensors ----------------*- C++ -*-===//
//
// DType names the element types the runtime moves around, with their sizes
// and their spellings in numpy (.npy descr) and safetensors. Tensor is a
// dense, C-order host tensor: a dtype, a shape and the bytes, which it either
// owns or views inside storage kept alive by a shared owner (for example a
// memory-mapped file).
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_TENSOR_H
#define EFFRT_TENSOR_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace effrt {

/// Element types. The enumerators' order is not part of any file format.
enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  F64,
  I64,
  I32,
  I16,
  I8,
  U8,
  U16,
  U32,
  U64,
  Bool,
};

/// Every DType, in declaration order.
inline constexpr DType kAllDTypes[] = {
    DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64,
    DType::I32, DType::I16, DType::I8,   DType::U8,  DType::U16,
    DType::U32, DType::U64, DType::Bool};

/// Bytes per element.
size_t dtypeSize(DType dtype);
/// The PyTorch/numpy-style name: "float32", "bfloat16", "int64", "bool".
std::string_view dtypeName(DType dtype);
/// The little-endian .npy descr ("<f4", "|b1"); empty for bfloat16, which
/// numpy does not have.
std::string_view dtypeNumpyCode(DType dtype);
/// The safetensors dtype ("F32", "BF16", "BOOL").
std::string_view dtypeSafeTensorsCode(DType dtype);
bool isFloatingPoint(DType dtype);

std::optional<DType> dtypeFromName(std::string_view name);
/// Accepts "<" or "|" for one-byte types; big-endian codes are rejected.
std::optional<DType> dtypeFromNumpyCode(std::string_view code);
std::optional<DType> dtypeFromSafeTensorsCode(std::string_view code);

using Shape = std::vector<int64_t>;

/// "[10,64]"; "[]" for a scalar. Negative dims print as "*" (wildcards in
/// expected shapes).
std::string formatShape(const Shape &shape);
/// The number of elements, or nullopt when a dim is negative or the product
/// overflows int64.
std::optional<int64_t> checkedNumElements(const Shape &shape);
/// numElements * dtypeSize, or nullopt on a negative dim or overflow.
std::optional<uint64_t> checkedByteSize(DType dtype, const Shape &shape);

/// IEEE half and bfloat16 conversions (round to nearest even when narrowing).
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);

/// A dense C-order host tensor. Copies share the storage.
///
/// Views into files (Tensor::view) are read-only and may be unaligned: an
/// array stored in a zip archive starts wherever the archive put it. Read
/// elements through load<T>() or copy the bytes; clone() gives an owned,
/// 64-byte aligned copy.
class Tensor {
public:
  /// An empty float32 tensor of shape [0] with no storage.
  Tensor();

  /// Owned, zero-filled, 64-byte aligned storage. Throws Error if the size
  /// overflows.
  static Tensor zeros(DType dtype, Shape shape);
  /// Owned, uninitialized, 64-byte aligned storage (to be filled at once).
  static Tensor allocate(DType dtype, Shape shape);
  /// Owned copy of `nbytes` bytes, which must equal the tensor's size.
  static Tensor copyOf(DType dtype, Shape shape, const void *data,
                       size_t nbytes);
  /// A read-only view of bytes kept alive by `owner` (may be null when the
  /// caller guarantees the lifetime).
  static Tensor view(DType dtype, Shape shape, const void *data,
                     std::shared_ptr<const void> owner);

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numElements() const { return numElements_; }
  size_t byteSize() const { return byteSize_; }

  const std::byte *data() const { return data_; }
  /// Writable bytes; throws Error on a read-only view.
  std::byte *mutableData();
  bool isWritable() const { return writable_; }
  /// Whether data() is aligned to the element size.
  bool isAligned() const;

  /// Rows [begin, end) along dim 0 as a tensor sharing this one's storage.
  Tensor sliceRows(int64_t begin, int64_t end) const;
  /// An owned, aligned, writable copy.
  Tensor clone() const;
  /// Same bytes and storage, another shape with the same element count.
  Tensor reshaped(Shape shape) const;

  /// Element `i` in C order, read with memcpy (safe when unaligned).
  template <typename T> T load(int64_t i) const {
    T value;
    std::memcpy(&value, data_ + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    return value;
  }
  /// Element `i` converted to double (bool → 0/1; 64-bit integers may round).
  double elementAsDouble(int64_t i) const;

  /// Whether dtype, shape and bytes are all equal.
  bool sameAs(const Tensor &other) const;

private:
  Tensor(DType dtype, Shape shape, std::byte *data,
         std::shared_ptr<const void> owner, bool writable);

  DType dtype_ = DType::F32;
  Shape shape_;
  int64_t numElements_ = 0;
  size_t byteSize_ = 0;
  std::byte *data_ = nullptr;
  std::shared_ptr<const void> owner_;
  bool writable_ = false;
};

/// Named tensors in a meaningful order (file order, or the order to write).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Checks that `tensor` has `dtype` and matches `pattern`, where a negative
/// dim matches any size; otherwise throws
///   FILE: array 'x' has shape [10,64] and dtype int64, expected [*,64] with
///   float32
/// `kind` is the noun for the message ("array", "tensor", "input").
void expectTensor(std::string_view file, std::string_view kind,
                  std::string_view name, const Tensor &tensor, DType dtype,
                  const Shape &pattern);

} // namespace effrt

#endif // EFFRT_TENSOR_H
