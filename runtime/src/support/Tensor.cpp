//===- Tensor.cpp - Element types and host tensors ------------------------===//

#include "effrt/Tensor.h"

#include "effrt/Error.h"

#include <cmath>
#include <new>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error                                                                         \
    "effrt reads and writes little-endian files in place: it needs a little-endian host"
#endif

using namespace effrt;

namespace {
struct DTypeInfo {
  DType dtype;
  size_t size;
  std::string_view name;
  std::string_view numpy;
  std::string_view safetensors;
  bool floating;
};
} // namespace

static constexpr DTypeInfo kDTypeInfo[] = {
    {DType::F32, 4, "float32", "<f4", "F32", true},
    {DType::F16, 2, "float16", "<f2", "F16", true},
    {DType::BF16, 2, "bfloat16", "", "BF16", true},
    {DType::F64, 8, "float64", "<f8", "F64", true},
    {DType::I64, 8, "int64", "<i8", "I64", false},
    {DType::I32, 4, "int32", "<i4", "I32", false},
    {DType::I16, 2, "int16", "<i2", "I16", false},
    {DType::I8, 1, "int8", "|i1", "I8", false},
    {DType::U8, 1, "uint8", "|u1", "U8", false},
    {DType::U16, 2, "uint16", "<u2", "U16", false},
    {DType::U32, 4, "uint32", "<u4", "U32", false},
    {DType::U64, 8, "uint64", "<u8", "U64", false},
    {DType::Bool, 1, "bool", "|b1", "BOOL", false},
};

static const DTypeInfo &info(DType dtype) {
  for (const DTypeInfo &i : kDTypeInfo)
    if (i.dtype == dtype)
      return i;
  fail("internal error: unknown dtype ", static_cast<int>(dtype));
}

size_t effrt::dtypeSize(DType dtype) { return info(dtype).size; }
std::string_view effrt::dtypeName(DType dtype) { return info(dtype).name; }
std::string_view effrt::dtypeNumpyCode(DType dtype) {
  return info(dtype).numpy;
}
std::string_view effrt::dtypeSafeTensorsCode(DType dtype) {
  return info(dtype).safetensors;
}
bool effrt::isFloatingPoint(DType dtype) { return info(dtype).floating; }

std::optional<DType> effrt::dtypeFromName(std::string_view name) {
  for (const DTypeInfo &i : kDTypeInfo)
    if (i.name == name)
      return i.dtype;
  return std::nullopt;
}

std::optional<DType> effrt::dtypeFromNumpyCode(std::string_view code) {
  if (code.size() < 2)
    return std::nullopt;
  // numpy writes '|' for one-byte types and '<' otherwise; accept either for
  // one-byte types since byte order does not apply to them.
  char order = code[0];
  if (order != '<' && order != '|')
    return std::nullopt;
  std::string_view rest = code.substr(1);
  for (const DTypeInfo &i : kDTypeInfo) {
    if (i.numpy.empty() || i.numpy.substr(1) != rest)
      continue;
    if (order == '|' && i.size != 1)
      return std::nullopt;
    return i.dtype;
  }
  return std::nullopt;
}

std::optional<DType> effrt::dtypeFromSafeTensorsCode(std::string_view code) {
  for (const DTypeInfo &i : kDTypeInfo)
    if (i.safetensors == code)
      return i.dtype;
  return std::nullopt;
}

std::string effrt::formatShape(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out += ',';
    out += shape[i] < 0 ? std::string("*") : std::to_string(shape[i]);
  }
  return out + "]";
}

std::optional<int64_t> effrt::checkedNumElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return std::nullopt;
  }
  return n;
}

std::optional<uint64_t> effrt::checkedByteSize(DType dtype,
                                               const Shape &shape) {
  std::optional<int64_t> n = checkedNumElements(shape);
  uint64_t bytes;
  if (!n ||
      __builtin_mul_overflow(static_cast<uint64_t>(*n),
                             static_cast<uint64_t>(dtypeSize(dtype)), &bytes))
    return std::nullopt;
  return bytes;
}

//===----------------------------------------------------------------------===//
// Half and bfloat16
//===----------------------------------------------------------------------===//

static uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
static float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float effrt::halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    float magnitude = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exp == 31)
    return bitsFloat(sign | 0x7f800000u | (mant << 13));
  return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t effrt::floatToHalf(float value) {
  uint32_t x = floatBits(value);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) // Inf or NaN (kept quiet).
    return sign | 0x7c00 |
           (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0);
  if (ax >= 0x477ff000u) // >= 65520 rounds to infinity.
    return sign | 0x7c00;
  if (ax < 0x38800000u) {
    // Below the smallest normal half: scale to units of 2^-24 (exact) and
    // round to nearest even.
    float scaled = bitsFloat(ax) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t odd = (ax >> 13) & 1;
  ax += 0xc8000fffu + odd; // Rebias the exponent and round to nearest even.
  return sign | static_cast<uint16_t>(ax >> 13);
}

