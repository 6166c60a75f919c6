//===- Mpi.cpp - Collectives across processes, on Open MPI ----------------===//
//
// The collectives of a run started by mpirun: every rank is a process and
// MPI_COMM_WORLD is the group. Open MPI is reached through dlopen
// (libmpi.so.40, Debian's libopenmpi3), so libeffrt builds without MPI
// headers and effrun runs single-process programs where MPI is absent.
//
// Without headers, the few types and constants used are declared here. In
// Open MPI a communicator, datatype or operation handle is a pointer to an
// exported global object (MPI_COMM_WORLD is &ompi_mpi_comm_world, MPI_FLOAT
// &ompi_mpi_float, MPI_SUM &ompi_mpi_op_sum): they are found with dlsym
// like the functions. MPI_IN_PLACE is (void *)1 in Open MPI's mpi.h.
//
// Overlap: one communication thread per rank makes every MPI call after
// MPI_Init_thread, in the order the rank asks for them (blocking ones and
// the started ones of eff-overlap-collectives alike), so the started
// collectives move while the compute threads run the step, and the ranks
// still run the same MPI calls in the same order as without overlap:
// results are bit-identical. (Open MPI's nonblocking collectives only
// progress inside MPI calls, which the step makes none of.) MPI is asked
// for MPI_THREAD_SERIALIZED, which this needs: one thread at a time, the
// queue's lock ordering them. Where MPI gives less, every call runs on the
// caller's thread and a start finishes before it returns.
//
// Errors: MPI's default handler (MPI_ERRORS_ARE_FATAL) aborts every rank
// with Open MPI's own message, so a failed collective never hangs the
// others; finishMpi(true) does the same for an error of effrun's own. With
// MPI_THREAD_SERIALIZED only one thread may be inside MPI, and the
// communication thread may be in a collective that waits for a rank that
// will never join it: so the abort goes through that thread. It is told to
// abort; it stops polling its request (or, in a blocking call, returns from
// it once the others have joined), skips whatever is queued, and calls
// MPI_Abort itself. A thread that cannot get out of MPI within a few seconds
// (a blocking call a failed rank never joins) leaves the process to end
// with exit status 1 without MPI_Abort: mpirun then ends the other ranks.
//
//===----------------------------------------------------------------------===//

#include "effrt/Device.h"

#include "effrt/DynamicLibrary.h"
#include "effrt/Error.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <dlfcn.h>

using namespace effrt;

namespace {

/// Opaque handles: pointers to Open MPI's exported objects.
using MpiComm = void *;
using MpiDatatype = void *;
using MpiOp = void *;
using MpiRequest = void *;
void *const kMpiInPlace = reinterpret_cast<void *>(1);
constexpr int kMpiThreadSerialized = 2; // MPI_THREAD_SERIALIZED in Open MPI

#define EFFRT_MPI_SYMBOLS(X)                                                   \
  X(MPI_Initialized, int, int *)                                               \
  X(MPI_Finalized, int, int *)                                                 \
  X(MPI_Query_thread, int, int *)                                              \
  X(MPI_Init_thread, int, int *, char ***, int, int *)                         \
  X(MPI_Finalize, int)                                                         \
  X(MPI_Abort, int, MpiComm, int)                                              \
  X(MPI_Comm_rank, int, MpiComm, int *)                                        \
  X(MPI_Comm_size, int, MpiComm, int *)                                        \
  X(MPI_Allreduce, int, const void *, void *, int, MpiDatatype, MpiOp,         \
    MpiComm)                                                                   \
  X(MPI_Reduce_scatter_block, int, const void *, void *, int, MpiDatatype,     \
    MpiOp, MpiComm)                                                            \
  X(MPI_Allgather, int, const void *, int, MpiDatatype, void *, int,           \
    MpiDatatype, MpiComm)                                                      \
  X(MPI_Bcast, int, void *, int, MpiDatatype, int, MpiComm)                    \
  X(MPI_Iallreduce, int, const void *, void *, int, MpiDatatype, MpiOp,        \
    MpiComm, MpiRequest *)                                                     \
  X(MPI_Ireduce_scatter_block, int, const void *, void *, int, MpiDatatype,    \
    MpiOp, MpiComm, MpiRequest *)                                              \
  X(MPI_Iallgather, int, const void *, int, MpiDatatype, void *, int,          \
    MpiDatatype, MpiComm, MpiRequest *)                                        \
  X(MPI_Test, int, MpiRequest *, int *, void *)                                \
  X(MPI_Barrier, int, MpiComm)
EFFRT_SYMBOL_TABLE(MpiSymbols, EFFRT_MPI_SYMBOLS);

class Mpi final : public Collectives {
public:
  Mpi() : library_(open()) {
    mpi_.bind(library_);
    world_ = handle("ompi_mpi_comm_world");
    float_ = handle("ompi_mpi_float");
    double_ = handle("ompi_mpi_double");
    byte_ = handle("ompi_mpi_byte");
    sum_ = handle("ompi_mpi_op_sum");
    int initialized = 0;
    mpi_.MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (mpi_.MPI_Init_thread(nullptr, nullptr, kMpiThreadSerialized,
                               &provided) != 0)
        fail("MPI_Init_thread failed");
      ownsInit_ = true;
    }
    int level = 0;
    mpi_.MPI_Query_thread(&level);
    mpi_.MPI_Comm_rank(world_, &rank_);
    mpi_.MPI_Comm_size(world_, &size_);
    if (level >= kMpiThreadSerialized && size_ > 1)
      thread_ = std::thread([this] { communicate(); });
    const char *progress = std::getenv("EFFRT_MPI_PROGRESS");
    poll_ =
        thread_.joinable() && !(progress && std::string(progress) == "block");
  }

