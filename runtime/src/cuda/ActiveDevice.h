//===- ActiveDevice.h - The CUDA device whose code runs ---------*- C++ -*-===//
//
// The host code of a cuda .effx calls the runtime (CudaRuntime.cpp) with no
// device argument: the device whose code is loading, running or unloading
// is the active one, set around those calls by ActiveScope.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_ACTIVEDEVICE_H
#define EFFRT_SRC_CUDA_ACTIVEDEVICE_H

#include "CudaApi.h"

#include "effrt/Device.h"
#include "effrt/Kernels.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace effrt::cuda {

class AttentionKernels;
class Convolutions;
class Driver;

/// What the exported runtime functions need of the device whose code runs
/// (CudaRuntime.cpp).
class ActiveDevice {
public:
  virtual ~ActiveDevice();
  virtual const Driver &driver() const = 0;
  /// The step stream: every kernel, copy and product of the step.
  virtual CUstream stream() const = 0;
  virtual bool allowTf32() const = 0;
  virtual CUdeviceptr workspace() const = 0;
  virtual uint64_t workspaceBytes() const = 0;
  /// cuBLASLt's handle, created on first use (never during a capture: the
  /// first run is not captured).
  virtual cublasLtHandle_t cublasLtHandle() = 0;
  /// The fused attention kernels (Attention.h), loaded into the device's
  /// context on first use (the first run, which is not captured).
  virtual const AttentionKernels &attentionKernels() = 0;
  /// cuDNN's handle and the convolution plans (Convolution.h), created on
  /// first use (the first run, which is not captured).
  virtual Convolutions &convolutions() = 0;
  /// Records the first failure of an exported function; the device throws
  /// it when the code returns (an exception cannot unwind through compiled
  /// code).
  virtual void noteError(std::string message) = 0;
  virtual void makeCurrent() = 0;

  /// The device itself (its regions, copies and Collectives).
  virtual Device &device() = 0;
  /// The span of `bytes` bytes at device address `p`, if it lies in one of
  /// the regions.
  virtual std::optional<DeviceSpan> spanOf(const void *p,
                                           uint64_t bytes) const = 0;
  /// The step's collectives (effrt_cuda_*_f32): `queue` runs with the
  /// device's Collectives, whose work goes to the communication stream
  /// (Device::collectiveStream) after everything the step stream holds.
  /// Returns the handle waitCollective takes.
  using CollectiveQueue = std::function<void(Device &, Collectives &)>;
  virtual int64_t startCollective(const CollectiveQueue &queue,
                                  const void *send, const void *recv) = 0;
  /// Orders the step stream after collective `handle`, which must name the
  /// buffers its start named.
  virtual void waitCollective(int64_t handle, const void *send,
                              const void *recv) = 0;

  /// Host tasks (effrt_cuda_host_task_*, effc --offload optimizer): a copy
  /// of `bytes` bytes at `offset` of region `region` (state, arena, io) to
  /// (`toHost`) or from offset `staging` of the staging buffer, queued by
  /// the next startHostTask: before the task (to the host) or after it.
  virtual void addHostTaskCopy(bool toHost, int32_t region, int64_t offset,
                               int64_t staging, int64_t bytes) = 0;
  /// Queues the copies added since the last start and `task` (a host
  /// function) on the task stream, after everything the step stream holds;
  /// returns the handle waitHostTask takes.
  virtual int64_t startHostTask(effrt_host_task_fn task) = 0;
  /// Orders the step stream after host task `handle` (and every earlier
  /// one).
  virtual void waitHostTask(int64_t handle) = 0;

  /// The device whose code is loading, running or unloading on this
  /// thread, or null.
  static ActiveDevice *current();

protected:
  static thread_local ActiveDevice *current_;
  friend class ActiveScope;
};

/// Makes `device` the active one while it lives.
class ActiveScope {
public:
  explicit ActiveScope(ActiveDevice *device) : outer_(ActiveDevice::current_) {
    ActiveDevice::current_ = device;
  }
  ~ActiveScope() { ActiveDevice::current_ = outer_; }
  ActiveScope(const ActiveScope &) = delete;
  ActiveScope &operator=(const ActiveScope &) = delete;

private:
  ActiveDevice *outer_;
};

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_ACTIVEDEVICE_H
