//===- CudaManifest.h - What a cuda .effx asks of the GPU -------*- C++ -*-===//
//
// The manifest fields of target "cuda" (docs/CudaRuntime.md): the
// architectures the fatbin holds code for, the cuBLASLt workspace the plan
// counts, and whether matrix products may use TF32. Read and checked
// without a GPU, so they are tested everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_CUDAMANIFEST_H
#define EFFRT_SRC_CUDA_CUDAMANIFEST_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace effrt {
struct EffxManifest;
} // namespace effrt

namespace effrt::cuda {

/// A GPU architecture as nvcc names it: "sm_90" (SASS), "compute_90" (PTX),
/// "sm_90a" (SASS for exactly that GPU).
struct CudaArch {
  int major = 0, minor = 0;
  bool ptx = false;
  /// An "a"/"f" suffix: runs only on this compute capability.
  bool specific = false;
  std::string name;
};
/// Parses "sm_80", "sm_90a", "compute_90"; nullopt for anything else.
std::optional<CudaArch> parseCudaArch(std::string_view name);

struct CudaManifest {
  /// "cuda_archs" (SASS) and "cuda_ptx" (PTX, optional).
  std::vector<CudaArch> archs;
  std::optional<CudaArch> ptx;
  /// "workspace_bytes": the cuBLASLt workspace, allocated once at load.
  uint64_t workspaceBytes = 0;
  /// "allow_tf32": fp32 products may round their inputs to TF32.
  bool allowTf32 = false;
  /// "host_staging_bytes": the pinned buffer host tasks stage device bytes
  /// in (effc --offload optimizer), allocated once at load.
  uint64_t hostStagingBytes = 0;

  /// Whether the device code runs on a GPU of compute capability
  /// major.minor: SASS of the same major and a minor not above it (or the
  /// exact one for "sm_90a"), or PTX of a capability not above it (the
  /// driver compiles it).
  bool covers(int major, int minor) const;
  /// "sm_80, sm_90, compute_90".
  std::string describe() const;
};

/// Reads the CUDA fields of `manifest` (from its JSON). Throws Error:
/// "PATH: manifest: 'cuda_archs' must be an array of names like "sm_90"
/// (got ...)".
CudaManifest readCudaManifest(const std::string &path,
                              const EffxManifest &manifest);

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_CUDAMANIFEST_H
