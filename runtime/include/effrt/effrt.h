/*===- effrt.h - The effopt runtime's C interface ----------------*- C -*-===//
 *
 * A plain C ABI over effrt::Session for other languages (Python loads
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
 * A session is not thread-safe: use one from one thread at a time.
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
#define EFFRT_C_API_VERSION 2
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

/* Sets the number of BLAS threads for the process. 0 on success. */
int effrt_set_num_threads(int threads);

/* The message of this thread's last failure ("" if none). */
const char *effrt_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EFFRT_EFFRT_H */
