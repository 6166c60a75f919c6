//===- Attention.cpp - Tiled attention for compiled code ------------------===//
//
// effrt_attention_fwd_strided_f32 and effrt_attention_bwd_strided_f32,
// which compiled CPU code calls for eff.attention and eff.attention_grad:
// FlashAttention-2 on the CPU (effrt_attention_*_tiled_f32; the _strided_
// and contiguous entry points serve earlier .effx files). The forward
// streams key tiles past each query tile with an online softmax and keeps
// only the output and each row's log-sum-exp; the backward recomputes the
// probabilities of one tile pair at a time from the log-sum-exp and uses
// D = rowsum(dO * O) for rowsum(P * dP). Nothing Tq x Tk is ever stored.
// The tile (query rows = key columns) is the caller's: the compiler picks
// effrt_attention_tile(Tq, Tk, causal): at most 64, smaller for short
// sequences and causal ones up to 128.
//
// Memory: everything the kernels touch besides their operands is in the
// caller's workspace (the step's arena, planned by the compiler), one slot
// per thread: tiles, statistics, transposed key/value tiles and the
// contiguous copies of strided heads. No allocation of their own.
//
// Threads: the forward's work items are (batch, head, query tile), the
// backward's (batch, head) (a head's dK/dV/dQ accumulate over all its tiles
// in one fixed order, so no atomics and no per-thread partial sums). A call
// runs on min(slots, OpenMP threads) threads, each with its own slot,
// which take items as they come; an item is computed whole in the slot of
// the thread that takes it, with the same arithmetic in any slot: results
// are the same for any number of threads or slots. Operands are read and
// written through their strides (a [B, T, H, D] projection in place). Tile
// products are AVX2/FMA loops (OpenBLAS's effrt_sgemm where the CPU lacks
// them); the exponentials are a branch-free polynomial the compiler vectorises.
//
//===----------------------------------------------------------------------===//

#include "effrt/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <vector>

#ifdef EFFRT_HAVE_OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>
#define EFFRT_TILE_AVX2 1
#endif

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// exp(x) for float, within 2 ulp on [-87, 88], exactly 0 below, inf above
/// and NaN for NaN (Cephes' expf polynomial; no libm call, so loops over it
/// vectorise).
inline float fastExp(float x) {
  float clamped = std::min(std::max(x, -87.3f), 88.7f);
  float t = clamped * 1.44269504088896341f;
  int32_t n = static_cast<int32_t>(t + (t >= 0.0f ? 0.5f : -0.5f));
  float fn = static_cast<float>(n);
  float r = clamped - fn * 0.693359375f + fn * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * r * r + r + 1.0f;
  int32_t bits = (n + 127) << 23;
  float scaleBits;
  std::memcpy(&scaleBits, &bits, sizeof(float));
  y *= scaleBits;
  y = x < -87.3f ? 0.0f : y;
  y = x > 88.7f ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;
}

//===----------------------------------------------------------------------===//
// Tile products
//===----------------------------------------------------------------------===//
//
// The tiles are small (64 x 64 x D): through cblas_sgemm each product pays
// OpenBLAS's per-call cost (buffer lock, packing both operands), which at
// these sizes is as much as the arithmetic. With AVX2 and FMA (checked at
// run time) they run here instead, as register-blocked FMA loops on the
// operands in place: 4 rows x 16 columns of C in 8 registers, one
// broadcast of A and two loads of B per k. Products with B transposed (q
// k^T, dO v^T) first transpose their B tile into the slot's workspace.
// Every element of C sums over k in order, in float with FMA, for any
// thread count and any layout of the operands.

/// C (M x N, ldc) = alpha * op(A) B (+ C when `accumulate`), op(A)(i, k) =
/// A[i*lda + k], or A[k*lda + i] when `transA`; B is K x N (ldb), rows
/// contiguous.
using TileProduct = void (*)(bool transA, int64_t M, int64_t N, int64_t K,
                             float alpha, const float *A, int64_t lda,
                             const float *B, int64_t ldb, bool accumulate,
                             float *C, int64_t ldc);

void tileProductBlas(bool transA, int64_t M, int64_t N, int64_t K,
                     float alpha, const float *A, int64_t lda, const float *B,
                     int64_t ldb, bool accumulate, float *C, int64_t ldc) {
  effrt_sgemm(transA ? 1 : 0, 0, M, N, K, alpha, A, lda, B, ldb,
              accumulate ? 1.0f : 0.0f, C, ldc);
}

