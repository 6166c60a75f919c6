//===- CudaDevice.cpp - The device of an NVIDIA GPU -----------------------===//

#include "CudaDevice.h"

#include "ActiveDevice.h"
#include "Attention.h"
#include "Convolution.h"
#include "CudaDriver.h"
#include "CudaManifest.h"
#include "CudaRuntime.h"

#include "../cpu/SharedObject.h"

#include "effrt/Effx.h"
#include "effrt/Error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

using namespace effrt;
using namespace effrt::cuda;

// The host code imports these from the process. Referencing them here
// links them into every program that can create a CUDA device (every
// Session); such a program must export them to loaded code (-rdynamic,
// CMake's ENABLE_EXPORTS), as the CPU's kernels.
extern "C" {
void *const effrt_cuda_symbols[] = {
    reinterpret_cast<void *>(&mgpuModuleLoad),
    reinterpret_cast<void *>(&mgpuModuleLoadJIT),
    reinterpret_cast<void *>(&mgpuModuleUnload),
    reinterpret_cast<void *>(&mgpuModuleGetFunction),
    reinterpret_cast<void *>(&mgpuLaunchKernel),
    reinterpret_cast<void *>(&mgpuStreamCreate),
    reinterpret_cast<void *>(&mgpuStreamDestroy),
    reinterpret_cast<void *>(&mgpuStreamSynchronize),
    reinterpret_cast<void *>(&mgpuStreamWaitEvent),
    reinterpret_cast<void *>(&mgpuEventCreate),
    reinterpret_cast<void *>(&mgpuEventDestroy),
    reinterpret_cast<void *>(&mgpuEventSynchronize),
    reinterpret_cast<void *>(&mgpuEventRecord),
    reinterpret_cast<void *>(&mgpuMemAlloc),
    reinterpret_cast<void *>(&mgpuMemFree),
    reinterpret_cast<void *>(&mgpuMemcpy),
    reinterpret_cast<void *>(&mgpuMemset32),
    reinterpret_cast<void *>(&mgpuMemset16),
    reinterpret_cast<void *>(&mgpuSetDefaultDevice),
    reinterpret_cast<void *>(&effrt_cuda_gemm),
    reinterpret_cast<void *>(&effrt_cuda_gemm_batched),
    reinterpret_cast<void *>(&effrt_cuda_gemm_bias),
    reinterpret_cast<void *>(&effrt_cuda_attention_fwd),
    reinterpret_cast<void *>(&effrt_cuda_attention_bwd),
    reinterpret_cast<void *>(&effrt_cuda_attention_fwd_strided),
    reinterpret_cast<void *>(&effrt_cuda_attention_bwd_strided),
    reinterpret_cast<void *>(&effrt_cuda_conv2d_fwd),
    reinterpret_cast<void *>(&effrt_cuda_conv2d_bwd_data),
    reinterpret_cast<void *>(&effrt_cuda_conv2d_bwd_weights),
    reinterpret_cast<void *>(&effrt_cuda_allreduce_sum_f32),
    reinterpret_cast<void *>(&effrt_cuda_reduce_scatter_sum_f32),
    reinterpret_cast<void *>(&effrt_cuda_all_gather_f32),
    reinterpret_cast<void *>(&effrt_cuda_shard_f32),
    reinterpret_cast<void *>(&effrt_cuda_allreduce_sum_f32_start),
    reinterpret_cast<void *>(&effrt_cuda_reduce_scatter_sum_f32_start),
    reinterpret_cast<void *>(&effrt_cuda_all_gather_f32_start),
    reinterpret_cast<void *>(&effrt_cuda_collective_wait),
    reinterpret_cast<void *>(&effrt_cuda_host_task_copy),
    reinterpret_cast<void *>(&effrt_cuda_host_task_start),
    reinterpret_cast<void *>(&effrt_cuda_host_task_wait)};
}

ActiveDevice::~ActiveDevice() = default;
thread_local ActiveDevice *ActiveDevice::current_ = nullptr;
ActiveDevice *ActiveDevice::current() { return current_; }

bool cuda::acceptsTarget(std::string_view target) {
  return target == kCudaTarget;
}

namespace {
/// Copies between pageable memory and the GPU go through pinned buffers of
/// at most this size.
constexpr uint64_t kStagingBytes = uint64_t(16) << 20;
/// Small results read back asynchronously (the loss, loss-scale values).
constexpr uint64_t kReadbackBytes = 4096;

/// "CUDA_VISIBLE_DEVICES=1,2" when it is set, for messages about which GPUs
/// the driver shows.
std::string visibleDevicesNote() {
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return visible ? std::string("; CUDA_VISIBLE_DEVICES=") + visible : "";
}

class CudaDevice final : public Device, public ActiveDevice {
public:
  CudaDevice(const DeviceOptions &options, const Driver &driver,
             std::optional<CudaManifest> manifest, int ordinal);
  ~CudaDevice() override;

