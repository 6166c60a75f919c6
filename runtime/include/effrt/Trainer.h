//===- Trainer.h - The training loop ----------------------------*- C++ -*-===//
//
// A Trainer runs a compiled training step over a data source: it opens the
// .effx, the data and (optionally) a checkpoint to resume from, feeds the
// batch of each global step, times it, writes the JSONL log and reports
// progress. effrun, the C ABI (effrt_trainer_*, for Python) and multi-rank
// launches all drive this one loop:
//
//   TrainerOptions o;
//   o.effx = "mlp.effx"; o.data = "mlp.npz"; o.log = "loss.jsonl";
//   Trainer trainer(o);                      // everything checked here
//   RunResult r = trainer.run(100, [](const StepRecord &rec) { ... });
//   trainer.save("mlp.safetensors");
//
// or one step at a time with step(). A stop request (requestStop(), a
// callback, or SIGINT/SIGTERM with handleSignals) ends a run after the
// step in progress; the caller then saves if it wants to.
//
// Runs are reproducible: the batch of a step depends only on its global
// step (see DataSource.h), so N steps give the same losses and the same
// checkpoint as k steps, save, resume and N-k more.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_TRAINER_H
#define EFFRT_TRAINER_H

#include "effrt/DataSource.h"
#include "effrt/Session.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace effrt {

struct TrainerOptions {
  /// The compiled model (.effx).
  std::string effx;
  /// Training data: .npz or .bin (see DataSource.h).
  std::string data;
  /// A checkpoint written by save() to continue from ("": the initial state).
  std::string resume;
  /// Where save() writes by default ("": save() needs a path). It is
  /// checked to be writable when the trainer opens, before any training.
  std::string save;
  /// Where saveMergedLora() writes by default ("": it needs a path): the
  /// weights with the LoRA adapters merged. Checked to be writable, and the
  /// model to have adapters, when the trainer opens.
  std::string mergeLora;
  /// One JSON object per step ("": no log). Truncated, or appended to when
  /// resuming; created by the first run() or step(), once the steps it
  /// asks for are known to fit the data.
  std::string log;
  /// The GPU of a cuda model (effrun --device N; default 0). A CPU model
  /// refuses one.
  std::optional<int> device;
  /// Seed of the token windows (.bin data).
  uint64_t seed = 0;
  /// Threads for the compiled loops and the BLAS; 0: OMP_NUM_THREADS, else
  /// OPENBLAS_NUM_THREADS, else every hardware thread.
  int threads = 0;
  /// Progress on stderr during run(): a redrawn bar on a terminal, else
  /// about 50 lines per run.
  bool progress = false;
  /// While the trainer exists, SIGINT and SIGTERM request a stop instead of
  /// killing the process (the previous handlers come back when the last
  /// such trainer is destroyed).
  bool handleSignals = false;
  /// The ranks of a data-parallel run (mpiCollectives() under mpirun);
  /// null: one rank. Their number must be the manifest's world_size. At
  /// step i rank r reads the batch a single process reads at step
  /// i*N + r (rows [(i*N + r)*B, (i*N + r + 1)*B) of an .npz); only rank 0
  /// writes the log, the checkpoints and the progress.
  std::shared_ptr<Collectives> collectives;
  /// A cuda model's collectives run on its GPU through NCCL
  /// (ncclCollectives over `collectives`) when it has more than one rank,
  /// and with `nccl` on one rank too (effrun --nccl: the step of a model
  /// compiled with effc --zero-one-rank-collectives then runs NCCL's
  /// collectives on one GPU); without, one rank's collectives are copies.
  /// Other targets refuse `nccl`.
  bool nccl = false;
};

/// In-graph loss scaling after a step (models compiled with it only).
struct LossScaleReading {
  /// The scale after this step's update.
  float scale = 0;
  /// The gradients overflowed and the optimizer update was skipped.
  bool skipped = false;
  /// Skipped updates so far.
  int64_t skippedSteps = 0;
};

