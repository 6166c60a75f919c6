//===- CudaDevice.h - The device of an NVIDIA GPU ---------------*- C++ -*-===//
//
// Runs .effx files of target "cuda" (docs/CudaRuntime.md): the three
// regions and the cuBLASLt workspace in GPU memory (cuMemAlloc, exactly the
// planned sizes), the host code loaded as a shared object whose kernels and
// library calls go to one step stream, captured as a CUDA graph and
// replayed every step. Batches are staged through pinned host memory and
// copied asynchronously; the loss comes back asynchronously. The driver and
// cuBLASLt are opened at run time (CudaDriver.h); this header needs no CUDA
// header.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_CUDADEVICE_H
#define EFFRT_SRC_CUDA_CUDADEVICE_H

#include "effrt/Device.h"

#include <memory>
#include <string_view>

namespace effrt::cuda {

/// The target name of CUDA .effx files.
inline constexpr const char *kCudaTarget = "cuda";

bool acceptsTarget(std::string_view target);
/// Throws Error naming the label and why no GPU can run it (no driver, no
/// GPU, --device out of range, an architecture the code does not cover).
std::unique_ptr<Device> createCudaDevice(const DeviceOptions &options);

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_CUDADEVICE_H
