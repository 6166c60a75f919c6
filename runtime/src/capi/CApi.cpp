//===- CApi.cpp - The effopt runtime's C interface ------------------------===//

#include "effrt/effrt.h"

#include "effrt/Error.h"
#include "effrt/Session.h"
#include "effrt/Trainer.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>

using namespace effrt;

/// A session the handle owns, or one a trainer owns (borrowed).
struct effrt_session {
  explicit effrt_session(Session s)
      : owned(std::move(s)), session(&*owned) {}
  explicit effrt_session(Session *borrowed) : session(borrowed) {}
  std::optional<Session> owned;
  Session *session;
};

struct effrt_trainer {
  explicit effrt_trainer(Trainer t)
      : trainer(std::move(t)), session(&trainer.session()) {}
  Trainer trainer;
  effrt_session session;
};

static thread_local std::string lastError;

/// Runs `body`, turning every exception into a status and lastError.
template <typename Body> static int guarded(Body body) {
  try {
    body();
    return 0;
  } catch (const Error &e) {
    lastError = e.what();
  } catch (const std::bad_alloc &) {
    lastError = "out of memory";
  } catch (const std::exception &e) {
    lastError = std::string("internal error: ") + e.what();
  } catch (...) {
    lastError = "internal error: unknown exception";
  }
  return -1;
}

static void requireSession(const effrt_session *s) {
  if (!s)
    fail("effrt: session is NULL");
}

static std::string requireName(const char *name, const char *what) {
  if (!name)
    fail("effrt: ", what, " is NULL");
  return name;
}

