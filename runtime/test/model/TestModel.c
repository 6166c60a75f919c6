/*===- TestModel.c - Hand-written "compiled" steps for runtime tests ------===//
 *
 * Stands in for the code section of an .effx in the runtime's own tests, so
 * that code loading, sessions, checkpoints and effrun are tested without the
 * compiler. Like compiled code, it is a shared object whose entry points
 * take the three regions as memrefs and import effrt_sgemm and libm from the
 * process that loads it. The layouts here must match TestModels.cpp.
 *
 * - linear (entry _mlir_ciface_effx_step): pred = x w + b, loss = mean((pred
 *   - y)^2), SGD with momentum 0.9 (PyTorch's), lr 0.1.
 * - bigram (entry effx_bigram_step): logits = table[token], mean
 *   cross-entropy against the next token, plain SGD, lr 0.5.
 * - dot (entry effx_dot_step): loss = sum(x w), w -= 0.125 x^T 1, the step
 *   counter counts; only matrix products, so model/TestCudaModel.c computes
 *   the same on a GPU (its checkpoints resume here and back).
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <stdint.h>

typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
} MemRef1D;

void effrt_sgemm(int32_t transA, int32_t transB, int64_t M, int64_t N,
                 int64_t K, float alpha, const float *A, int64_t lda,
                 const float *B, int64_t ldb, float beta, float *C,
                 int64_t ldc);
void effrt_sgemm_batched(int32_t transA, int32_t transB, int64_t batch,
                         int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t lda, int64_t strideA,
                         const float *B, int64_t ldb, int64_t strideB,
                         float beta, float *C, int64_t ldc, int64_t strideC);

#define AT(region, type, offset)                                               \
  ((type *)((char *)(region)->aligned + (offset)))

/* linear: B = 4 rows, D = 3 features, O = 2 outputs. */
enum { LB = 4, LD = 3, LO = 2 };

void _mlir_ciface_effx_step(MemRef1D *state, MemRef1D *arena, MemRef1D *io) {
  const float *x = AT(io, float, 0);   /* [4,3] */
  const float *y = AT(io, float, 64);  /* [4,2] */
  float *loss = AT(io, float, 128);
  float *w = AT(state, float, 0);      /* [3,2] */
  float *b = AT(state, float, 64);     /* [2] */
  float *mw = AT(state, float, 128);   /* momentum of w */
  float *mb = AT(state, float, 192);   /* momentum of b */
  int64_t *step = AT(state, int64_t, 256);
  float *pred = AT(arena, float, 0);   /* [4,2] */
  float *dpred = AT(arena, float, 64); /* [4,2] */
  float *dw = AT(arena, float, 128);   /* [3,2] */
  float *db = AT(arena, float, 192);   /* [2] */

  /* pred = x w (through the batched call, one matrix), then + b. */
  effrt_sgemm_batched(0, 0, 1, LB, LO, LD, 1.0f, x, LD, LB * LD, w, LO,
                      LD * LO, 0.0f, pred, LO, LB * LO);
  float sum = 0;
  for (int i = 0; i < LB; ++i)
    for (int j = 0; j < LO; ++j) {
      float d = pred[i * LO + j] + b[j] - y[i * LO + j];
      sum += d * d;
      dpred[i * LO + j] = 2.0f * d / (LB * LO);
    }
  *loss = sum / (LB * LO);
  /* dw = x^T dpred; db = column sums of dpred. */
  effrt_sgemm(1, 0, LD, LO, LB, 1.0f, x, LD, dpred, LO, 0.0f, dw, LO);
  for (int j = 0; j < LO; ++j) {
    db[j] = 0;
    for (int i = 0; i < LB; ++i)
      db[j] += dpred[i * LO + j];
  }
  const float lr = 0.1f, momentum = 0.9f;
  for (int k = 0; k < LD * LO; ++k) {
    mw[k] = *step == 0 ? dw[k] : momentum * mw[k] + dw[k];
    w[k] -= lr * mw[k];
  }
  for (int j = 0; j < LO; ++j) {
    mb[j] = *step == 0 ? db[j] : momentum * mb[j] + db[j];
    b[j] -= lr * mb[j];
  }
  *step += 1;
}

/* bigram: B = 2 windows of T = 4 tokens, vocabulary V = 16. */
enum { GB = 2, GT = 4, GV = 16 };

void effx_bigram_step(MemRef1D *state, MemRef1D *arena, MemRef1D *io) {
  const int64_t *tokens = AT(io, int64_t, 0);   /* [2,4] */
  const int64_t *targets = AT(io, int64_t, 64); /* [2,4] */
  float *loss = AT(io, float, 128);
  float *table = AT(state, float, 0); /* [16,16] */
  int64_t *step = AT(state, int64_t, 1024);
  float *grad = AT(arena, float, 0);   /* [16,16] */
  float *probs = AT(arena, float, 1024); /* [16] */

  for (int k = 0; k < GV * GV; ++k)
    grad[k] = 0;
  const int n = GB * GT;
  float total = 0;
  for (int i = 0; i < n; ++i) {
    int64_t t = tokens[i] % GV, u = targets[i] % GV;
    const float *row = table + t * GV;
    float max = row[0];
    for (int v = 1; v < GV; ++v)
      max = row[v] > max ? row[v] : max;
    float z = 0;
    for (int v = 0; v < GV; ++v)
      z += probs[v] = expf(row[v] - max);
    for (int v = 0; v < GV; ++v)
      probs[v] /= z;
    total += -logf(probs[u]);
    for (int v = 0; v < GV; ++v)
      grad[t * GV + v] += (probs[v] - (v == u ? 1.0f : 0.0f)) / n;
  }
  *loss = total / n;
  const float lr = 0.5f;
  for (int k = 0; k < GV * GV; ++k)
    table[k] -= lr * grad[k];
  *step += 1;
}

/* dot: B = 4 rows, D = 3 features; ones is a buffer of four 1s. */
void effx_dot_step(MemRef1D *state, MemRef1D *arena, MemRef1D *io) {
  float *w = AT(state, float, 0), *ones = AT(state, float, 64);
  int64_t *counter = AT(state, int64_t, 128);
  float *t = AT(arena, float, 0);
  const float *x = AT(io, float, 0);
  float *loss = AT(io, float, 64);
  effrt_sgemm(0, 0, 4, 1, 3, 1.0f, x, 3, w, 1, 0.0f, t, 1);
  effrt_sgemm(0, 0, 1, 1, 4, 1.0f, ones, 4, t, 1, 0.0f, loss, 1);
  effrt_sgemm(1, 0, 3, 1, 4, -0.125f, x, 3, ones, 1, 1.0f, w, 1);
  ++*counter;
}
