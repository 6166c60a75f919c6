/*===- effrt.h - The effopt runtime's C interface ----------------*- C -*-===//
 *
 * A plain C ABI over effrt::Session and effrt::Trainer for other languages (Python loads
 * libeffrt.so with ctypes, RTLD_GLOBAL so that compiled code finds
 * effrt_sgemm). Every function catches every exception: a function that
 * fails returns NULL or a non-zero status, and effrt_last_error() gives the
 * one-line message (per thread) until the next failing call.
 *
 *   effrt_session *s = effrt_session_open("mlp.effx");
 *   if (!s) { fprintf(stderr, "%s\n", effrt_last_error()); return 1; }
 *   effrt_session_set_input(s, "x", x, sizeof x);
 *   effrt_session_set_input(s, "y", y, sizeof y);
 *   float loss;
 *   if (effrt_session_step(s, &loss) != 0) ...
 *   effrt_session_save(s, "ckpt.safetensors");
 *   effrt_session_close(s);
 *
 * A forward function (effc --mode forward) runs with effrt_session_forward
 * instead of effrt_session_step; effrt_session_get_output then copies each
 * graph output listed in the manifest's "outputs".
 *
 * A training run (the loop effrun runs: data, log, checkpoints, signals)
 * is an effrt_trainer:
 *
 *   effrt_trainer_options o;
 *   effrt_trainer_options_init(&o);
 *   o.effx_path = "mlp.effx"; o.data_path = "mlp.npz"; o.log_path = "loss.jsonl";
 *   effrt_trainer *t = effrt_trainer_open(&o);
 *   effrt_run_result r = {.struct_size = sizeof r};
 *   if (!t || effrt_trainer_run(t, 100, NULL, NULL, &r) != 0) ...
 *   effrt_trainer_save(t, "mlp.safetensors");
 *   effrt_trainer_close(t);
 *
 * A session or trainer is not thread-safe: use one from one thread at a
 * time (effrt_trainer_request_stop excepted).
 *
 *===----------------------------------------------------------------------===*/

#ifndef EFFRT_EFFRT_H
#define EFFRT_EFFRT_H

#include <stddef.h>
#include <stdint.h>

#include "effrt/Kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The C ABI's version; grows when functions are added. */
#define EFFRT_C_API_VERSION 3
int effrt_api_version(void);

typedef struct effrt_session effrt_session;

/* Opens an .effx, allocates its regions and loads its code. NULL on error. */
effrt_session *effrt_session_open(const char *effx_path);
/* Frees the session (NULL is allowed). */
void effrt_session_close(effrt_session *session);

/* Copies one batch of input `name`: exactly the input's bytes (dtype and
 * shape as in the manifest, C order). 0 on success. */
int effrt_session_set_input(effrt_session *session, const char *name,
                            const void *data, size_t nbytes);
/* Runs one training step; stores its loss in *loss (may be NULL). 0 on
 * success. */
int effrt_session_step(effrt_session *session, float *loss);

/* Since version 2. Runs a forward (inference) function — an .effx compiled
 * with `effc --mode forward`, manifest "kind": "forward" — on the inputs
 * set; the state is not changed and no step is counted. 0 on success; a
 * training step fails (use effrt_session_step), as does step() on a forward
 * function. */
int effrt_session_forward(effrt_session *session);
/* Since version 2. Copies graph output `name` of the last forward run:
 * exactly the output's bytes (dtype and shape as in the manifest's
 * "outputs", C order; bool is one byte per element). 0 on success. */
int effrt_session_get_output(const effrt_session *session, const char *name,
                             void *data, size_t nbytes);

/* Writes / restores a safetensors checkpoint (atomic write; a load checks
 * everything before it changes anything). 0 on success. */
int effrt_session_save(effrt_session *session, const char *path);
int effrt_session_load(effrt_session *session, const char *path);

/* Writes the weights with the LoRA adapters merged (W + alpha/r * B A under
 * the original names, no adapters or optimizer state) as safetensors, for a
 * model compiled with effc --lora. 0 on success. */
int effrt_session_save_merged_lora(effrt_session *session, const char *path);

/* Steps taken since the initial state, counting those before a loaded
 * checkpoint; -1 if session is NULL. */
int64_t effrt_session_step_counter(const effrt_session *session);

/* Bytes allocated for the state, arena and io regions (any pointer may be
 * NULL); returns their sum, or 0 if session is NULL. */
uint64_t effrt_session_allocated_bytes(const effrt_session *session,
                                       uint64_t *state, uint64_t *arena,
                                       uint64_t *io);

/* The manifest JSON (valid while the session is open). */
const char *effrt_session_manifest(const effrt_session *session);

/* Copies state entry `name` (nbytes must be its size) out of / into the
 * session. 0 on success. */
int effrt_session_read_state(const effrt_session *session, const char *name,
                             void *data, size_t nbytes);
int effrt_session_write_state(effrt_session *session, const char *name,
                              const void *data, size_t nbytes);