  ~Mpi() override { stopThread(); }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int worldSize() const override { return size_; }

  void allReduceSum(Device &device, DeviceSpan data, DType dtype) override {
    wait(startAllReduceSum(device, data, dtype));
  }
  void reduceScatterSum(Device &device, DeviceSpan send, DeviceSpan recv,
                        DType dtype) override {
    wait(startReduceScatterSum(device, send, recv, dtype));
  }
  void allGather(Device &device, DeviceSpan send, DeviceSpan recv) override {
    wait(startAllGather(device, send, recv));
  }

  uint64_t startAllReduceSum(Device &device, DeviceSpan data,
                             DType dtype) override {
    auto [type, element] = sumType(device, dtype, "all-reduce");
    std::byte *p = host(device, data, "all-reduce");
    uint64_t total = data.bytes / element;
    return enqueue([this, type = type, element = element, p, total] {
      forChunks(total, [&](uint64_t first, int count) {
        if (poll_) {
          MpiRequest request = nullptr;
          check(mpi_.MPI_Iallreduce(kMpiInPlace, p + first * element, count,
                                    type, sum_, world_, &request),
                "MPI_Iallreduce");
          finish(request, "MPI_Iallreduce");
        } else {
          check(mpi_.MPI_Allreduce(kMpiInPlace, p + first * element, count,
                                   type, sum_, world_),
                "MPI_Allreduce");
        }
      });
    });
  }

  uint64_t startReduceScatterSum(Device &device, DeviceSpan send,
                                 DeviceSpan recv, DType dtype) override {
    auto [type, element] = sumType(device, dtype, "reduce-scatter");
    if (send.bytes != recv.bytes * static_cast<uint64_t>(size_))
      fail(device.label(), ": reduce-scatter of ", send.bytes, " bytes into ",
           recv.bytes, " bytes across ", size_, " ranks");
    uint64_t count = recv.bytes / element;
    if (count > INT_MAX)
      fail(device.label(), ": reduce-scatter blocks of ", count,
           " elements are more than MPI counts (", INT_MAX, ")");
    const std::byte *in = host(device, send, "reduce-scatter");
    std::byte *out = host(device, recv, "reduce-scatter");
    return enqueue([this, type = type, in, out, count] {
      if (poll_) {
        MpiRequest request = nullptr;
        check(mpi_.MPI_Ireduce_scatter_block(in, out, static_cast<int>(count),
                                             type, sum_, world_, &request),
              "MPI_Ireduce_scatter_block");
        finish(request, "MPI_Ireduce_scatter_block");
      } else {
        check(mpi_.MPI_Reduce_scatter_block(in, out, static_cast<int>(count),
                                            type, sum_, world_),
              "MPI_Reduce_scatter_block");
      }
    });
  }

  uint64_t startAllGather(Device &device, DeviceSpan send,
                          DeviceSpan recv) override {
    if (recv.bytes != send.bytes * static_cast<uint64_t>(size_))
      fail(device.label(), ": all-gather of ", send.bytes, " bytes into ",
           recv.bytes, " bytes across ", size_, " ranks");
    if (send.bytes > INT_MAX)
      fail(device.label(), ": all-gather blocks of ", send.bytes,
           " bytes are more than MPI counts (", INT_MAX, ")");
    const std::byte *in = host(device, send, "all-gather");
    std::byte *out = host(device, recv, "all-gather");
    int bytes = static_cast<int>(send.bytes);
    return enqueue([this, in, out, bytes] {
      if (poll_) {
        MpiRequest request = nullptr;
        check(mpi_.MPI_Iallgather(in, bytes, byte_, out, bytes, byte_, world_,
                                  &request),
              "MPI_Iallgather");
        finish(request, "MPI_Iallgather");
      } else {
        check(mpi_.MPI_Allgather(in, bytes, byte_, out, bytes, byte_, world_),
              "MPI_Allgather");
      }
    });
  }

