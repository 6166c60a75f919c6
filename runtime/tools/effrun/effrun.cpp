//===- effrun.cpp - Train a compiled .effx model --------------------------===//
//
//   effrun OUT.effx --data DATA.npz|CORPUS.bin --steps N
//          [--save CKPT.safetensors] [--log LOSS.jsonl] [--resume CKPT]
//          [--seed S] [--threads T] [--quiet]
//
// Runs N training steps of a compiled model (see docs/UserGuide.md, "Running
// training with effrun"). Every input is checked before the first step; a
// bad one is reported as one line "effrun: error: ..." with exit status 1
// (usage errors: 2). SIGINT/SIGTERM finish the current step, save the
// checkpoint (--save) and exit 130/143.
//
//===----------------------------------------------------------------------===//

#include "effrt/Effx.h"
#include "effrt/Error.h"
#include "effrt/File.h"
#include "effrt/Kernels.h"
#include "effrt/Npz.h"
#include "effrt/Session.h"
#include "effrt/TokenStream.h"

#include "LossScaleWatch.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace effrt;

namespace {

volatile std::sig_atomic_t gSignal = 0;
/// A progress bar line is on the terminal without its newline.
bool gBarOpen = false;

extern "C" void onSignal(int signo) { gSignal = signo; }

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string joinNames(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + quoteName(n);
  return out.empty() ? "none" : out;
}

std::string describeInputs(const EffxManifest &m) {
  std::string out;
  for (const EffxTensor &in : m.inputs)
    out += (out.empty() ? "" : ", ") + quoteName(in.name) + " " +
           std::string(dtypeName(in.dtype)) + " " + formatShape(in.shape);
  return out.empty() ? "none" : out;
}

/// Rows of each input consumed per step: its dim 0.
int64_t rowsPerStep(const EffxTensor &input) { return input.shape[0]; }

//===----------------------------------------------------------------------===//
// Data sources
//===----------------------------------------------------------------------===//

class DataSource {
public:
  virtual ~DataSource() = default;
  /// Checks that steps [first, first + count) can be fed.
  virtual void checkSteps(int64_t first, int64_t count) const = 0;
  /// Copies the batch of global step `step` into the session's inputs.
  virtual void feed(Session &session, int64_t step) = 0;
};

/// One array per input; step i reads rows [i*B, (i+1)*B).
class NpzSource : public DataSource {
public:
  NpzSource(const std::string &path, const EffxManifest &m,
            const std::string &effxPath)
      : path_(path) {
    NpzFile file = NpzFile::open(path);
    for (const EffxTensor &input : m.inputs) {
      if (input.shape.empty())
        fail(effxPath, ": input ", quoteName(input.name),
             " is a scalar; effrun feeds inputs by rows from --data");
      if (!file.contains(input.name))
        fail(path, ": no array named ", quoteName(input.name),
             " (the model's inputs: ", describeInputs(m),
             "; the file has: ", joinNames(file.names()), ")");
      ArrayInfo info = file.info(input.name);
      Shape pattern = input.shape;
      pattern[0] = -1;
      expectTensor(path, "array", input.name,
                   Tensor::view(info.dtype, info.shape, nullptr, nullptr),
                   input.dtype, pattern);
      arrays_.push_back({&input, file.read(input.name)});
    }
  }

  void checkSteps(int64_t first, int64_t count) const override {
    if (count <= 0)
      return;
    for (const Array &a : arrays_) {
      int64_t b = rowsPerStep(*a.input);
      int64_t rows = a.data.shape()[0];
      int64_t last = first + count - 1;
      // (last + 1) * b rows are needed; compare without overflow.
      bool enough = b == 0 || (last + 1 <= rows / b);
      if (!enough)
        fail(path_, ": input ", quoteName(a.input->name), " has ", rows,
             " rows; steps ", first, "..", last, " with batch ", b, " need ",
             (last + 1 <= INT64_MAX / std::max<int64_t>(b, 1)
                  ? std::to_string((last + 1) * b)
                  : std::string("more")));
    }
  }

