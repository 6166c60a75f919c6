/*===- CApiTest.c - The C interface, from C, through libeffrt.so ---------===//
 *
 *   effrt-capi-test LINEAR.effx [FORWARD.effx]
 *   effrt-capi-test --trainer MODEL.effx DATA STEPS SEED RUN.jsonl RUN.safetensors
 *
 * LINEAR.effx is the linear test model (effrt-make-test-model linear).
 * FORWARD.effx is test/Runtime/Inputs/make_forward_model.py's model compiled
 * with `effc --mode forward`: y = x + c, g = x > c, n = argmax(x, 1).
 *
 * --trainer drives training runs through effrt_trainer_*: STEPS steps of
 * MODEL.effx on DATA (.npz or .bin, with SEED) must give bit for bit the
 * losses of RUN.jsonl and the bytes of RUN.safetensors, which effrun wrote
 * with the same arguments; so must a run split by save and resume, one step
 * at a time, and the log the trainer writes. Then stop requests, signals and
 * every error of the interface.
 *
 * Prints "N passed, M failed"; exit status 1 on any failure.
 *
 *===----------------------------------------------------------------------===*/

#include "effrt/effrt.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int passed, failed;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (cond) {                                                                \
      ++passed;                                                                \
    } else {                                                                   \
      ++failed;                                                                \
      fprintf(stderr, "CApiTest.c:%d: EXPECT(%s) failed; last error: %s\n",    \
              __LINE__, #cond, effrt_last_error());                            \
    }                                                                          \
  } while (0)

/* The forward function: outputs of every dtype, state read-only, and the
 * errors of mixing up forward functions and training steps. */
static void testForward(const char *path, const char *linearPath) {
  effrt_session *f = effrt_session_open(path);
  EXPECT(f != NULL);
  if (!f)
    return;
  EXPECT(strstr(effrt_session_manifest(f), "\"kind\": \"forward\"") != NULL);
  float x[6] = {1.0f, -2.0f, 3.0f, 0.25f, 0.5f, -7.0f};
  const float c[3] = {0.5f, -1.0f, 2.0f};
  float y[6];
  uint8_t g[6];
  int64_t n[2];
  EXPECT(effrt_session_forward(f) != 0);
  EXPECT(strstr(effrt_last_error(), "was not set before the forward run") != NULL);
  EXPECT(effrt_session_set_input(f, "x", x, sizeof x) == 0);
  EXPECT(effrt_session_get_output(f, "y", y, sizeof y) != 0);
  EXPECT(strstr(effrt_last_error(), "before the first forward run") != NULL);
  EXPECT(effrt_session_step(f, NULL) != 0);
  EXPECT(strstr(effrt_last_error(), "not a training step") != NULL);
  EXPECT(effrt_session_forward(f) == 0);
  EXPECT(effrt_session_get_output(f, "y", y, sizeof y) == 0);
  EXPECT(effrt_session_get_output(f, "g", g, sizeof g) == 0);
  EXPECT(effrt_session_get_output(f, "n", n, sizeof n) == 0);
  int yOk = 1, gOk = 1;
  for (int i = 0; i < 6; ++i) {
    yOk &= y[i] == x[i] + c[i % 3];
    gOk &= g[i] == (x[i] > c[i % 3] ? 1 : 0);
  }
  EXPECT(yOk);
  EXPECT(gOk);
  EXPECT(n[0] == 2 && n[1] == 1);
  EXPECT(effrt_session_get_output(f, "n", n, 8) != 0);
  EXPECT(strstr(effrt_last_error(), "output 'n' has 16 bytes (int64 [2])") != NULL);
  EXPECT(effrt_session_get_output(f, "nope", n, sizeof n) != 0);
  EXPECT(strstr(effrt_last_error(), "has no output 'nope'") != NULL);
  EXPECT(effrt_session_get_output(f, NULL, n, sizeof n) != 0);
  EXPECT(effrt_session_get_output(NULL, "n", n, sizeof n) != 0);
  /* Another batch; the state is only read. */
  x[0] = -5.0f;
  EXPECT(effrt_session_set_input(f, "x", x, sizeof x) == 0);
  EXPECT(effrt_session_forward(f) == 0);
  EXPECT(effrt_session_get_output(f, "y", y, sizeof y) == 0);
  EXPECT(y[0] == -4.5f);
  float c2[3];
  EXPECT(effrt_session_read_state(f, "c", c2, sizeof c2) == 0);
  EXPECT(memcmp(c, c2, sizeof c) == 0);
  EXPECT(effrt_session_step_counter(f) == 0);
  effrt_session_close(f);

  effrt_session *t = effrt_session_open(linearPath);
  EXPECT(t != NULL);
  EXPECT(effrt_session_forward(t) != 0);
  EXPECT(strstr(effrt_last_error(), "is a training step") != NULL);
  EXPECT(effrt_session_get_output(t, "loss", y, 4) != 0);
  effrt_session_close(t);
  EXPECT(effrt_session_forward(NULL) != 0);
}

