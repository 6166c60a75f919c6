//===- TestData.h - Tensors shared by the unit tests ------------*- C++ -*-===//

#ifndef EFFRT_TEST_TESTDATA_H
#define EFFRT_TEST_TESTDATA_H

#include "effrt/Tensor.h"

namespace effrt::test {

/// A tensor whose bytes are a deterministic pattern that depends on `seed`.
inline Tensor patterned(DType dtype, Shape shape, uint32_t seed = 1) {
  Tensor t = Tensor::allocate(dtype, std::move(shape));
  uint32_t x = seed * 2654435761u + 12345;
  std::byte *p = t.mutableData();
  for (size_t i = 0; i < t.byteSize(); ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<std::byte>(x >> 24);
  }
  if (dtype == DType::Bool)
    for (size_t i = 0; i < t.byteSize(); ++i)
      p[i] &= std::byte{1};
  return t;
}

/// One tensor of every numpy-representable dtype, including a scalar and an
/// empty tensor.
inline NamedTensors sampleArrays() {
  NamedTensors out;
  uint32_t seed = 1;
  for (DType d : kAllDTypes) {
    if (d == DType::BF16)
      continue;
    out.emplace_back(std::string(dtypeName(d)), patterned(d, {3, 5}, seed++));
  }
  out.emplace_back("scalar", patterned(DType::F64, {}, seed++));
  out.emplace_back("empty", patterned(DType::F32, {0, 4}, seed++));
  out.emplace_back("big", patterned(DType::F32, {300, 1000}, seed++));
  return out;
}

} // namespace effrt::test

#endif // EFFRT_TEST_TESTDATA_H
