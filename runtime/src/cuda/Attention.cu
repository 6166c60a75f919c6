//===- Attention.cu - FlashAttention-2 kernels of target cuda -------------===//
//
// Fused attention on [B1, B2, T, D] tensors with D contiguous and any other
// strides (AttentionLayout.h: a [B, T, H, D] projection is read as it lies,
// no transposes): the forward writes o and each query
// row's log-sum-exp (natural log, f32) with an online softmax over key
// tiles; the backward recomputes the probabilities from the log-sum-exp and
// uses D = rowsum(dO * o). Nothing Tq x Tk is ever in memory.
//
// Compiled by nvcc into a fatbin at runtime build time and loaded with the
// driver API (Attention.cpp); no host code here, every kernel extern "C".
//
// bf16 / f16: tensor cores through mma.sync.m16n8k16 (sm_80+), f32
// accumulation. A block of 4 warps owns a tile of rows, each warp 16 or 32
// (AttentionTiles.h: with 32, each B fragment out of shared memory serves
// two row tiles). A warp keeps its scores and accumulators in the mma's C
// fragments, whose layout is fixed by PTX (thread = 4 * g + t holds rows g
// and g + 8, columns 2t and 2t + 1 of each 16 x 8 tile), so the row
// statistics are reduced over the 4 threads of a quad, and a score tile's
// C fragments are directly the A fragments of the product with V
// (FlashAttention-2's register reuse). Tiles are staged in shared memory
// with rows padded by 16 bytes; the fragments come out of them by ldmatrix
// (x4: an A fragment, or the B fragments of two column tiles; .trans for
// V, dO, Q and K where the product reads them untransposed), whose eight
// 16-byte rows per phase the padding spreads over all 32 banks.
//
// Determinism: no atomics. The backward runs three kernels: D per row, dK
// and dV per key tile (queries streamed past it), dQ per query tile (keys
// streamed past it, P and dP recomputed), so every sum has a fixed order.
//
// f32: plain FMA; one warp per row (a lane per key of a 32-key tile for the
// scores, a lane per 32nd of D for the accumulators).
//
//===----------------------------------------------------------------------===//

// runtime/test/AttentionEmulationTest.cpp compiles this file for the host
// with EFFRT_ATTENTION_EMULATION: threads, warps, shuffles and mma emulated.
#ifndef EFFRT_ATTENTION_EMULATION
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#define EFFRT_DYNAMIC_SHARED(name) extern __shared__ uint4 name[]
#endif

#include "AttentionLayout.h"
#include "AttentionTiles.h"

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr int kWarps = kEffrtAttnWarps;
constexpr int kThreads = kWarps * 32;

__device__ __forceinline__ float negInf() {
  return -__int_as_float(0x7f800000);
}
__device__ __forceinline__ float posInf() { return __int_as_float(0x7f800000); }

/// The element offset of head `head` (b1 * b2Count + b2) of an operand.
__device__ __forceinline__ long long headOffset(const EffrtAttnStrides &s,
                                                const EffrtAttnLayout &L,
                                                long long head) {
  return (head / L.b2Count) * s.b1 + (head % L.b2Count) * s.b2;
}

/// What differs between bf16 and f16: packing two floats and the mma.
template <typename T> struct Elem;

template <> struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
  }
  /// c += a b for one m16n8k16 tile.
  static __device__ __forceinline__ void mma(float c[4], const uint32_t a[4],
                                             const uint32_t b[2]) {
#ifdef EFFRT_ATTENTION_EMULATION
    emulatedMma(c, a, b, /*bf16=*/true);
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]));
#endif
  }
};

template <> struct Elem<__half> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
  }
  static __device__ __forceinline__ void mma(float c[4], const uint32_t a[4],
                                             const uint32_t b[2]) {
#ifdef EFFRT_ATTENTION_EMULATION
    emulatedMma(c, a, b, /*bf16=*/false);
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]));
#endif
  }
};

__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float toFloat(__half x) { return __half2float(x); }

/// Two consecutive 16-bit elements as one register (the lower index in the
/// low half, as mma expects).
template <typename T> __device__ __forceinline__ uint32_t ld32(const T *p) {
  return *reinterpret_cast<const uint32_t *>(p);
}

/// Shared memory row stride (elements) of a D-wide tile: 16 bytes of
/// padding keep rows 16-byte aligned and fragment loads conflict-free.
template <int D> __host__ __device__ constexpr int rowStride() { return D + 8; }

/// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: four 8 x 8 matrices of
/// 16-bit elements in shared memory; lane l gives the address of row l % 8
/// of matrix l / 8 (16 bytes, 16-byte aligned) and receives in r[i] the
/// word of matrix i at row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1
/// (TRANS: rows 2 (l % 4) and 2 (l % 4) + 1 of column l / 4), i.e. mma
/// fragments: one instruction where 32-bit loads took four (and 16-bit
/// ones of a transposed operand eight).
template <bool TRANS, typename T>
__device__ __forceinline__ void ldmatrixX4(uint32_t r[4], const T *row) {
#ifdef EFFRT_ATTENTION_EMULATION
  emulatedLdmatrix(r, row, TRANS);
#else
  uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                 "{%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
                 "{%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#endif
}

/// Rows [row0, row0 + ROWS) of a [rows, D] matrix whose rows are `stride`
/// elements apart into shared memory, zeros past `rows` (so masked products
/// stay finite). 16-byte loads where the host found every row aligned
/// (`vec16`), else 2-byte ones. One 64-bit offset to row0, then 32-bit
/// ones inside the tile (the host keeps `stride` under 2^24).
template <typename T, int D, int ROWS>
__device__ __forceinline__ void loadTile(T *dst, const T *src, int row0,
                                         int rows, long long stride,
                                         int vec16) {
  src += row0 * stride;
  rows -= row0;
  const int rowStep = static_cast<int>(stride);
  if (vec16) {
    constexpr int kChunks = D * sizeof(T) / 16;
    constexpr int kPerChunk = 16 / sizeof(T);
    for (int i = threadIdx.x; i < ROWS * kChunks; i += kThreads) {
      int r = i / kChunks, c = (i % kChunks) * kPerChunk;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (r < rows)
        v = *reinterpret_cast<const uint4 *>(src + r * rowStep + c);
      *reinterpret_cast<uint4 *>(dst + r * rowStride<D>() + c) = v;
    }
    return;
  }
  const uint16_t *from = reinterpret_cast<const uint16_t *>(src);
  uint16_t *to = reinterpret_cast<uint16_t *>(dst);
  for (int i = threadIdx.x; i < ROWS * D; i += kThreads) {
    int r = i / D, c = i % D;
    to[r * rowStride<D>() + c] =
        r < rows ? from[r * rowStep + c] : uint16_t(0);
  }
}

