//===- EmulatedCuda.cpp - CPU stand-ins for the cuda step's library calls -===//
//
// A step compiled with effc --target cuda-emulated is the cuda target's step
// with its kernels emulated thread by thread on the CPU (eff-gpu-emulate-
// launches); its calls to the CUDA runtime's libraries (cuBLASLt GEMMs, the
// attention kernels, cuDNN convolutions, NCCL collectives) are renamed to
// effrt_emulated_cuda_* (eff-gpu-emulated-library-calls) and land here,
// with the arguments the device calls take (effrt/Kernels.h) on host
// memory. Each computes what the library does, in f32 from operands of the
// call's type code (0 f32, 1 f16, 2 bf16), rounding each result once to its
// type: not the library's summation order, so a check of emulated steps
// against PyTorch uses the GPU suite's tolerances. Slow on purpose: plain
// loops, one thread; what is being checked is the compiler's own kernels.
//
//===----------------------------------------------------------------------===//

#include "../cuda/Attention.h"

#include "effrt/Error.h"
#include "effrt/Kernels.h"
#include "effrt/Tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

using effrt::fail;

/// Fails as effrt_cuda_attention_* do for what the GPU's kernels do not
/// take (head sizes, row strides, alignment), with their words: an emulated
/// step runs only attention the device runs.
void refuseWhatTheKernelsRefuse(
    const effrt::cuda::AttentionProblem &p,
    std::initializer_list<effrt::cuda::AttentionOperand> operands) {
  if (std::string why = effrt::cuda::checkAttention(p, operands); !why.empty())
    fail("attention: ", why);
}

/// Element `i` of a buffer of type code `type`, as f32.
float load(const void *data, int64_t i, int32_t type) {
  switch (type) {
  case 0:
    return static_cast<const float *>(data)[i];
  case 1:
    return effrt::halfToFloat(static_cast<const uint16_t *>(data)[i]);
  case 2:
    return effrt::bfloat16ToFloat(static_cast<const uint16_t *>(data)[i]);
  }
  fail("emulated cuda call: element type code ", type,
       " (expected 0 f32, 1 f16, 2 bf16)");
}

/// Stores `value` rounded to type code `type` at element `i`.
void store(void *data, int64_t i, float value, int32_t type) {
  switch (type) {
  case 0:
    static_cast<float *>(data)[i] = value;
    return;
  case 1:
    static_cast<uint16_t *>(data)[i] = effrt::floatToHalf(value);
    return;
  case 2:
    static_cast<uint16_t *>(data)[i] = effrt::floatToBfloat16(value);
    return;
  }
  fail("emulated cuda call: element type code ", type,
       " (expected 0 f32, 1 f16, 2 bf16)");
}

int64_t elementBytes(int32_t type) { return type == 0 ? 4 : 2; }

const void *advance(const void *data, int64_t elements, int32_t type) {
  return static_cast<const char *>(data) + elements * elementBytes(type);
}
void *advance(void *data, int64_t elements, int32_t type) {
  return static_cast<char *>(data) + elements * elementBytes(type);
}

/// Row-major C (M x N) = alpha op(A) op(B) [+ beta C] [+ bias per column],
/// each element a sum over k in order in f32, rounded once to cType. Plain
/// loops, not the BLAS: the bits must not depend on the operands' layout
/// (a recomputed product may read its operands transposed or strided, and
/// remat is checked bit for bit).
void gemm(int32_t transA, int32_t transB, int64_t M, int64_t N, int64_t K,
          float alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
          float beta, void *C, int64_t ldc, const void *bias, int32_t abType,
          int32_t cType) {
  if (M < 0 || N < 0 || K < 0)
    fail("emulated cuda gemm: a product of ", M, "x", K, " by ", K, "x", N);
  if (M == 0 || N == 0)
    return;
  // op(A) as M x K and op(B) as N x K, both row-major f32.
  std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(N * K));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      a[i * K + k] = load(A, transA ? k * lda + i : i * lda + k, abType);
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k)
      b[j * K + k] = load(B, transB ? j * ldb + k : k * ldb + j, abType);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < K; ++k)
        sum += a[i * K + k] * b[j * K + k];
      float value = alpha * sum;
      // cuBLASLt: beta C in f32 before the one rounding (C not read when
      // beta is 0); the bias epilogue adds to the f32 accumulator.
      if (beta != 0.0f)
        value += beta * load(C, i * ldc + j, cType);
      if (bias)
        value += load(bias, j, cType);
      store(C, i * ldc + j, value, cType);
    }
}

