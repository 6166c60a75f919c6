//===- effrun.cpp - Train a compiled .effx model --------------------------===//
//
//   effrun OUT.effx --data DATA.npz|CORPUS.bin --steps N
//          [--save CKPT.safetensors] [--log LOSS.jsonl] [--resume CKPT]
//          [--merge-lora MERGED.safetensors]
//          [--seed S] [--threads T] [--quiet] [--nproc N] [--mpi]
//          [--device N] [--nccl]
//
// Under mpirun (or with --mpi) every process is one rank of a data-parallel
// run, its collectives Open MPI's (effrt::mpiCollectives); `--nproc N`
// starts N local ranks itself by running `mpirun -np N` on this command
// line (docs/Distributed.md). A cuda model's collectives run on its GPU
// through NCCL (effrt::ncclCollectives), bootstrapped through MPI.
//
// Runs N training steps of a compiled model (see docs/UserGuide.md, "Running
// training with effrun"). Every input is checked before the first step; a
// bad one is reported as one line "effrun: error: ..." with exit status 1
// (usage errors: 2). SIGINT/SIGTERM finish the current step, save the
// checkpoint (--save) and exit 130/143.
//
// The loop, the data, the log, progress and signals are effrt::Trainer's
// (effrt/Trainer.h); this file maps flags to its options and prints.
//
//===----------------------------------------------------------------------===//

#include "effrt/Error.h"
#include "effrt/Trainer.h"

#include <CLI/CLI.hpp>

#include "effrt/Device.h"

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <new>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

using namespace effrt;

namespace {

struct Options {
  std::string effx, data, save, log, resume, mergeLora;
  int64_t steps = 0;
  uint64_t seed = 0;
  int threads = 0;
  int nproc = 0;
  int device = -1;
  bool quiet = false, mpi = false, nccl = false;
};

/// Replaces this process with `mpirun -np N --oversubscribe` running the
/// same command line without --nproc. Returns only on failure.
int execMpirun(int nproc, int argc, char **argv) {
  std::vector<std::string> args = {"mpirun", "-np", std::to_string(nproc),
                                   "--oversubscribe"};
  args.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--nproc") {
      ++i; // and its value
      continue;
    }
    if (arg.rfind("--nproc=", 0) == 0)
      continue;
    args.push_back(arg);
  }
  // mpirun refuses root unless told; a container's user is often root.
  if (::geteuid() == 0) {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  std::vector<char *> cargs;
  for (std::string &a : args)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  ::execvp("mpirun", cargs.data());
  std::fprintf(stderr,
               "effrun: error: --nproc %d: cannot run mpirun: %s (install "
               "openmpi-bin)\n",
               nproc, std::strerror(errno));
  return 1;
}

int run(const Options &o) {
  TrainerOptions options;
  options.effx = o.effx;
  options.data = o.data;
  options.resume = o.resume;
  options.save = o.save;
  options.mergeLora = o.mergeLora;
  options.log = o.log;
  options.seed = o.seed;
  options.threads = o.threads;
  if (o.device >= 0)
    options.device = o.device;
  options.progress = !o.quiet;
  options.handleSignals = true;
  if (o.mpi || launchedByMpirun())
    options.collectives = mpiCollectives();
  options.nccl = o.nccl;
  Trainer trainer(options);

  const int64_t first = trainer.globalStep();
  if (o.steps > INT64_MAX - first)
    fail("--steps ", o.steps, " is too large");
  RunResult r = trainer.run(o.steps);

  if (r.stopped) {
    std::string what =
        "effrun: interrupted after " + std::to_string(r.steps) + " of " +
        std::to_string(o.steps) + " steps (at global step " +
        std::to_string(first + r.steps) + ")";
    if (!o.save.empty()) {
      trainer.save();
      what += "; saved " + o.save;
    } else {
      what += "; nothing saved (no --save)";
    }
    std::fprintf(stderr, "%s\n", what.c_str());
    return 128 + r.signal;
  }

  if (!o.save.empty())
    trainer.save();
  if (!o.mergeLora.empty())
    trainer.saveMergedLora();
  // Rank 0 speaks for a data-parallel run.
  bool speaks = !options.collectives || options.collectives->rank() == 0;
  if (!o.quiet && speaks) {
    std::fprintf(stderr, "effrun: %" PRId64 " steps in %.2f s", r.steps,
                 r.seconds);
    if (r.steps)
      std::fprintf(stderr, " (%.2f ms/step), last loss %.6g",
                   r.seconds * 1000.0 / static_cast<double>(r.steps),
                   static_cast<double>(trainer.lastRecord()->loss));
    if (!o.save.empty())
      std::fprintf(stderr, "; saved %s", o.save.c_str());
    if (!o.mergeLora.empty())
      std::fprintf(stderr, "; merged LoRA weights in %s", o.mergeLora.c_str());
    // Each rank's planned bytes and resident memory at the end.
    const std::vector<RankMemory> &ranks = trainer.rankMemory();
    for (size_t r = 0; r < ranks.size(); ++r)
      std::fprintf(stderr,
                   "%s rank %zu planned %" PRIu64 " B, resident %" PRIu64 " B",
                   r == 0 ? "; memory:" : ",", r, ranks[r].allocatedBytes,
                   ranks[r].rssBytes);
    std::fprintf(stderr, "\n");
  }
  return 0;
}

