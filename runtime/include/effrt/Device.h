//===- Device.h - Where a compiled step runs --------------------*- C++ -*-===//
//
// A Device owns the memory of one compiled step and runs its code: it
// allocates the three regions (state, arena, io) with the manifest's sizes,
// copies bytes between them and the host, loads the code sections of an
// .effx for its target, and runs the entry point on the regions. Session
// (Session.h) only orchestrates: it never touches device memory except
// through a Device, so a new kind of machine is a new Device, registered by
// target name, in its own folder (runtime/src/cpu; runtime/src/cuda, whose
// steps run asynchronously: launch() queues, synchronize() waits), without
// edits to Session, effrun or the C interface.
//
// A device reaches collectives (sums and gathers across ranks) through a
// Collectives object: a single-rank one unless another is given, so
// multi-rank backends (MPI, NCCL; runtime/src/collectives) plug in the same
// way. Backends whose libraries may be absent open them with DynamicLibrary
// (DynamicLibrary.h).
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_DEVICE_H
#define EFFRT_DEVICE_H

#include "effrt/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace effrt {

class EffxFile;
struct EffxManifest;
class Device;

/// The memory regions of a compiled step (docs/Effx.md): three in the
/// device's memory, and `Host`, state kept in host memory (a step compiled
/// with effc --offload optimizer; empty otherwise).
enum class RegionKind { State, Arena, Io, Host };
/// The device's regions.
inline constexpr RegionKind kRegionKinds[] = {RegionKind::State,
                                              RegionKind::Arena, RegionKind::Io};
/// "state", "arena", "io", "host".
const char *regionName(RegionKind region);

/// Bytes of each region.
struct RegionSizes {
  uint64_t state = 0, arena = 0, io = 0;
  /// The host region (pinned host memory on a GPU; 0: none).
  uint64_t host = 0;
  uint64_t of(RegionKind region) const;
  /// The device's bytes (the host region is not the device's).
  uint64_t total() const { return state + arena + io; }
};

/// A byte range of one region.
struct DeviceSpan {
  RegionKind region = RegionKind::State;
  uint64_t offset = 0, bytes = 0;
};

/// Sums and gathers across the ranks of a multi-process run, on device
/// memory. One object serves every device of its rank; a rank's devices
/// call it in the same order on every rank.
class Collectives {
public:
  virtual ~Collectives();
  /// "single-rank", "mpi", "nccl", ...
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  /// In place: `data` becomes the elementwise sum of every rank's `data`.
  virtual void allReduceSum(Device &device, DeviceSpan data, DType dtype) = 0;
  /// `recv` (send.bytes / worldSize bytes) becomes the elementwise sum over
  /// ranks of block rank() of every rank's `send`.
  virtual void reduceScatterSum(Device &device, DeviceSpan send,
                                DeviceSpan recv, DType dtype) = 0;
  /// `recv` (send.bytes * worldSize bytes) becomes every rank's `send`, in
  /// rank order.
  virtual void allGather(Device &device, DeviceSpan send, DeviceSpan recv) = 0;
  /// The same on host memory: `recv` (bytes * worldSize bytes) becomes
  /// every rank's `send` (bytes), in rank order. For what runs between
  /// steps (gathering sharded optimizer state into one checkpoint).
  virtual void allGatherHost(const void *send, void *recv,
                             uint64_t bytes) = 0;
  /// `data` becomes rank `root`'s `data` on every rank.
  virtual void broadcast(Device &device, DeviceSpan data, int root) = 0;
  virtual void barrier() = 0;

  /// Started collectives: allReduceSum, reduceScatterSum and allGather that
  /// return a request at once and run while the caller goes on; wait(r)
  /// returns when request r (and every one started before it) has
  /// finished. Until then the spans are the collective's. Collectives run
  /// in the order they are started or called, so every rank runs the same
  /// ones in the same order. By default a start runs the collective itself
  /// (request 0, finished); MPI runs them on a communication thread.
  virtual uint64_t startAllReduceSum(Device &device, DeviceSpan data,
                                     DType dtype) {
    allReduceSum(device, data, dtype);
    return 0;
  }
  virtual uint64_t startReduceScatterSum(Device &device, DeviceSpan send,
                                         DeviceSpan recv, DType dtype) {
    reduceScatterSum(device, send, recv, dtype);
    return 0;
  }
  virtual uint64_t startAllGather(Device &device, DeviceSpan send,
                                  DeviceSpan recv) {
    allGather(device, send, recv);
    return 0;
  }
  virtual void wait(uint64_t request) { (void)request; }
};

/// The collectives of a run with one rank: sums and broadcasts leave the
/// data as it is; scatters and gathers copy within the device.
std::shared_ptr<Collectives> singleRankCollectives();

/// Whether this process was started by Open MPI's mpirun
/// (OMPI_COMM_WORLD_SIZE or PMIX_RANK is set).
bool launchedByMpirun();
/// The collectives of MPI_COMM_WORLD (runtime/src/collectives/Mpi.cpp):
/// one per process, initialising MPI on first use; Open MPI's libmpi.so.40
/// is opened at run time. Throws Error when it cannot be loaded.
std::shared_ptr<Collectives> mpiCollectives();
/// Ends MPI if mpiCollectives() started it: MPI_Finalize, or with `failed`
/// MPI_Abort, so that no rank waits forever on one that failed.
void finishMpi(bool failed);

/// The collectives of a run on GPUs (runtime/src/collectives/Nccl.cpp):
/// device memory summed and gathered by NCCL on the calling device's
/// collective stream, over the ranks of `host` (mpiCollectives() across
/// processes; null: one rank), whose allGatherHost also carries rank 0's
/// ncclUniqueId to the others and serves the host-memory collectives.
/// NCCL (libnccl.so.2) is opened at run time. Throws Error when it cannot
/// be loaded.
std::shared_ptr<Collectives> ncclCollectives(std::shared_ptr<Collectives> host);
/// ncclGetVersion of the NCCL ncclCollectives() opens (22809 for 2.28.9);
/// needs no GPU. Throws Error when NCCL cannot be loaded.
int ncclVersion();

