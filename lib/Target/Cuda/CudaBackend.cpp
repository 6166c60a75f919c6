//===- CudaBackend.cpp - the CUDA target ----------------------------------===//
//
// The CUDA target's choices: 256-byte alignment (cudaMalloc's, and what
// cuBLASLt and vectorised kernels want of every buffer); f32 sums in f32 and
// f16/bf16 products on tensor cores with f32 accumulation (PyTorch's CUDA
// numerics); convolutions as im2col + GEMM for now. Code: every memory
// access of the step in kernels (eff-gpu-form-kernels), outlined, lowered to
// NVVM and compiled to one fatbin (sm_80 + sm_90 SASS, compute_90 PTX) by
// LLVM's NVPTX back end and the toolkit's ptxas/fatbinary; GEMMs as calls to
// the runtime's cuBLASLt, collectives as calls to its NCCL engine; the host
// code that launches them an x86-64 shared object like the CPU target's.
// docs/CudaBackend.md has the whole contract.
//
//===----------------------------------------------------------------------===//

#include "CudaTarget.h"

using namespace mlir;

namespace effopt {

std::string getCudaToolkitPath() {
  if (const char *path = std::getenv("EFFOPT_CUDA_TOOLKIT"); path && *path)
    return path;
  return "/usr/local/cuda";
}

void registerCudaTargetBackend() {
  registerTargetBackend(std::make_unique<cuda::CudaBackend>());
}

} // namespace effopt
