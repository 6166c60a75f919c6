//===- CpuDevice.cpp - The device of this machine's CPU -------------------===//

#include "CpuDevice.h"

#include "SharedObject.h"

#include "effrt/Effx.h"
#include "effrt/Error.h"
#include "effrt/Kernels.h"

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

using namespace effrt;
using namespace effrt::cpu;

// Compiled code imports the kernels from the process. Referencing them here
// links them into every program that creates a CPU device (every Session);
// such a program must export them to loaded code (-rdynamic, CMake's
// ENABLE_EXPORTS).
extern "C" {
extern void *const effrt_kernel_symbols[];
void *const effrt_kernel_symbols[] = {
    reinterpret_cast<void *>(&effrt_sgemm),
    reinterpret_cast<void *>(&effrt_sgemm_batched),
    reinterpret_cast<void *>(&effrt_allreduce_sum_f32),
    reinterpret_cast<void *>(&effrt_attention_fwd_f32),
    reinterpret_cast<void *>(&effrt_attention_bwd_f32),
    reinterpret_cast<void *>(&effrt_attention_fwd_strided_f32),
    reinterpret_cast<void *>(&effrt_attention_bwd_strided_f32),
    reinterpret_cast<void *>(&effrt_attention_fwd_tiled_f32),
    reinterpret_cast<void *>(&effrt_attention_bwd_tiled_f32),
    reinterpret_cast<void *>(&effrt_reduce_scatter_sum_f32),
    reinterpret_cast<void *>(&effrt_all_gather_f32),
    reinterpret_cast<void *>(&effrt_shard_f32),
    reinterpret_cast<void *>(&effrt_allreduce_sum_f32_start),
    reinterpret_cast<void *>(&effrt_reduce_scatter_sum_f32_start),
    reinterpret_cast<void *>(&effrt_all_gather_f32_start),
    reinterpret_cast<void *>(&effrt_collective_wait),
    reinterpret_cast<void *>(&effrt_host_task_start),
    reinterpret_cast<void *>(&effrt_host_task_wait),
    // effc --target cuda-emulated.
    reinterpret_cast<void *>(&effrt_emulated_cuda_gemm),
    reinterpret_cast<void *>(&effrt_emulated_cuda_gemm_batched),
    reinterpret_cast<void *>(&effrt_emulated_cuda_gemm_bias),
    reinterpret_cast<void *>(&effrt_emulated_cuda_attention_fwd),
    reinterpret_cast<void *>(&effrt_emulated_cuda_attention_bwd),
    reinterpret_cast<void *>(&effrt_emulated_cuda_attention_fwd_strided),
    reinterpret_cast<void *>(&effrt_emulated_cuda_attention_bwd_strided),
    reinterpret_cast<void *>(&effrt_emulated_cuda_conv2d_fwd),
    reinterpret_cast<void *>(&effrt_emulated_cuda_conv2d_bwd_data),
    reinterpret_cast<void *>(&effrt_emulated_cuda_conv2d_bwd_weights),
    reinterpret_cast<void *>(&effrt_emulated_cuda_allreduce_sum_f32),
    reinterpret_cast<void *>(&effrt_emulated_cuda_reduce_scatter_sum_f32),
    reinterpret_cast<void *>(&effrt_emulated_cuda_all_gather_f32),
    reinterpret_cast<void *>(&effrt_emulated_cuda_shard_f32),
    reinterpret_cast<void *>(&effrt_emulated_cuda_allreduce_sum_f32_start),
    reinterpret_cast<void *>(&effrt_emulated_cuda_reduce_scatter_sum_f32_start),
    reinterpret_cast<void *>(&effrt_emulated_cuda_all_gather_f32_start),
    reinterpret_cast<void *>(&effrt_emulated_cuda_collective_wait),
#ifdef EFFRT_HAVE_ONEDNN
    reinterpret_cast<void *>(&effrt_conv2d_fwd_f32),
    reinterpret_cast<void *>(&effrt_conv2d_bwd_data_f32),
    reinterpret_cast<void *>(&effrt_conv2d_bwd_weights_f32),
#endif
};
}