#ifdef EFFRT_TILE_AVX2
/// R rows (1..4) of C at columns [n0, n0 + 8*V) (V = 1 or 2 registers per
/// row); `mask` limits the last register's columns when Masked.
template <int R, int V, bool Masked>
__attribute__((target("avx2,fma"))) inline void
tileBlock(bool transA, int64_t K, float alpha, const float *A, int64_t lda,
          const float *B, int64_t ldb, bool accumulate, float *C, int64_t ldc,
          __m256i mask) {
  __m256 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      acc[r][v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const float *b = B + k * ldb;
    __m256 bv[V];
    for (int v = 0; v < V; ++v)
      bv[v] = (Masked && v == V - 1) ? _mm256_maskload_ps(b + 8 * v, mask)
                                     : _mm256_loadu_ps(b + 8 * v);
    for (int r = 0; r < R; ++r) {
      __m256 a = _mm256_broadcast_ss(transA ? A + k * lda + r : A + r * lda + k);
      for (int v = 0; v < V; ++v)
        acc[r][v] = _mm256_fmadd_ps(a, bv[v], acc[r][v]);
    }
  }
  __m256 scale = _mm256_set1_ps(alpha);
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) {
      float *c = C + r * ldc + 8 * v;
      __m256 x = _mm256_mul_ps(acc[r][v], scale);
      bool last = Masked && v == V - 1;
      if (accumulate)
        x = _mm256_add_ps(x, last ? _mm256_maskload_ps(c, mask)
                                  : _mm256_loadu_ps(c));
      if (last)
        _mm256_maskstore_ps(c, mask, x);
      else
        _mm256_storeu_ps(c, x);
    }
}

/// Rows of C in blocks of 4 (then 1..3) for one column block.
template <int V, bool Masked>
__attribute__((target("avx2,fma"))) void
tileColumns(bool transA, int64_t M, int64_t K, float alpha, const float *A,
            int64_t lda, const float *B, int64_t ldb, bool accumulate,
            float *C, int64_t ldc, __m256i mask) {
  // Row i of op(A) starts at A + i*lda, or at A + i when transposed.
  int64_t rowStep = transA ? 1 : lda;
  int64_t i = 0;
  for (; i + 4 <= M; i += 4)
    tileBlock<4, V, Masked>(transA, K, alpha, A + i * rowStep, lda, B, ldb,
                            accumulate, C + i * ldc, ldc, mask);
  switch (M - i) {
  case 3:
    tileBlock<3, V, Masked>(transA, K, alpha, A + i * rowStep, lda, B, ldb,
                            accumulate, C + i * ldc, ldc, mask);
    break;
  case 2:
    tileBlock<2, V, Masked>(transA, K, alpha, A + i * rowStep, lda, B, ldb,
                            accumulate, C + i * ldc, ldc, mask);
    break;
  case 1:
    tileBlock<1, V, Masked>(transA, K, alpha, A + i * rowStep, lda, B, ldb,
                            accumulate, C + i * ldc, ldc, mask);
    break;
  default:
    break;
  }
}

__attribute__((target("avx2,fma"))) void
tileProductAvx2(bool transA, int64_t M, int64_t N, int64_t K, float alpha,
                const float *A, int64_t lda, const float *B, int64_t ldb,
                bool accumulate, float *C, int64_t ldc) {
  __m256i none = _mm256_setzero_si256();
  int64_t n = 0;
  for (; n + 16 <= N; n += 16)
    tileColumns<2, false>(transA, M, K, alpha, A, lda, B + n, ldb, accumulate,
                          C + n, ldc, none);
  int64_t rest = N - n;
  if (rest == 0)
    return;
  // The last 1..15 columns: one or two registers, the last one masked.
  alignas(32) int32_t lanes[8];
  int64_t tail = rest > 8 ? rest - 8 : rest;
  for (int l = 0; l < 8; ++l)
    lanes[l] = l < tail ? -1 : 0;
  __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i *>(lanes));
  if (rest > 8)
    tileColumns<2, true>(transA, M, K, alpha, A, lda, B + n, ldb, accumulate,
                         C + n, ldc, mask);
  else
    tileColumns<1, true>(transA, M, K, alpha, A, lda, B + n, ldb, accumulate,
                         C + n, ldc, mask);
}
#endif

/// The tile product this machine runs: AVX2/FMA loops, else OpenBLAS. The
/// environment variable EFFRT_ATTENTION_BLAS=1 forces OpenBLAS (to compare).
TileProduct chooseTileProduct() {
#ifdef EFFRT_TILE_AVX2
  const char *forced = std::getenv("EFFRT_ATTENTION_BLAS");
  if (!(forced && forced[0] == '1') && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma"))
    return tileProductAvx2;
#endif
  return tileProductBlas;
}

const TileProduct tileProduct = chooseTileProduct();

/// dst (cols x rows, ld rows) = src (rows x cols, ld lds) transposed: a B
/// operand for the products that read it transposed.
void transposeTile(const float *src, int64_t lds, int64_t rows, int64_t cols,
                   float *dst) {
  // Blocks of 8 x 8 keep both sides in a few cache lines (strided stores
  // of whole columns were a third of the backward's own time).
  for (int64_t r0 = 0; r0 < rows; r0 += 8) {
    int64_t r1 = std::min(rows, r0 + 8);
    for (int64_t c0 = 0; c0 < cols; c0 += 8) {
      int64_t c1 = std::min(cols, c0 + 8);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r)
          dst[c * rows + r] = src[r * lds + c];
    }
  }
}