/// The A fragment (16 x 16, k-step kk) of rows [row, row + 16) of a tile in
/// shared memory: a[0..3] = rows +0/+8 of columns +0, then of columns +8.
template <typename T, int D>
__device__ __forceinline__ void loadA(uint32_t a[4], const T *tile, int row,
                                      int kk, int lane) {
  constexpr int S = rowStride<D>();
  const int m = lane / 8;
  ldmatrixX4<false>(
      a, tile + (row + (m & 1) * 8 + lane % 8) * S + kk * 16 + (m >> 1) * 8);
}

/// The B fragments (16 x 8) of tile^T for the column tiles n0 and n0 + 8:
/// B(k, n) = tile[n0 + n][kk * 16 + k]; b[0..1] the first, b[2..3] the
/// second.
template <typename T, int D>
__device__ __forceinline__ void loadBtPair(uint32_t b[4], const T *tile,
                                           int n0, int kk, int lane) {
  constexpr int S = rowStride<D>();
  const int m = lane / 8;
  ldmatrixX4<false>(
      b, tile + (n0 + (m >> 1) * 8 + lane % 8) * S + kk * 16 + (m & 1) * 8);
}

/// The B fragments (16 x 8) of the tile itself for the column tiles n0 and
/// n0 + 8: B(k, n) = tile[k0 + k][n0 + n] (ldmatrix's transpose); b[0..1]
/// the first, b[2..3] the second.
template <typename T, int D>
__device__ __forceinline__ void loadBPair(uint32_t b[4], const T *tile, int k0,
                                          int n0, int lane) {
  constexpr int S = rowStride<D>();
  const int m = lane / 8;
  ldmatrixX4<true>(
      b, tile + (k0 + (m & 1) * 8 + lane % 8) * S + n0 + (m >> 1) * 8);
}

/// C fragments of a 16 x N tile as the A fragment of its k-step kk.
template <typename T>
__device__ __forceinline__ void cToA(uint32_t a[4], const float (*c)[4],
                                     int kk) {
  a[0] = Elem<T>::pack(c[2 * kk][0], c[2 * kk][1]);
  a[1] = Elem<T>::pack(c[2 * kk][2], c[2 * kk][3]);
  a[2] = Elem<T>::pack(c[2 * kk + 1][0], c[2 * kk + 1][1]);
  a[3] = Elem<T>::pack(c[2 * kk + 1][2], c[2 * kk + 1][3]);
}

/// c[w] (16 x N) = A_w times the transpose of rows [0, N) of `b` (D wide
/// in shared memory), for the warp's WM row tiles w; `loadA(f, w, kk)`
/// gives A_w's fragment of k-step kk. Each B fragment pair serves all WM
/// tiles.
template <typename T, int D, int N, int WM, typename LoadA>
__device__ __forceinline__ void productAbT(float (*c)[N / 8][4], LoadA loadA,
                                           const T *b, int lane) {
#pragma unroll
  for (int w = 0; w < WM; ++w)
#pragma unroll
    for (int n = 0; n < N / 8; ++n)
      c[w][n][0] = c[w][n][1] = c[w][n][2] = c[w][n][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t af[WM][4];
#pragma unroll
    for (int w = 0; w < WM; ++w)
      loadA(af[w], w, kk);
#pragma unroll
    for (int n = 0; n < N / 8; n += 2) {
      uint32_t bf[4];
      loadBtPair<T, D>(bf, b, n * 8, kk, lane);
#pragma unroll
      for (int w = 0; w < WM; ++w) {
        Elem<T>::mma(c[w][n], af[w], bf);
        Elem<T>::mma(c[w][n + 1], af[w], bf + 2);
      }
    }
  }
}

/// productAbT with A_w = rows [row + 16 w, row + 16 w + 16) of `a` (D wide
/// in shared memory).
template <typename T, int D, int N, int WM>
__device__ __forceinline__ void productAbTShared(float (*c)[N / 8][4],
                                                 const T *a, int row,
                                                 const T *b, int lane) {
  productAbT<T, D, N, WM>(
      c,
      [&](uint32_t f[4], int w, int kk) {
        loadA<T, D>(f, a, row + 16 * w, kk, lane);
      },
      b, lane);
}

/// acc[w] (16 x D) += the C fragments p[w] (16 x K) times rows [0, K) of
/// `b`, for the warp's WM row tiles (each B fragment pair serves all).
template <typename T, int D, int K, int WM>
__device__ __forceinline__ void accumulatePB(float (*acc)[D / 8][4],
                                             const float (*p)[K / 8][4],
                                             const T *b, int lane) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t af[WM][4];
#pragma unroll
    for (int w = 0; w < WM; ++w)
      cToA<T>(af[w], p[w], kk);
#pragma unroll
    for (int n = 0; n < D / 8; n += 2) {
      uint32_t bf[4];
      loadBPair<T, D>(bf, b, kk * 16, n * 8, lane);
#pragma unroll
      for (int w = 0; w < WM; ++w) {
        Elem<T>::mma(acc[w][n], af[w], bf);
        Elem<T>::mma(acc[w][n + 1], af[w], bf + 2);
      }
    }
  }
}