  void allGatherHost(const void *send, void *recv, uint64_t bytes) override {
    if (bytes > INT_MAX)
      fail("all-gather blocks of ", bytes, " bytes are more than MPI counts (",
           INT_MAX, ")");
    // Polled like the step's collectives: the stop agreement before every
    // step is one, and an abort must not wait for it.
    run([&] {
      int count = static_cast<int>(bytes);
      if (poll_) {
        MpiRequest request = nullptr;
        check(mpi_.MPI_Iallgather(send, count, byte_, recv, count, byte_,
                                  world_, &request),
              "MPI_Iallgather");
        finish(request, "MPI_Iallgather");
      } else {
        check(mpi_.MPI_Allgather(send, count, byte_, recv, count, byte_,
                                 world_),
              "MPI_Allgather");
      }
    });
  }

  void broadcast(Device &device, DeviceSpan data, int root) override {
    if (root < 0 || root >= size_)
      fail(device.label(), ": broadcast from rank ", root, " of ", size_);
    std::byte *p = host(device, data, "broadcast");
    run([&] {
      forChunks(data.bytes, [&](uint64_t first, int count) {
        check(mpi_.MPI_Bcast(p + first, count, byte_, root, world_),
              "MPI_Bcast");
      });
    });
  }

  void barrier() override {
    run([&] { check(mpi_.MPI_Barrier(world_), "MPI_Barrier"); });
  }

  void wait(uint64_t request) override {
    std::unique_lock<std::mutex> lock(mutex_);
    finishedChanged_.wait(lock, [&] { return finished_ >= request; });
    if (!error_.empty())
      fail(error_);
  }