/// splitmix64's finaliser, as eff.dropout's lowering (mix64 in
/// lib/Conversion/EffToLinalg/LowerElementwise.cpp).
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// One tensor operand: its data and the element strides of its B1, B2 and
/// T dimensions (D is contiguous). Rows of a head are `t` apart, so the
/// tile products take `t` as their leading dimension: a [B, T, H, D]
/// tensor is read as [B, H, T, D] in place.
template <typename T> struct Operand {
  T *data;
  int64_t b1, b2, t;

  /// Head `n` of B1 * B2 (n = b1 * B2 + b2).
  T *head(int64_t n, int64_t B2) const {
    return data + n / B2 * b1 + n % B2 * b2;
  }
};
using In = Operand<const float>;
using Out = Operand<float>;

/// The shape and options of one call.
struct Problem {
  const void *mask;
  int32_t maskKind;
  int64_t maskStrideB1, maskStrideB2, maskStrideQ, maskStrideK;
  int64_t B1, B2, Tq, Tk, D, Dv;
  /// Query rows and key columns per tile (the score tile's ld).
  int64_t tile;
  float scale;
  bool causal;
  uint64_t dropoutKey, dropoutThreshold;
  float dropoutScale;

  bool dropout() const { return dropoutScale != 0.0f; }
  int64_t heads() const { return B1 * B2; }

  /// S = scale * q_i k_j^T for `rows` query rows from i0 and `cols` key
  /// columns from j0 of head `n`, masked (-inf), into `s` (ld tile).
  /// `qTile`: the query tile's rows (from row i0), `ldq` apart; `kT`: the
  /// key tile transposed (D x cols, ld cols).
  void scores(int64_t n, const float *qTile, int64_t ldq, const float *kT,
              int64_t i0, int64_t rows, int64_t j0, int64_t cols,
              float *s) const {
    tileProduct(false, rows, cols, D, scale, qTile, ldq, kT, cols, false, s,
                tile);
    int64_t b1 = n / B2, b2 = n % B2;
    if (maskKind == EFFRT_ATTENTION_MASK_ADD) {
      const float *m = static_cast<const float *>(mask) + b1 * maskStrideB1 +
                       b2 * maskStrideB2;
      for (int64_t r = 0; r < rows; ++r) {
        const float *mr = m + (i0 + r) * maskStrideQ + j0 * maskStrideK;
        float *sr = s + r * tile;
        for (int64_t c = 0; c < cols; ++c)
          sr[c] += mr[c * maskStrideK];
      }
    } else if (maskKind == EFFRT_ATTENTION_MASK_BOOL) {
      const uint8_t *m = static_cast<const uint8_t *>(mask) +
                         b1 * maskStrideB1 + b2 * maskStrideB2;
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *mr = m + (i0 + r) * maskStrideQ + j0 * maskStrideK;
        float *sr = s + r * tile;
        for (int64_t c = 0; c < cols; ++c)
          sr[c] = mr[c * maskStrideK] ? kNegInf : sr[c];
      }
    }
    if (causal && j0 + cols - 1 > i0) {
      for (int64_t r = 0; r < rows; ++r) {
        float *sr = s + r * tile;
        for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < cols; ++c)
          sr[c] = kNegInf;
      }
    }
  }

  /// The keep factor (0 or dropoutScale) of the tile's elements into `z`.
  void keepFactors(int64_t n, int64_t i0, int64_t rows, int64_t j0,
                   int64_t cols, float *z) const {
    for (int64_t r = 0; r < rows; ++r) {
      uint64_t base = static_cast<uint64_t>((n * Tq + i0 + r) * Tk + j0);
      float *zr = z + r * tile;
      for (int64_t c = 0; c < cols; ++c) {
        uint64_t h = mix64(dropoutKey ^ (base + static_cast<uint64_t>(c)));
        zr[c] = (h >> 40) >= dropoutThreshold ? dropoutScale : 0.0f;
      }
    }
  }

  /// Key tiles a query tile [i0, i0 + rows) reaches: all, or under causal
  /// masking those that start at or before its last row.
  int64_t keyEnd(int64_t i0, int64_t rows) const {
    return causal ? std::min(Tk, i0 + rows) : Tk;
  }
};

