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

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string_view>

namespace effrt::cuda {

/// The target name of CUDA .effx files.
inline constexpr const char *kCudaTarget = "cuda";

bool acceptsTarget(std::string_view target);
/// Throws Error naming the label and why no GPU can run it (no driver, no
/// GPU, --device out of range, an architecture the code does not cover).
std::unique_ptr<Device> createCudaDevice(const DeviceOptions &options);

/// Opens the CUDA driver from the first of `fileNames` that loads (effrun
/// uses libcuda.so.1), binds every driver function the device calls and
/// initialises it; returns cuDriverGetVersion (13000 for CUDA 13.0). Throws
/// Error saying why not. For tests and diagnostics: devices share one
/// driver per process.
int openDriver(std::initializer_list<const char *> fileNames);
/// Opens cuBLASLt as the matrix products do (libcublasLt.so.13), binding
/// every function they call; returns cublasLtGetVersion (130000 and up for
/// CUDA 13). Throws Error saying why not. Needs no GPU.
size_t cublasLtVersion();

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_CUDADEVICE_H