/* The "loss" of each line of a JSONL log written by effrun or a trainer
 * (null: NaN); the number of lines, at most `max`. */
static int readLogLosses(const char *path, float *losses, int max) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char line[1024];
  int n = 0;
  while (n < max && fgets(line, sizeof line, f)) {
    const char *at = strstr(line, "\"loss\": ");
    if (!at)
      break;
    at += 8;
    losses[n++] = strncmp(at, "null", 4) == 0 ? NAN : strtof(at, NULL);
  }
  fclose(f);
  return n;
}

static int sameFloats(const float *a, const float *b, int n) {
  return memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

/* 1 if the files have the same bytes. */
static int sameFile(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  int same = fa && fb;
  while (same) {
    int ca = fgetc(fa), cb = fgetc(fb);
    same = ca == cb;
    if (ca == EOF || cb == EOF)
      break;
  }
  if (fa)
    fclose(fa);
  if (fb)
    fclose(fb);
  return same;
}

static char tempDir[1024];
static const char *const kTempFiles[] = {
    "full.safetensors", "full.jsonl", "half.safetensors", "split.safetensors",
    "split.jsonl"};
static const char *tempFile(const char *name) {
  static char paths[8][1100];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, sizeof paths[0], "%s/%s", tempDir, name);
  return p;
}

enum { kMaxSteps = 4096 };
static float gCallbackLosses[kMaxSteps];
static int gCallbackCount, gStopAfter, gRaiseAfter;

static int recordLoss(const effrt_step_record *r, void *user) {
  (void)user;
  if (gCallbackCount < kMaxSteps)
    gCallbackLosses[gCallbackCount] = r->loss;
  ++gCallbackCount;
  if (gRaiseAfter && gCallbackCount == gRaiseAfter)
    raise(SIGINT);
  return gStopAfter && gCallbackCount >= gStopAfter;
}

static effrt_trainer *openTrainer(const char *model, const char *data,
                                  uint64_t seed, const char *resume,
                                  const char *save, const char *log) {
  effrt_trainer_options o;
  effrt_trainer_options_init(&o);
  o.effx_path = model;
  o.data_path = data;
  o.seed = seed;
  o.resume_path = resume;
  o.save_path = save;
  o.log_path = log;
  o.threads = 1;
  effrt_trainer *t = effrt_trainer_open(&o);
  EXPECT(t != NULL);
  return t;
}