/// f(w, n, e, col, r) for each C-fragment element a thread holds of its
/// warp's WM row tiles of N columns: element e of column tile n of row
/// tile w, at column col = 8 n + 2 t + (e & 1) and row g + 8 r, r = e >> 1.
template <int WM, int N, typename F>
__device__ __forceinline__ void forEachC(int t, F f) {
#pragma unroll
  for (int w = 0; w < WM; ++w)
#pragma unroll
    for (int n = 0; n < N / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        f(w, n, e, n * 8 + 2 * t + (e & 1), e >> 1);
}

__device__ __forceinline__ float quadMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quadSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/// Stores the 16 x D accumulators of rows `row` (fragment rows g and
/// g + 8; rows `stride` elements apart, even: the host checks), times
/// `mul0` / `mul1`, rows at or past `rows` left out (32-bit offsets: the
/// host keeps `stride` under 2^24).
template <typename T, int D>
__device__ __forceinline__ void storeRows(T *dst, long long stride,
                                          const float (*acc)[4], int row,
                                          int rows, float mul0, float mul1,
                                          int g, int t) {
  const int rowStep = static_cast<int>(stride);
  int r0 = row + g, r1 = r0 + 8;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    int col = n * 8 + 2 * t;
    if (r0 < rows)
      *reinterpret_cast<uint32_t *>(dst + r0 * rowStep + col) =
          Elem<T>::pack(acc[n][0] * mul0, acc[n][1] * mul0);
    if (r1 < rows)
      *reinterpret_cast<uint32_t *>(dst + r1 * rowStep + col) =
          Elem<T>::pack(acc[n][2] * mul1, acc[n][3] * mul1);
  }
}

//===----------------------------------------------------------------------===//
// bf16 / f16 forward
//===----------------------------------------------------------------------===//

/// One block: the query rows of one head (grid x: query tiles, y: heads),
/// 16 * WM a warp; key tiles of BN streamed past.
template <typename T, int D, int WM, int BN>
__device__ void forwardMma(const T *q, const T *k, const T *v, T *o, float *lse,
                           int Tq, int Tk, float scale, int causal,
                           const EffrtAttnLayout &L) {
  constexpr int BM = 16 * WM * kWarps;
  EFFRT_DYNAMIC_SHARED(smem);
  constexpr int S = rowStride<D>();
  T *Qs = reinterpret_cast<T *>(smem);
  T *Ks = Qs + BM * S;
  T *Vs = Ks + BN * S;
  const int64_t head = blockIdx.y;
  const int q0 = blockIdx.x * BM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  q += headOffset(L.q, L, head);
  k += headOffset(L.k, L, head);
  v += headOffset(L.v, L, head);
  o += headOffset(L.o, L, head);
  lse += head * Tq;

  loadTile<T, D, BM>(Qs, q, q0, Tq, L.q.t, L.vec16);
  __syncthreads();
  const float c = scale * kLog2e; // scores in log2 units: exp2f
  const int row = warp * 16 * WM; // the warp's rows in the tile
  // Warps of two row tiles keep their Q fragments in registers (they
  // have them to spare: the accumulators decide the count); 16-row warps
  // load them per key tile, which keeps their registers for occupancy.
  constexpr bool kHoistQ = WM > 1;
  uint32_t qf[kHoistQ ? WM : 1][D / 16][4];
  if constexpr (kHoistQ) {
#pragma unroll
    for (int w = 0; w < WM; ++w)
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
        loadA<T, D>(qf[w][kk], Qs, row + 16 * w, kk, lane);
  }
  int qi[WM][2];
  float acc[WM][D / 8][4], rowMax[WM][2], rowSum[WM][2];
#pragma unroll
  for (int w = 0; w < WM; ++w) {
    qi[w][0] = q0 + row + 16 * w + g;
    qi[w][1] = qi[w][0] + 8;
    rowMax[w][0] = rowMax[w][1] = negInf();
    rowSum[w][0] = rowSum[w][1] = 0.0f;
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      acc[w][n][0] = acc[w][n][1] = acc[w][n][2] = acc[w][n][3] = 0.0f;
  }

  const int end = causal ? min(Tk, q0 + BM) : Tk;
  for (int j0 = 0; j0 < end; j0 += BN) {
    __syncthreads(); // the previous tiles are read
    loadTile<T, D, BN>(Ks, k, j0, Tk, L.k.t, L.vec16);
    loadTile<T, D, BN>(Vs, v, j0, Tk, L.v.t, L.vec16);
    __syncthreads();
    // Under causal masking, a tile past the warp's last row adds nothing.
    if (causal && j0 > q0 + row + 16 * WM - 1)
      continue;
    float s[WM][BN / 8][4];
    if constexpr (kHoistQ)
      productAbT<T, D, BN, WM>(
          s,
          [&](uint32_t f[4], int w, int kk) {
#pragma unroll
            for (int i = 0; i < 4; ++i)
              f[i] = qf[w][kk][i];
          },
          Ks, lane);
    else
      productAbTShared<T, D, BN, WM>(s, Qs, row, Ks, lane);
    // Only a tile that reaches past Tk or (causal) past the warp's first
    // row masks anything: the others skip the compares (warp-uniform).
    const bool mask =
        j0 + BN > Tk || (causal && j0 + BN - 1 > q0 + row);
    forEachC<WM, BN>(t, [&](int w, int n, int e, int, int) { s[w][n][e] *= c; });
    if (mask)
      forEachC<WM, BN>(t, [&](int w, int n, int e, int col, int r) {
        if (j0 + col >= Tk || (causal && j0 + col > qi[w][r]))
          s[w][n][e] = negInf();
      });
#pragma unroll
    for (int w = 0; w < WM; ++w) {
      float tileMax[2] = {rowMax[w][0], rowMax[w][1]};
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          tileMax[e >> 1] = fmaxf(tileMax[e >> 1], s[w][n][e]);
      float shift[2], alpha[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float m = quadMax(tileMax[r]);
        // Everything so far masked: nothing to shift against yet.
        shift[r] = m == negInf() ? 0.0f : m;
        alpha[r] = exp2f(rowMax[w][r] - shift[r]);
        rowMax[w][r] = m;
      }
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[w][n][e] = exp2f(s[w][n][e] - shift[e >> 1]);
          sum[e >> 1] += s[w][n][e];
        }
#pragma unroll
      for (int r = 0; r < 2; ++r)
        rowSum[w][r] = rowSum[w][r] * alpha[r] + sum[r]; // a quad's part
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        acc[w][n][0] *= alpha[0];
        acc[w][n][1] *= alpha[0];
        acc[w][n][2] *= alpha[1];
        acc[w][n][3] *= alpha[1];
      }
    }
    accumulatePB<T, D, BN, WM>(acc, s, Vs, lane);
  }