/// One [T, D] slice of an attention operand with row stride `rowStride`.
struct Slice {
  const void *data;
  int64_t rowStride;
  int32_t type;
  float at(int64_t row, int64_t d) const {
    return load(data, row * rowStride + d, type);
  }
};

/// Scores of query row i against every key: scale q_i . k_j, -inf where the
/// causal mask hides j > i.
void scores(const Slice &q, const Slice &k, int64_t i, int64_t Tk, int64_t D,
            float scale, bool causal, std::vector<float> &s) {
  for (int64_t j = 0; j < Tk; ++j) {
    if (causal && j > i) {
      s[j] = -std::numeric_limits<float>::infinity();
      continue;
    }
    float dot = 0.0f;
    for (int64_t d = 0; d < D; ++d)
      dot += q.at(i, d) * k.at(j, d);
    s[j] = scale * dot;
  }
}

} // namespace

extern "C" {

void effrt_emulated_cuda_gemm(int32_t transA, int32_t transB, int64_t M,
                              int64_t N, int64_t K, float alpha, const void *A,
                              int64_t lda, const void *B, int64_t ldb,
                              float beta, void *C, int64_t ldc, int32_t abType,
                              int32_t cType) {
  gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr,
       abType, cType);
}

void effrt_emulated_cuda_gemm_batched(
    int32_t transA, int32_t transB, int64_t batch, int64_t M, int64_t N,
    int64_t K, float alpha, const void *A, int64_t lda, int64_t strideA,
    const void *B, int64_t ldb, int64_t strideB, float beta, void *C,
    int64_t ldc, int64_t strideC, int32_t abType, int32_t cType) {
  // strideC == 0: every batch adds into the one C (a batch_reduce_matmul,
  // an im2col convolution's weight gradient), beta applied once, as
  // effrt_cuda_gemm_batched runs it.
  for (int64_t i = 0; i < batch; ++i)
    gemm(transA, transB, M, N, K, alpha, advance(A, i * strideA, abType), lda,
         advance(B, i * strideB, abType), ldb,
         strideC == 0 && i > 0 ? 1.0f : beta, advance(C, i * strideC, cType),
         ldc, nullptr, abType, cType);
}

void effrt_emulated_cuda_gemm_bias(int32_t transA, int32_t transB, int64_t M,
                                   int64_t N, int64_t K, float alpha,
                                   const void *A, int64_t lda, const void *B,
                                   int64_t ldb, void *C, int64_t ldc,
                                   const void *bias, int32_t abType,
                                   int32_t cType) {
  if (!bias)
    fail("emulated cuda gemm: a bias epilogue without a bias");
  gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, 0.0f, C, ldc, bias,
       abType, cType);
}

void effrt_emulated_cuda_attention_fwd_strided(
    const void *q, int64_t qB1, int64_t qB2, int64_t qT, const void *k,
    int64_t kB1, int64_t kB2, int64_t kT, const void *v, int64_t vB1,
    int64_t vB2, int64_t vT, void *o, int64_t oB1, int64_t oB2, int64_t oT,
    float *lse, int64_t B1, int64_t B2, int64_t Tq, int64_t Tk, int64_t D,
    int64_t Dv, float scale, int32_t causal, int32_t type) {
  refuseWhatTheKernelsRefuse(
      effrt::cuda::attentionProblem(B1, B2, Tq, Tk, D, Dv, scale, causal, type),
      {{q, {qB1, qB2, qT}, false},
       {k, {kB1, kB2, kT}, false},
       {v, {vB1, vB2, vT}, false},
       {o, {oB1, oB2, oT}, true}});
  std::vector<float> s(static_cast<size_t>(Tk)), acc(static_cast<size_t>(Dv));
  for (int64_t b1 = 0; b1 < B1; ++b1)
    for (int64_t b2 = 0; b2 < B2; ++b2) {
      Slice Q{advance(q, b1 * qB1 + b2 * qB2, type), qT, type};
      Slice K{advance(k, b1 * kB1 + b2 * kB2, type), kT, type};
      Slice V{advance(v, b1 * vB1 + b2 * vB2, type), vT, type};
      void *O = advance(o, b1 * oB1 + b2 * oB2, type);
      for (int64_t i = 0; i < Tq; ++i) {
        scores(Q, K, i, Tk, D, scale, causal != 0, s);
        float m = -std::numeric_limits<float>::infinity();
        for (float x : s)
          m = std::max(m, x);
        float l = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j = 0; j < Tk; ++j) {
          float p = std::exp(s[j] - m);
          l += p;
          for (int64_t d = 0; d < Dv; ++d)
            acc[d] += p * V.at(j, d);
        }
        for (int64_t d = 0; d < Dv; ++d)
          store(O, i * oT + d, acc[d] / l, type);
        lse[(b1 * B2 + b2) * Tq + i] = m + std::log(l);
      }
    }
}