/// One query tile of one head: the online softmax over its key tiles.
void forwardTile(const Problem &p, int64_t n, int64_t i0, In q, In k, In v,
                 Out o, float *lse, float *ws) {
  int64_t rows = std::min(p.tile, p.Tq - i0);
  const float *qHead = q.head(n, p.B2), *kHead = k.head(n, p.B2),
              *vHead = v.head(n, p.B2);
  // The slot (effrt_attention_fwd_slot_floats): the score tile, the row
  // statistics, k's tile transposed; for operands whose rows are not
  // contiguous (heads inner) also the q tile, the v tile and the output
  // tile, so that the products read and write contiguous rows (rows a
  // multiple of 1 KiB apart fall into a few L1 sets).
  bool packQ = q.t != p.D, packV = v.t != p.Dv, packO = o.t != p.Dv;
  float *s = ws, *rowMax = ws + p.tile * p.tile, *rowSum = rowMax + p.tile;
  float *kT = rowSum + p.tile;
  float *qTile = kT + p.tile * p.D, *vTile = qTile + p.tile * p.D,
        *oScratch = vTile + p.tile * p.Dv;
  int64_t ldq = q.t;
  const float *qRows = qHead + i0 * q.t;
  if (packQ) {
    for (int64_t r = 0; r < rows; ++r)
      std::copy(qRows + r * q.t, qRows + r * q.t + p.D, qTile + r * p.D);
    qRows = qTile;
    ldq = p.D;
  }
  int64_t ldo = packO ? p.Dv : o.t;
  float *oOut = o.head(n, p.B2) + i0 * o.t;
  float *oTile = packO ? oScratch : oOut;
  for (int64_t r = 0; r < rows; ++r)
    std::fill(oTile + r * ldo, oTile + r * ldo + p.Dv, 0.0f);
  std::fill(rowMax, rowMax + rows, kNegInf);
  std::fill(rowSum, rowSum + rows, 0.0f);
  int64_t end = p.keyEnd(i0, rows);
  for (int64_t j0 = 0; j0 < end; j0 += p.tile) {
    int64_t cols = std::min(p.tile, p.Tk - j0);
    transposeTile(kHead + j0 * k.t, k.t, cols, p.D, kT);
    p.scores(n, qRows, ldq, kT, i0, rows, j0, cols, s);
    for (int64_t r = 0; r < rows; ++r) {
      float *sr = s + r * p.tile;
      float tileMax = kNegInf;
      for (int64_t c = 0; c < cols; ++c)
        tileMax = std::max(tileMax, sr[c]);
      float newMax = std::max(rowMax[r], tileMax);
      // Everything so far masked: the row contributes nothing yet.
      float shift = newMax == kNegInf ? 0.0f : newMax;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < cols; ++c) {
        float e = fastExp(sr[c] - shift);
        sr[c] = e;
        sum += e;
      }
      float alpha = fastExp(rowMax[r] - shift);
      rowSum[r] = rowSum[r] * alpha + sum;
      rowMax[r] = newMax;
      if (alpha != 1.0f) {
        float *orow = oTile + r * ldo;
        for (int64_t d = 0; d < p.Dv; ++d)
          orow[d] *= alpha;
      }
    }
    if (p.dropout()) {
      // The normaliser counts every probability; the product only the kept.
      float *z = ws; // reuse: apply in place row by row
      for (int64_t r = 0; r < rows; ++r) {
        uint64_t base =
            static_cast<uint64_t>((n * p.Tq + i0 + r) * p.Tk + j0);
        float *zr = z + r * p.tile;
        for (int64_t c = 0; c < cols; ++c) {
          uint64_t h =
              mix64(p.dropoutKey ^ (base + static_cast<uint64_t>(c)));
          zr[c] = (h >> 40) >= p.dropoutThreshold ? zr[c] * p.dropoutScale
                                                  : 0.0f;
        }
      }
    }
    const float *vRows = vHead + j0 * v.t;
    int64_t ldv = v.t;
    if (packV) {
      for (int64_t c = 0; c < cols; ++c)
        std::copy(vRows + c * v.t, vRows + c * v.t + p.Dv, vTile + c * p.Dv);
      vRows = vTile;
      ldv = p.Dv;
    }
    tileProduct(false, rows, p.Dv, cols, 1.0f, s, p.tile, vRows, ldv, true,
                oTile, ldo);
  }
  for (int64_t r = 0; r < rows; ++r) {
    float *orow = oTile + r * ldo;
    float *l = lse + n * p.Tq + i0 + r;
    if (rowSum[r] == 0.0f || rowMax[r] == kNegInf) {
      // Every score -inf: softmax is 0/0, NaN, as in PyTorch.
      std::fill(orow, orow + p.Dv, std::numeric_limits<float>::quiet_NaN());
      *l = kNegInf;
      continue;
    }
    float inv = 1.0f / rowSum[r];
    for (int64_t d = 0; d < p.Dv; ++d)
      orow[d] *= inv;
    *l = rowMax[r] + std::log(rowSum[r]);
  }
  if (packO)
    for (int64_t r = 0; r < rows; ++r)
      std::copy(oTile + r * ldo, oTile + r * ldo + p.Dv, oOut + r * o.t);
}

/// One head's operands and gradients as contiguous [T, X] matrices: in
/// place when they already are, else copies in the slot's workspace.
class Packed {
public:
  /// `room`: the slot's 2 (Tq + Tk) D + 2 Tk Dv + Tq Dv floats for q, k, v,
  /// dO, dq, dk and dv (effrt_attention_bwd_slot_floats).
  explicit Packed(float *room) : next(room) {}

  /// Head n of `x` (T rows of `cols`), contiguous.
  const float *in(In x, int64_t n, int64_t B2, int64_t T, int64_t cols) {
    const float *head = x.head(n, B2);
    if (x.t == cols)
      return head;
    float *copy = take(T * cols);
    for (int64_t r = 0; r < T; ++r)
      std::copy(head + r * x.t, head + r * x.t + cols, copy + r * cols);
    return copy;
  }