struct DeviceOptions {
  DeviceOptions(std::string label = {},
                std::shared_ptr<Collectives> collectives = nullptr)
      : label(std::move(label)), collectives(std::move(collectives)) {}

  /// Names the model in errors (the .effx path).
  std::string label;
  /// Null: single rank.
  std::shared_ptr<Collectives> collectives;
  /// Which GPU (effrun --device N; CUDA_VISIBLE_DEVICES decides which GPUs
  /// are seen). Devices without a choice refuse one.
  std::optional<int> device;
  /// The manifest of the model the device is made for, if any: devices
  /// read their target's fields from it (the CUDA device: its
  /// architectures and workspace). Only used while the device is created.
  const EffxManifest *manifest = nullptr;
};

/// What every device implements. Errors are effrt::Error naming the label.
class Device {
public:
  explicit Device(DeviceOptions options);
  virtual ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// The target it runs, as in the manifest ("cpu-x86_64").
  virtual std::string target() const = 0;

  /// Allocates the regions with exactly these sizes, zero-filled and
  /// committed (what a step uses is what the plan says), replacing any
  /// previous ones.
  virtual void allocate(const RegionSizes &sizes) = 0;
  /// The sizes allocated.
  const RegionSizes &sizes() const { return sizes_; }
  /// Bytes allocate() took besides the regions for the libraries the code
  /// calls (a GPU's cuBLASLt workspace; the plan counts them too).
  virtual uint64_t libraryWorkspaceBytes() const { return 0; }
  /// What allocate() took from the device as the device reports it (a
  /// GPU: the drop of its free memory, allocation granularity included);
  /// unknown (0) where the host's allocator serves the regions.
  virtual uint64_t measuredDeviceBytes() const { return 0; }
  /// The region's bytes if the host can address them (the CPU: zero-copy
  /// views), else null.
  virtual std::byte *hostPointer(RegionKind region) = 0;
  /// Copies between the host and a region, or within the device.
  virtual void copyToDevice(DeviceSpan dst, const void *src) = 0;
  virtual void copyFromDevice(DeviceSpan src, void *dst) = 0;
  virtual void copyWithinDevice(DeviceSpan src, DeviceSpan dst) = 0;

  /// Loads the code of `file` (its sections for target()) and finds the
  /// entry point.
  virtual void loadCode(const EffxFile &file) = 0;
  virtual bool codeLoaded() const = 0;
  /// Starts one run of the entry point on the regions. The CPU runs it
  /// before returning; a GPU queues it. Copies made after it are ordered
  /// after it: copyToDevice may return before the run has read what it
  /// overwrites (a GPU stages the bytes), copyFromDevice returns the bytes
  /// the run left.
  virtual void launch() = 0;
  /// Whether launch() returns before the run has finished (a GPU): then the
  /// trainer copies the next batch in while a step runs.
  virtual bool asynchronous() const { return false; }
  /// Waits until every launched run and queued copy has finished, and
  /// throws what failed in them.
  virtual void synchronize() {}
  /// Runs the entry point once and waits for it: launch(), synchronize().
  void run() {
    launch();
    synchronize();
  }
  /// Queues a copy of `src` into `dst` after what was launched; `dst` holds
  /// the bytes after the next synchronize(). The CPU copies at once.
  virtual void copyFromDeviceAsync(DeviceSpan src, void *dst) {
    copyFromDevice(src, dst);
  }

  Collectives &collectives() const { return *collectives_; }
  void setCollectives(std::shared_ptr<Collectives> collectives);

  /// For collectives that run on the device itself (NCCL): the device
  /// address of `span`, and the stream (a CUstream) to queue them on, which
  /// the device orders with its own work. A device whose memory the host
  /// addresses has neither (the CPU: 0 and null).
  virtual uint64_t deviceAddress(DeviceSpan span) const {
    (void)span;
    return 0;
  }
  virtual void *collectiveStream() const { return nullptr; }
  const std::string &label() const { return options_.label; }

protected:
  /// Fails unless `span` lies inside its region (`what` names the use).
  void checkSpan(DeviceSpan span, const char *what) const;
  RegionSizes sizes_;

private:
  DeviceOptions options_;
  std::shared_ptr<Collectives> collectives_;
};

//===----------------------------------------------------------------------===//
// The registry
//===----------------------------------------------------------------------===//

using DeviceFactory =
    std::function<std::unique_ptr<Device>(const DeviceOptions &options)>;

/// Makes targets for which `accepts` is true run on devices made by
/// `create`; `name` stands for them in messages ("cpu-x86_64", "cuda-*").
/// The devices built into libeffrt are registered on first use
/// (runtime/src/device/Device.cpp lists them).
void registerDevice(std::string name,
                    std::function<bool(std::string_view target)> accepts,
                    DeviceFactory create);
/// The names of the registered devices, in registration order.
std::vector<std::string> registeredDevices();
/// A device that runs `target`. Throws Error: "LABEL: compiled for target
/// 'cuda-sm_90', which this runtime cannot run (it runs cpu-x86_64)".
std::unique_ptr<Device> createDevice(std::string_view target,
                                     const DeviceOptions &options);
/// A device in host memory that loads no code: for sessions that only set
/// inputs, save and load (on a machine of another target too).
std::unique_ptr<Device> createHostMemoryDevice(const DeviceOptions &options);

} // namespace effrt

#endif // EFFRT_DEVICE_H