/// One rank's memory in a data-parallel run, gathered through the run's
/// Collectives so that rank 0 can log every rank's.
struct RankMemory {
  /// The plan's bytes on that rank (its allocatedBytes).
  uint64_t allocatedBytes = 0;
  /// What its device reports those took (a GPU; 0: not measured).
  uint64_t deviceBytes = 0;
  /// Its process's resident memory after the step.
  uint64_t rssBytes = 0;
};

/// What one step did: the fields of a log line.
struct StepRecord {
  /// The global step, counting from 0 (and on across a resume).
  int64_t step = 0;
  /// The loss of the step's forward pass, before its update.
  float loss = 0;
  /// Wall time of the step, including copying its batch.
  double timeMs = 0;
  /// Samples (rows of the first input) per second.
  double samplesPerS = 0;
  /// The process's resident memory after the step (0 where unknown, and
  /// in a run() with neither a log nor a callback, which skips reading it).
  uint64_t rssBytes = 0;
  /// Bytes of the state, arena and io regions and the libraries' workspace.
  uint64_t allocatedBytes = 0;
  /// What the device reports those took (a GPU; 0: not measured).
  uint64_t deviceBytes = 0;
  /// Bytes of the host region (optimizer state in host memory, effc
  /// --offload optimizer), besides allocatedBytes; 0: none.
  uint64_t hostBytes = 0;
  std::optional<LossScaleReading> lossScale;
  /// Every rank's memory after this step, in rank order (a run of more
  /// than one rank; empty otherwise).
  std::vector<RankMemory> ranks;
};

struct RunResult {
  /// Steps taken by this run.
  int64_t steps = 0;
  /// Wall time of the run.
  double seconds = 0;
  /// The run ended before its steps because a stop was requested.
  bool stopped = false;
  /// The signal that requested the stop (SIGINT, SIGTERM), else 0.
  int signal = 0;
};

class Trainer {
public:
  /// Opens and checks everything: the .effx, the data against the model's
  /// inputs, that `save` can be written, the resume checkpoint. Throws Error
  /// naming the file.
  explicit Trainer(const TrainerOptions &options);
  /// The same with batches from `data` (options.data is not opened unless
  /// `data` is null).
  Trainer(const TrainerOptions &options, std::unique_ptr<DataSource> data);
  ~Trainer();
  Trainer(Trainer &&) noexcept;
  Trainer &operator=(Trainer &&) noexcept;
  Trainer(const Trainer &) = delete;
  Trainer &operator=(const Trainer &) = delete;

  const TrainerOptions &options() const;
  Session &session();
  const Session &session() const;
  DataSource &data();
  /// The next step's global step.
  int64_t globalStep() const;
  /// Rows of the first input per step (the compiled batch size).
  int64_t samplesPerStep() const;

  using StepCallback = std::function<void(const StepRecord &)>;
  /// Runs `count` steps, calling `onStep` after each (it may call
  /// requestStop()). While a step runs (on a GPU: while it is queued), the
  /// next step's batch is read and copied in. Checks first that the data has rows for all of them.
  /// Stops early when a stop is requested (before the first step, or during
  /// any): the request is then consumed and the result says so. Throws
  /// Error when a step cannot run, or when loss scaling keeps skipping
  /// updates (the gradients stay inf/NaN: training would go nowhere).
  RunResult run(int64_t count, const StepCallback &onStep = {});
  /// Runs one step (a stop request is not looked at).
  StepRecord step();
  /// The record of the last step, if any step ran.
  const std::optional<StepRecord> &lastRecord() const;
  /// Every rank's memory, in rank order, as the ranks last exchanged it
  /// (at each stop agreement of run(): before the first step and after
  /// each; after step()). Empty in a run of one rank.
  const std::vector<RankMemory> &rankMemory() const;

  /// Asks the current or next run() to end after its step. Thread-safe.
  void requestStop();

  /// Writes a checkpoint (atomically) to options().save, or to `path`.
  void save() const;
  void save(const std::string &path) const;

  /// Writes the weights with the LoRA adapters merged
  /// (Session::saveMergedLora) to options().mergeLora, or to `path`; rank 0
  /// only.
  void saveMergedLora() const;
  void saveMergedLora(const std::string &path) const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace effrt

#endif // EFFRT_TRAINER_H