  /// Where head n of `x` accumulates: in place when contiguous.
  float *out(Out x, int64_t n, int64_t B2, int64_t T, int64_t cols) {
    return x.t == cols ? x.head(n, B2) : take(T * cols);
  }

  /// Writes the accumulated `rows` back to head n of `x` when they were
  /// not in place.
  void store(Out x, int64_t n, int64_t B2, int64_t T, int64_t cols,
             const float *rows) {
    if (x.t == cols)
      return;
    float *head = x.head(n, B2);
    for (int64_t r = 0; r < T; ++r)
      std::copy(rows + r * cols, rows + (r + 1) * cols, head + r * x.t);
  }

private:
  float *take(int64_t floats) {
    float *p = next;
    next += floats;
    return p;
  }
  float *next;
};

/// All of one head's gradients: key tiles outer (dK, dV of a tile complete
/// in the inner loop), query tiles inner (dQ accumulates).
void backwardHead(const Problem &p, int64_t n, In q, In k, In v, In o,
                  const float *lse, In dout, Out dq, Out dk, Out dv,
                  float *ws) {
  int64_t Tq = p.Tq, Tk = p.Tk, D = p.D, Dv = p.Dv;
  // The slot (effrt_attention_bwd_slot_floats): the probability, gradient
  // and keep-factor tiles, rowsum(dO * O), k's and v's tiles transposed,
  // then room for the head's copies. A head whose rows are not contiguous
  // (the heads of a [B, T, H*D] projection, rows H*D apart) is copied
  // there first, and its gradients accumulate there: every tile of the
  // head is read and written many times, and rows a multiple of 1 KiB
  // apart fall into a few L1 sets (the backward ran 40% slower on them).
  // o is read once (rowsum(dO * O)), in place.
  float *pT = ws, *dpT = ws + p.tile * p.tile, *zT = dpT + p.tile * p.tile,
        *rowDot = zT + p.tile * p.tile;
  float *kT = rowDot + Tq, *vT = kT + p.tile * D;
  Packed pack(vT + p.tile * Dv);
  const float *qH = pack.in(q, n, p.B2, Tq, D),
              *kH = pack.in(k, n, p.B2, Tk, D),
              *vH = pack.in(v, n, p.B2, Tk, Dv), *oH = o.head(n, p.B2),
              *dOH = pack.in(dout, n, p.B2, Tq, Dv), *lseH = lse + n * Tq;
  float *dqH = pack.out(dq, n, p.B2, Tq, D),
        *dkH = pack.out(dk, n, p.B2, Tk, D),
        *dvH = pack.out(dv, n, p.B2, Tk, Dv);
  // Leading dimensions (row strides) of the head's matrices.
  int64_t ldq = D, ldk = D, ldv = Dv, ldo = o.t, lddo = Dv, lddq = D, lddk = D,
          lddv = Dv;
  auto fillRows = [](float *m, int64_t ld, int64_t rows, int64_t cols,
                     float value) {
    for (int64_t r = 0; r < rows; ++r)
      std::fill(m + r * ld, m + r * ld + cols, value);
  };
  fillRows(dqH, lddq, Tq, D, 0.0f);
  fillRows(dkH, lddk, Tk, D, 0.0f);
  fillRows(dvH, lddv, Tk, Dv, 0.0f);
  for (int64_t i = 0; i < Tq; ++i) {
    float sum = 0.0f;
    const float *dOi = dOH + i * lddo, *oi = oH + i * ldo;
#pragma omp simd reduction(+ : sum)
    for (int64_t d = 0; d < Dv; ++d)
      sum += dOi[d] * oi[d];
    rowDot[i] = sum;
  }
  for (int64_t j0 = 0; j0 < Tk; j0 += p.tile) {
    int64_t cols = std::min(p.tile, Tk - j0);
    transposeTile(kH + j0 * ldk, ldk, cols, D, kT);
    transposeTile(vH + j0 * ldv, ldv, cols, Dv, vT);
    // Under causal masking, query tiles ending before j0 see none of it.
    int64_t iStart = p.causal ? j0 / p.tile * p.tile : 0;
    for (int64_t i0 = iStart; i0 < Tq; i0 += p.tile) {
      int64_t rows = std::min(p.tile, Tq - i0);
      p.scores(n, qH + i0 * ldq, ldq, kT, i0, rows, j0, cols, pT);
      for (int64_t r = 0; r < rows; ++r) {
        float *pr = pT + r * p.tile;
        float l = lseH[i0 + r];
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c)
          pr[c] = fastExp(pr[c] - l);
      }
      const float *pv = pT;
      if (p.dropout()) {
        p.keepFactors(n, i0, rows, j0, cols, zT);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            dpT[r * p.tile + c] = pT[r * p.tile + c] * zT[r * p.tile + c];
        pv = dpT;
      }
      // dV_j += P~^T dO_i
      tileProduct(true, cols, Dv, rows, 1.0f, pv, p.tile, dOH + i0 * lddo, lddo,
                  true, dvH + j0 * lddv, lddv);
      // dP = dO_i V_j^T (times the keep factors)
      tileProduct(false, rows, cols, Dv, 1.0f, dOH + i0 * lddo, lddo, vT, cols,
                  false, dpT, p.tile);
      for (int64_t r = 0; r < rows; ++r) {
        float *dpr = dpT + r * p.tile;
        const float *pr = pT + r * p.tile, *zr = zT + r * p.tile;
        float rd = rowDot[i0 + r];
        if (p.dropout()) {
#pragma omp simd
          for (int64_t c = 0; c < cols; ++c)
            dpr[c] = pr[c] * (dpr[c] * zr[c] - rd);
        } else {
#pragma omp simd
          for (int64_t c = 0; c < cols; ++c)
            dpr[c] = pr[c] * (dpr[c] - rd);
        }
      }
      // dQ_i += scale dS K_j ; dK_j += scale dS^T Q_i
      tileProduct(false, rows, D, cols, p.scale, dpT, p.tile, kH + j0 * ldk,
                  ldk, true, dqH + i0 * lddq, lddq);
      tileProduct(true, cols, D, rows, p.scale, dpT, p.tile, qH + i0 * ldq, ldq,
                  true, dkH + j0 * lddk, lddk);
    }
  }
  // A row that sees no key has NaN probabilities; in PyTorch they reach
  // every dK and dV row of the head through the products (also the tiles
  // causal masking skipped here).
  for (int64_t i = 0; i < Tq; ++i)
    if (lseH[i] == kNegInf) {
      float nan = std::numeric_limits<float>::quiet_NaN();
      fillRows(dkH, lddk, Tk, D, nan);
      fillRows(dvH, lddv, Tk, Dv, nan);
      break;
    }
  pack.store(dq, n, p.B2, Tq, D, dqH);
  pack.store(dk, n, p.B2, Tk, D, dkH);
  pack.store(dv, n, p.B2, Tk, Dv, dvH);
}