  /// MPI_Finalize, or MPI_Abort on every rank after a failure. Does not
  /// return after a failure with the communication thread running.
  void finish(bool failed) {
    if (failed && thread_.joinable()) {
      // Only the communication thread may call MPI now: it aborts.
      {
        std::lock_guard<std::mutex> lock(mutex_);
        abort_ = true;
        queue_.clear();
      }
      aborting_.store(true);
      queued_.notify_one();
      std::this_thread::sleep_for(kAbortGrace);
      std::fprintf(stderr,
                   "effrun: rank %d: the communication thread is still in "
                   "an MPI call after %lld s; ending without MPI_Abort\n",
                   rank_, static_cast<long long>(kAbortGrace.count()));
      std::fflush(nullptr);
      std::_Exit(1);
    }
    stopThread();
    int finalized = 0;
    mpi_.MPI_Finalized(&finalized);
    if (finalized)
      return;
    if (failed)
      mpi_.MPI_Abort(world_, 1);
    else if (ownsInit_)
      mpi_.MPI_Finalize();
  }

private:
  /// Queues `task` (MPI calls) for the communication thread; returns its
  /// request. Without the thread, runs it now.
  uint64_t enqueue(std::function<void()> task) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!error_.empty())
      fail(error_);
    uint64_t request = ++issued_;
    if (!thread_.joinable()) {
      lock.unlock();
      task();
      lock.lock();
      finished_ = request;
      return request;
    }
    queue_.emplace_back(std::move(task));
    queued_.notify_one();
    return request;
  }

  /// Runs `task` (MPI calls) after everything queued before it.
  template <typename Fn> void run(Fn task) { wait(enqueue(task)); }

  /// Drives `request` to completion with MPI_Test, sleeping between tests
  /// once it has waited a while, so that a rank waiting for a slower one
  /// leaves the cores to the step's threads. Aborts (on this thread) when
  /// the rank has failed: the request may wait for a rank that never comes.
  void finish(MpiRequest request, const char *what) {
    int done = 0;
    for (int tries = 0;; ++tries) {
      if (aborting_.load())
        abortHere();
      check(mpi_.MPI_Test(&request, &done, nullptr), what);
      if (done)
        return;
      if (tries < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(
            std::chrono::microseconds(tries < 256 ? 10 : 50));
    }
  }

  /// The communication thread: runs the queue in order. After a failure it
  /// runs nothing more (the ranks' calls would no longer match) and every
  /// wait reports the failure.
  void communicate() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      queued_.wait(lock, [&] { return stop_ || abort_ || !queue_.empty(); });
      if (abort_) {
        lock.unlock();
        abortHere();
      }
      if (queue_.empty())
        return;
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      bool skip = !error_.empty();
      lock.unlock();
      std::string error;
      if (!skip) {
        try {
          task();
        } catch (const std::exception &e) {
          error = e.what();
        }
      }
      lock.lock();
      if (!error.empty() && error_.empty())
        error_ = error;
      ++finished_;
      finishedChanged_.notify_all();
    }
  }

  /// MPI_Abort of every rank, from the communication thread (the one thread
  /// in MPI); the process ends here.
  [[noreturn]] void abortHere() {
    std::fflush(nullptr);
    mpi_.MPI_Abort(world_, 1);
    std::_Exit(1);
  }

  void stopThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    queued_.notify_one();
    if (thread_.joinable())
      thread_.join();
  }

  static DynamicLibrary open() {
    // Open MPI loads its components (dlopen'ed plugins) that resolve
    // libmpi's symbols from the global scope: make them global first.
    for (const char *file : {"libmpi.so.40", "libmpi.so"})
      if (dlopen(file, RTLD_NOW | RTLD_GLOBAL))
        break;
    return DynamicLibrary::open("MPI (Open MPI's libmpi)",
                                {"libmpi.so.40", "libmpi.so"});
  }

  void *handle(const char *symbol) const {
    void *address = library_.symbol(symbol);
    if (!address)
      fail(library_.name(), " (", library_.fileName(), ") has no symbol '",
           symbol, "': only Open MPI is supported");
    return address;
  }

  std::pair<MpiDatatype, uint64_t> sumType(Device &device, DType dtype,
                                           const char *what) const {
    if (dtype == DType::F32)
      return {float_, 4};
    if (dtype == DType::F64)
      return {double_, 8};
    fail(device.label(), ": MPI ", what, " sums only f32 and f64 tensors");
  }

  static std::byte *host(Device &device, DeviceSpan span, const char *what) {
    std::byte *base = device.hostPointer(span.region);
    if (!base && span.bytes)
      fail(device.label(), ": MPI ", what,
           " needs memory the host can address (device ", device.target(), ")");
    return base ? base + span.offset : nullptr;
  }

  /// Calls `body(first, count)` over [0, total) in pieces MPI's int counts
  /// can hold.
  template <typename Fn> static void forChunks(uint64_t total, Fn body) {
    for (uint64_t first = 0; first < total;) {
      uint64_t count = std::min<uint64_t>(total - first, INT_MAX);
      body(first, static_cast<int>(count));
      first += count;
    }
  }

  static void check(int code, const char *what) {
    if (code != 0)
      fail(what, " failed with MPI error ", code);
  }

  DynamicLibrary library_;
  MpiSymbols mpi_;
  MpiComm world_ = nullptr;
  MpiDatatype float_ = nullptr, double_ = nullptr, byte_ = nullptr;
  MpiOp sum_ = nullptr;
  int rank_ = 0, size_ = 1;
  bool ownsInit_ = false;
  /// The step's collectives as MPI_I* requests tested (and slept on) by
  /// the communication thread, instead of blocking MPI calls that spin.
  bool poll_ = false;

  // The communication thread and its queue (guarded by mutex_).
  std::mutex mutex_;
  std::condition_variable queued_, finishedChanged_;
  std::deque<std::function<void()>> queue_;
  uint64_t issued_ = 0, finished_ = 0;
  std::string error_;
  bool stop_ = false;
  /// The rank failed: the communication thread aborts (abort_ under the
  /// lock for its queue, aborting_ for its polling loop).
  bool abort_ = false;
  std::atomic<bool> aborting_{false};
  std::thread thread_;
  /// How long a failed rank waits for its communication thread to abort
  /// before it ends the process itself.
  static constexpr std::chrono::seconds kAbortGrace{5};
};

std::mutex mpiMutex;
std::shared_ptr<Mpi> mpiInstance;

} // namespace

bool effrt::launchedByMpirun() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

std::shared_ptr<Collectives> effrt::mpiCollectives() {
  std::lock_guard<std::mutex> lock(mpiMutex);
  if (!mpiInstance)
    mpiInstance = std::make_shared<Mpi>();
  return mpiInstance;
}

void effrt::finishMpi(bool failed) {
  std::lock_guard<std::mutex> lock(mpiMutex);
  if (mpiInstance)
    mpiInstance->finish(failed);
}
