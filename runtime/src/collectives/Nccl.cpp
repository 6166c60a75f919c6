//===- Nccl.cpp - Collectives across GPUs, on NCCL ------------------------===//
//
// The collectives of a cuda model (docs/Distributed.md, "On GPUs: NCCL"):
// sums and gathers of device memory run by NCCL on the stream the calling
// device names (Device::collectiveStream: the CUDA device's communication
// stream, which it orders after and before its step stream with events).
// NCCL is reached through dlopen (libnccl.so.2, else the CUDA toolkit's
// copy), so libeffrt builds without it and effrun runs where it is absent
// until a cuda model's collectives ask for it.
//
// One communicator per process, over the ranks of the host collectives it
// is given (MPI_COMM_WORLD's, or one rank alone): rank 0's ncclUniqueId
// reaches the others through their allGatherHost (no transport of our
// own), and ncclCommInitRank runs at the first device collective, on the
// device's current context, in the step's first run (never captured).
// What runs on the host between steps (allGatherHost, barrier: the stop
// agreement, consolidated checkpoints) stays the host collectives'.
//
// Sums are ncclSum: the step divides by N itself (eff-zero), as on MPI.
// NCCL's collectives may be captured into CUDA graphs (NCCL 2.9 and later,
// "Using NCCL with CUDA Graphs" in its user guide), so the device keeps
// capturing the step. Errors are one line naming the call and NCCL's
// ncclGetErrorString.
//
//===----------------------------------------------------------------------===//

#include "effrt/Device.h"

#include "effrt/DynamicLibrary.h"
#include "effrt/Error.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#if defined(EFFRT_HAVE_CUDA_HEADERS) && __has_include(<nccl.h>)
#include <nccl.h>
#define EFFRT_HAVE_NCCL_HEADER 1
#endif

using namespace effrt;

namespace {

// NCCL's types and constants, with nccl.h's names and values (checked
// against the header below where it exists).
using NcclComm = struct ncclComm *;
using NcclResult = int;
constexpr NcclResult kNcclSuccess = 0;
constexpr int kNcclUniqueIdBytes = 128;
struct NcclUniqueId {
  char internal[kNcclUniqueIdBytes];
};
constexpr int kNcclSum = 0;
constexpr int kNcclInt8 = 0, kNcclFloat16 = 6, kNcclFloat32 = 7,
              kNcclFloat64 = 8, kNcclBfloat16 = 9;

#define EFFRT_NCCL_SYMBOLS(X)                                                  \
  X(ncclGetVersion, NcclResult, int *)                                         \
  X(ncclGetUniqueId, NcclResult, NcclUniqueId *)                               \
  X(ncclCommInitRank, NcclResult, NcclComm *, int, NcclUniqueId, int)          \
  X(ncclCommDestroy, NcclResult, NcclComm)                                     \
  X(ncclCommAbort, NcclResult, NcclComm)                                       \
  X(ncclGetErrorString, const char *, NcclResult)                              \
  X(ncclAllReduce, NcclResult, const void *, void *, size_t, int, int,         \
    NcclComm, void *)                                                          \
  X(ncclReduceScatter, NcclResult, const void *, void *, size_t, int, int,     \
    NcclComm, void *)                                                          \
  X(ncclAllGather, NcclResult, const void *, void *, size_t, int, NcclComm,    \
    void *)                                                                    \
  X(ncclBroadcast, NcclResult, const void *, void *, size_t, int, int,         \
    NcclComm, void *)
EFFRT_SYMBOL_TABLE(NcclSymbols, EFFRT_NCCL_SYMBOLS);

// Where the toolkit's nccl.h is at hand (it ships with CUDA 13), the values
// above are checked against it.
#ifdef EFFRT_HAVE_NCCL_HEADER
static_assert(sizeof(NcclUniqueId) == sizeof(ncclUniqueId));
static_assert(kNcclUniqueIdBytes == NCCL_UNIQUE_ID_BYTES);
static_assert(kNcclSuccess == ncclSuccess);
static_assert(kNcclSum == ncclSum);
static_assert(kNcclInt8 == ncclInt8 && kNcclFloat16 == ncclFloat16 &&
              kNcclFloat32 == ncclFloat32 && kNcclFloat64 == ncclFloat64 &&
              kNcclBfloat16 == ncclBfloat16);
static_assert(sizeof(ncclDataType_t) == sizeof(int) &&
              sizeof(ncclRedOp_t) == sizeof(int) &&
              sizeof(ncclResult_t) == sizeof(NcclResult));
static_assert(sizeof(cudaStream_t) == sizeof(void *));
#endif

class Nccl final : public Collectives {
public:
  explicit Nccl(std::shared_ptr<Collectives> host) : host_(std::move(host)) {
    try {
      // $EFFRT_NCCL_LIBRARY names one file (a copy that ships with
      // PyTorch, say), else the loader's path, then the CUDA 13 toolkit
      // (which has it in lib/, not lib64/).
      const char *file = std::getenv("EFFRT_NCCL_LIBRARY");
      library_ = std::make_unique<DynamicLibrary>(
          file && *file
              ? DynamicLibrary::open("NCCL", {file})
              : DynamicLibrary::open(
                    "NCCL", {"libnccl.so.2", "/usr/local/cuda/lib/libnccl.so.2",
                             "/usr/local/cuda/lib64/libnccl.so.2"}));
      api_.bind(*library_);
    } catch (const Error &e) {
      fail("collectives on the GPU need NCCL (libnccl.so.2, in the CUDA "
           "toolkit's lib/ or the libnccl2 package): ",
           e.what());
    }
  }
  ~Nccl() override {
    // A rank that failed may leave others waiting in a collective: abort
    // rather than wait for them at exit.
    if (comm_)
      api_.ncclCommAbort(comm_);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return host_->rank(); }
  int worldSize() const override { return host_->worldSize(); }