Problem makeProblem(const void *mask, int32_t maskKind, int64_t msB1,
                    int64_t msB2, int64_t msQ, int64_t msK, int64_t B1,
                    int64_t B2, int64_t Tq, int64_t Tk, int64_t D, int64_t Dv,
                    int64_t tile, float scale, int32_t causal,
                    int64_t dropoutKey, int64_t dropoutThreshold,
                    float dropoutScale) {
  return Problem{mask,
                 mask ? maskKind : EFFRT_ATTENTION_MASK_NONE,
                 msB1,
                 msB2,
                 msQ,
                 msK,
                 B1,
                 B2,
                 Tq,
                 Tk,
                 D,
                 Dv,
                 std::max<int64_t>(1, tile),
                 scale,
                 causal != 0,
                 static_cast<uint64_t>(dropoutKey),
                 static_cast<uint64_t>(dropoutThreshold),
                 dropoutScale};
}

/// Runs `item(i, slotWorkspace)` for i in [0, items) on min(slots, items,
/// OpenMP threads) threads, thread t with slot t of `slotFloats` floats;
/// items go to whichever thread is free (an item's result does not depend
/// on its slot).
template <typename Fn>
void forEachItem(int64_t items, int64_t slots, float *workspace,
                 int64_t slotFloats, Fn item) {
#ifdef EFFRT_HAVE_OPENMP
  int64_t threads =
      omp_in_parallel()
          ? 1
          : std::min<int64_t>({slots, items, omp_get_max_threads()});
  if (threads > 1) {
#pragma omp parallel num_threads(static_cast <int>(threads))
    {
      float *ws = workspace + omp_get_thread_num() * slotFloats;
#pragma omp for schedule(dynamic, 1)
      for (int64_t i = 0; i < items; ++i)
        item(i, ws);
    }
    return;
  }
#endif
  (void)slots;
  (void)slotFloats;
  for (int64_t i = 0; i < items; ++i)
    item(i, workspace);
}

} // namespace

extern "C" void effrt_attention_fwd_tiled_f32(
    const float *q, int64_t qStrideB1, int64_t qStrideB2, int64_t qStrideT,
    const float *k, int64_t kStrideB1, int64_t kStrideB2, int64_t kStrideT,
    const float *v, int64_t vStrideB1, int64_t vStrideB2, int64_t vStrideT,
    float *o, int64_t oStrideB1, int64_t oStrideB2, int64_t oStrideT,
    float *lse, const void *mask, int32_t maskKind, int64_t maskStrideB1,
    int64_t maskStrideB2, int64_t maskStrideQ, int64_t maskStrideK, int64_t B1,
    int64_t B2, int64_t Tq, int64_t Tk, int64_t D, int64_t Dv, float scale,
    int32_t causal, int64_t dropoutKey, int64_t dropoutThreshold,
    float dropoutScale, int64_t tile, float *workspace, int64_t slots) {
  Problem p =
      makeProblem(mask, maskKind, maskStrideB1, maskStrideB2, maskStrideQ,
                  maskStrideK, B1, B2, Tq, Tk, D, Dv, tile, scale, causal,
                  dropoutKey, dropoutThreshold, dropoutScale);
  In qs{q, qStrideB1, qStrideB2, qStrideT}, ks{k, kStrideB1, kStrideB2, kStrideT},
      vs{v, vStrideB1, vStrideB2, vStrideT};
  Out os{o, oStrideB1, oStrideB2, oStrideT};
  int64_t tiles = (Tq + p.tile - 1) / p.tile;
  forEachItem(p.heads() * tiles, slots, workspace,
              effrt_attention_fwd_slot_floats(p.tile, D, Dv),
              [&](int64_t i, float *ws) {
                forwardTile(p, i / tiles, i % tiles * p.tile, qs, ks, vs, os,
                            lse, ws);
              });
}