#pragma unroll
  for (int w = 0; w < WM; ++w) {
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = quadSum(rowSum[w][r]);
      // A row that sees no key: 0/0, NaN, as PyTorch.
      inv[r] = l > 0.0f ? 1.0f / l : __int_as_float(0x7fc00000);
      if (t == 0 && qi[w][r] < Tq)
        lse[qi[w][r]] = l > 0.0f ? (rowMax[w][r] + log2f(l)) * kLn2 : negInf();
    }
    storeRows<T, D>(o + q0 * L.o.t, L.o.t, acc[w], row + 16 * w, Tq - q0,
                    inv[0], inv[1], g, t);
  }
}

//===----------------------------------------------------------------------===//
// bf16 / f16 backward
//===----------------------------------------------------------------------===//

/// dK and dV of the keys of one block (grid x: key tiles, y: heads), 16 *
/// WN a warp; query tiles of BM rows streamed past. A warp works on the
/// transposed problem: S^T = K Q^T, dP^T = V dO^T, dV += P^T dO,
/// dK += dS^T Q.
template <typename T, int D, int BM, int WN>
__device__ void backwardKeyMma(const T *q, const T *k, const T *v,
                               const float *lse, const float *delta,
                               const T *dout, T *dk, T *dv, int Tq, int Tk,
                               float scale, int causal,
                               const EffrtAttnLayout &L) {
  constexpr int BN = 16 * WN * kWarps;
  EFFRT_DYNAMIC_SHARED(smem);
  constexpr int S = rowStride<D>();
  T *Ks = reinterpret_cast<T *>(smem);
  T *Vs = Ks + BN * S;
  T *Qs = Vs + BN * S;
  T *dOs = Qs + BM * S;
  float *lse2s = reinterpret_cast<float *>(dOs + BM * S);
  float *deltas = lse2s + BM;
  const int64_t head = blockIdx.y;
  const int j0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  q += headOffset(L.q, L, head);
  k += headOffset(L.k, L, head);
  v += headOffset(L.v, L, head);
  dout += headOffset(L.dout, L, head);
  dk += headOffset(L.dk, L, head);
  dv += headOffset(L.dv, L, head);
  lse += head * Tq;
  delta += head * Tq;

  loadTile<T, D, BN>(Ks, k, j0, Tk, L.k.t, L.vec16);
  loadTile<T, D, BN>(Vs, v, j0, Tk, L.v.t, L.vec16);
  const float c = scale * kLog2e;
  const int row = warp * 16 * WN; // the warp's keys in the tile
  float dK[WN][D / 8][4], dV[WN][D / 8][4];
#pragma unroll
  for (int w = 0; w < WN; ++w) {
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        dK[w][n][e] = dV[w][n][e] = 0.0f;
  }

  // Query i sees key j iff j <= i: tiles before j0 see none of these keys.
  const int start = causal ? j0 / BM * BM : 0;
  for (int i0 = start; i0 < Tq; i0 += BM) {
    __syncthreads();
    loadTile<T, D, BM>(Qs, q, i0, Tq, L.q.t, L.vec16);
    loadTile<T, D, BM>(dOs, dout, i0, Tq, L.dout.t, L.vec16);
    for (int i = threadIdx.x; i < BM; i += kThreads) {
      bool in = i0 + i < Tq;
      lse2s[i] = in ? lse[i0 + i] * kLog2e : posInf();
      deltas[i] = in ? delta[i0 + i] : 0.0f;
    }
    __syncthreads();
    if (causal && i0 + BM - 1 < j0 + row)
      continue; // every query of the tile is before the warp's keys
    float p[WN][BM / 8][4], ds[WN][BM / 8][4];
    productAbTShared<T, D, BM, WN>(p, Ks, row, Qs, lane);
    productAbTShared<T, D, BM, WN>(ds, Vs, row, dOs, lane);
    // Masks only where the tile reaches past Tq, the warp's keys past Tk,
    // or (causal) its last key past the tile's first query (warp-uniform).
    const bool mask = i0 + BM > Tq || j0 + row + 16 * WN > Tk ||
                      (causal && j0 + row + 16 * WN - 1 > i0);
    // Columns are the tile's queries, rows the warp's keys.
    forEachC<WN, BM>(t, [&](int w, int n, int e, int col, int) {
      p[w][n][e] = exp2f(p[w][n][e] * c - lse2s[col]);
    });
    if (mask)
      forEachC<WN, BM>(t, [&](int w, int n, int e, int col, int r) {
        int key = j0 + row + 16 * w + g + 8 * r;
        if (i0 + col >= Tq || key >= Tk || (causal && key > i0 + col))
          p[w][n][e] = 0.0f;
      });
    forEachC<WN, BM>(t, [&](int w, int n, int e, int col, int) {
      ds[w][n][e] = p[w][n][e] * (ds[w][n][e] - deltas[col]);
    });
    accumulatePB<T, D, BM, WN>(dV, p, dOs, lane);
    accumulatePB<T, D, BM, WN>(dK, ds, Qs, lane);
  }
#pragma unroll
  for (int w = 0; w < WN; ++w) {
    storeRows<T, D>(dk + j0 * L.dk.t, L.dk.t, dK[w], row + 16 * w, Tk - j0,
                    scale, scale, g, t);
    storeRows<T, D>(dv + j0 * L.dv.t, L.dv.t, dV[w], row + 16 * w, Tk - j0,
                    1.0f, 1.0f, g, t);
  }
}

