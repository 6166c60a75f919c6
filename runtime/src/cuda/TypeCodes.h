//===- TypeCodes.h - The element type codes of the CUDA calls ---*- C++ -*-===//
//
// effrt_cuda_gemm's codes, which the attention and convolution calls share:
// 0 f32, 1 f16, 2 bf16.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_TYPECODES_H
#define EFFRT_SRC_CUDA_TYPECODES_H

#include <cstdint>

namespace effrt::cuda {

/// "f32", "f16", "bf16", or "?" for another code.
inline const char *typeCodeName(int32_t type) {
  switch (type) {
  case 0:
    return "f32";
  case 1:
    return "f16";
  case 2:
    return "bf16";
  default:
    return "?";
  }
}

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_TYPECODES_H
