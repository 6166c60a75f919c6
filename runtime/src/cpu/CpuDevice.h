//===- CpuDevice.h - The device of this machine's CPU -----------*- C++ -*-===//
//
// Regions in host memory (64-byte aligned, committed at allocation), code
// loaded as a shared object (SharedObject.h), and the matrix products the
// code imports (Blas.cpp, effrt/Kernels.h). Registered for hostTarget().
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CPU_CPUDEVICE_H
#define EFFRT_SRC_CPU_CPUDEVICE_H

#include "effrt/Device.h"

#include <memory>
#include <string_view>

namespace effrt::cpu {

/// Whether the CPU device runs `target` (this machine's: hostTarget()).
bool acceptsTarget(std::string_view target);
std::unique_ptr<Device> createCpuDevice(const DeviceOptions &options);

} // namespace effrt::cpu

#endif // EFFRT_SRC_CPU_CPUDEVICE_H