/// dQ of the queries of one block (grid x: query tiles, y: heads), 16 * WM
/// a warp; key tiles of BN keys streamed past, P and dP recomputed:
/// dQ += (P * (dP - D)) K.
template <typename T, int D, int WM, int BN>
__device__ void backwardQueryMma(const T *q, const T *k, const T *v,
                                 const float *lse, const float *delta,
                                 const T *dout, T *dq, int Tq, int Tk,
                                 float scale, int causal,
                                 const EffrtAttnLayout &L) {
  constexpr int BM = 16 * WM * kWarps;
  EFFRT_DYNAMIC_SHARED(smem);
  constexpr int S = rowStride<D>();
  T *Qs = reinterpret_cast<T *>(smem);
  T *dOs = Qs + BM * S;
  T *Ks = dOs + BM * S;
  T *Vs = Ks + BN * S;
  const int64_t head = blockIdx.y;
  const int q0 = blockIdx.x * BM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  q += headOffset(L.q, L, head);
  k += headOffset(L.k, L, head);
  v += headOffset(L.v, L, head);
  dout += headOffset(L.dout, L, head);
  dq += headOffset(L.dq, L, head);
  lse += head * Tq;
  delta += head * Tq;

  loadTile<T, D, BM>(Qs, q, q0, Tq, L.q.t, L.vec16);
  loadTile<T, D, BM>(dOs, dout, q0, Tq, L.dout.t, L.vec16);
  const float c = scale * kLog2e;
  const int row = warp * 16 * WM; // the warp's rows in the tile
  int qi[WM][2];
  float lse2[WM][2], dl[WM][2], dQ[WM][D / 8][4];
#pragma unroll
  for (int w = 0; w < WM; ++w) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      qi[w][r] = q0 + row + 16 * w + g + 8 * r;
      lse2[w][r] = qi[w][r] < Tq ? lse[qi[w][r]] * kLog2e : posInf();
      dl[w][r] = qi[w][r] < Tq ? delta[qi[w][r]] : 0.0f;
    }
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      dQ[w][n][0] = dQ[w][n][1] = dQ[w][n][2] = dQ[w][n][3] = 0.0f;
  }

  const int end = causal ? min(Tk, q0 + BM) : Tk;
  for (int j0 = 0; j0 < end; j0 += BN) {
    __syncthreads();
    loadTile<T, D, BN>(Ks, k, j0, Tk, L.k.t, L.vec16);
    loadTile<T, D, BN>(Vs, v, j0, Tk, L.v.t, L.vec16);
    __syncthreads();
    if (causal && j0 > q0 + row + 16 * WM - 1)
      continue;
    float p[WM][BN / 8][4], ds[WM][BN / 8][4];
    productAbTShared<T, D, BN, WM>(p, Qs, row, Ks, lane);
    productAbTShared<T, D, BN, WM>(ds, dOs, row, Vs, lane);
    // Masks only where the warp's rows reach past Tq, the tile past Tk, or
    // (causal) the tile's last key past the warp's first row.
    const bool mask = q0 + row + 16 * WM > Tq || j0 + BN > Tk ||
                      (causal && j0 + BN - 1 > q0 + row);
    forEachC<WM, BN>(t, [&](int w, int n, int e, int, int r) {
      p[w][n][e] = exp2f(p[w][n][e] * c - lse2[w][r]);
    });
    if (mask)
      forEachC<WM, BN>(t, [&](int w, int n, int e, int col, int r) {
        int key = j0 + col;
        if (qi[w][r] >= Tq || key >= Tk || (causal && key > qi[w][r]))
          p[w][n][e] = 0.0f;
      });
    forEachC<WM, BN>(t, [&](int w, int n, int e, int, int r) {
      ds[w][n][e] = p[w][n][e] * (ds[w][n][e] - dl[w][r]);
    });
    accumulatePB<T, D, BN, WM>(dQ, ds, Ks, lane);
  }
#pragma unroll
  for (int w = 0; w < WM; ++w)
    storeRows<T, D>(dq + q0 * L.dq.t, L.dq.t, dQ[w], row + 16 * w, Tq - q0,
                    scale, scale, g, t);
}

//===----------------------------------------------------------------------===//
// f32 (FMA)
//===----------------------------------------------------------------------===//

constexpr int kF32Rows = 8;   // warps per block, a row each
constexpr int kF32Tile = 32;  // keys (or queries) per tile, a lane each
constexpr int kF32MaxD = 128; // lanes hold D / 32 <= 4 accumulators
constexpr int kF32Stride = kF32MaxD + 1;

__device__ __forceinline__ float warpMax(float x) {
  for (int m = 16; m > 0; m >>= 1)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, m));
  return x;
}
__device__ __forceinline__ float warpSum(float x) {
  for (int m = 16; m > 0; m >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, m);
  return x;
}

/// Rows [row0, row0 + ROWS) of a [rows, D] f32 matrix whose rows are
/// `stride` elements apart into shared memory (stride kF32Stride, zeros
/// past `rows`).
template <int ROWS>
__device__ __forceinline__ void loadTileF32(float *dst, const float *src,
                                            int row0, int rows, int D,
                                            long long stride, int threads) {
  src += row0 * stride;
  rows -= row0;
  const int rowStep = static_cast<int>(stride);
  for (int i = threadIdx.x; i < ROWS * D; i += threads) {
    int r = i / D, col = i % D;
    dst[r * kF32Stride + col] = r < rows ? src[r * rowStep + col] : 0.0f;
  }
}

__device__ __forceinline__ float dotF32(const float *a, const float *b, int D) {
  float s = 0.0f;
  for (int d = 0; d < D; ++d)
    s = fmaf(a[d], b[d], s);
  return s;
}