  std::string target() const override { return kCudaTarget; }
  void allocate(const RegionSizes &sizes) override;
  std::byte *hostPointer(RegionKind) override { return nullptr; }
  void copyToDevice(DeviceSpan dst, const void *src) override;
  void copyFromDevice(DeviceSpan src, void *dst) override;
  void copyFromDeviceAsync(DeviceSpan src, void *dst) override;
  void copyWithinDevice(DeviceSpan src, DeviceSpan dst) override;
  void loadCode(const EffxFile &file) override;
  bool codeLoaded() const override { return entry_ != nullptr; }
  void launch() override;
  bool asynchronous() const override { return true; }
  void synchronize() override;

  // ActiveDevice
  const Driver &driver() const override { return driver_; }
  CUstream stream() const override { return stream_; }
  bool allowTf32() const override { return manifest_ && manifest_->allowTf32; }
  CUdeviceptr workspace() const override { return workspace_; }
  uint64_t workspaceBytes() const override { return workspaceBytes_; }
  uint64_t libraryWorkspaceBytes() const override {
    return workspace_ ? workspaceBytes_ : 0;
  }
  uint64_t measuredDeviceBytes() const override { return measuredBytes_; }
  cublasLtHandle_t cublasLtHandle() override;
  const AttentionKernels &attentionKernels() override;
  Convolutions &convolutions() override;
  void noteError(std::string message) override {
    if (error_.empty())
      error_ = std::move(message);
  }
  void makeCurrent() override {
    check(cu_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  }
  Device &device() override { return *this; }
  std::optional<DeviceSpan> spanOf(const void *p,
                                   uint64_t bytes) const override;
  int64_t startCollective(const CollectiveQueue &queue, const void *send,
                          const void *recv) override;
  void waitCollective(int64_t handle, const void *send,
                      const void *recv) override;
  void addHostTaskCopy(bool toHost, int32_t region, int64_t offset,
                       int64_t staging, int64_t bytes) override;
  int64_t startHostTask(effrt_host_task_fn task) override;
  void waitHostTask(int64_t handle) override;

  // Collectives that run on the GPU (NCCL) queue on the communication
  // stream while the step starts one, else on the step stream.
  uint64_t deviceAddress(DeviceSpan span) const override {
    checkSpan(span, "collective");
    return regionPointer(span.region) + span.offset;
  }
  void *collectiveStream() const override {
    return inCollective_ ? commStream_ : stream_;
  }

private:
  /// Throws "LABEL: GPU N: WHAT: <driver's error>" unless `result` is success.
  void check(CUresult result, const std::string &what) const {
    if (result != CUDA_SUCCESS)
      fail(label(), ": GPU ", ordinal_, ": ", what, ": ",
           driver_.describe(result));
  }
  /// Throws the error an exported function noted, if any.
  void throwNotedError() {
    if (error_.empty())
      return;
    std::string message = std::move(error_);
    error_.clear();
    fail(label(), ": GPU ", ordinal_, ": ", message);
  }
  CUdeviceptr regionPointer(RegionKind region) const {
    return regions_[static_cast<int>(region)];
  }
  MemRef1D memref(RegionKind region) const {
    // The host code receives device addresses; it only does arithmetic on
    // them and passes them to kernels and library calls. The host region
    // is pinned host memory, which only host tasks touch.
    void *p = region == RegionKind::Host
                  ? host_
                  : reinterpret_cast<void *>(regionPointer(region));
    return MemRef1D{p, p, 0, static_cast<int64_t>(sizes_.of(region)), 1};
  }
  /// Runs one host task (a host function on the task stream): the step's
  /// task function on the staging buffer (for state, arena and io: the
  /// task's views of device bytes are views of it) and the host region.
  static void runHostTask(void *call);
  /// Joins every host task the step left unwaited into the step stream and
  /// notes the error.
  void joinHostTasks();
  void *pinned(uint64_t bytes, const char *what);
  void freeMemory();
  void dropGraph();
  /// An event of the step's collectives: the pool's next (created on first
  /// need, in the first run, which is not captured; reused by every run).
  CUevent nextEvent();
  /// Joins every collective the step left unwaited into the step stream
  /// (a capture must end joined) and notes the error.
  void joinCollectives();

  const Driver &driver_;
  const DriverSymbols &cu_;
  std::optional<CudaManifest> manifest_;
  uint64_t workspaceBytes_ = 0;
  /// The drop of cuMemGetInfo's free bytes across allocate().
  uint64_t measuredBytes_ = 0;
  int ordinal_ = 0;
  CUdevice device_ = 0;
  std::string name_;
  int major_ = 0, minor_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;

  CUdeviceptr regions_[3] = {0, 0, 0};
  CUdeviceptr workspace_ = 0;
  /// Two pinned images of the io region: a batch is staged in one while
  /// the step launched before it may still read the other's copy.
  void *ioMirror_[2] = {nullptr, nullptr};
  CUevent mirrorFree_[2] = {nullptr, nullptr};
  bool mirrorBusy_[2] = {false, false};
  int mirror_ = 0;
  void *staging_ = nullptr;
  uint64_t stagingBytes_ = 0;
  void *readback_ = nullptr;
  uint64_t readbackUsed_ = 0;
  struct PendingRead {
    void *dst;
    uint64_t offset, bytes;
  };
  std::vector<PendingRead> pendingReads_;

  std::unique_ptr<cpu::SharedObject> code_;
  EffxStepFn entry_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  std::unique_ptr<AttentionKernels> attention_;
  std::unique_ptr<Convolutions> convolutions_;
  std::string error_;
  bool useGraphs_ = true;
  CUgraphExec graph_ = nullptr;
  int64_t runs_ = 0;

  /// The host region (effc --offload optimizer): pinned host memory,
  /// touched only by host tasks and by copies after a synchronisation.
  void *host_ = nullptr;
  /// Host tasks (effrt_cuda_host_task_*): the pinned buffer their device
  /// bytes are staged in, the stream they run on, the copies the next
  /// start queues, the calls (stable: a captured graph's host nodes point
  /// at them) and the tasks started and not yet waited for.
  void *hostStaging_ = nullptr;
  uint64_t hostStagingBytes_ = 0;
  CUstream taskStream_ = nullptr;
  struct TaskCopy {
    bool toHost;
    RegionKind region;
    uint64_t offset, staging, bytes;
  };
  std::vector<TaskCopy> taskCopies_;
  struct HostCall {
    CudaDevice *device;
    effrt_host_task_fn task;
  };
  std::map<effrt_host_task_fn, std::unique_ptr<HostCall>> hostCalls_;
  std::map<int64_t, CUevent> pendingTasks_;
  int64_t lastTask_ = 0;

  /// The step's collectives: queued on their own stream, so that they move
  /// while the step stream computes, forked from and joined back into the
  /// step stream with events (which a CUDA graph capture follows).
  CUstream commStream_ = nullptr;
  bool inCollective_ = false;
  std::vector<CUevent> events_;
  size_t nextEvent_ = 0;
  struct PendingCollective {
    CUevent done;
    const void *send, *recv;
  };
  std::map<int64_t, PendingCollective> pending_;
  int64_t lastHandle_ = 0;
};

CudaDevice::CudaDevice(const DeviceOptions &options, const Driver &driver,
                       std::optional<CudaManifest> manifest, int ordinal)
    : Device(options), driver_(driver), cu_(driver.api()),
      manifest_(std::move(manifest)), ordinal_(ordinal) {
  workspaceBytes_ = manifest_ ? manifest_->workspaceBytes : 0;
  int count = 0;
  CUresult counted = cu_.cuDeviceGetCount(&count);
  if (counted != CUDA_SUCCESS || count == 0)
    fail(label(), ": target 'cuda' needs an NVIDIA GPU: the driver sees none",
         counted != CUDA_SUCCESS ? ": " + driver_.describe(counted)
                                 : std::string(),
         initFailureHint(CUDA_ERROR_NO_DEVICE));
  if (ordinal < 0 || ordinal >= count)
    fail(label(), ": --device ", ordinal, ": the driver sees ", count,
         count == 1 ? " GPU (device 0" : " GPUs (devices 0..",
         count == 1 ? "" : std::to_string(count - 1), ")",
         visibleDevicesNote());
  check(cu_.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  char name[256] = {};
  check(cu_.cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName");
  name_ = name;
  check(cu_.cuDeviceGetAttribute(
            &major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
        "cuDeviceGetAttribute");
  check(cu_.cuDeviceGetAttribute(
            &minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
        "cuDeviceGetAttribute");
  if (manifest_ && !manifest_->covers(major_, minor_))
    fail(label(), ": GPU ", ordinal, " (", name_, ", sm_", major_, minor_,
         ") cannot run the model's device code, compiled for ",
         manifest_->describe(), "; compile it for sm_", major_, minor_);
  check(cu_.cuDevicePrimaryCtxRetain(&context_, device_),
        "cuDevicePrimaryCtxRetain");
  makeCurrent();
  check(cu_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  for (CUevent &e : mirrorFree_)
    check(cu_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  const char *graphs = std::getenv("EFFRT_CUDA_GRAPHS");
  useGraphs_ = !(graphs && std::string(graphs) == "0");
}

CudaDevice::~CudaDevice() {
  // Errors are ignored here: nothing can be reported from a destructor,
  // and the process may be ending.
  if (!context_)
    return;
  cu_.cuCtxSetCurrent(context_);
  if (stream_)
    cu_.cuStreamSynchronize(stream_);
  dropGraph();
  {
    // Unloading runs the code's destructors: mgpuModuleUnload.
    ActiveScope scope(this);
    code_.reset();
  }
  if (lt_)
    cublasLt().cublasLtDestroy(lt_);
  attention_.reset();
  convolutions_.reset();
  freeMemory();
  for (CUevent e : mirrorFree_)
    if (e)
      cu_.cuEventDestroy_v2(e);
  for (CUevent e : events_)
    cu_.cuEventDestroy_v2(e);
  if (commStream_) {
    cu_.cuStreamSynchronize(commStream_);
    cu_.cuStreamDestroy_v2(commStream_);
  }
  if (taskStream_) {
    cu_.cuStreamSynchronize(taskStream_);
    cu_.cuStreamDestroy_v2(taskStream_);
  }
  if (stream_)
    cu_.cuStreamDestroy_v2(stream_);
  cu_.cuDevicePrimaryCtxRelease_v2(device_);
}

void CudaDevice::dropGraph() {
  if (graph_)
    cu_.cuGraphExecDestroy(graph_);
  graph_ = nullptr;
  runs_ = 0;
}

void *CudaDevice::pinned(uint64_t bytes, const char *what) {
  void *p = nullptr;
  check(cu_.cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE),
        std::string("cannot allocate ") + std::to_string(bytes) +
            " bytes of pinned host memory for " + what);
  return p;
}

void CudaDevice::freeMemory() {
  for (CUdeviceptr &p : regions_) {
    if (p)
      cu_.cuMemFree_v2(p);
    p = 0;
  }
  if (workspace_)
    cu_.cuMemFree_v2(workspace_);
  workspace_ = 0;
  for (void *&p : ioMirror_) {
    if (p)
      cu_.cuMemFreeHost(p);
    p = nullptr;
  }
  for (void **p : {&staging_, &readback_, &host_, &hostStaging_}) {
    if (*p)
      cu_.cuMemFreeHost(*p);
    *p = nullptr;
  }
  stagingBytes_ = readbackUsed_ = hostStagingBytes_ = 0;
  pendingReads_.clear();
  mirrorBusy_[0] = mirrorBusy_[1] = false;
}

void CudaDevice::allocate(const RegionSizes &sizes) {
  makeCurrent();
  check(cu_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  if (taskStream_)
    check(cu_.cuStreamSynchronize(taskStream_), "cuStreamSynchronize");
  // The graph holds the old regions' addresses.
  dropGraph();
  freeMemory();
  sizes_ = RegionSizes();

  const uint64_t w = workspaceBytes_;
  const uint64_t need = sizes.total() + w;
  if (need < w || sizes.total() < sizes.state)
    fail(label(), ": the plan's sizes overflow");
  size_t freeBytes = 0, totalBytes = 0;
  check(cu_.cuMemGetInfo_v2(&freeBytes, &totalBytes), "cuMemGetInfo");
  if (need > freeBytes)
    fail(label(), ": the plan needs ", need, " bytes of GPU memory (state ",
         sizes.state, " + arena ", sizes.arena, " + io ", sizes.io,
         " + cuBLASLt workspace ", w, ") but GPU ", ordinal_, " (", name_,
         ") has ", static_cast<uint64_t>(freeBytes), " bytes free of ",
         static_cast<uint64_t>(totalBytes));

  const size_t freeBefore = freeBytes;
  for (RegionKind region : kRegionKinds) {
    uint64_t size = sizes.of(region);
    if (!size)
      continue;
    CUdeviceptr &p = regions_[static_cast<int>(region)];
    check(cu_.cuMemAlloc_v2(&p, size), std::string("cannot allocate the ") +
                                           regionName(region) + " region (" +
                                           std::to_string(size) + " bytes)");
    check(cu_.cuMemsetD8Async(p, 0, size, stream_), "cuMemsetD8Async");
  }
  if (w)
    check(cu_.cuMemAlloc_v2(&workspace_, w),
          "cannot allocate the cuBLASLt workspace (" + std::to_string(w) +
              " bytes)");
  if (sizes.io)
    for (void *&p : ioMirror_)
      p = pinned(sizes.io, "the io region's staging");
  // The optimizer's state in host memory, and the buffer its update stages
  // gradients and weights in: pinned, so that copies are asynchronous.
  if (sizes.host) {
    host_ = pinned(sizes.host, "the host region (the offloaded optimizer "
                               "state)");
    std::memset(host_, 0, sizes.host);
    hostStagingBytes_ = manifest_ ? manifest_->hostStagingBytes : 0;
    if (hostStagingBytes_)
      hostStaging_ = pinned(hostStagingBytes_, "the host tasks' staging");
  }
  stagingBytes_ = std::max<uint64_t>(
      1,
      std::min(kStagingBytes, std::max({sizes.state, sizes.arena, sizes.io})));
  staging_ = pinned(stagingBytes_, "copies");
  readback_ = pinned(kReadbackBytes, "results");
  check(cu_.cuStreamSynchronize(stream_), "zero-filling the regions");
  size_t freeAfter = 0;
  check(cu_.cuMemGetInfo_v2(&freeAfter, &totalBytes), "cuMemGetInfo");
  measuredBytes_ = freeBefore > freeAfter ? freeBefore - freeAfter : 0;
  sizes_ = sizes;
}

void CudaDevice::copyToDevice(DeviceSpan dst, const void *src) {
  checkSpan(dst, "copy to the device");
  if (!dst.bytes)
    return;
  makeCurrent();
  if (dst.region == RegionKind::Host) {
    // Host tasks of a step in flight may still use the region.
    check(cu_.cuStreamSynchronize(stream_), "waiting for the step");
    std::memcpy(static_cast<std::byte *>(host_) + dst.offset, src, dst.bytes);
    return;
  }
  CUdeviceptr to = regionPointer(dst.region) + dst.offset;
  if (dst.region == RegionKind::Io) {
    // A batch: staged in the pinned image of io and copied on the step
    // stream, after the step in flight (which reads the other image's
    // copy), without waiting.
    int m = mirror_;
    if (mirrorBusy_[m]) {
      check(cu_.cuEventSynchronize(mirrorFree_[m]), "cuEventSynchronize");
      mirrorBusy_[m] = false;
    }
    auto *image = static_cast<std::byte *>(ioMirror_[m]) + dst.offset;
    std::memcpy(image, src, dst.bytes);
    check(cu_.cuMemcpyHtoDAsync_v2(to, image, dst.bytes, stream_),
          "cuMemcpyHtoDAsync");
    return;
  }
  auto *from = static_cast<const std::byte *>(src);
  for (uint64_t done = 0; done < dst.bytes;) {
    uint64_t n = std::min(stagingBytes_, dst.bytes - done);
    std::memcpy(staging_, from + done, n);
    check(cu_.cuMemcpyHtoDAsync_v2(to + done, staging_, n, stream_),
          "cuMemcpyHtoDAsync");
    check(cu_.cuStreamSynchronize(stream_), "copying to the GPU");
    done += n;
  }
}

void CudaDevice::copyFromDevice(DeviceSpan src, void *dst) {
  checkSpan(src, "copy from the device");
  if (!src.bytes)
    return;
  makeCurrent();
  if (src.region == RegionKind::Host) {
    check(cu_.cuStreamSynchronize(stream_), "waiting for the step");
    std::memcpy(dst, static_cast<std::byte *>(host_) + src.offset, src.bytes);
    throwNotedError();
    return;
  }
  CUdeviceptr from = regionPointer(src.region) + src.offset;
  auto *to = static_cast<std::byte *>(dst);
  for (uint64_t done = 0; done < src.bytes;) {
    uint64_t n = std::min(stagingBytes_, src.bytes - done);
    check(cu_.cuMemcpyDtoHAsync_v2(staging_, from + done, n, stream_),
          "cuMemcpyDtoHAsync");
    check(cu_.cuStreamSynchronize(stream_), "copying from the GPU");
    std::memcpy(to + done, staging_, n);
    done += n;
  }
  throwNotedError();
}

void CudaDevice::copyFromDeviceAsync(DeviceSpan src, void *dst) {
  checkSpan(src, "copy from the device");
  if (!src.bytes)
    return;
  if (src.region == RegionKind::Host ||
      src.bytes > kReadbackBytes - readbackUsed_)
    return copyFromDevice(src, dst);
  makeCurrent();
  check(cu_.cuMemcpyDtoHAsync_v2(
            static_cast<std::byte *>(readback_) + readbackUsed_,
            regionPointer(src.region) + src.offset, src.bytes, stream_),
        "cuMemcpyDtoHAsync");
  pendingReads_.push_back({dst, readbackUsed_, src.bytes});
  readbackUsed_ += (src.bytes + 63) / 64 * 64;
}

void CudaDevice::copyWithinDevice(DeviceSpan src, DeviceSpan dst) {
  checkSpan(src, "copy within the device");
  checkSpan(dst, "copy within the device");
  if (src.bytes != dst.bytes)
    fail(label(), ": copy within the device of ", src.bytes, " bytes into ",
         dst.bytes);
  if (!src.bytes)
    return;
  makeCurrent();
  if (src.region == RegionKind::Host || dst.region == RegionKind::Host) {
    // Through the host: rare (a state entry moved between regions).
    std::vector<std::byte> bytes(src.bytes);
    copyFromDevice(src, bytes.data());
    copyToDevice(dst, bytes.data());
    return;
  }
  check(cu_.cuMemcpyDtoDAsync_v2(regionPointer(dst.region) + dst.offset,
                                 regionPointer(src.region) + src.offset,
                                 src.bytes, stream_),
        "cuMemcpyDtoDAsync");
}

std::optional<DeviceSpan> CudaDevice::spanOf(const void *p,
                                             uint64_t bytes) const {
  auto at = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
  for (RegionKind kind : kRegionKinds) {
    CUdeviceptr begin = regionPointer(kind);
    uint64_t size = sizes_.of(kind);
    if (begin && at >= begin && bytes <= size && at - begin <= size - bytes)
      return DeviceSpan{kind, at - begin, bytes};
  }
  return std::nullopt;
}

CUevent CudaDevice::nextEvent() {
  if (nextEvent_ == events_.size()) {
    CUevent e = nullptr;
    check(cu_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    events_.push_back(e);
  }
  return events_[nextEvent_++];
}

int64_t CudaDevice::startCollective(const CollectiveQueue &queue,
                                    const void *send, const void *recv) {
  makeCurrent();
  if (!commStream_)
    check(cu_.cuStreamCreate(&commStream_, CU_STREAM_NON_BLOCKING),
          "cuStreamCreate");
  // After everything the step has queued (its inputs are written)...
  CUevent ready = nextEvent();
  check(cu_.cuEventRecord(ready, stream_), "cuEventRecord");
  check(cu_.cuStreamWaitEvent(commStream_, ready, 0), "cuStreamWaitEvent");
  inCollective_ = true;
  CUevent done = nextEvent();
  try {
    queue(*this, collectives());
  } catch (...) {
    // Joined back all the same, so that a capture still ends joined and
    // reports the failure rather than an unjoined stream.
    inCollective_ = false;
    cu_.cuEventRecord(done, commStream_);
    cu_.cuStreamWaitEvent(stream_, done, 0);
    throw;
  }
  inCollective_ = false;
  // ... and before whatever waits for it.
  check(cu_.cuEventRecord(done, commStream_), "cuEventRecord");
  int64_t handle = ++lastHandle_;
  pending_.emplace(handle, PendingCollective{done, send, recv});
  return handle;
}

void CudaDevice::waitCollective(int64_t handle, const void *send,
                                const void *recv) {
  auto it = pending_.find(handle);
  if (it == pending_.end())
    fail("wait for collective request ", handle, ", which is not in flight");
  PendingCollective p = it->second;
  pending_.erase(it);
  if (p.send != send || p.recv != recv)
    fail("wait for collective request ", handle,
         " names other buffers than its start");
  check(cu_.cuStreamWaitEvent(stream_, p.done, 0), "cuStreamWaitEvent");
}

void CudaDevice::joinCollectives() {
  if (pending_.empty())
    return;
  for (auto &[handle, p] : pending_)
    cu_.cuStreamWaitEvent(stream_, p.done, 0);
  pending_.clear();
  noteError("the step started a collective it never waited for");
}

void CudaDevice::addHostTaskCopy(bool toHost, int32_t region, int64_t offset,
                                 int64_t staging, int64_t bytes) {
  if (region < 0 || region > static_cast<int32_t>(RegionKind::Io) ||
      offset < 0 || staging < 0 || bytes <= 0)
    fail("host task copy of ", bytes, " bytes at offset ", offset,
         " of region ", region, " to staging offset ", staging,
         ": not a copy of a device region's bytes");
  auto kind = static_cast<RegionKind>(region);
  checkSpan(DeviceSpan{kind, static_cast<uint64_t>(offset),
                       static_cast<uint64_t>(bytes)},
            "host task copy");
  if (static_cast<uint64_t>(bytes) > hostStagingBytes_ ||
      static_cast<uint64_t>(staging) > hostStagingBytes_ - bytes)
    fail("host task copy of ", bytes, " bytes to staging offset ", staging,
         ": the manifest's host_staging_bytes is ", hostStagingBytes_);
  taskCopies_.push_back({toHost, kind, static_cast<uint64_t>(offset),
                         static_cast<uint64_t>(staging),
                         static_cast<uint64_t>(bytes)});
}

void CudaDevice::runHostTask(void *call) {
  auto *c = static_cast<HostCall *>(call);
  MemRef1D staging{c->device->hostStaging_, c->device->hostStaging_, 0,
                   static_cast<int64_t>(c->device->hostStagingBytes_), 1};
  MemRef1D host = c->device->memref(RegionKind::Host);
  // The task reads its device bytes through its first argument (the
  // staging buffer); it gets it for each device region.
  c->task(staging.allocated, staging.aligned, staging.offset, staging.size,
          staging.stride, staging.allocated, staging.aligned, staging.offset,
          staging.size, staging.stride, staging.allocated, staging.aligned,
          staging.offset, staging.size, staging.stride, host.allocated,
          host.aligned, host.offset, host.size, host.stride);
}

int64_t CudaDevice::startHostTask(effrt_host_task_fn task) {
  std::vector<TaskCopy> copies = std::move(taskCopies_);
  taskCopies_.clear();
  if (!host_)
    fail("a host task started, but the step has no host region");
  makeCurrent();
  if (!taskStream_)
    check(cu_.cuStreamCreate(&taskStream_, CU_STREAM_NON_BLOCKING),
          "cuStreamCreate");
  std::unique_ptr<HostCall> &call = hostCalls_[task];
  if (!call)
    call = std::make_unique<HostCall>(HostCall{this, task});
  // After everything the step stream holds (the gradients are written)...
  CUevent ready = nextEvent();
  check(cu_.cuEventRecord(ready, stream_), "cuEventRecord");
  check(cu_.cuStreamWaitEvent(taskStream_, ready, 0), "cuStreamWaitEvent");
  auto *staging = static_cast<std::byte *>(hostStaging_);
  for (const TaskCopy &c : copies)
    if (c.toHost)
      check(cu_.cuMemcpyDtoHAsync_v2(staging + c.staging,
                                     regionPointer(c.region) + c.offset,
                                     c.bytes, taskStream_),
            "cuMemcpyDtoHAsync (host task)");
  check(cu_.cuLaunchHostFunc(taskStream_, &CudaDevice::runHostTask,
                             call.get()),
        "cuLaunchHostFunc");
  for (const TaskCopy &c : copies)
    if (!c.toHost)
      check(cu_.cuMemcpyHtoDAsync_v2(regionPointer(c.region) + c.offset,
                                     staging + c.staging, c.bytes,
                                     taskStream_),
            "cuMemcpyHtoDAsync (host task)");
  // ... and before whatever waits for it.
  CUevent done = nextEvent();
  check(cu_.cuEventRecord(done, taskStream_), "cuEventRecord");
  int64_t handle = ++lastTask_;
  pendingTasks_.emplace(handle, done);
  return handle;
}

void CudaDevice::waitHostTask(int64_t handle) {
  auto it = pendingTasks_.find(handle);
  if (it == pendingTasks_.end())
    fail("wait for host task ", handle, ", which is not in flight");
  makeCurrent();
  // Tasks run in order on one stream: this one's end follows every
  // earlier one's.
  check(cu_.cuStreamWaitEvent(stream_, it->second, 0), "cuStreamWaitEvent");
  pendingTasks_.erase(pendingTasks_.begin(), std::next(it));
}

void CudaDevice::joinHostTasks() {
  taskCopies_.clear();
  if (pendingTasks_.empty())
    return;
  cu_.cuStreamWaitEvent(stream_, pendingTasks_.rbegin()->second, 0);
  pendingTasks_.clear();
  noteError("the step started a host task it never waited for");
}

void CudaDevice::synchronize() {
  makeCurrent();
  CUresult done = cu_.cuStreamSynchronize(stream_);
  if (done != CUDA_SUCCESS) {
    pendingReads_.clear();
    readbackUsed_ = 0;
    throwNotedError();
    check(done, "the step failed");
  }
  for (const PendingRead &r : pendingReads_)
    std::memcpy(r.dst, static_cast<std::byte *>(readback_) + r.offset, r.bytes);
  pendingReads_.clear();
  readbackUsed_ = 0;
  throwNotedError();
}

cublasLtHandle_t CudaDevice::cublasLtHandle() {
  if (!lt_) {
    const CublasLtSymbols &lt = cublasLt();
    cublasStatus_t status = lt.cublasLtCreate(&lt_);
    if (status != CUBLAS_STATUS_SUCCESS) {
      lt_ = nullptr;
      fail("cublasLtCreate: ", lt.cublasLtGetStatusString(status));
    }
  }
  return lt_;
}

const AttentionKernels &CudaDevice::attentionKernels() {
  if (!attention_) {
    makeCurrent();
    attention_ = std::make_unique<AttentionKernels>(driver_);
  }
  return *attention_;
}

Convolutions &CudaDevice::convolutions() {
  if (!convolutions_) {
    makeCurrent();
    convolutions_ = std::make_unique<Convolutions>();
  }
  return *convolutions_;
}

void CudaDevice::loadCode(const EffxFile &file) {
  const std::string &path = file.path();
  const EffxManifest &m = file.manifest();
  if (!acceptsTarget(m.target))
    fail(path, ": compiled for target ", quoteName(m.target),
         ", which the CUDA device cannot run (it runs ", kCudaTarget, ")");
  std::vector<const EffxSection *> code =
      file.sectionsFor(EffxSectionKind::HostCode, kCudaTarget);
  if (code.empty())
    fail(path, ": has no host code section for target ", kCudaTarget);
  if (code.size() > 1)
    fail(path, ": has ", code.size(), " host code sections for target ",
         kCudaTarget, " (expected one)");
  const EffxSection &section = *code[0];
  if (section.size == 0)
    fail(path, ": the host code section is empty");
  makeCurrent();
  dropGraph();
  std::unique_ptr<cpu::SharedObject> so;
  {
    // Loading runs the code's constructors, which load its kernels
    // (mgpuModuleLoad) on this GPU.
    ActiveScope scope(this);
    error_.clear();
    so = cpu::SharedObject::load(path, file.sectionData(section), section.size);
    if (!error_.empty()) {
      std::string why = std::move(error_);
      error_.clear();
      so.reset();
      fail(path, ": GPU ", ordinal_, " (", name_,
           "): cannot load the device code: ", why);
    }
  }
  file.releaseSection(section);
  std::string why;
  void *symbol = so->symbol(m.entry, &why);
  if (!symbol)
    fail(path, ": the host code section has no entry point ",
         quoteName(m.entry), why.empty() ? std::string() : " (" + why + ")");
  static_assert(sizeof(entry_) == sizeof(symbol), "function pointer size");
  std::memcpy(&entry_, &symbol, sizeof(entry_));
  {
    ActiveScope scope(this);
    code_ = std::move(so);
  }
}

void CudaDevice::launch() {
  if (!entry_)
    fail(label(), ": no code is loaded");
  makeCurrent();
  MemRef1D state = memref(RegionKind::State), arena = memref(RegionKind::Arena),
           io = memref(RegionKind::Io), host = memref(RegionKind::Host);
  // A step with a host region takes it as a fourth argument.
  auto run = [&] {
    if (sizes_.host)
      reinterpret_cast<EffxHostStepFn>(entry_)(&state, &arena, &io, &host);
    else
      entry_(&state, &arena, &io);
    joinCollectives();
    joinHostTasks();
  };
  {
    ActiveScope scope(this);
    error_.clear();
    // The first run is not captured: it creates what the code creates once
    // (cuBLASLt's handle, kernel lookups), which a capture must not do.
    nextEvent_ = 0;
    if (!useGraphs_ || runs_ == 0) {
      run();
      throwNotedError();
    } else {
      if (!graph_) {
        check(cu_.cuStreamBeginCapture_v2(stream_,
                                          CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              "cuStreamBeginCapture");
        run();
        CUgraph graph = nullptr;
        CUresult ended = cu_.cuStreamEndCapture(stream_, &graph);
        if (!error_.empty() || ended != CUDA_SUCCESS) {
          if (graph)
            cu_.cuGraphDestroy(graph);
          throwNotedError();
          check(ended, "capturing the step as a CUDA graph");
        }
        CUresult made = cu_.cuGraphInstantiateWithFlags(&graph_, graph, 0);
        cu_.cuGraphDestroy(graph);
        if (made != CUDA_SUCCESS)
          graph_ = nullptr;
        check(made, "cuGraphInstantiate");
      }
      check(cu_.cuGraphLaunch(graph_, stream_), "cuGraphLaunch");
    }
  }
  ++runs_;
  // The batch staged for this step may be overwritten once the step ends;
  // the next batch goes to the other image meanwhile.
  check(cu_.cuEventRecord(mirrorFree_[mirror_], stream_), "cuEventRecord");
  mirrorBusy_[mirror_] = true;
  mirror_ ^= 1;
}

} // namespace

std::unique_ptr<Device> cuda::createCudaDevice(const DeviceOptions &options) {
  std::optional<CudaManifest> manifest;
  // A bad manifest is reported the same with or without a GPU.
  if (options.manifest)
    manifest = readCudaManifest(options.label, *options.manifest);
  const Driver *driver = nullptr;
  try {
    driver = &Driver::get();
  } catch (const Error &e) {
    fail(options.label,
         ": target 'cuda' needs an NVIDIA GPU and its driver: ", e.what());
  }
  return std::make_unique<CudaDevice>(options, *driver, std::move(manifest),
                                      options.device.value_or(0));
}

int cuda::openDriver(std::initializer_list<const char *> fileNames) {
  return Driver::open(fileNames)->version();
}

size_t cuda::cublasLtVersion() { return cublasLt().cublasLtGetVersion(); }