namespace {
/// A 64-byte aligned, zero-filled region; empty regions have no storage.
class Region {
public:
  Region() = default;
  Region(const std::string &label, const char *name, uint64_t size)
      : size_(size) {
    if (!size)
      return;
    if (size > SIZE_MAX - kEffxAlignment)
      fail(label, ": the ", name, " region of ", size,
           " bytes is too large for this machine");
    data_ = static_cast<std::byte *>(
        std::aligned_alloc(kEffxAlignment, static_cast<size_t>(size)));
    if (!data_)
      fail(label, ": cannot allocate ", size, " bytes for the ", name,
           " region");
    // Touch every page now: the step then runs in committed memory, and
    // what the process uses is what the compiler planned.
    std::memset(data_, 0, static_cast<size_t>(size));
  }
  ~Region() { std::free(data_); }
  Region(Region &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  Region &operator=(Region &&other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }

  std::byte *data() const { return data_; }
  uint64_t size() const { return size_; }
  MemRef1D memref() const {
    return MemRef1D{data_, data_, 0, static_cast<int64_t>(size_), 1};
  }

private:
  std::byte *data_ = nullptr;
  uint64_t size_ = 0;
};

/// The library workspace the plan of a step compiled with `effc --target
/// cuda-emulated` counts (cuBLASLt's, on the GPU it stands for): allocated
/// here too, untouched by the CPU stand-ins, so the step takes exactly the
/// planned bytes as on the GPU. 0 for anything else.
uint64_t emulatedWorkspaceBytes(const DeviceOptions &options) {
  if (!options.manifest)
    return 0;
  nlohmann::json root = nlohmann::json::parse(
      options.manifest->json, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object())
    return 0;
  auto emulates = root.find("emulates");
  auto bytes = root.find("workspace_bytes");
  if (emulates == root.end() || !emulates->is_string() ||
      bytes == root.end() || !bytes->is_number_unsigned())
    return 0;
  return bytes->get<uint64_t>();
}

class CpuDevice final : public Device {
public:
  explicit CpuDevice(const DeviceOptions &options)
      : Device(options), workspaceBytes_(emulatedWorkspaceBytes(options)) {}
  ~CpuDevice() override {
    if (worker_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(taskMutex_);
        stopWorker_ = true;
      }
      taskReady_.notify_all();
      worker_.join();
    }
  }

  std::string target() const override { return hostTarget(); }

  void allocate(const RegionSizes &sizes) override {
    // Free the old regions first: the new ones may be as large.
    state_ = Region();
    arena_ = Region();
    io_ = Region();
    host_ = Region();
    sizes_ = RegionSizes();
    state_ = Region(label(), "state", sizes.state);
    arena_ = Region(label(), "arena", sizes.arena);
    io_ = Region(label(), "io", sizes.io);
    // Host and device are one memory here: the host region is one more
    // allocation, apart from the others as on a GPU.
    host_ = Region(label(), "host", sizes.host);
    workspace_ = Region();
    workspace_ = Region(label(), "library workspace", workspaceBytes_);
    sizes_ = sizes;
  }

  uint64_t libraryWorkspaceBytes() const override { return workspace_.size(); }

  std::byte *hostPointer(RegionKind region) override {
    return regionOf(region).data();
  }

  void copyToDevice(DeviceSpan dst, const void *src) override {
    checkSpan(dst, "copy to the device");
    if (dst.bytes)
      std::memcpy(regionOf(dst.region).data() + dst.offset, src, dst.bytes);
  }

  void copyFromDevice(DeviceSpan src, void *dst) override {
    checkSpan(src, "copy from the device");
    if (src.bytes)
      std::memcpy(dst, regionOf(src.region).data() + src.offset, src.bytes);
  }

  void copyWithinDevice(DeviceSpan src, DeviceSpan dst) override {
    checkSpan(src, "copy within the device");
    checkSpan(dst, "copy within the device");
    if (src.bytes != dst.bytes)
      fail(label(), ": copy within the device of ", src.bytes, " bytes into ",
           dst.bytes);
    if (src.bytes)
      std::memmove(regionOf(dst.region).data() + dst.offset,
                   regionOf(src.region).data() + src.offset, src.bytes);
  }

  void loadCode(const EffxFile &file) override;
  bool codeLoaded() const override { return entry_ != nullptr; }