/// grid x: blocks of kF32Rows query rows, y: heads.
__device__ void forwardF32(const float *q, const float *k, const float *v,
                           float *o, float *lse, int Tq, int Tk, int D,
                           float scale, int causal, const EffrtAttnLayout &L) {
  __shared__ float Ks[kF32Tile * kF32Stride], Vs[kF32Tile * kF32Stride];
  __shared__ float Qs[kF32Rows * kF32Stride];
  constexpr int threads = kF32Rows * 32;
  const int64_t head = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r0 = blockIdx.x * kF32Rows, i = r0 + warp;
  q += headOffset(L.q, L, head);
  k += headOffset(L.k, L, head);
  v += headOffset(L.v, L, head);
  o += headOffset(L.o, L, head);
  lse += head * Tq;
  loadTileF32<kF32Rows>(Qs, q, r0, Tq, D, L.q.t, threads);
  const float *qRow = Qs + warp * kF32Stride;
  float acc[kF32MaxD / 32] = {0.0f, 0.0f, 0.0f, 0.0f};
  float rowMax = negInf(), rowSum = 0.0f;
  const int end = causal ? min(Tk, r0 + kF32Rows) : Tk;
  for (int j0 = 0; j0 < end; j0 += kF32Tile) {
    __syncthreads();
    loadTileF32<kF32Tile>(Ks, k, j0, Tk, D, L.k.t, threads);
    loadTileF32<kF32Tile>(Vs, v, j0, Tk, D, L.v.t, threads);
    __syncthreads();
    if (i >= Tq)
      continue;
    int j = j0 + lane;
    float s = dotF32(qRow, Ks + lane * kF32Stride, D) * scale;
    if (j >= Tk || (causal && j > i))
      s = negInf();
    float m = fmaxf(rowMax, warpMax(s));
    float shift = m == negInf() ? 0.0f : m;
    float p = expf(s - shift), alpha = expf(rowMax - shift);
    rowSum = rowSum * alpha + warpSum(p);
    rowMax = m;
#pragma unroll
    for (int a = 0; a < kF32MaxD / 32; ++a)
      acc[a] *= alpha;
    for (int jj = 0; jj < kF32Tile; ++jj) {
      float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
      for (int a = 0; a < kF32MaxD / 32; ++a)
        if (lane + 32 * a < D)
          acc[a] = fmaf(pj, Vs[jj * kF32Stride + lane + 32 * a], acc[a]);
    }
  }
  if (i >= Tq)
    return;
  float inv = rowSum > 0.0f ? 1.0f / rowSum : __int_as_float(0x7fc00000);
#pragma unroll
  for (int a = 0; a < kF32MaxD / 32; ++a)
    if (lane + 32 * a < D)
      o[i * L.o.t + lane + 32 * a] = acc[a] * inv;
  if (lane == 0)
    lse[i] = rowSum > 0.0f ? rowMax + logf(rowSum) : negInf();
}

/// dQ: a warp per query row, key tiles streamed past.
__device__ void backwardQueryF32(const float *q, const float *k, const float *v,
                                 const float *lse, const float *delta,
                                 const float *dout, float *dq, int Tq, int Tk,
                                 int D, float scale, int causal,
                                 const EffrtAttnLayout &L) {
  __shared__ float Ks[kF32Tile * kF32Stride], Vs[kF32Tile * kF32Stride];
  __shared__ float Qs[kF32Rows * kF32Stride], dOs[kF32Rows * kF32Stride];
  constexpr int threads = kF32Rows * 32;
  const int64_t head = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r0 = blockIdx.x * kF32Rows, i = r0 + warp;
  q += headOffset(L.q, L, head);
  k += headOffset(L.k, L, head);
  v += headOffset(L.v, L, head);
  dout += headOffset(L.dout, L, head);
  dq += headOffset(L.dq, L, head);
  loadTileF32<kF32Rows>(Qs, q, r0, Tq, D, L.q.t, threads);
  loadTileF32<kF32Rows>(dOs, dout, r0, Tq, D, L.dout.t, threads);
  const float l = i < Tq ? lse[head * Tq + i] : 0.0f;
  const float dl = i < Tq ? delta[head * Tq + i] : 0.0f;
  float acc[kF32MaxD / 32] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int end = causal ? min(Tk, r0 + kF32Rows) : Tk;
  for (int j0 = 0; j0 < end; j0 += kF32Tile) {
    __syncthreads();
    loadTileF32<kF32Tile>(Ks, k, j0, Tk, D, L.k.t, threads);
    loadTileF32<kF32Tile>(Vs, v, j0, Tk, D, L.v.t, threads);
    __syncthreads();
    if (i >= Tq)
      continue;
    int j = j0 + lane;
    float ds = 0.0f;
    if (j < Tk && !(causal && j > i)) {
      float p = expf(dotF32(Qs + warp * kF32Stride, Ks + lane * kF32Stride, D) *
                         scale -
                     l);
      float dp = dotF32(dOs + warp * kF32Stride, Vs + lane * kF32Stride, D);
      ds = p * (dp - dl);
    }
    for (int jj = 0; jj < kF32Tile; ++jj) {
      float dsj = __shfl_sync(0xffffffffu, ds, jj);
#pragma unroll
      for (int a = 0; a < kF32MaxD / 32; ++a)
        if (lane + 32 * a < D)
          acc[a] = fmaf(dsj, Ks[jj * kF32Stride + lane + 32 * a], acc[a]);
    }
  }
  if (i >= Tq)
    return;
#pragma unroll
  for (int a = 0; a < kF32MaxD / 32; ++a)
    if (lane + 32 * a < D)
      dq[i * L.dq.t + lane + 32 * a] = acc[a] * scale;
}