extern "C" void effrt_attention_bwd_tiled_f32(
    const float *q, int64_t qStrideB1, int64_t qStrideB2, int64_t qStrideT,
    const float *k, int64_t kStrideB1, int64_t kStrideB2, int64_t kStrideT,
    const float *v, int64_t vStrideB1, int64_t vStrideB2, int64_t vStrideT,
    const float *o, int64_t oStrideB1, int64_t oStrideB2, int64_t oStrideT,
    const float *lse, const float *dout, int64_t dStrideB1, int64_t dStrideB2,
    int64_t dStrideT, float *dq, int64_t dqStrideB1, int64_t dqStrideB2,
    int64_t dqStrideT, float *dk, int64_t dkStrideB1, int64_t dkStrideB2,
    int64_t dkStrideT, float *dv, int64_t dvStrideB1, int64_t dvStrideB2,
    int64_t dvStrideT, const void *mask, int32_t maskKind, int64_t maskStrideB1,
    int64_t maskStrideB2, int64_t maskStrideQ, int64_t maskStrideK, int64_t B1,
    int64_t B2, int64_t Tq, int64_t Tk, int64_t D, int64_t Dv, float scale,
    int32_t causal, int64_t dropoutKey, int64_t dropoutThreshold,
    float dropoutScale, int64_t tile, float *workspace, int64_t slots) {
  Problem p =
      makeProblem(mask, maskKind, maskStrideB1, maskStrideB2, maskStrideQ,
                  maskStrideK, B1, B2, Tq, Tk, D, Dv, tile, scale, causal,
                  dropoutKey, dropoutThreshold, dropoutScale);
  In qs{q, qStrideB1, qStrideB2, qStrideT}, ks{k, kStrideB1, kStrideB2, kStrideT},
      vs{v, vStrideB1, vStrideB2, vStrideT}, os{o, oStrideB1, oStrideB2, oStrideT},
      dos{dout, dStrideB1, dStrideB2, dStrideT};
  Out dqs{dq, dqStrideB1, dqStrideB2, dqStrideT},
      dks{dk, dkStrideB1, dkStrideB2, dkStrideT},
      dvs{dv, dvStrideB1, dvStrideB2, dvStrideT};
  forEachItem(p.heads(), slots, workspace,
              effrt_attention_bwd_slot_floats(p.tile, Tq, Tk, D, Dv),
              [&](int64_t n, float *ws) {
                backwardHead(p, n, qs, ks, vs, os, lse, dos, dqs, dks, dvs, ws);
              });
}

// The entry points of earlier .effx files, whose plans held only the score
// tiles: they run the kernels above on 64 x 64 tiles (as those files did)
// in a workspace of their own, one slot per thread, for the call.

namespace {
int64_t legacySlots() {
#ifdef EFFRT_HAVE_OPENMP
  return omp_in_parallel() ? 1 : std::max(1, omp_get_max_threads());
#else
  return 1;
#endif
}
} // namespace

extern "C" void effrt_attention_fwd_strided_f32(
    const float *q, int64_t qStrideB1, int64_t qStrideB2, int64_t qStrideT,
    const float *k, int64_t kStrideB1, int64_t kStrideB2, int64_t kStrideT,
    const float *v, int64_t vStrideB1, int64_t vStrideB2, int64_t vStrideT,
    float *o, int64_t oStrideB1, int64_t oStrideB2, int64_t oStrideT,
    float *lse, const void *mask, int32_t maskKind, int64_t maskStrideB1,
    int64_t maskStrideB2, int64_t maskStrideQ, int64_t maskStrideK, int64_t B1,
    int64_t B2, int64_t Tq, int64_t Tk, int64_t D, int64_t Dv, float scale,
    int32_t causal, int64_t dropoutKey, int64_t dropoutThreshold,
    float dropoutScale, float *workspace, int64_t slots) {
  (void)workspace;
  (void)slots;
  int64_t own = legacySlots();
  std::vector<float> room(
      own * effrt_attention_fwd_slot_floats(EFFRT_ATTENTION_TILE_Q, D, Dv));
  effrt_attention_fwd_tiled_f32(
      q, qStrideB1, qStrideB2, qStrideT, k, kStrideB1, kStrideB2, kStrideT, v,
      vStrideB1, vStrideB2, vStrideT, o, oStrideB1, oStrideB2, oStrideT, lse,
      mask, maskKind, maskStrideB1, maskStrideB2, maskStrideQ, maskStrideK, B1,
      B2, Tq, Tk, D, Dv, scale, causal, dropoutKey, dropoutThreshold,
      dropoutScale, EFFRT_ATTENTION_TILE_Q, room.data(), own);
}