  void launch() override {
    if (!entry_)
      fail(label(), ": no code is loaded");
    MemRef1D state = state_.memref(), arena = arena_.memref(),
             io = io_.memref(), host = host_.memref();
    // The step's collective calls (effrt_allreduce_sum_f32) find this
    // device, and through it the rank's Collectives.
    CpuDevice *outer = std::exchange(running, this);
    // A step with a host region takes it as a fourth argument.
    if (sizes_.host)
      reinterpret_cast<EffxHostStepFn>(entry_)(&state, &arena, &io, &host);
    else
      entry_(&state, &arena, &io);
    running = outer;
    if (waitedTask_ != lastTask_) {
      // Compiled code waits for every host task it starts; one left over
      // would run into the next step.
      waitTask(lastTask_);
      fail(label(), ": the step started a host task it never waited for");
    }
    if (!pending_.empty()) {
      // Compiled code waits for every collective it starts; one left over
      // would let the step's buffers change under it.
      for (auto &[handle, p] : pending_)
        collectives().wait(p.request);
      pending_.clear();
      fail(label(), ": the step started a collective it never waited for");
    }
  }

  /// A collective the step started and has not waited for yet.
  struct Pending {
    uint64_t request;
    const void *send, *recv;
  };
  /// Registers a started collective; returns its handle for compiled code.
  int64_t addPending(Pending p) {
    int64_t handle = ++lastHandle_;
    pending_.emplace(handle, p);
    return handle;
  }
  /// Waits for the collective behind `handle`, which must use `send` and
  /// `recv`.
  void waitPending(int64_t handle, const void *send, const void *recv) {
    auto it = pending_.find(handle);
    if (it == pending_.end())
      fail(label(), ": wait for collective request ", handle,
           ", which is not in flight");
    Pending p = it->second;
    pending_.erase(it);
    if (p.send != send || p.recv != recv)
      fail(label(), ": wait for collective request ", handle,
           " names other buffers than its start");
    collectives().wait(p.request);
  }

  /// Queues `task` on the worker thread (started on first use), which
  /// runs the queued tasks in order on the regions; returns its handle.
  int64_t startTask(effrt_host_task_fn task) {
    std::lock_guard<std::mutex> lock(taskMutex_);
    if (!worker_.joinable())
      worker_ = std::thread([this] { runTasks(); });
    tasks_.push_back(task);
    taskReady_.notify_all();
    return ++lastTask_;
  }
  /// Returns once task `handle` and every one before it has run.
  void waitTask(int64_t handle) {
    if (handle < 1 || handle > lastTask_)
      fail(label(), ": wait for host task ", handle, ", which was not started");
    std::unique_lock<std::mutex> lock(taskMutex_);
    taskDone_.wait(lock, [&] { return doneTask_ >= handle; });
    waitedTask_ = std::max(waitedTask_, handle);
  }

  /// The device whose step is running, for the kernels it calls.
  static CpuDevice *running;

  /// The span of `bytes` bytes at `p`, which lies in one of the regions.
  std::optional<DeviceSpan> spanOf(const void *p, uint64_t bytes) const {
    for (RegionKind kind : kRegionKinds) {
      const Region &region = regionOf(kind);
      auto *begin = region.data();
      auto *at = static_cast<const std::byte *>(p);
      if (begin && at >= begin && bytes <= region.size() &&
          static_cast<uint64_t>(at - begin) <= region.size() - bytes)
        return DeviceSpan{kind, static_cast<uint64_t>(at - begin), bytes};
    }
    return std::nullopt;
  }

private:
  const Region &regionOf(RegionKind region) const {
    switch (region) {
    case RegionKind::State:
      return state_;
    case RegionKind::Arena:
      return arena_;
    case RegionKind::Host:
      return host_;
    case RegionKind::Io:
      break;
    }
    return io_;
  }

  /// The worker: runs queued tasks in order until stopped.
  void runTasks() {
    std::unique_lock<std::mutex> lock(taskMutex_);
    while (true) {
      taskReady_.wait(lock, [&] { return stopWorker_ || !tasks_.empty(); });
      if (tasks_.empty())
        return;
      effrt_host_task_fn task = tasks_.front();
      tasks_.pop_front();
      lock.unlock();
      MemRef1D r[4] = {state_.memref(), arena_.memref(), io_.memref(),
                       host_.memref()};
      task(r[0].allocated, r[0].aligned, r[0].offset, r[0].size, r[0].stride,
           r[1].allocated, r[1].aligned, r[1].offset, r[1].size, r[1].stride,
           r[2].allocated, r[2].aligned, r[2].offset, r[2].size, r[2].stride,
           r[3].allocated, r[3].aligned, r[3].offset, r[3].size, r[3].stride);
      lock.lock();
      ++doneTask_;
      taskDone_.notify_all();
    }
  }