  void feed(Session &session, int64_t step) override {
    for (const Array &a : arrays_) {
      int64_t b = rowsPerStep(*a.input);
      session.setInput(a.input->name, a.data.sliceRows(step * b, (step + 1) * b),
                       path_);
    }
  }

private:
  struct Array {
    const EffxTensor *input;
    Tensor data;
  };
  std::string path_;
  std::vector<Array> arrays_;
};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Random windows of a uint16 token file for a model with inputs
/// (tokens [B,T], targets [B,T]). The windows of step i depend only on
/// (seed, i): a resumed run sees the same batches.
class TokenSource : public DataSource {
public:
  TokenSource(const std::string &path, const EffxManifest &m,
              const std::string &effxPath, uint64_t seed)
      : seed_(seed) {
    bool fits = m.inputs.size() == 2;
    for (size_t i = 0; fits && i < 2; ++i) {
      const EffxTensor &in = m.inputs[i];
      fits = in.shape.size() == 2 && in.shape == m.inputs[0].shape &&
             in.dtype == m.inputs[0].dtype &&
             (in.dtype == DType::I64 || in.dtype == DType::I32 ||
              in.dtype == DType::U16);
    }
    if (!fits)
      fail(effxPath, ": a token file needs a model with two integer inputs "
                     "(tokens, targets) of one shape [B,T] and dtype int64, "
                     "int32 or uint16; this model's inputs: ",
           describeInputs(m));
    tokens_ = &m.inputs[0];
    targets_ = &m.inputs[1];
    batch_ = tokens_->shape[0];
    sampler_ = std::make_unique<WindowSampler>(TokenStream::open(path),
                                               tokens_->shape[1], seed);
    inputBuf_ = Tensor::allocate(tokens_->dtype, tokens_->shape);
    targetBuf_ = Tensor::allocate(tokens_->dtype, tokens_->shape);
  }

  void checkSteps(int64_t, int64_t) const override {}