void effrt_emulated_cuda_attention_bwd_strided(
    const void *q, int64_t qB1, int64_t qB2, int64_t qT, const void *k,
    int64_t kB1, int64_t kB2, int64_t kT, const void *v, int64_t vB1,
    int64_t vB2, int64_t vT, const void *o, int64_t oB1, int64_t oB2,
    int64_t oT, const float *lse, const void *dout, int64_t dB1, int64_t dB2,
    int64_t dT, void *dq, int64_t dqB1, int64_t dqB2, int64_t dqT, void *dk,
    int64_t dkB1, int64_t dkB2, int64_t dkT, void *dv, int64_t dvB1,
    int64_t dvB2, int64_t dvT, float *workspace, int64_t B1, int64_t B2,
    int64_t Tq, int64_t Tk, int64_t D, int64_t Dv, float scale, int32_t causal,
    int32_t type) {
  refuseWhatTheKernelsRefuse(
      effrt::cuda::attentionProblem(B1, B2, Tq, Tk, D, Dv, scale, causal, type),
      {{q, {qB1, qB2, qT}, false},
       {k, {kB1, kB2, kT}, false},
       {v, {vB1, vB2, vT}, false},
       {dout, {dB1, dB2, dT}, false},
       {o, {oB1, oB2, oT}, false},
       {dq, {dqB1, dqB2, dqT}, true},
       {dk, {dkB1, dkB2, dkT}, true},
       {dv, {dvB1, dvB2, dvT}, true}});
  std::vector<float> s(static_cast<size_t>(Tk));
  std::vector<float> gq(static_cast<size_t>(Tq * D)),
      gk(static_cast<size_t>(Tk * D)), gv(static_cast<size_t>(Tk * Dv));
  for (int64_t b1 = 0; b1 < B1; ++b1)
    for (int64_t b2 = 0; b2 < B2; ++b2) {
      Slice Q{advance(q, b1 * qB1 + b2 * qB2, type), qT, type};
      Slice K{advance(k, b1 * kB1 + b2 * kB2, type), kT, type};
      Slice V{advance(v, b1 * vB1 + b2 * vB2, type), vT, type};
      Slice O{advance(o, b1 * oB1 + b2 * oB2, type), oT, type};
      Slice dO{advance(dout, b1 * dB1 + b2 * dB2, type), dT, type};
      const float *rowLse = lse + (b1 * B2 + b2) * Tq;
      std::fill(gq.begin(), gq.end(), 0.0f);
      std::fill(gk.begin(), gk.end(), 0.0f);
      std::fill(gv.begin(), gv.end(), 0.0f);
      for (int64_t i = 0; i < Tq; ++i) {
        // rowsum(dO * O), which the GPU kernel keeps in `workspace`.
        float rowDot = 0.0f;
        for (int64_t d = 0; d < Dv; ++d)
          rowDot += dO.at(i, d) * O.at(i, d);
        workspace[(b1 * B2 + b2) * Tq + i] = rowDot;
        scores(Q, K, i, Tk, D, scale, causal != 0, s);
        for (int64_t j = 0; j < Tk; ++j) {
          if (causal && j > i)
            continue;
          float p = std::exp(s[j] - rowLse[i]);
          float dp = 0.0f;
          for (int64_t d = 0; d < Dv; ++d) {
            gv[j * Dv + d] += p * dO.at(i, d);
            dp += dO.at(i, d) * V.at(j, d);
          }
          float ds = p * (dp - rowDot) * scale;
          for (int64_t d = 0; d < D; ++d) {
            gq[i * D + d] += ds * K.at(j, d);
            gk[j * D + d] += ds * Q.at(i, d);
          }
        }
      }
      void *dQ = advance(dq, b1 * dqB1 + b2 * dqB2, type);
      void *dK = advance(dk, b1 * dkB1 + b2 * dkB2, type);
      void *dV = advance(dv, b1 * dvB1 + b2 * dvB2, type);
      for (int64_t i = 0; i < Tq; ++i)
        for (int64_t d = 0; d < D; ++d)
          store(dQ, i * dqT + d, gq[i * D + d], type);
      for (int64_t j = 0; j < Tk; ++j) {
        for (int64_t d = 0; d < D; ++d)
          store(dK, j * dkT + d, gk[j * D + d], type);
        for (int64_t d = 0; d < Dv; ++d)
          store(dV, j * dvT + d, gv[j * Dv + d], type);
      }
    }
}