/// dK and dV: a warp per key row, query tiles streamed past.
__device__ void backwardKeyF32(const float *q, const float *k, const float *v,
                               const float *lse, const float *delta,
                               const float *dout, float *dk, float *dv, int Tq,
                               int Tk, int D, float scale, int causal,
                               const EffrtAttnLayout &L) {
  __shared__ float Qs[kF32Tile * kF32Stride], dOs[kF32Tile * kF32Stride];
  __shared__ float Ks[kF32Rows * kF32Stride], Vs[kF32Rows * kF32Stride];
  __shared__ float lses[kF32Tile], deltas[kF32Tile];
  constexpr int threads = kF32Rows * 32;
  const int64_t head = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r0 = blockIdx.x * kF32Rows, j = r0 + warp;
  q += headOffset(L.q, L, head);
  k += headOffset(L.k, L, head);
  v += headOffset(L.v, L, head);
  dout += headOffset(L.dout, L, head);
  dk += headOffset(L.dk, L, head);
  dv += headOffset(L.dv, L, head);
  lse += head * Tq;
  delta += head * Tq;
  loadTileF32<kF32Rows>(Ks, k, r0, Tk, D, L.k.t, threads);
  loadTileF32<kF32Rows>(Vs, v, r0, Tk, D, L.v.t, threads);
  float accK[kF32MaxD / 32] = {0.0f, 0.0f, 0.0f, 0.0f};
  float accV[kF32MaxD / 32] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int start = causal ? r0 / kF32Tile * kF32Tile : 0;
  for (int i0 = start; i0 < Tq; i0 += kF32Tile) {
    __syncthreads();
    loadTileF32<kF32Tile>(Qs, q, i0, Tq, D, L.q.t, threads);
    loadTileF32<kF32Tile>(dOs, dout, i0, Tq, D, L.dout.t, threads);
    for (int x = threadIdx.x; x < kF32Tile; x += threads) {
      lses[x] = i0 + x < Tq ? lse[i0 + x] : 0.0f;
      deltas[x] = i0 + x < Tq ? delta[i0 + x] : 0.0f;
    }
    __syncthreads();
    if (j >= Tk)
      continue;
    int i = i0 + lane;
    float p = 0.0f, ds = 0.0f;
    if (i < Tq && !(causal && j > i)) {
      p = expf(dotF32(Qs + lane * kF32Stride, Ks + warp * kF32Stride, D) *
                   scale -
               lses[lane]);
      float dp = dotF32(dOs + lane * kF32Stride, Vs + warp * kF32Stride, D);
      ds = p * (dp - deltas[lane]);
    }
    for (int ii = 0; ii < kF32Tile; ++ii) {
      float pi = __shfl_sync(0xffffffffu, p, ii);
      float dsi = __shfl_sync(0xffffffffu, ds, ii);
#pragma unroll
      for (int a = 0; a < kF32MaxD / 32; ++a)
        if (lane + 32 * a < D) {
          accV[a] = fmaf(pi, dOs[ii * kF32Stride + lane + 32 * a], accV[a]);
          accK[a] = fmaf(dsi, Qs[ii * kF32Stride + lane + 32 * a], accK[a]);
        }
    }
  }
  if (j >= Tk)
    return;
#pragma unroll
  for (int a = 0; a < kF32MaxD / 32; ++a)
    if (lane + 32 * a < D) {
      dk[j * L.dk.t + lane + 32 * a] = accK[a] * scale;
      dv[j * L.dv.t + lane + 32 * a] = accV[a];
    }
}

/// delta[r] = sum_d dout[r, d] * o[r, d] for the `rows` = heads x Tq rows
/// (row r: query r % Tq of head r / Tq), a warp per row. Row and head
/// numbers in 32 bits (the host keeps rows under 2^31): a 64-bit division
/// is a long instruction sequence, and this kernel does little else.
/// 16-bit elements two at a time (4-byte loads) where every row and head
/// offset is even (the host keeps the operands 4-byte aligned).
/// delta = rowsum(dO * o) of every query row.
template <typename T>
__device__ void rowDot(const T *o, const T *dout, float *delta, int64_t rows,
                       int D, int Tq, const EffrtAttnLayout &L) {
  const int lane = threadIdx.x % 32;
  if (sizeof(T) == 2 && L.vec16) {
    // D / 8 lanes a row (8 or 16), 8 elements each: 16-byte loads keep
    // enough bytes in flight to stream at memory speed.
    const int perRow = D / 8;
    const int sub = threadIdx.x % perRow;
    int64_t r = int64_t(blockIdx.x) * effrtAttnRowDotRows(D, 1) +
                threadIdx.x / perRow;
    float s = 0.0f;
    if (r < rows) {
      const int ri = static_cast<int>(r); // rows < 2^31 (the host checks)
      int head = ri / Tq, i = ri % Tq;
      int b1 = head / L.b2Count, b2 = head % L.b2Count;
      const T *oRow = o + b1 * L.o.b1 + b2 * L.o.b2 + i * L.o.t + 8 * sub;
      const T *dRow =
          dout + b1 * L.dout.b1 + b2 * L.dout.b2 + i * L.dout.t + 8 * sub;
      uint4 ov = *reinterpret_cast<const uint4 *>(oRow);
      uint4 dv = *reinterpret_cast<const uint4 *>(dRow);
      T o8[8], d8[8];
      memcpy(o8, &ov, 16);
      memcpy(d8, &dv, 16);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        s = fmaf(toFloat(d8[e]), toFloat(o8[e]), s);
    }
    // Sum over the row's lanes (a power of two, aligned in the warp).
    for (int m = perRow / 2; m > 0; m >>= 1)
      s += __shfl_xor_sync(0xffffffffu, s, m);
    if (r < rows && sub == 0)
      delta[r] = s;
    return;
  }
  int64_t r = int64_t(blockIdx.x) * effrtAttnRowDotRows(D, 0) +
              threadIdx.x / 32;
  if (r >= rows)
    return;
  const int ri = static_cast<int>(r);
  int head = ri / Tq, i = ri % Tq;
  int b1 = head / L.b2Count, b2 = head % L.b2Count;
  const T *oRow = o + b1 * L.o.b1 + b2 * L.o.b2 + i * L.o.t;
  const T *dRow =
      dout + b1 * L.dout.b1 + b2 * L.dout.b2 + i * L.dout.t;
  float s = 0.0f;
  bool pairs = sizeof(T) == 2 && D % 2 == 0 &&
               ((L.o.b1 | L.o.b2 | L.o.t | L.dout.b1 | L.dout.b2 |
                 L.dout.t) & 1) == 0;
  if (pairs) {
    for (int d = 2 * lane; d < D; d += 64) {
      uint32_t ov = ld32(oRow + d), dv = ld32(dRow + d);
      T o2[2], d2[2];
      memcpy(o2, &ov, 4);
      memcpy(d2, &dv, 4);
      s = fmaf(toFloat(d2[0]), toFloat(o2[0]), s);
      s = fmaf(toFloat(d2[1]), toFloat(o2[1]), s);
    }
  } else {
    for (int d = lane; d < D; d += 32)
      s = fmaf(toFloat(dRow[d]), toFloat(oRow[d]), s);
  }
  s = warpSum(s);
  if (lane == 0)
    delta[r] = s;
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points: effrt_attn_<pass>_<type>[_d<D>[_w16]], looked up by
// Attention.cpp; the tiles of AttentionTiles.h (_w16: D = 64's narrow set).
//===----------------------------------------------------------------------===//

#define EFFRT_ATTN_MMA_KERNELS(TY, T, D, WIDE, NAME, FWD_BLOCKS, KV_BLOCKS,    \
                               Q_BLOCKS)                                       \
  extern "C" __global__ void __launch_bounds__(kThreads, FWD_BLOCKS)           \
      effrt_attn_fwd_##NAME(const T *q, const T *k, const T *v, T *o,          \
                            float *lse, int Tq, int Tk, float scale,           \
                            int causal, EffrtAttnLayout L) {                   \
    constexpr EffrtAttnPassTiles tiles = effrtAttnTiles(D, WIDE).forward;      \
    forwardMma<T, D, tiles.warpTiles, tiles.streamed>(q, k, v, o, lse, Tq, Tk, \
                                                      scale, causal, L);       \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(kThreads, KV_BLOCKS)            \
      effrt_attn_bwd_kv_##NAME(const T *q, const T *k, const T *v,             \
                               const float *lse, const float *delta,           \
                               const T *dout, T *dk, T *dv, int Tq, int Tk,    \
                               float scale, int causal, EffrtAttnLayout L) {   \
    constexpr EffrtAttnPassTiles tiles = effrtAttnTiles(D, WIDE).key;          \
    backwardKeyMma<T, D, tiles.streamed, tiles.warpTiles>(                     \
        q, k, v, lse, delta, dout, dk, dv, Tq, Tk, scale, causal, L);          \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(kThreads, Q_BLOCKS)             \
      effrt_attn_bwd_q_##NAME(const T *q, const T *k, const T *v,              \
                              const float *lse, const float *delta,            \
                              const T *dout, T *dq, int Tq, int Tk,            \
                              float scale, int causal, EffrtAttnLayout L) {    \
    constexpr EffrtAttnPassTiles tiles = effrtAttnTiles(D, WIDE).query;        \
    backwardQueryMma<T, D, tiles.warpTiles, tiles.streamed>(                   \
        q, k, v, lse, delta, dout, dq, Tq, Tk, scale, causal, L);              \
  }