  void feed(Session &session, int64_t step) override {
    uint64_t s = splitmix64(splitmix64(seed_) + static_cast<uint64_t>(step));
    sampler_->setState({s, 0});
    sampler_->nextBatch(batch_, tokens_->dtype, inputBuf_.mutableData(),
                        targetBuf_.mutableData());
    session.setInput(tokens_->name, inputBuf_);
    session.setInput(targets_->name, targetBuf_);
  }

private:
  uint64_t seed_;
  const EffxTensor *tokens_ = nullptr, *targets_ = nullptr;
  int64_t batch_ = 0;
  std::unique_ptr<WindowSampler> sampler_;
  Tensor inputBuf_, targetBuf_;
};

std::unique_ptr<DataSource> openData(const std::string &path,
                                     const EffxManifest &m,
                                     const std::string &effxPath,
                                     uint64_t seed) {
  bool npz = endsWith(path, ".npz"), bin = endsWith(path, ".bin");
  if (!npz && !bin) {
    SharedBytes bytes = mapFile(path);
    npz = bytes.size >= 4 && std::memcmp(bytes.data, "PK\x03\x04", 4) == 0;
    if (!npz)
      fail(path, ": unknown data format (expected an .npz of arrays or a .bin "
                 "of uint16 tokens)");
  }
  if (npz)
    return std::make_unique<NpzSource>(path, m, effxPath);
  return std::make_unique<TokenSource>(path, m, effxPath, seed);
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// Resident set size from /proc/self/statm (0 where unavailable).
class RssReader {
public:
  RssReader() : fd_(::open("/proc/self/statm", O_RDONLY | O_CLOEXEC)) {
    long page = ::sysconf(_SC_PAGESIZE);
    pageSize_ = page > 0 ? static_cast<uint64_t>(page) : 4096;
  }
  ~RssReader() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  uint64_t read() const {
    if (fd_ < 0)
      return 0;
    char buf[128];
    ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    if (n <= 0)
      return 0;
    buf[n] = 0;
    unsigned long long size = 0, resident = 0;
    if (std::sscanf(buf, "%llu %llu", &size, &resident) != 2)
      return 0;
    return resident * pageSize_;
  }

private:
  int fd_;
  uint64_t pageSize_;
};

/// The --log file: one JSON object per step, flushed line by line.
class LossLog {
public:
  LossLog(const std::string &path, bool append) : path_(path) {
    file_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (!file_)
      fail(path, ": cannot open the log: ", errnoMessage(errno));
  }
  ~LossLog() {
    if (file_)
      std::fclose(file_);
  }
  void write(int64_t step, float loss, double timeMs, double samplesPerS,
             uint64_t rss, uint64_t allocated,
             const std::optional<effrun::LossScaleWatch::Reading> &scaling) {
    char lossText[32];
    if (std::isfinite(loss))
      std::snprintf(lossText, sizeof lossText, "%.9g", static_cast<double>(loss));
    else
      std::snprintf(lossText, sizeof lossText, "null");
    int n = std::fprintf(file_,
                         "{\"step\": %" PRId64 ", \"loss\": %s, \"time_ms\": "
                         "%.4f, \"samples_per_s\": %.2f, \"rss_bytes\": %" PRIu64
                         ", \"allocated_bytes\": %" PRIu64,
                         step, lossText, timeMs, samplesPerS, rss, allocated);
    if (n >= 0 && scaling)
      n = std::fprintf(file_,
                       ", \"loss_scale\": %.9g, \"step_skipped\": %s, "
                       "\"skipped_steps\": %" PRId64,
                       static_cast<double>(scaling->scale),
                       scaling->skipped ? "true" : "false",
                       scaling->skippedSteps);
    if (n >= 0)
      n = std::fprintf(file_, "}\n");
    if (n < 0 || std::fflush(file_) != 0)
      fail(path_, ": cannot write the log: ", errnoMessage(errno));
  }

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

/// Progress on stderr: a redrawn bar on a terminal, else sparse lines.
class Progress {
public:
  Progress(int64_t first, int64_t count, int64_t samplesPerStep, bool quiet)
      : first_(first), count_(count), samples_(samplesPerStep), quiet_(quiet),
        tty_(::isatty(STDERR_FILENO) == 1),
        every_(std::max<int64_t>(1, (count + 49) / 50)) {}

  /// Step `step` (global) took `ms` and gave `loss`.
  void update(int64_t step, float loss, double ms) {
    if (quiet_)
      return;
    windowMs_ += ms;
    ++windowSteps_;
    int64_t done = step - first_ + 1;
    bool last = done == count_;
    auto now = std::chrono::steady_clock::now();
    if (tty_) {
      if (!last && drawn_ && now - lastDraw_ < std::chrono::milliseconds(100))
        return;
      double avg = windowMs_ / windowSteps_;
      constexpr int kWidth = 24;
      int filled = static_cast<int>(kWidth * done / std::max<int64_t>(count_, 1));
      std::string bar(static_cast<size_t>(filled), '#');
      bar.resize(kWidth, '.');
      std::fprintf(stderr,
                   "\rstep %" PRId64 "/%" PRId64 " [%s] loss %.4f  %.2f ms/step"
                   "  %.0f samples/s\x1b[K",
                   step + 1, first_ + count_, bar.c_str(),
                   static_cast<double>(loss), avg,
                   avg > 0 ? samples_ * 1000.0 / avg : 0.0);
      if (last)
        std::fputc('\n', stderr);
      gBarOpen = !last;
      std::fflush(stderr);
    } else {
      if (!last && (done - 1) % every_ != 0)
        return;
      double avg = windowMs_ / windowSteps_;
      std::fprintf(stderr,
                   "step %" PRId64 " loss %.4f %.2f ms/step %.0f samples/s\n",
                   step, static_cast<double>(loss), avg,
                   avg > 0 ? samples_ * 1000.0 / avg : 0.0);
    }
    lastDraw_ = now;
    drawn_ = true;
    windowMs_ = 0;
    windowSteps_ = 0;
  }

  /// Ends a partly drawn bar (interrupted run).
  void finish() {
    if (gBarOpen)
      std::fputc('\n', stderr);
    gBarOpen = false;
  }

private:
  int64_t first_, count_, samples_;
  bool quiet_, tty_;
  int64_t every_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point lastDraw_;
  double windowMs_ = 0;
  int64_t windowSteps_ = 0;
};

/// Fails now, before any training, if `path` could not be written.
void checkWritable(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    fail(path, ": is a directory");
  AtomicFileWriter probe(path); // creates PATH.tmp.<pid>, removed unused
}

struct Options {
  std::string effx, data, save, log, resume;
  int64_t steps = 0;
  uint64_t seed = 0;
  int threads = 0;
  bool quiet = false;
};

int run(const Options &o) {
  EffxFile effx = EffxFile::open(o.effx);
  const EffxManifest &m = effx.manifest();
  std::unique_ptr<DataSource> data = openData(o.data, m, o.effx, o.seed);
  if (!o.save.empty())
    checkWritable(o.save);

  Session session(effx);
  if (!o.resume.empty())
    session.load(o.resume);
  const int64_t first = session.globalStep();
  if (o.steps > INT64_MAX - first)
    fail("--steps ", o.steps, " is too large");
  data->checkSteps(first, o.steps);

  // One count for the compiled loops (OpenMP) and the products: --threads,
  // else OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, else every hardware thread.
  int threads = o.threads;
  for (const char *name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    if (const char *env = std::getenv(name); threads <= 0 && env)
      threads = std::atoi(env);
  if (threads <= 0)
    threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  setBlasThreads(threads);

  std::unique_ptr<LossLog> log;
  if (!o.log.empty())
    log = std::make_unique<LossLog>(o.log, !o.resume.empty());

  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);

  int64_t samplesPerStep = m.inputs.empty() || m.inputs[0].shape.empty()
                               ? m.batchSize
                               : m.inputs[0].shape[0];
  const uint64_t allocated = session.allocated().total();
  RssReader rss;
  effrun::LossScaleWatch scaling(session);
  Progress progress(first, o.steps, samplesPerStep, o.quiet);
  auto start = std::chrono::steady_clock::now();
  int64_t done = 0;
  float loss = 0;
  for (; done < o.steps && !gSignal; ++done) {
    int64_t step = first + done;
    auto t0 = std::chrono::steady_clock::now();
    data->feed(session, step);
    float scaleBefore =
        scaling.enabled() ? session.readState("loss_scale.scale").load<float>(0)
                          : 0.0f;
    loss = session.step();
    auto t1 = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    std::optional<effrun::LossScaleWatch::Reading> reading;
    if (scaling.enabled())
      reading = scaling.read();
    if (log)
      log->write(step, loss, ms, ms > 0 ? samplesPerStep * 1000.0 / ms : 0.0,
                 rss.read(), allocated, reading);
    if (reading)
      if (std::optional<std::string> stuck =
              scaling.observe(step, *reading, scaleBefore)) {
        progress.finish();
        fail(o.effx, ": ", *stuck);
      }
    progress.update(step, loss, ms);
  }
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();

  if (gSignal) {
    progress.finish();
    int signo = gSignal;
    std::string what =
        "effrun: interrupted after " + std::to_string(done) + " of " +
        std::to_string(o.steps) + " steps (at global step " +
        std::to_string(first + done) + ")";
    if (!o.save.empty()) {
      session.save(o.save);
      what += "; saved " + o.save;
    } else {
      what += "; nothing saved (no --save)";
    }
    std::fprintf(stderr, "%s\n", what.c_str());
    return 128 + signo;
  }

  if (!o.save.empty())
    session.save(o.save);
  if (!o.quiet) {
    std::fprintf(stderr, "effrun: %" PRId64 " steps in %.2f s", done, seconds);
    if (done)
      std::fprintf(stderr, " (%.2f ms/step), last loss %.6g",
                   seconds * 1000.0 / static_cast<double>(done),
                   static_cast<double>(loss));
    if (!o.save.empty())
      std::fprintf(stderr, "; saved %s", o.save.c_str());
    std::fprintf(stderr, "\n");
  }
  return 0;
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
  app.add_option("--log", o.log, "write one JSON object per step (JSONL)");
  app.add_option("--resume", o.resume,
                 "continue from a checkpoint written by --save");
  app.add_option("--seed", o.seed, "seed of the token windows (.bin data)");
  app.add_option("--threads", o.threads,
                 "threads for the compiled loops and the BLAS (default: "
                 "OMP_NUM_THREADS, else all hardware threads)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--quiet,-q", o.quiet, "print nothing but errors");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::fprintf(stderr, "effrun: error: %s (see effrun --help)\n", e.what());
    return 2;
  }

  try {
    return run(o);
  } catch (...) {
    if (gBarOpen) // An error mid-run starts its own line.
      std::fputc('\n', stderr);
    try {
      throw;
    } catch (const Error &e) {
      std::fprintf(stderr, "effrun: error: %s\n", e.what());
    } catch (const std::bad_alloc &) {
      std::fprintf(stderr, "effrun: error: out of memory\n");
    } catch (const std::exception &e) {
      std::fprintf(stderr, "effrun: error: internal error: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "effrun: error: internal error: unknown exception\n");
    }
  }
  return 1;
}
