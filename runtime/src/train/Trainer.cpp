//===- Trainer.cpp - The training loop ------------------------------------===//

#include "effrt/Trainer.h"

#include "../cuda/CudaDevice.h"
#include "LossScaleWatch.h"
#include "Progress.h"
#include "ResidentMemory.h"
#include "StepLog.h"
#include "StopSignals.h"
#include "effrt/Error.h"
#include "effrt/File.h"
#include "effrt/Kernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include <sys/stat.h>

using namespace effrt;

/// Fails now, before any training, if `path` could not be written.
static void checkWritable(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    fail(path, ": is a directory");
  AtomicFileWriter probe(path); // creates PATH.tmp.<pid>, removed unused
}

/// One count for the compiled loops (OpenMP) and the products: `requested`,
/// else OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, else every hardware thread.
static int threadCount(int requested) {
  int threads = requested;
  for (const char *name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    if (const char *env = std::getenv(name); threads <= 0 && env)
      threads = std::atoi(env);
  if (threads <= 0)
    threads =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return threads;
}

namespace {
/// The batches of one rank of N: its step i is the source's step i*N + r,
/// so the N ranks of a step read the rows one process reads in N steps
/// (those of one step of `--accum N`).
class RankSource final : public DataSource {
public:
  RankSource(std::unique_ptr<DataSource> source, int rank, int worldSize)
      : source_(std::move(source)), rank_(rank), worldSize_(worldSize) {}
  const std::string &path() const override { return source_->path(); }
  void checkSteps(int64_t first, int64_t count) const override {
    if (count == 0)
      return source_->checkSteps(first, 0);
    if (first > (INT64_MAX - worldSize_) / worldSize_ ||
        count > (INT64_MAX - worldSize_) / worldSize_ - first)
      fail(path(), ": steps [", first, ", ", first + count,
           ") are too many for ", worldSize_, " ranks");
    // Every rank checks every rank's rows: they all fail alike.
    source_->checkSteps(first * worldSize_, count * worldSize_);
  }
  void feed(Session &session, int64_t step) override {
    source_->feed(session, step * worldSize_ + rank_);
  }

private:
  std::unique_ptr<DataSource> source_;
  int64_t rank_, worldSize_;
};
} // namespace

struct Trainer::Impl {
  TrainerOptions options;
  int rank = 0;
  std::unique_ptr<DataSource> data;
  std::optional<Session> session;
  int64_t samplesPerStep = 0;
  uint64_t allocated = 0, deviceBytes = 0, hostBytes = 0;
  ResidentMemory rss;
  std::optional<LossScaleWatch> scaling;
  std::unique_ptr<StepLog> log;
  std::optional<StepRecord> last;
  /// Ranks of the run.
  int ranks = 1;
  /// A multi-rank run's last step, logged once every rank's memory after
  /// it is gathered (at the next stop agreement, or at once by step()).
  bool unlogged = false;
  /// Every rank's memory as last gathered (a run of more than one rank).
  std::vector<RankMemory> rankMemory;
  std::atomic<bool> stopRequested{false};
  std::optional<StopSignals> signals;
  /// The global step whose batch is already in the inputs (fed while the
  /// step before it ran), or -1.
  int64_t prefetched = -1;

  /// Opens everything in the order effrun has always checked it: the
  /// .effx, the data, the --save path, the code, the checkpoint.
  Impl(const TrainerOptions &o, std::unique_ptr<DataSource> source)
      : options(o), data(std::move(source)) {
    EffxFile effx = EffxFile::open(o.effx);
    const EffxManifest &m = effx.manifest();
    const int ranks = o.collectives ? o.collectives->worldSize() : 1;
    if (m.worldSize != ranks)
      fail(o.effx, ": compiled for ", m.worldSize, " rank",
           m.worldSize == 1 ? "" : "s", " (--world-size ", m.worldSize,
           ") but running on ", ranks,
           m.worldSize > 1 && ranks == 1
               ? " (start it with mpirun -np " +
                     std::to_string(m.worldSize) + " effrun ... or effrun "
                     "--nproc " + std::to_string(m.worldSize) + ")"
               : std::string());
    rank = o.collectives ? o.collectives->rank() : 0;
    this->ranks = ranks;
    // A GPU's collectives run on the GPU: NCCL, bootstrapped through the
    // host collectives (MPI) it keeps for what runs between steps.
    if (m.target == cuda::kCudaTarget && (ranks > 1 || o.nccl)) {
      try {
        options.collectives = ncclCollectives(o.collectives);
      } catch (const Error &e) {
        fail(o.effx, ": ", e.what());
      }
    } else if (o.nccl)
      fail(o.effx, ": --nccl: the model is compiled for ", m.target,
           "; NCCL runs the collectives of models compiled with effc "
           "--target cuda");
    if (rank != 0) {
      // Rank 0 writes for all (the others still gather sharded state with
      // it: they keep the path but never write it).
      if (!std::any_of(m.state.begin(), m.state.end(),
                       [](const EffxStateEntry &e) { return e.sharded; }))
        options.save.clear();
      options.log.clear();
      options.progress = false;
    }
    if (!data)
      data = openDataSource(o.data, m, o.effx, o.seed);
    if (ranks > 1)
      data = std::make_unique<RankSource>(std::move(data), rank, ranks);
    if (!options.save.empty() && rank == 0)
      checkWritable(options.save);
    if (rank != 0)
      options.mergeLora.clear();
    if (!options.mergeLora.empty()) {
      if (m.loraAdapters.empty())
        fail(o.effx, ": --merge-lora: the model has no LoRA adapters "
                     "(compile it with effc --lora)");
      for (const EffxManifest::LoraAdapter &a : m.loraAdapters)
        if (!a.storage.empty())
          fail(o.effx, ": --merge-lora: the base weight ",
               quoteName(a.weight), " is stored as ", a.storage,
               " (effc --qlora); merge the adapters (saved under peft's "
               "names) into the original weights instead");
      checkWritable(options.mergeLora);
    }
    SessionOptions sessionOptions;
    sessionOptions.device = o.device;
    // NCCL needs a GPU of its own per rank: by default the rank's place
    // among the ranks of its machine (Open MPI's local rank).
    if (!sessionOptions.device && m.target == cuda::kCudaTarget && ranks > 1)
      if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"))
        sessionOptions.device = std::atoi(local);
    sessionOptions.collectives = options.collectives;
    session.emplace(effx, sessionOptions);
    if (!o.resume.empty())
      session->load(o.resume);
    setBlasThreads(threadCount(o.threads));
    samplesPerStep = m.inputs.empty() || m.inputs[0].shape.empty()
                         ? m.batchSize
                         : m.inputs[0].shape[0];
    allocated = session->allocated().total();
    deviceBytes = session->allocated().measuredDevice;
    hostBytes = session->allocated().host;
    scaling.emplace(m.lossScaling);
    if (o.handleSignals)
      signals.emplace();
  }

  /// Creates the log at the first run or step, once its steps fit.
  void openLog() {
    if (!log && !options.log.empty())
      log = std::make_unique<StepLog>(options.log, !options.resume.empty());
  }

  /// A stop request or signal, consumed: {stop?, signal}. Ranks of a
  /// data-parallel run agree: every rank stops when any does (a signal that
  /// reached one rank, or each rank at a different step, would otherwise
  /// leave the others waiting in the next step's collectives, or meet a
  /// checkpoint's gather with a step's).
  std::pair<bool, int> takeStop() {
    int signo = signals ? StopSignals::take() : 0;
    bool requested = stopRequested.exchange(false);
    if (ranks > 1) {
      std::vector<uint64_t> all = exchange(signo != 0 || requested, signo);
      requested = false;
      for (size_t r = 0; r < all.size(); r += kExchanged) {
        requested = requested || all[r];
        if (!signo)
          signo = static_cast<int>(all[r + 1]);
      }
    }
    return {signo != 0 || requested, signo};
  }

  /// What each rank sends at a stop agreement: stop?, signal, and its
  /// memory (RankMemory's three fields).
  static constexpr size_t kExchanged = 5;

  /// Gathers every rank's stop request and memory (the resident memory
  /// after its last step, or now before the first) in one all-gather;
  /// completes the last step's log line with the memory.
  std::vector<uint64_t> exchange(bool stop, int signo) {
    uint64_t mine[kExchanged] = {stop, static_cast<uint64_t>(signo), allocated,
                                 deviceBytes,
                                 last ? last->rssBytes : rss.read()};
    std::vector<uint64_t> all(kExchanged * static_cast<size_t>(ranks));
    options.collectives->allGatherHost(mine, all.data(), sizeof(mine));
    rankMemory.clear();
    for (size_t r = 0; r < all.size(); r += kExchanged)
      rankMemory.push_back({all[r + 2], all[r + 3], all[r + 4]});
    if (unlogged) {
      last->ranks = rankMemory;
      log->write(*last);
      unlogged = false;
    }
    return all;
  }

  /// `measureRss`: read the resident memory (a system call) even without a
  /// log. `feedNext`: copy the next step's batch in while this one runs
  /// (on a device that runs asynchronously; the CPU's steps stay as they
  /// were: feed, run, read).
  StepRecord runStep(bool measureRss, bool feedNext = false) {
    Session &s = *session;
    const int64_t step = s.globalStep();
    auto t0 = std::chrono::steady_clock::now();
    if (prefetched != step)
      data->feed(s, step);
    prefetched = -1;
    float scaleBefore = scaling->enabled() ? LossScaleWatch::scale(s) : 0.0f;
    s.launchStep();
    if (feedNext) {
      // The step in flight keeps its batch: a GPU stages this one and
      // copies it after the step on the same stream.
      try {
        data->feed(s, step + 1);
      } catch (...) {
        s.finishStep();
        throw;
      }
      prefetched = step + 1;
    }
    float loss = s.finishStep();
    auto t1 = std::chrono::steady_clock::now();
    StepRecord r;
    r.step = step;
    r.loss = loss;
    r.timeMs = std::chrono::duration<double, std::milli>(t1 - t0).count();
    r.samplesPerS = r.timeMs > 0 ? samplesPerStep * 1000.0 / r.timeMs : 0.0;
    // Every rank of a multi-rank run reads it: rank 0 logs them all.
    r.rssBytes = log || measureRss || ranks > 1 ? rss.read() : 0;
    r.allocatedBytes = allocated;
    r.deviceBytes = deviceBytes;
    r.hostBytes = hostBytes;
    if (scaling->enabled())
      r.lossScale = LossScaleWatch::read(s);
    last = r;
    if (log && ranks > 1)
      unlogged = true; // written with every rank's memory (exchange())
    else if (log)
      log->write(r);
    if (r.lossScale)
      if (std::optional<std::string> stuck =
              scaling->observe(step, *r.lossScale, scaleBefore))
        fail(options.effx, ": ", *stuck);
    return r;
  }
};

Trainer::Trainer(const TrainerOptions &options)
    : impl_(std::make_unique<Impl>(options, nullptr)) {}
Trainer::Trainer(const TrainerOptions &options,
                 std::unique_ptr<DataSource> data)
    : impl_(std::make_unique<Impl>(options, std::move(data))) {}
Trainer::~Trainer() = default;
Trainer::Trainer(Trainer &&) noexcept = default;
Trainer &Trainer::operator=(Trainer &&) noexcept = default;

const TrainerOptions &Trainer::options() const { return impl_->options; }
Session &Trainer::session() { return *impl_->session; }
const Session &Trainer::session() const { return *impl_->session; }
DataSource &Trainer::data() { return *impl_->data; }
int64_t Trainer::globalStep() const { return impl_->session->globalStep(); }
int64_t Trainer::samplesPerStep() const { return impl_->samplesPerStep; }
const std::optional<StepRecord> &Trainer::lastRecord() const {
  return impl_->last;
}
const std::vector<RankMemory> &Trainer::rankMemory() const {
  return impl_->rankMemory;
}
void Trainer::requestStop() { impl_->stopRequested = true; }

StepRecord Trainer::step() {
  Impl &t = *impl_;
  int64_t first = t.session->globalStep();
  if (first == INT64_MAX)
    fail(t.options.effx, ": the step counter is at its maximum");
  t.data->checkSteps(first, 1);
  t.openLog();
  StepRecord r = t.runStep(/*measureRss=*/true);
  if (t.ranks > 1) {
    t.exchange(false, 0);
    r.ranks = t.rankMemory;
  }
  return r;
}

RunResult Trainer::run(int64_t count, const StepCallback &onStep) {
  Impl &t = *impl_;
  const int64_t first = t.session->globalStep();
  if (count < 0)
    fail("cannot run a negative number of steps (", count, ")");
  if (count > INT64_MAX - first)
    fail("cannot run ", count, " more steps after global step ", first);
  t.data->checkSteps(first, count);
  t.openLog();

  RunResult result;
  Progress progress(first, count, t.samplesPerStep, t.options.progress);
  auto start = std::chrono::steady_clock::now();
  // A stop is looked at before each step and after the last, so one that
  // arrives during the last step is still reported.
  for (;;) {
    auto [stop, signo] = t.takeStop();
    if (stop) {
      result.stopped = true;
      result.signal = signo;
      break;
    }
    if (result.steps == count)
      break;
    StepRecord r = t.runStep(/*measureRss=*/bool(onStep),
                             /*feedNext=*/result.steps + 1 < count &&
                                 t.session->device().asynchronous());
    ++result.steps;
    if (onStep)
      onStep(r);
    progress.update(r.step, r.loss, r.timeMs);
  }
  result.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return result;
}

void Trainer::save() const {
  if (impl_->rank != 0 && !impl_->session->hasShardedState())
    return;
  if (impl_->options.save.empty())
    fail(impl_->options.effx,
         ": no checkpoint path (the trainer was opened without one)");
  save(impl_->options.save);
}

void Trainer::save(const std::string &path) const {
  // Rank 0 saves the run's one checkpoint; with sharded state (ZeRO) every
  // rank gathers it with rank 0, which writes.
  if (impl_->rank != 0 && !impl_->session->hasShardedState())
    return;
  impl_->session->save(path);
}

void Trainer::saveMergedLora() const {
  if (impl_->rank != 0)
    return;
  if (impl_->options.mergeLora.empty())
    fail(impl_->options.effx,
         ": no merged-weights path (the trainer was opened without one)");
  saveMergedLora(impl_->options.mergeLora);
}

void Trainer::saveMergedLora(const std::string &path) const {
  if (impl_->rank != 0)
    return;
  impl_->session->saveMergedLora(path);
}