// The last three: the blocks an SM each pass is built to fit
// (__launch_bounds__: registers at most 65536 / (128 x blocks)), chosen so
// that ptxas spills nothing or a few words (ptxas -v, sm_90: at most 16
// bytes; the 32-row warps: 246, 251 and 167 registers, 2, 2 and 3 blocks;
// 16-row: 128, 168, 128, i.e. 4, 3, 4; D = 128: 168, 249, 168, i.e. 3, 2,
// 3). Without them ptxas took registers that cost a block for nothing.
EFFRT_ATTN_MMA_KERNELS(bf16, __nv_bfloat16, 64, true, bf16_d64, 2, 2, 3)
EFFRT_ATTN_MMA_KERNELS(bf16, __nv_bfloat16, 64, false, bf16_d64_w16, 4, 3, 4)
EFFRT_ATTN_MMA_KERNELS(bf16, __nv_bfloat16, 128, false, bf16_d128, 3, 2, 3)
EFFRT_ATTN_MMA_KERNELS(f16, __half, 64, true, f16_d64, 2, 2, 3)
EFFRT_ATTN_MMA_KERNELS(f16, __half, 64, false, f16_d64_w16, 4, 3, 4)
EFFRT_ATTN_MMA_KERNELS(f16, __half, 128, false, f16_d128, 3, 2, 3)

extern "C" __global__ void __launch_bounds__(kF32Rows * 32)
    effrt_attn_fwd_f32(const float *q, const float *k, const float *v, float *o,
                       float *lse, int Tq, int Tk, int D, float scale,
                       int causal, EffrtAttnLayout L) {
  forwardF32(q, k, v, o, lse, Tq, Tk, D, scale, causal, L);
}

extern "C" __global__ void __launch_bounds__(kF32Rows * 32)
    effrt_attn_bwd_kv_f32(const float *q, const float *k, const float *v,
                          const float *lse, const float *delta,
                          const float *dout, float *dk, float *dv, int Tq,
                          int Tk, int D, float scale, int causal,
                          EffrtAttnLayout L) {
  backwardKeyF32(q, k, v, lse, delta, dout, dk, dv, Tq, Tk, D, scale, causal,
                 L);
}

extern "C" __global__ void __launch_bounds__(kF32Rows * 32)
    effrt_attn_bwd_q_f32(const float *q, const float *k, const float *v,
                         const float *lse, const float *delta,
                         const float *dout, float *dq, int Tq, int Tk, int D,
                         float scale, int causal, EffrtAttnLayout L) {
  backwardQueryF32(q, k, v, lse, delta, dout, dq, Tq, Tk, D, scale, causal, L);
}

#define EFFRT_ATTN_ROWDOT(TY, T)                                               \
  extern "C" __global__ void __launch_bounds__(256) effrt_attn_rowdot_##TY(    \
      const T *o, const T *dout, float *delta, long long rows, int D, int Tq,  \
      EffrtAttnLayout L) {                                                     \
    rowDot<T>(o, dout, delta, rows, D, Tq, L);                                 \
  }
EFFRT_ATTN_ROWDOT(bf16, __nv_bfloat16)
EFFRT_ATTN_ROWDOT(f16, __half)
EFFRT_ATTN_ROWDOT(f32, float)
