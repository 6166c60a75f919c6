//===- CudaBackend.h - the CUDA target --------------------------*- C++ -*-===//

#ifndef EFFOPT_TARGET_CUDA_CUDABACKEND_H
#define EFFOPT_TARGET_CUDA_CUDABACKEND_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace effopt {

/// The CUDA target's name (effc --target cuda).
inline constexpr llvm::StringLiteral kCudaTargetName = "cuda";
/// The CUDA target's step run on the CPU, kernels emulated (effc --target
/// cuda-emulated).
inline constexpr llvm::StringLiteral kCudaEmulatedTargetName = "cuda-emulated";

/// The GPU architectures every cuda .effx holds SASS for, lowest first, and
/// the PTX it embeds for newer GPUs (the last architecture's).
inline constexpr llvm::StringLiteral kCudaArchs[] = {"sm_80", "sm_90"};
inline constexpr llvm::StringLiteral kCudaPtxArch = "compute_90";

/// The cuBLASLt workspace the runtime allocates once at load and passes to
/// every GEMM: 32 MiB, the size the cuBLAS API reference recommends for
/// Hopper (https://docs.nvidia.com/cuda/cublas/index.html#cublassetworkspace:
/// 32 MiB on Hopper, 4 MiB on other architectures; PyTorch's CUDABlas.cpp
/// uses the same since pytorch/pytorch#120925). More than Ampere needs, so
/// one size serves every arch the fatbin holds.
inline constexpr int64_t kCudaWorkspaceBytes = int64_t(32) << 20;

/// The CUDA toolkit effc compiles device code with: $EFFOPT_CUDA_TOOLKIT, else
/// /usr/local/cuda.
std::string getCudaToolkitPath();

/// Registers the CUDA backend: kernels through MLIR's GPU/NVVM path, one
/// fatbin (sm_80 + sm_90 SASS, compute_90 PTX), GEMMs through cuBLASLt, an
/// x86-64 host object that launches them.
void registerCudaTargetBackend();

/// Registers cuda-emulated: the cuda target's step with its kernels emulated
/// on the CPU and its library calls sent to the CPU runtime's stand-ins, an
/// .effx the CPU device runs (checking the GPU code without a GPU).
void registerCudaEmulatedTargetBackend();

} // namespace effopt

#endif // EFFOPT_TARGET_CUDA_CUDABACKEND_H