  Region state_, arena_, io_, host_;
  /// A cuda-emulated step's library workspace (emulatedWorkspaceBytes).
  uint64_t workspaceBytes_ = 0;
  Region workspace_;
  // Host tasks (effrt_host_task_start): a queue served by one worker.
  std::thread worker_;
  std::mutex taskMutex_;
  std::condition_variable taskReady_, taskDone_;
  std::deque<effrt_host_task_fn> tasks_;
  bool stopWorker_ = false;
  int64_t lastTask_ = 0, doneTask_ = 0, waitedTask_ = 0;
  std::map<int64_t, Pending> pending_;
  int64_t lastHandle_ = 0;
  std::unique_ptr<SharedObject> code_;
  EffxStepFn entry_ = nullptr;
};
CpuDevice *CpuDevice::running = nullptr;

} // namespace

// Compiled code calls these between its own loops: an exception cannot
// unwind through them, so a failure ends the process (every rank, through
// finishMpi) with one line.
template <typename Body>
static void collectiveCall(const char *name, Body body) {
  try {
    CpuDevice *device = CpuDevice::running;
    if (!device)
      fail(name, " called outside a step");
    body(*device);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "effrun: error: %s\n", e.what());
    finishMpi(/*failed=*/true);
    std::_Exit(1);
  }
}

/// The span of `count` floats at `data`, which must lie in the step's
/// memory.
static DeviceSpan floatSpan(const CpuDevice &device, const char *what,
                            const float *data, int64_t count) {
  if (count < 0)
    fail(device.label(), ": ", what, " of ", count, " elements");
  uint64_t bytes = static_cast<uint64_t>(count) * sizeof(float);
  std::optional<DeviceSpan> span = device.spanOf(data, bytes);
  if (!span)
    fail(device.label(), ": ", what, " of ", bytes,
         " bytes outside the step's memory");
  return *span;
}

extern "C" void effrt_allreduce_sum_f32(float *data, int64_t count) {
  collectiveCall("effrt_allreduce_sum_f32", [&](CpuDevice &device) {
    DeviceSpan span = floatSpan(device, "all-reduce", data, count);
    device.collectives().allReduceSum(device, span, DType::F32);
  });
}

extern "C" void effrt_reduce_scatter_sum_f32(const float *send, float *recv,
                                             int64_t recvCount) {
  collectiveCall("effrt_reduce_scatter_sum_f32", [&](CpuDevice &device) {
    int64_t n = device.collectives().worldSize();
    if (recvCount < 0 || recvCount > INT64_MAX / n)
      fail(device.label(), ": reduce-scatter of ", recvCount,
           " elements a rank");
    DeviceSpan in = floatSpan(device, "reduce-scatter", send, recvCount * n);
    DeviceSpan out = floatSpan(device, "reduce-scatter", recv, recvCount);
    device.collectives().reduceScatterSum(device, in, out, DType::F32);
  });
}

extern "C" void effrt_all_gather_f32(const float *send, float *recv,
                                     int64_t sendCount) {
  collectiveCall("effrt_all_gather_f32", [&](CpuDevice &device) {
    int64_t n = device.collectives().worldSize();
    if (sendCount < 0 || sendCount > INT64_MAX / n)
      fail(device.label(), ": all-gather of ", sendCount, " elements a rank");
    DeviceSpan in = floatSpan(device, "all-gather", send, sendCount);
    DeviceSpan out = floatSpan(device, "all-gather", recv, sendCount * n);
    device.collectives().allGather(device, in, out);
  });
}

extern "C" int64_t effrt_allreduce_sum_f32_start(float *data, int64_t count) {
  int64_t handle = 0;
  collectiveCall("effrt_allreduce_sum_f32_start", [&](CpuDevice &device) {
    DeviceSpan span = floatSpan(device, "all-reduce", data, count);
    uint64_t request =
        device.collectives().startAllReduceSum(device, span, DType::F32);
    handle = device.addPending({request, data, data});
  });
  return handle;
}

extern "C" int64_t effrt_reduce_scatter_sum_f32_start(const float *send,
                                                      float *recv,
                                                      int64_t recvCount) {
  int64_t handle = 0;
  collectiveCall("effrt_reduce_scatter_sum_f32_start", [&](CpuDevice &device) {
    int64_t n = device.collectives().worldSize();
    if (recvCount < 0 || recvCount > INT64_MAX / n)
      fail(device.label(), ": reduce-scatter of ", recvCount,
           " elements a rank");
    DeviceSpan in = floatSpan(device, "reduce-scatter", send, recvCount * n);
    DeviceSpan out = floatSpan(device, "reduce-scatter", recv, recvCount);
    uint64_t request =
        device.collectives().startReduceScatterSum(device, in, out, DType::F32);
    handle = device.addPending({request, send, recv});
  });
  return handle;
}