/*===----------------------------------------------------------------------===
 * Training runs (since version 3)
 *
 * Structs the caller fills or receives start with struct_size, the size the
 * caller (or, for records the library hands out, the library) was compiled
 * with: fields are only ever added at the end, so a newer library accepts
 * older callers (missing fields take their defaults) and a caller can tell
 * which fields a record holds.
 *===----------------------------------------------------------------------===*/

typedef struct effrt_trainer effrt_trainer;

typedef struct effrt_trainer_options {
  size_t struct_size;       /* sizeof(effrt_trainer_options) */
  const char *effx_path;    /* the compiled model; required */
  const char *data_path;    /* .npz (arrays by rows) or .bin (uint16 tokens) */
  const char *resume_path;  /* a checkpoint to continue from; NULL: none */
  const char *save_path;    /* effrt_trainer_save's default path, checked
                               writable at open; NULL: none */
  const char *log_path;     /* one JSON object per step; NULL: none. Truncated,
                               or appended to when resuming */
  uint64_t seed;            /* seed of the token windows (.bin data) */
  int32_t threads;          /* 0: OMP_NUM_THREADS, else OPENBLAS_NUM_THREADS,
                               else every hardware thread */
  int32_t progress;         /* non-zero: progress on stderr while running */
  int32_t handle_signals;   /* non-zero: while the trainer is open, SIGINT and
                               SIGTERM stop a run after its step instead of
                               killing the process */
} effrt_trainer_options;

/* Zeroes *options and sets struct_size. */
void effrt_trainer_options_init(effrt_trainer_options *options);

/* What one step did: the fields of a log line. */
typedef struct effrt_step_record {
  size_t struct_size;       /* sizeof(effrt_step_record) */
  int64_t step;             /* global step, counting from 0 */
  float loss;               /* the forward pass's loss, before the update */
  double time_ms;           /* wall time, including copying the batch */
  double samples_per_s;
  uint64_t rss_bytes;       /* resident memory of the process after it */
  uint64_t allocated_bytes; /* state + arena + io regions */
  int32_t has_loss_scale;   /* the step is compiled with loss scaling: */
  int32_t step_skipped;     /*   its update was skipped (inf/NaN gradients) */
  float loss_scale;         /*   the scale after the step */
  int64_t skipped_steps;    /*   skipped updates so far */
} effrt_step_record;

typedef struct effrt_run_result {
  size_t struct_size;       /* sizeof(effrt_run_result) */
  int64_t steps;            /* steps taken */
  double seconds;           /* wall time of the run */
  int32_t stopped;          /* ended early by a stop request */
  int32_t signal;           /* the signal that asked for it (SIGINT, SIGTERM),
                               else 0 */
} effrt_run_result;

/* Called after each step of effrt_trainer_run with the library's record
 * (valid during the call). A non-zero return stops the run after this
 * step. */
typedef int (*effrt_step_callback)(const effrt_step_record *record,
                                   void *user_data);

/* Opens the model, the data (checked against the model's inputs), the
 * checkpoint to resume, and checks that save_path can be written. NULL on
 * error. */
effrt_trainer *effrt_trainer_open(const effrt_trainer_options *options);
/* Frees the trainer and its session (NULL is allowed); restores the signal
 * handlers if it took them. */
void effrt_trainer_close(effrt_trainer *trainer);

/* Runs `steps` steps (checking first that the data has them), calling
 * `callback` (may be NULL) after each. A stop request ends the run after
 * the step in progress, and is consumed by it. Fills *result (may be NULL;
 * set its struct_size). 0 on success, including a stopped run. */
int effrt_trainer_run(effrt_trainer *trainer, int64_t steps,
                      effrt_step_callback callback, void *user_data,
                      effrt_run_result *result);
/* Runs one step and fills *record (may be NULL; set its struct_size). 0 on
 * success. */
int effrt_trainer_step(effrt_trainer *trainer, effrt_step_record *record);
/* The record of the last step. 0 on success; non-zero before any step. */
int effrt_trainer_last_record(const effrt_trainer *trainer,
                              effrt_step_record *record);
/* Asks the current or next run to end after its step. Safe from another
 * thread. */
void effrt_trainer_request_stop(effrt_trainer *trainer);
/* Writes a checkpoint atomically to `path`, or to save_path when NULL. 0 on
 * success. */
int effrt_trainer_save(effrt_trainer *trainer, const char *path);
/* The next step's global step; -1 if trainer is NULL. */
int64_t effrt_trainer_global_step(const effrt_trainer *trainer);
/* The trainer's session, for the effrt_session_* functions (state, the
 * manifest); owned by the trainer: effrt_session_close ignores it. */
effrt_session *effrt_trainer_session(effrt_trainer *trainer);

/* Sets the number of BLAS threads for the process. 0 on success. */
int effrt_set_num_threads(int threads);

/* The message of this thread's last failure ("" if none). */
const char *effrt_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EFFRT_EFFRT_H */
