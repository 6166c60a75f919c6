//===- CudaTypeCode.h - Element type codes of the CUDA runtime --*- C++ -*-===//
//
// The element type codes the CUDA runtime's calls take (effrt_cuda_gemm,
// the attention kernels, the cuDNN convolutions): 0 f32, 1 f16, 2 bf16.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_SUPPORT_CUDATYPECODE_H
#define EFFOPT_SUPPORT_CUDATYPECODE_H

#include "mlir/IR/Types.h"

#include <cstdint>
#include <optional>

namespace effopt {

/// The code of `type`, or none for a type the CUDA runtime does not take.
inline std::optional<int32_t> cudaTypeCode(mlir::Type type) {
  if (type.isF32())
    return 0;
  if (type.isF16())
    return 1;
  if (type.isBF16())
    return 2;
  return std::nullopt;
}

} // namespace effopt

#endif // EFFOPT_SUPPORT_CUDATYPECODE_H