extern "C" int64_t effrt_all_gather_f32_start(const float *send, float *recv,
                                              int64_t sendCount) {
  int64_t handle = 0;
  collectiveCall("effrt_all_gather_f32_start", [&](CpuDevice &device) {
    int64_t n = device.collectives().worldSize();
    if (sendCount < 0 || sendCount > INT64_MAX / n)
      fail(device.label(), ": all-gather of ", sendCount, " elements a rank");
    DeviceSpan in = floatSpan(device, "all-gather", send, sendCount);
    DeviceSpan out = floatSpan(device, "all-gather", recv, sendCount * n);
    uint64_t request = device.collectives().startAllGather(device, in, out);
    handle = device.addPending({request, send, recv});
  });
  return handle;
}

extern "C" void effrt_collective_wait(int64_t request, const float *send,
                                      const float *recv) {
  collectiveCall("effrt_collective_wait", [&](CpuDevice &device) {
    device.waitPending(request, send, recv);
  });
}

extern "C" void effrt_shard_f32(const float *whole, float *shard,
                                int64_t shardCount) {
  collectiveCall("effrt_shard_f32", [&](CpuDevice &device) {
    int64_t rank = device.collectives().rank();
    int64_t n = device.collectives().worldSize();
    if (shardCount < 0 || shardCount > INT64_MAX / n)
      fail(device.label(), ": shard of ", shardCount, " elements");
    DeviceSpan in = floatSpan(device, "shard", whole, shardCount * n);
    DeviceSpan out = floatSpan(device, "shard", shard, shardCount);
    in.offset += static_cast<uint64_t>(rank * shardCount) * sizeof(float);
    in.bytes = out.bytes;
    device.copyWithinDevice(in, out);
  });
}

extern "C" int64_t effrt_host_task_start(effrt_host_task_fn task) {
  int64_t handle = 0;
  collectiveCall("effrt_host_task_start", [&](CpuDevice &device) {
    handle = device.startTask(task);
  });
  return handle;
}

extern "C" void effrt_host_task_wait(int64_t handle) {
  collectiveCall("effrt_host_task_wait",
                 [&](CpuDevice &device) { device.waitTask(handle); });
}

void CpuDevice::loadCode(const EffxFile &file) {
  const std::string &path = file.path();
  const EffxManifest &m = file.manifest();
  if (!acceptsTarget(m.target))
    fail(path, ": compiled for target ", quoteName(m.target),
         ", which this runtime cannot run (it runs ", hostTarget(), ")");
  std::vector<const EffxSection *> code =
      file.sectionsFor(EffxSectionKind::HostCode, hostTarget());
  if (code.empty())
    fail(path, ": has no code section for target ", hostTarget());
  if (code.size() > 1)
    fail(path, ": has ", code.size(), " code sections for target ",
         hostTarget(), " (expected one)");
  const EffxSection &section = *code[0];
  if (section.size == 0)
    fail(path, ": the code section is empty");
  std::unique_ptr<SharedObject> so =
      SharedObject::load(path, file.sectionData(section), section.size);
  // The loader has its own copy now.
  file.releaseSection(section);
  std::string why;
  void *symbol = so->symbol(m.entry, &why);
  if (!symbol)
    fail(path, ": the code section has no entry point ", quoteName(m.entry),
         why.empty() ? std::string() : " (" + why + ")");
  static_assert(sizeof(entry_) == sizeof(symbol), "function pointer size");
  std::memcpy(&entry_, &symbol, sizeof(entry_));
  code_ = std::move(so);
}

bool cpu::acceptsTarget(std::string_view target) {
  return target == hostTarget();
}

std::unique_ptr<Device> cpu::createCpuDevice(const DeviceOptions &options) {
  if (options.device)
    fail(options.label, ": --device ", *options.device, ": the model is "
         "compiled for ", hostTarget(), ", which runs on this machine's CPU "
         "(--device picks the GPU of a model compiled with effc --target "
         "cuda)");
  return std::make_unique<CpuDevice>(options);
}