/// "rank R of N: " in a run started by mpirun with more than one rank, so
/// that the one line of an error says which rank it comes from; else "".
std::string rankPrefix() {
  const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!rank)
    rank = std::getenv("PMIX_RANK");
  if (!rank || (size && std::strcmp(size, "1") == 0))
    return "";
  std::string prefix = std::string("rank ") + rank;
  if (size)
    prefix += std::string(" of ") + size;
  return prefix + ": ";
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  CLI::App app{"effrun: train a compiled effopt model (.effx)"};
  app.add_option("model", o.effx, "compiled model (.effx)")->required();
  app.add_option("--data", o.data,
                 "training data: .npz (one array per input) or .bin "
                 "(uint16 tokens)")
      ->required();
  app.add_option("--steps", o.steps, "number of training steps to run")
      ->required()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--save", o.save,
                 "write a safetensors checkpoint at the end (and on Ctrl-C)");
  app.add_option("--merge-lora", o.mergeLora,
                 "at the end, write the weights with the LoRA adapters merged "
                 "(W + alpha/r * B A, under the original names; a model "
                 "compiled with effc --lora)");
  app.add_option("--log", o.log, "write one JSON object per step (JSONL)");
  app.add_option("--resume", o.resume,
                 "continue from a checkpoint written by --save");
  app.add_option("--seed", o.seed, "seed of the token windows (.bin data)");
  app.add_option("--threads", o.threads,
                 "threads for the compiled loops and the BLAS (default: "
                 "OMP_NUM_THREADS, else all hardware threads)")
      ->check(CLI::PositiveNumber);
  app.add_option("--device", o.device,
                 "the GPU of a model compiled with effc --target cuda "
                 "(default 0; CUDA_VISIBLE_DEVICES decides which GPUs the "
                 "numbers count)")
      ->check(CLI::Range(0, 4095));
  app.add_flag("--quiet,-q", o.quiet, "print nothing but errors");
  app.add_option("--nproc", o.nproc,
                 "start N local ranks (data parallel) through mpirun -np N")
      ->check(CLI::PositiveNumber);
  app.add_flag("--mpi", o.mpi,
               "one rank of an MPI run (implied when started by mpirun)");
  app.add_flag("--nccl", o.nccl,
               "run a cuda model's collectives through NCCL on one rank too "
               "(across ranks they always are; a model compiled with effc "
               "--zero-one-rank-collectives)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::fprintf(stderr, "effrun: error: %s (see effrun --help)\n", e.what());
    return 2;
  }

  if (o.nproc > 0 && !launchedByMpirun())
    return execMpirun(o.nproc, argc, argv);

  bool failed = true;
  try {
    int status = run(o);
    failed = status != 0;
    finishMpi(failed);
    return status;
  } catch (const Error &e) {
    std::fprintf(stderr, "effrun: error: %s%s\n", rankPrefix().c_str(),
                 e.what());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "effrun: error: %sout of memory\n",
                 rankPrefix().c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "effrun: error: %sinternal error: %s\n",
                 rankPrefix().c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "effrun: error: %sinternal error: unknown exception\n",
                 rankPrefix().c_str());
  }
  // The other ranks may be waiting in a collective: end them too.
  std::fflush(stderr);
  finishMpi(failed);
  return 1;
}