extern "C" void effrt_attention_bwd_strided_f32(
    const float *q, int64_t qStrideB1, int64_t qStrideB2, int64_t qStrideT,
    const float *k, int64_t kStrideB1, int64_t kStrideB2, int64_t kStrideT,
    const float *v, int64_t vStrideB1, int64_t vStrideB2, int64_t vStrideT,
    const float *o, int64_t oStrideB1, int64_t oStrideB2, int64_t oStrideT,
    const float *lse, const float *dout, int64_t dStrideB1, int64_t dStrideB2,
    int64_t dStrideT, float *dq, int64_t dqStrideB1, int64_t dqStrideB2,
    int64_t dqStrideT, float *dk, int64_t dkStrideB1, int64_t dkStrideB2,
    int64_t dkStrideT, float *dv, int64_t dvStrideB1, int64_t dvStrideB2,
    int64_t dvStrideT, const void *mask, int32_t maskKind, int64_t maskStrideB1,
    int64_t maskStrideB2, int64_t maskStrideQ, int64_t maskStrideK, int64_t B1,
    int64_t B2, int64_t Tq, int64_t Tk, int64_t D, int64_t Dv, float scale,
    int32_t causal, int64_t dropoutKey, int64_t dropoutThreshold,
    float dropoutScale, float *workspace, int64_t slots) {
  (void)workspace;
  (void)slots;
  int64_t own = legacySlots();
  std::vector<float> room(own * effrt_attention_bwd_slot_floats(
                                    EFFRT_ATTENTION_TILE_Q, Tq, Tk, D, Dv));
  effrt_attention_bwd_tiled_f32(
      q, qStrideB1, qStrideB2, qStrideT, k, kStrideB1, kStrideB2, kStrideT, v,
      vStrideB1, vStrideB2, vStrideT, o, oStrideB1, oStrideB2, oStrideT, lse,
      dout, dStrideB1, dStrideB2, dStrideT, dq, dqStrideB1, dqStrideB2,
      dqStrideT, dk, dkStrideB1, dkStrideB2, dkStrideT, dv, dvStrideB1,
      dvStrideB2, dvStrideT, mask, maskKind, maskStrideB1, maskStrideB2,
      maskStrideQ, maskStrideK, B1, B2, Tq, Tk, D, Dv, scale, causal,
      dropoutKey, dropoutThreshold, dropoutScale, EFFRT_ATTENTION_TILE_Q,
      room.data(), own);
}

extern "C" void effrt_attention_fwd_f32(
    const float *q, const float *k, const float *v, float *o, float *lse,
    const void *mask, int32_t maskKind, int64_t maskStrideB1,
    int64_t maskStrideB2, int64_t maskStrideQ, int64_t maskStrideK,
    int64_t B1, int64_t B2, int64_t Tq, int64_t Tk, int64_t D, int64_t Dv,
    float scale, int32_t causal, int64_t dropoutKey, int64_t dropoutThreshold,
    float dropoutScale, float *workspace, int64_t slots) {
  effrt_attention_fwd_strided_f32(
      q, B2 * Tq * D, Tq * D, D, k, B2 * Tk * D, Tk * D, D, v, B2 * Tk * Dv,
      Tk * Dv, Dv, o, B2 * Tq * Dv, Tq * Dv, Dv, lse, mask, maskKind,
      maskStrideB1, maskStrideB2, maskStrideQ, maskStrideK, B1, B2, Tq, Tk, D,
      Dv, scale, causal, dropoutKey, dropoutThreshold, dropoutScale, workspace,
      slots);
}

extern "C" void effrt_attention_bwd_f32(
    const float *q, const float *k, const float *v, const float *o,
    const float *lse, const float *dout, float *dq, float *dk, float *dv,
    const void *mask, int32_t maskKind, int64_t maskStrideB1,
    int64_t maskStrideB2, int64_t maskStrideQ, int64_t maskStrideK,
    int64_t B1, int64_t B2, int64_t Tq, int64_t Tk, int64_t D, int64_t Dv,
    float scale, int32_t causal, int64_t dropoutKey, int64_t dropoutThreshold,
    float dropoutScale, float *workspace, int64_t slots) {
  int64_t q1 = B2 * Tq * D, q2 = Tq * D, k1 = B2 * Tk * D, k2 = Tk * D,
          v1 = B2 * Tk * Dv, v2 = Tk * Dv, o1 = B2 * Tq * Dv, o2 = Tq * Dv;
  effrt_attention_bwd_strided_f32(
      q, q1, q2, D, k, k1, k2, D, v, v1, v2, Dv, o, o1, o2, Dv, lse, dout, o1,
      o2, Dv, dq, q1, q2, D, dk, k1, k2, D, dv, v1, v2, Dv, mask, maskKind,
      maskStrideB1, maskStrideB2, maskStrideQ, maskStrideK, B1, B2, Tq, Tk, D,
      Dv, scale, causal, dropoutKey, dropoutThreshold, dropoutScale, workspace,
      slots);
}