void effrt_emulated_cuda_attention_fwd(const void *q, const void *k,
                                       const void *v, void *o, float *lse,
                                       int64_t B1, int64_t B2, int64_t Tq,
                                       int64_t Tk, int64_t D, int64_t Dv,
                                       float scale, int32_t causal,
                                       int32_t type) {
  effrt_emulated_cuda_attention_fwd_strided(
      q, B2 * Tq * D, Tq * D, D, k, B2 * Tk * D, Tk * D, D, v, B2 * Tk * Dv,
      Tk * Dv, Dv, o, B2 * Tq * Dv, Tq * Dv, Dv, lse, B1, B2, Tq, Tk, D, Dv,
      scale, causal, type);
}

void effrt_emulated_cuda_attention_bwd(
    const void *q, const void *k, const void *v, const void *o,
    const float *lse, const void *dout, void *dq, void *dk, void *dv,
    float *workspace, int64_t B1, int64_t B2, int64_t Tq, int64_t Tk,
    int64_t D, int64_t Dv, float scale, int32_t causal, int32_t type) {
  effrt_emulated_cuda_attention_bwd_strided(
      q, B2 * Tq * D, Tq * D, D, k, B2 * Tk * D, Tk * D, D, v, B2 * Tk * Dv,
      Tk * Dv, Dv, o, B2 * Tq * Dv, Tq * Dv, Dv, lse, dout, B2 * Tq * Dv,
      Tq * Dv, Dv, dq, B2 * Tq * D, Tq * D, D, dk, B2 * Tk * D, Tk * D, D, dv,
      B2 * Tk * Dv, Tk * Dv, Dv, workspace, B1, B2, Tq, Tk, D, Dv, scale,
      causal, type);
}

} // extern "C"

namespace {

/// The convolution's shape (EFFRT_CONV2D_SHAPE_ARGS) and the input element
/// (n, c, h, w) a filter tap of output (oh, ow) reads, or -1 in padding.
struct ConvShape {
  int64_t N, C, H, W, F, KH, KW, OH, OW, strideH, strideW, dilationH,
      dilationW, padTop, padLeft, groups;

  int64_t inputIndex(int64_t n, int64_t c, int64_t oh, int64_t ow, int64_t kh,
                     int64_t kw) const {
    int64_t h = oh * strideH - padTop + kh * dilationH;
    int64_t w = ow * strideW - padLeft + kw * dilationW;
    if (h < 0 || h >= H || w < 0 || w >= W)
      return -1;
    return ((n * C + c) * H + h) * W + w;
  }

  /// Calls `tap(n, f, oh, ow, c, kh, kw, xIndex, wIndex, yIndex)` for every
  /// product of the convolution that does not read padding.
  template <typename Fn> void forEachTap(Fn tap) const {
    int64_t perGroupC = C / groups, perGroupF = F / groups;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t f = 0; f < F; ++f) {
        int64_t g = f / perGroupF;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t y = ((n * F + f) * OH + oh) * OW + ow;
            for (int64_t cg = 0; cg < perGroupC; ++cg)
              for (int64_t kh = 0; kh < KH; ++kh)
                for (int64_t kw = 0; kw < KW; ++kw) {
                  int64_t x =
                      inputIndex(n, g * perGroupC + cg, oh, ow, kh, kw);
                  if (x < 0)
                    continue;
                  int64_t w = ((f * perGroupC + cg) * KH + kh) * KW + kw;
                  tap(x, w, y);
                }
          }
      }
  }
};