  void allReduceSum(Device &device, DeviceSpan data, DType dtype) override {
    void *stream = streamOf(device, "all-reduce");
    uint64_t p = device.deviceAddress(data);
    check("ncclAllReduce",
          api_.ncclAllReduce(pointer(p), pointer(p),
                             count(device, data.bytes, dtype, "all-reduce"),
                             typeOf(device, dtype, "all-reduce"), kNcclSum,
                             comm(), stream));
  }

  void reduceScatterSum(Device &device, DeviceSpan send, DeviceSpan recv,
                        DType dtype) override {
    void *stream = streamOf(device, "reduce-scatter");
    if (send.bytes != recv.bytes * static_cast<uint64_t>(worldSize()))
      fail(device.label(), ": reduce-scatter of ", send.bytes, " bytes into ",
           recv.bytes, " on ", worldSize(), " ranks");
    check("ncclReduceScatter",
          api_.ncclReduceScatter(
              pointer(device.deviceAddress(send)),
              pointer(device.deviceAddress(recv)),
              count(device, recv.bytes, dtype, "reduce-scatter"),
              typeOf(device, dtype, "reduce-scatter"), kNcclSum, comm(),
              stream));
  }

  void allGather(Device &device, DeviceSpan send, DeviceSpan recv) override {
    void *stream = streamOf(device, "all-gather");
    if (recv.bytes != send.bytes * static_cast<uint64_t>(worldSize()))
      fail(device.label(), ": all-gather of ", send.bytes, " bytes into ",
           recv.bytes, " on ", worldSize(), " ranks");
    // Bytes: a gather moves them as they are, whatever their type.
    check("ncclAllGather",
          api_.ncclAllGather(pointer(device.deviceAddress(send)),
                             pointer(device.deviceAddress(recv)), send.bytes,
                             kNcclInt8, comm(), stream));
  }

  void broadcast(Device &device, DeviceSpan data, int root) override {
    void *stream = streamOf(device, "broadcast");
    if (root < 0 || root >= worldSize())
      fail(device.label(), ": broadcast from rank ", root, " of ", worldSize());
    uint64_t p = device.deviceAddress(data);
    check("ncclBroadcast",
          api_.ncclBroadcast(pointer(p), pointer(p), data.bytes, kNcclInt8,
                             root, comm(), stream));
  }

  void allGatherHost(const void *send, void *recv, uint64_t bytes) override {
    host_->allGatherHost(send, recv, bytes);
  }
  void barrier() override { host_->barrier(); }

  int version() const {
    int v = 0;
    check("ncclGetVersion", api_.ncclGetVersion(&v));
    return v;
  }

private:
  static void *pointer(uint64_t address) {
    return reinterpret_cast<void *>(static_cast<uintptr_t>(address));
  }

  /// The stream `device` queues collectives on; only GPU devices have one.
  static void *streamOf(Device &device, const char *what) {
    void *stream = device.collectiveStream();
    if (!stream)
      fail(device.label(), ": NCCL ", what, " on device ", device.target(),
           ", which has no GPU stream (NCCL runs the collectives of models "
           "compiled with effc --target cuda)");
    return stream;
  }

  static int typeOf(Device &device, DType dtype, const char *what) {
    switch (dtype) {
    case DType::F32:
      return kNcclFloat32;
    case DType::F16:
      return kNcclFloat16;
    case DType::BF16:
      return kNcclBfloat16;
    case DType::F64:
      return kNcclFloat64;
    default:
      break;
    }
    fail(device.label(), ": NCCL ", what,
         " sums f32, f16, bf16 and f64 tensors, not ", dtypeName(dtype));
  }

  static size_t count(Device &device, uint64_t bytes, DType dtype,
                      const char *what) {
    uint64_t size = dtypeSize(dtype);
    if (bytes % size)
      fail(device.label(), ": NCCL ", what, " of ", bytes, " bytes, not whole ",
           dtypeName(dtype), " elements");
    return static_cast<size_t>(bytes / size);
  }

  /// Throws "CALL: <ncclGetErrorString>" unless `result` is success.
  void check(const char *call, NcclResult result) const {
    if (result != kNcclSuccess)
      fail(call, ": ", api_.ncclGetErrorString(result),
           " (NCCL_DEBUG=WARN says more)");
  }

  /// The communicator, made at the first device collective: every rank
  /// gets there in the same order (the step's first collective), with its
  /// device's context current, outside any graph capture.
  NcclComm comm() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_)
      return comm_;
    const int n = worldSize(), r = rank();
    NcclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (r == 0)
      check("ncclGetUniqueId", api_.ncclGetUniqueId(&id));
    if (n > 1) {
      // Rank 0's id to every rank, through the host collectives (MPI).
      std::vector<NcclUniqueId> all(static_cast<size_t>(n));
      host_->allGatherHost(&id, all.data(), sizeof id);
      id = all[0];
    }
    check("ncclCommInitRank", api_.ncclCommInitRank(&comm_, n, id, r));
    return comm_;
  }

  std::shared_ptr<Collectives> host_;
  std::unique_ptr<DynamicLibrary> library_;
  NcclSymbols api_;
  std::mutex mutex_;
  NcclComm comm_ = nullptr;
};

} // namespace

std::shared_ptr<Collectives>
effrt::ncclCollectives(std::shared_ptr<Collectives> host) {
  return std::make_shared<Nccl>(host ? std::move(host)
                                     : singleRankCollectives());
}

int effrt::ncclVersion() {
  Nccl nccl(singleRankCollectives());
  return nccl.version();
}