static int testTrainer(const char *model, const char *data, int steps,
                       uint64_t seed, const char *refLog,
                       const char *refCkpt) {
  static float ref[kMaxSteps], got[kMaxSteps];
  const char *tmp = getenv("TMPDIR");
  snprintf(tempDir, sizeof tempDir, "%.900s/effrt-capi-trainer-%d",
           tmp && *tmp ? tmp : "/tmp", (int)getpid());
  if (steps < 4 || steps > kMaxSteps || mkdir(tempDir, 0700) != 0) {
    fprintf(stderr, "effrt-capi-test: bad STEPS or TMPDIR\n");
    return 2;
  }
  EXPECT(readLogLosses(refLog, ref, kMaxSteps) == steps);

  /* One run of STEPS steps: effrun's losses (callback, log, record) and
   * checkpoint, bit for bit. */
  effrt_trainer *t = openTrainer(model, data, seed, NULL,
                                 tempFile("full.safetensors"),
                                 tempFile("full.jsonl"));
  if (!t)
    return 1;
  EXPECT(effrt_trainer_global_step(t) == 0);
  effrt_step_record rec = {.struct_size = sizeof rec};
  EXPECT(effrt_trainer_last_record(t, &rec) != 0);
  EXPECT(strstr(effrt_last_error(), "no step has run yet") != NULL);
  effrt_run_result r = {.struct_size = sizeof r};
  gCallbackCount = 0;
  EXPECT(effrt_trainer_run(t, steps, recordLoss, NULL, &r) == 0);
  EXPECT(r.steps == steps && !r.stopped && r.signal == 0 && r.seconds >= 0);
  EXPECT(r.struct_size == sizeof r);
  EXPECT(gCallbackCount == steps && sameFloats(gCallbackLosses, ref, steps));
  EXPECT(effrt_trainer_save(t, NULL) == 0);
  EXPECT(sameFile(tempFile("full.safetensors"), refCkpt));
  EXPECT(readLogLosses(tempFile("full.jsonl"), got, kMaxSteps) == steps);
  EXPECT(sameFloats(got, ref, steps));
  EXPECT(effrt_trainer_last_record(t, &rec) == 0);
  EXPECT(rec.step == steps - 1 && memcmp(&rec.loss, &ref[steps - 1], 4) == 0);
  EXPECT(rec.allocated_bytes > 0 && rec.allocated_bytes ==
         effrt_session_allocated_bytes(effrt_trainer_session(t), 0, 0, 0));
  EXPECT(rec.has_loss_scale == 0);
  /* The trainer's session is borrowed: closing it does nothing. */
  effrt_session *s = effrt_trainer_session(t);
  EXPECT(effrt_session_step_counter(s) == steps);
  effrt_session_close(s);
  EXPECT(effrt_session_step_counter(effrt_trainer_session(t)) == steps);
  /* The data has no more rows (npz) for a huge run. */
  EXPECT(effrt_trainer_run(t, INT64_MAX, NULL, NULL, NULL) != 0);
  EXPECT(effrt_trainer_run(t, -1, NULL, NULL, NULL) != 0);
  EXPECT(strstr(effrt_last_error(), "negative") != NULL);
  effrt_trainer_close(t);

  /* k steps, save, resume, the rest one step at a time: the same. */
  int k = steps / 2;
  t = openTrainer(model, data, seed, NULL, NULL, tempFile("split.jsonl"));
  if (!t)
    return 1;
  EXPECT(effrt_trainer_run(t, k, NULL, NULL, NULL) == 0);
  EXPECT(effrt_trainer_save(t, NULL) != 0);
  EXPECT(strstr(effrt_last_error(), "no checkpoint path") != NULL);
  EXPECT(effrt_trainer_save(t, tempFile("half.safetensors")) == 0);
  effrt_trainer_close(t);
  t = openTrainer(model, data, seed, tempFile("half.safetensors"),
                  tempFile("split.safetensors"), tempFile("split.jsonl"));
  if (!t)
    return 1;
  EXPECT(effrt_trainer_global_step(t) == k);
  for (int i = k; i < steps; ++i) {
    EXPECT(effrt_trainer_step(t, &rec) == 0);
    EXPECT(rec.step == i && memcmp(&rec.loss, &ref[i], 4) == 0);
  }
  /* A record struct of an older caller gets only its fields. */
  struct {
    size_t struct_size;
    int64_t step;
  } small = {sizeof small, -1};
  EXPECT(effrt_trainer_last_record(t, (effrt_step_record *)&small) == 0);
  EXPECT(small.struct_size == sizeof small && small.step == steps - 1);
  rec.struct_size = 0;
  EXPECT(effrt_trainer_last_record(t, &rec) != 0);
  EXPECT(strstr(effrt_last_error(), "struct_size is not set") != NULL);
  EXPECT(effrt_trainer_save(t, NULL) == 0);
  effrt_trainer_close(t);
  EXPECT(sameFile(tempFile("split.safetensors"), refCkpt));
  EXPECT(readLogLosses(tempFile("split.jsonl"), got, kMaxSteps) == steps);
  EXPECT(sameFloats(got, ref, steps));

  /* Stop requests: from the callback, before a run, and by SIGINT with
   * handle_signals (the handler is the trainer's only while it is open). */
  t = openTrainer(model, data, seed, NULL, NULL, NULL);
  if (!t)
    return 1;
  gCallbackCount = 0;
  gStopAfter = 2;
  EXPECT(effrt_trainer_run(t, steps, recordLoss, NULL, &r) == 0);
  gStopAfter = 0;
  EXPECT(r.steps == 2 && r.stopped && r.signal == 0);
  effrt_trainer_request_stop(t);
  EXPECT(effrt_trainer_run(t, 1, NULL, NULL, &r) == 0);
  EXPECT(r.steps == 0 && r.stopped);
  EXPECT(effrt_trainer_run(t, 1, NULL, NULL, &r) == 0); /* consumed */
  EXPECT(r.steps == 1 && !r.stopped && effrt_trainer_global_step(t) == 3);
  effrt_trainer_close(t);

  effrt_trainer_options o;
  effrt_trainer_options_init(&o);
  o.effx_path = model;
  o.data_path = data;
  o.seed = seed;
  o.handle_signals = 1;
  struct sigaction before, now;
  EXPECT(sigaction(SIGINT, NULL, &before) == 0);
  t = effrt_trainer_open(&o);
  EXPECT(t != NULL);
  if (!t)
    return 1;
  gCallbackCount = 0;
  gRaiseAfter = 2;
  EXPECT(effrt_trainer_run(t, steps, recordLoss, NULL, &r) == 0);
  gRaiseAfter = 0;
  EXPECT(r.steps == 2 && r.stopped && r.signal == SIGINT);
  EXPECT(sameFloats(gCallbackLosses, ref, 2));
  effrt_trainer_close(t);
  EXPECT(sigaction(SIGINT, NULL, &now) == 0 &&
         now.sa_handler == before.sa_handler);

  /* Errors: one line naming the file or the field. */
  EXPECT(effrt_trainer_open(NULL) == NULL);
  EXPECT(strstr(effrt_last_error(), "options is NULL") != NULL);
  o.handle_signals = 0;
  o.struct_size = 8;
  EXPECT(effrt_trainer_open(&o) == NULL);
  EXPECT(strstr(effrt_last_error(), "call effrt_trainer_options_init") != NULL);
  o.struct_size = sizeof o + 8;
  EXPECT(effrt_trainer_open(&o) == NULL);
  EXPECT(strstr(effrt_last_error(), "newer effrt.h") != NULL);
  o.struct_size = sizeof o;
  o.data_path = "/nonexistent/data.npz";
  EXPECT(effrt_trainer_open(&o) == NULL);
  EXPECT(strstr(effrt_last_error(),
                "/nonexistent/data.npz: cannot open: No such file") != NULL);
  o.data_path = NULL;
  EXPECT(effrt_trainer_open(&o) == NULL);
  EXPECT(strstr(effrt_last_error(), "data_path is NULL") != NULL);
  o.data_path = data;
  o.save_path = "/nonexistent/dir/c.safetensors";
  EXPECT(effrt_trainer_open(&o) == NULL);
  EXPECT(strstr(effrt_last_error(), "c.safetensors: cannot create") != NULL);
  o.save_path = NULL;
  o.resume_path = "/nonexistent.safetensors";
  EXPECT(effrt_trainer_open(&o) == NULL);
  EXPECT(strstr(effrt_last_error(), "/nonexistent.safetensors") != NULL);
  EXPECT(effrt_trainer_step(NULL, NULL) != 0);
  EXPECT(strstr(effrt_last_error(), "trainer is NULL") != NULL);
  EXPECT(effrt_trainer_run(NULL, 1, NULL, NULL, NULL) != 0);
  EXPECT(effrt_trainer_global_step(NULL) == -1);
  EXPECT(effrt_trainer_session(NULL) == NULL);
  effrt_trainer_request_stop(NULL);
  effrt_trainer_close(NULL);

  for (size_t i = 0; i < sizeof kTempFiles / sizeof *kTempFiles; ++i)
    remove(tempFile(kTempFiles[i]));
  EXPECT(rmdir(tempDir) == 0);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 8 && strcmp(argv[1], "--trainer") == 0)
    return testTrainer(argv[2], argv[3], atoi(argv[4]),
                       strtoull(argv[5], NULL, 10), argv[6], argv[7]);
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: effrt-capi-test LINEAR.effx [FORWARD.effx]\n"
                    "       effrt-capi-test --trainer MODEL.effx DATA STEPS "
                    "SEED RUN.jsonl RUN.safetensors\n");
    return 2;
  }
  const char *path = argv[1];
  EXPECT(effrt_api_version() == EFFRT_C_API_VERSION);

  EXPECT(effrt_session_open("/nonexistent/model.effx") == NULL);
  EXPECT(strstr(effrt_last_error(), "/nonexistent/model.effx: cannot open") != NULL);
  EXPECT(effrt_session_step(NULL, NULL) != 0);
  EXPECT(strstr(effrt_last_error(), "session is NULL") != NULL);
  EXPECT(effrt_session_step_counter(NULL) == -1);

  effrt_session *s = effrt_session_open(path);
  EXPECT(s != NULL);
  if (!s) {
    printf("%d passed, %d failed\n", passed, failed);
    return 1;
  }
  uint64_t st = 0, ar = 0, io = 0;
  EXPECT(effrt_session_allocated_bytes(s, &st, &ar, &io) == 768);
  EXPECT(st == 320 && ar == 256 && io == 192);
  EXPECT(strstr(effrt_session_manifest(s), "\"linear\"") != NULL);
  EXPECT(effrt_set_num_threads(1) == 0);

  float x[12], y[8];
  for (int i = 0; i < 12; ++i)
    x[i] = (float)(i % 5) / 4.0f - 0.5f;
  for (int i = 0; i < 8; ++i)
    y[i] = (float)(i % 3) - 1.0f;
  EXPECT(effrt_session_step(s, NULL) != 0);
  EXPECT(strstr(effrt_last_error(), "was not set") != NULL);
  EXPECT(effrt_session_set_input(s, "x", x, sizeof x - 4) != 0);
  EXPECT(strstr(effrt_last_error(), "takes 48 bytes") != NULL);
  EXPECT(effrt_session_set_input(s, "nope", x, sizeof x) != 0);
  EXPECT(effrt_session_set_input(s, "x", x, sizeof x) == 0);
  EXPECT(effrt_session_set_input(s, "y", y, sizeof y) == 0);

  float losses[6];
  for (int i = 0; i < 3; ++i)
    EXPECT(effrt_session_step(s, &losses[i]) == 0);
  EXPECT(losses[2] < losses[0]);
  EXPECT(effrt_session_step_counter(s) == 3);

  char ckpt[4096];
  const char *tmp = getenv("TMPDIR");
  snprintf(ckpt, sizeof ckpt, "%s/effrt-capi-test-%d.safetensors",
           tmp && *tmp ? tmp : "/tmp", (int)getpid());
  EXPECT(effrt_session_save(s, ckpt) == 0);
  for (int i = 3; i < 6; ++i)
    EXPECT(effrt_session_step(s, &losses[i]) == 0);
  float w[6], w2[6];
  EXPECT(effrt_session_read_state(s, "w", w, sizeof w) == 0);
  EXPECT(effrt_session_read_state(s, "w", w, 3) != 0);

  effrt_session *r = effrt_session_open(path);
  EXPECT(r != NULL);
  EXPECT(effrt_session_load(r, ckpt) == 0);
  EXPECT(effrt_session_step_counter(r) == 3);
  EXPECT(effrt_session_set_input(r, "x", x, sizeof x) == 0);
  EXPECT(effrt_session_set_input(r, "y", y, sizeof y) == 0);
  for (int i = 3; i < 6; ++i) {
    float loss = 0;
    EXPECT(effrt_session_step(r, &loss) == 0);
    EXPECT(memcmp(&loss, &losses[i], sizeof loss) == 0);
  }
  EXPECT(effrt_session_read_state(r, "w", w2, sizeof w2) == 0);
  EXPECT(memcmp(w, w2, sizeof w) == 0);
  float b[2] = {1.0f, 2.0f}, b2[2];
  EXPECT(effrt_session_write_state(r, "b", b, sizeof b) == 0);
  EXPECT(effrt_session_read_state(r, "b", b2, sizeof b2) == 0);
  EXPECT(b2[1] == 2.0f);
  EXPECT(effrt_session_load(r, "/nonexistent.safetensors") != 0);
  effrt_session_close(r);
  effrt_session_close(s);
  effrt_session_close(NULL);
  remove(ckpt);
  if (argc == 3)
    testForward(argv[2], path);

  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