float effrt::bfloat16ToFloat(uint16_t bits) {
  return bitsFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t effrt::floatToBfloat16(float value) {
  uint32_t x = floatBits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

static constexpr size_t kAlignment = 64;

static std::shared_ptr<void> allocateAligned(size_t nbytes) {
  void *p = ::operator new(nbytes ? nbytes : 1, std::align_val_t(kAlignment));
  return std::shared_ptr<void>(
      p, [](void *q) { ::operator delete(q, std::align_val_t(kAlignment)); });
}

static uint64_t byteSizeOrFail(DType dtype, const Shape &shape) {
  std::optional<uint64_t> bytes = checkedByteSize(dtype, shape);
  if (!bytes)
    fail("tensor shape ", formatShape(shape), " of ", dtypeName(dtype),
         " has a negative dimension or too many bytes");
  if (*bytes > static_cast<uint64_t>(SIZE_MAX))
    fail("tensor shape ", formatShape(shape), " of ", dtypeName(dtype),
         " does not fit in memory");
  return *bytes;
}

Tensor::Tensor() : shape_{0} {}

Tensor::Tensor(DType dtype, Shape shape, std::byte *data,
               std::shared_ptr<const void> owner, bool writable)
    : dtype_(dtype), shape_(std::move(shape)), data_(data),
      owner_(std::move(owner)), writable_(writable) {
  byteSize_ = byteSizeOrFail(dtype_, shape_);
  numElements_ = *checkedNumElements(shape_);
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  uint64_t bytes = byteSizeOrFail(dtype, shape);
  std::shared_ptr<void> storage = allocateAligned(bytes);
  std::memset(storage.get(), 0, bytes);
  auto *data = static_cast<std::byte *>(storage.get());
  return Tensor(dtype, std::move(shape), data, std::move(storage), true);
}

Tensor Tensor::allocate(DType dtype, Shape shape) {
  uint64_t bytes = byteSizeOrFail(dtype, shape);
  std::shared_ptr<void> storage = allocateAligned(bytes);
  auto *data = static_cast<std::byte *>(storage.get());
  return Tensor(dtype, std::move(shape), data, std::move(storage), true);
}

Tensor Tensor::copyOf(DType dtype, Shape shape, const void *data,
                      size_t nbytes) {
  uint64_t bytes = byteSizeOrFail(dtype, shape);
  if (bytes != nbytes)
    fail("tensor of shape ", formatShape(shape), " and dtype ",
         dtypeName(dtype), " needs ", bytes, " bytes, got ", nbytes);
  std::shared_ptr<void> storage = allocateAligned(bytes);
  if (bytes)
    std::memcpy(storage.get(), data, bytes);
  auto *p = static_cast<std::byte *>(storage.get());
  return Tensor(dtype, std::move(shape), p, std::move(storage), true);
}

Tensor Tensor::view(DType dtype, Shape shape, const void *data,
                    std::shared_ptr<const void> owner) {
  auto *p = static_cast<std::byte *>(const_cast<void *>(data));
  return Tensor(dtype, std::move(shape), p, std::move(owner), false);
}

std::byte *Tensor::mutableData() {
  if (!writable_)
    fail("tensor is a read-only view; clone() it to modify it");
  return data_;
}

bool Tensor::isAligned() const {
  return reinterpret_cast<uintptr_t>(data_) % dtypeSize(dtype_) == 0;
}

Tensor Tensor::sliceRows(int64_t begin, int64_t end) const {
  if (shape_.empty())
    fail("cannot slice rows of a scalar tensor");
  if (begin < 0 || end < begin || end > shape_[0])
    fail("row range [", begin, ",", end, ") is out of range for shape ",
         formatShape(shape_));
  Shape shape = shape_;
  shape[0] = end - begin;
  size_t rowBytes = shape_[0] ? byteSize_ / static_cast<size_t>(shape_[0]) : 0;
  Tensor t(dtype_, std::move(shape),
           data_ + static_cast<size_t>(begin) * rowBytes, owner_, writable_);
  return t;
}

Tensor Tensor::clone() const {
  return copyOf(dtype_, shape_, data_, byteSize_);
}

Tensor Tensor::reshaped(Shape shape) const {
  std::optional<int64_t> n = checkedNumElements(shape);
  if (!n || *n != numElements_)
    fail("cannot reshape ", formatShape(shape_), " to ", formatShape(shape));
  return Tensor(dtype_, std::move(shape), data_, owner_, writable_);
}

double Tensor::elementAsDouble(int64_t i) const {
  switch (dtype_) {
  case DType::F32:
    return load<float>(i);
  case DType::F16:
    return halfToFloat(load<uint16_t>(i));
  case DType::BF16:
    return bfloat16ToFloat(load<uint16_t>(i));
  case DType::F64:
    return load<double>(i);
  case DType::I64:
    return static_cast<double>(load<int64_t>(i));
  case DType::I32:
    return load<int32_t>(i);
  case DType::I16:
    return load<int16_t>(i);
  case DType::I8:
    return load<int8_t>(i);
  case DType::U8:
    return load<uint8_t>(i);
  case DType::U16:
    return load<uint16_t>(i);
  case DType::U32:
    return load<uint32_t>(i);
  case DType::U64:
    return static_cast<double>(load<uint64_t>(i));
  case DType::Bool:
    return load<uint8_t>(i) != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

bool Tensor::sameAs(const Tensor &other) const {
  return dtype_ == other.dtype_ && shape_ == other.shape_ &&
         (byteSize_ == 0 || std::memcmp(data_, other.data_, byteSize_) == 0);
}

void effrt::expectTensor(std::string_view file, std::string_view kind,
                         std::string_view name, const Tensor &tensor,
                         DType dtype, const Shape &pattern) {
  bool shapeOk = tensor.rank() == static_cast<int64_t>(pattern.size());
  for (size_t i = 0; shapeOk && i < pattern.size(); ++i)
    shapeOk = pattern[i] < 0 || pattern[i] == tensor.shape()[i];
  if (shapeOk && tensor.dtype() == dtype)
    return;
  if (tensor.dtype() == dtype)
    fail(file, ": ", kind, " ", quoteName(name), " has shape ",
         formatShape(tensor.shape()), ", expected ", formatShape(pattern),
         " with ", dtypeName(dtype));
  fail(file, ": ", kind, " ", quoteName(name), " has shape ",
       formatShape(tensor.shape()), " and dtype ", dtypeName(tensor.dtype()),
       ", expected ", formatShape(pattern), " with ", dtypeName(dtype));
}
