/*===- CApiTest.c - The C interface, from C, through libeffrt.so ---------===//
 *
 *   effrt-capi-test LINEAR.effx [FORWARD.effx]
 *
 * LINEAR.effx is the linear test model (effrt-make-test-model linear).
 * FORWARD.effx is test/Runtime/Inputs/make_forward_model.py's model compiled
 * with `effc --mode forward`: y = x + c, g = x > c, n = argmax(x, 1).
 * Prints "N passed, M failed"; exit status 1 on any failure.
 *
 *===----------------------------------------------------------------------===*/

#include "effrt/effrt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: effrt-capi-test LINEAR.effx [FORWARD.effx]\n");
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