#define EFFRT_EMULATED_CONV_SHAPE                                              \
  ConvShape shape {                                                            \
    N, C, H, W, F, KH, KW, OH, OW, strideH, strideW, dilationH, dilationW,     \
        padTop, padLeft, groups                                                \
  }

void checkConv(const ConvShape &s) {
  if (s.groups < 1 || s.C % s.groups || s.F % s.groups)
    fail("emulated cuda convolution: ", s.C, " channels and ", s.F,
         " filters in ", s.groups, " groups");
}

} // namespace

extern "C" {

void effrt_emulated_cuda_conv2d_fwd(const void *x, const void *w, void *y,
                                    EFFRT_CONV2D_SHAPE_ARGS, int32_t type) {
  (void)padBottom;
  (void)padRight;
  EFFRT_EMULATED_CONV_SHAPE;
  checkConv(shape);
  std::vector<float> acc(static_cast<size_t>(N * F * OH * OW), 0.0f);
  shape.forEachTap([&](int64_t xi, int64_t wi, int64_t yi) {
    acc[yi] += load(x, xi, type) * load(w, wi, type);
  });
  for (size_t i = 0; i < acc.size(); ++i)
    store(y, static_cast<int64_t>(i), acc[i], type);
}

void effrt_emulated_cuda_conv2d_bwd_data(const void *dy, const void *w,
                                         void *dx, EFFRT_CONV2D_SHAPE_ARGS,
                                         int32_t type) {
  (void)padBottom;
  (void)padRight;
  EFFRT_EMULATED_CONV_SHAPE;
  checkConv(shape);
  std::vector<float> acc(static_cast<size_t>(N * C * H * W), 0.0f);
  shape.forEachTap([&](int64_t xi, int64_t wi, int64_t yi) {
    acc[xi] += load(dy, yi, type) * load(w, wi, type);
  });
  for (size_t i = 0; i < acc.size(); ++i)
    store(dx, static_cast<int64_t>(i), acc[i], type);
}

void effrt_emulated_cuda_conv2d_bwd_weights(const void *x, const void *dy,
                                            void *dw, EFFRT_CONV2D_SHAPE_ARGS,
                                            int32_t type) {
  (void)padBottom;
  (void)padRight;
  EFFRT_EMULATED_CONV_SHAPE;
  checkConv(shape);
  std::vector<float> acc(static_cast<size_t>(F * (C / groups) * KH * KW),
                         0.0f);
  shape.forEachTap([&](int64_t xi, int64_t wi, int64_t yi) {
    acc[wi] += load(x, xi, type) * load(dy, yi, type);
  });
  for (size_t i = 0; i < acc.size(); ++i)
    store(dw, static_cast<int64_t>(i), acc[i], type);
}

// The collectives: the CPU's own (MPI between ranks, copies on one), on
// host memory as the device ones are on device memory.
void effrt_emulated_cuda_allreduce_sum_f32(float *data, int64_t count) {
  effrt_allreduce_sum_f32(data, count);
}
void effrt_emulated_cuda_reduce_scatter_sum_f32(const float *send, float *recv,
                                                int64_t recvCount) {
  effrt_reduce_scatter_sum_f32(send, recv, recvCount);
}
void effrt_emulated_cuda_all_gather_f32(const float *send, float *recv,
                                        int64_t sendCount) {
  effrt_all_gather_f32(send, recv, sendCount);
}
void effrt_emulated_cuda_shard_f32(const float *whole, float *shard,
                                   int64_t shardCount) {
  effrt_shard_f32(whole, shard, shardCount);
}
int64_t effrt_emulated_cuda_allreduce_sum_f32_start(float *data,
                                                    int64_t count) {
  return effrt_allreduce_sum_f32_start(data, count);
}
int64_t effrt_emulated_cuda_reduce_scatter_sum_f32_start(const float *send,
                                                         float *recv,
                                                         int64_t recvCount) {
  return effrt_reduce_scatter_sum_f32_start(send, recv, recvCount);
}
int64_t effrt_emulated_cuda_all_gather_f32_start(const float *send,
                                                 float *recv,
                                                 int64_t sendCount) {
  return effrt_all_gather_f32_start(send, recv, sendCount);
}
void effrt_emulated_cuda_collective_wait(int64_t request, const float *send,
                                         const float *recv) {
  effrt_collective_wait(request, send, recv);
}

} // extern "C"
