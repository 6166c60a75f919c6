//===- CudaDriver.h - The CUDA driver and cuBLASLt --------------*- C++ -*-===//
//
// libcuda.so.1 opened, its symbols bound and cuInit called once per
// process; cuBLASLt opened on first use. Every failure is one line saying
// why the GPU cannot be used (no driver, the toolkit's stub driver, no GPU
// visible), so effrun reports it instead of crashing.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_CUDADRIVER_H
#define EFFRT_SRC_CUDA_CUDADRIVER_H

#include "CudaApi.h"

#include <initializer_list>
#include <memory>
#include <string>

namespace effrt::cuda {

class Driver {
public:
  /// The process's driver: opened and initialised (cuInit) on first use,
  /// from libcuda.so.1. Throws Error without a label ("cannot load the CUDA
  /// driver (tried libcuda.so.1): ..."); later calls throw the same.
  static const Driver &get();
  /// A driver opened from the first of `fileNames` that loads, and
  /// initialised (for tests: the stub library, absent files).
  static std::unique_ptr<Driver>
  open(std::initializer_list<const char *> fileNames);

  const DriverSymbols &api() const { return api_; }
  /// cuDriverGetVersion: 13000 for CUDA 13.0.
  int version() const { return version_; }
  /// The file that loaded.
  const std::string &fileName() const { return library_.fileName(); }

  /// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
  std::string describe(CUresult result) const;
  /// Throws Error "WHAT: <describe(result)>" unless result is CUDA_SUCCESS.
  void check(CUresult result, const std::string &what) const;

private:
  explicit Driver(DynamicLibrary library) : library_(std::move(library)) {}
  DynamicLibrary library_;
  DriverSymbols api_;
  int version_ = 0;
};

/// Why the driver could not be initialised, for a CUresult of cuInit or
/// cuDeviceGetCount: the driver's name for it and a hint.
std::string initFailureHint(CUresult result);

/// cuBLASLt, opened on first use (libcublasLt.so.13). Throws Error "cannot
/// load cuBLASLt (tried ...): ..." (and the same on later calls).
const CublasLtSymbols &cublasLt();

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_CUDADRIVER_H