extern "C" {

int effrt_api_version(void) { return EFFRT_C_API_VERSION; }

effrt_session *effrt_session_open(const char *effx_path) {
  effrt_session *result = nullptr;
  guarded([&] {
    std::string path = requireName(effx_path, "path");
    result = new effrt_session(Session::open(path));
  });
  return result;
}

void effrt_session_close(effrt_session *session) {
  if (session && session->owned) // a trainer's session goes with the trainer
    delete session;
}

int effrt_session_set_input(effrt_session *session, const char *name,
                            const void *data, size_t nbytes) {
  return guarded([&] {
    requireSession(session);
    session->session->setInputBytes(requireName(name, "input name"), data,
                                   nbytes);
  });
}

int effrt_session_step(effrt_session *session, float *loss) {
  return guarded([&] {
    requireSession(session);
    float value = session->session->step();
    if (loss)
      *loss = value;
  });
}

int effrt_session_forward(effrt_session *session) {
  return guarded([&] {
    requireSession(session);
    session->session->forward();
  });
}

int effrt_session_get_output(const effrt_session *session, const char *name,
                             void *data, size_t nbytes) {
  return guarded([&] {
    requireSession(session);
    std::string n = requireName(name, "output name");
    const EffxTensor *out = session->session->manifest().findOutput(n);
    if (out && nbytes != out->byteSize)
      fail(session->session->file().path(), ": output ", quoteName(n), " has ",
           out->byteSize, " bytes (", dtypeName(out->dtype), " ",
           formatShape(out->shape), "), the buffer ", nbytes);
    Tensor t = session->session->readOutput(n);
    if (nbytes && !data)
      fail("effrt: buffer is NULL");
    if (nbytes)
      std::memcpy(data, t.data(), nbytes);
  });
}

int effrt_session_save(effrt_session *session, const char *path) {
  return guarded([&] {
    requireSession(session);
    session->session->save(requireName(path, "path"));
  });
}

int effrt_session_save_merged_lora(effrt_session *session, const char *path) {
  return guarded([&] {
    requireSession(session);
    session->session->saveMergedLora(requireName(path, "path"));
  });
}

int effrt_session_load(effrt_session *session, const char *path) {
  return guarded([&] {
    requireSession(session);
    session->session->load(requireName(path, "path"));
  });
}

int64_t effrt_session_step_counter(const effrt_session *session) {
  return session ? session->session->globalStep() : -1;
}

uint64_t effrt_session_allocated_bytes(const effrt_session *session,
                                       uint64_t *state, uint64_t *arena,
                                       uint64_t *io) {
  AllocatedBytes a;
  if (session)
    a = session->session->allocated();
  if (state)
    *state = a.state;
  if (arena)
    *arena = a.arena;
  if (io)
    *io = a.io;
  return a.total();
}

const char *effrt_session_manifest(const effrt_session *session) {
  return session ? session->session->manifest().json.c_str() : "";
}

int effrt_session_read_state(const effrt_session *session, const char *name,
                             void *data, size_t nbytes) {
  return guarded([&] {
    requireSession(session);
    Tensor t = session->session->readState(requireName(name, "state name"));
    if (nbytes != t.byteSize())
      fail(session->session->file().path(), ": state entry ", quoteName(name),
           " has ", t.byteSize(), " bytes, the buffer ", nbytes);
    if (nbytes && !data)
      fail("effrt: buffer is NULL");
    if (nbytes)
      std::memcpy(data, t.data(), nbytes);
  });
}

int effrt_session_write_state(effrt_session *session, const char *name,
                              const void *data, size_t nbytes) {
  return guarded([&] {
    requireSession(session);
    std::string n = requireName(name, "state name");
    const EffxStateEntry *e = session->session->manifest().findState(n);
    if (!e)
      fail(session->session->file().path(), ": the model has no state entry ",
           quoteName(n));
    if (nbytes != e->byteSize)
      fail(session->session->file().path(), ": state entry ", quoteName(n),
           " has ", e->byteSize, " bytes, the buffer ", nbytes);
    if (nbytes && !data)
      fail("effrt: buffer is NULL");
    session->session->writeState(
        n, Tensor::view(e->dtype, e->shape, data, nullptr));
  });
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Trainers
//===----------------------------------------------------------------------===//

/// The options struct as the caller compiled it: older (smaller) ones leave
/// the later fields at their defaults; newer (larger) ones are refused.
static effrt_trainer_options callerOptions(const effrt_trainer_options *in) {
  if (!in)
    fail("effrt: options is NULL");
  constexpr size_t kFirst = offsetof(effrt_trainer_options, handle_signals) +
                            sizeof(in->handle_signals); // version 3
  if (in->struct_size < kFirst)
    fail("effrt: effrt_trainer_options.struct_size is ", in->struct_size,
         ", expected at least ", kFirst,
         " (call effrt_trainer_options_init first)");
  if (in->struct_size > sizeof(effrt_trainer_options))
    fail("effrt: effrt_trainer_options.struct_size is ", in->struct_size,
         ", larger than this libeffrt's ", sizeof(effrt_trainer_options),
         " (the caller was built against a newer effrt.h)");
  effrt_trainer_options o;
  effrt_trainer_options_init(&o);
  std::memcpy(&o, in, in->struct_size);
  return o;
}

/// Copies `full` into the caller's struct, as much of it as the caller's
/// struct_size says it holds.
template <typename T> static void copyOut(const T &full, T *out) {
  if (!out)
    return;
  if (out->struct_size < sizeof(size_t))
    fail("effrt: the output struct's struct_size is not set");
  size_t n = std::min(out->struct_size, sizeof(T));
  std::memcpy(out, &full, n);
  out->struct_size = n;
}

static effrt_step_record toC(const StepRecord &r) {
  effrt_step_record c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.step = r.step;
  c.loss = r.loss;
  c.time_ms = r.timeMs;
  c.samples_per_s = r.samplesPerS;
  c.rss_bytes = r.rssBytes;
  c.allocated_bytes = r.allocatedBytes;
  if (r.lossScale) {
    c.has_loss_scale = 1;
    c.step_skipped = r.lossScale->skipped ? 1 : 0;
    c.loss_scale = r.lossScale->scale;
    c.skipped_steps = r.lossScale->skippedSteps;
  }
  return c;
}

static void requireTrainer(const effrt_trainer *t) {
  if (!t)
    fail("effrt: trainer is NULL");
}

namespace {
/// Carries a C callback through Trainer::run.
struct CallbackState {
  effrt_trainer *trainer;
  effrt_step_callback callback;
  void *user;
};
} // namespace

extern "C" {

void effrt_trainer_options_init(effrt_trainer_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

effrt_trainer *effrt_trainer_open(const effrt_trainer_options *options) {
  effrt_trainer *result = nullptr;
  guarded([&] {
    effrt_trainer_options o = callerOptions(options);
    TrainerOptions t;
    t.effx = requireName(o.effx_path, "effx_path");
    t.data = requireName(o.data_path, "data_path");
    t.resume = o.resume_path ? o.resume_path : "";
    t.save = o.save_path ? o.save_path : "";
    t.log = o.log_path ? o.log_path : "";
    t.seed = o.seed;
    if (o.threads < 0)
      fail("effrt: threads is ", o.threads, "; expected 0 (automatic) or more");
    t.threads = o.threads;
    t.progress = o.progress != 0;
    t.handleSignals = o.handle_signals != 0;
    result = new effrt_trainer(Trainer(t));
  });
  return result;
}

void effrt_trainer_close(effrt_trainer *trainer) { delete trainer; }

int effrt_trainer_run(effrt_trainer *trainer, int64_t steps,
                      effrt_step_callback callback, void *user_data,
                      effrt_run_result *result) {
  return guarded([&] {
    requireTrainer(trainer);
    if (result && result->struct_size < sizeof(size_t))
      fail("effrt: the output struct's struct_size is not set");
    CallbackState state{trainer, callback, user_data};
    Trainer::StepCallback onStep;
    if (callback)
      onStep = [&state](const StepRecord &r) {
        effrt_step_record c = toC(r);
        if (state.callback(&c, state.user) != 0)
          state.trainer->trainer.requestStop();
      };
    RunResult r = trainer->trainer.run(steps, onStep);
    effrt_run_result c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.steps = r.steps;
    c.seconds = r.seconds;
    c.stopped = r.stopped ? 1 : 0;
    c.signal = r.signal;
    copyOut(c, result);
  });
}

int effrt_trainer_step(effrt_trainer *trainer, effrt_step_record *record) {
  return guarded([&] {
    requireTrainer(trainer);
    if (record && record->struct_size < sizeof(size_t))
      fail("effrt: the output struct's struct_size is not set");
    copyOut(toC(trainer->trainer.step()), record);
  });
}

int effrt_trainer_last_record(const effrt_trainer *trainer,
                              effrt_step_record *record) {
  return guarded([&] {
    requireTrainer(trainer);
    const std::optional<StepRecord> &r = trainer->trainer.lastRecord();
    if (!r)
      fail(trainer->trainer.options().effx, ": no step has run yet");
    copyOut(toC(*r), record);
  });
}

void effrt_trainer_request_stop(effrt_trainer *trainer) {
  if (trainer)
    trainer->trainer.requestStop();
}

int effrt_trainer_save(effrt_trainer *trainer, const char *path) {
  return guarded([&] {
    requireTrainer(trainer);
    if (path)
      trainer->trainer.save(path);
    else
      trainer->trainer.save();
  });
}

int64_t effrt_trainer_global_step(const effrt_trainer *trainer) {
  return trainer ? trainer->trainer.globalStep() : -1;
}

effrt_session *effrt_trainer_session(effrt_trainer *trainer) {
  return trainer ? &trainer->session : nullptr;
}

int effrt_set_num_threads(int threads) {
  return guarded([&] { setBlasThreads(threads); });
}

const char *effrt_last_error(void) { return lastError.c_str(); }

} // extern "C"
