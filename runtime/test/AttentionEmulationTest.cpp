//===- AttentionEmulationTest.cpp - The CUDA attention kernels, emulated --===//
//
// Runs the kernels of runtime/src/cuda/Attention.cu on the CPU, compiled
// from the same source: every thread of a block is a fiber (ucontext) on
// one OS thread, __syncthreads a barrier over the block's fibers, a warp's
// shuffles, ldmatrix and mma.sync.m16n8k16 exchanges among its 32 fibers
// (the fragments laid out as PTX defines them; ldmatrix's row addresses
// checked for alignment and shared memory), shared memory a buffer per
// block. The launch configurations and shared memory sizes
// are Attention.cpp's. Results are compared with float64 attention
// computed here from the same rounded inputs: forward o and lse, backward
// dq, dk, dv; bf16, f16 and f32; head sizes 64 and 128; causal and not;
// T not a multiple of the tiles; Tq != Tk.
//
// What this proves without a GPU: the indexing, tiling, masking, online
// softmax and backward passes. What it cannot: the GPU's own arithmetic
// (exp2f, ex2.approx), its memory model, speed. scripts/gpu/attention_check.py
// checks those on a GPU against PyTorch.
//
//===----------------------------------------------------------------------===//

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_functions.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <ucontext.h>
#include <vector>

//===----------------------------------------------------------------------===//
// The emulated machine
//===----------------------------------------------------------------------===//

namespace emu {
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};

struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  bool done = false;
};

struct Barrier {
  int count = 0, arrived = 0;
  unsigned generation = 0;
};

ucontext_t scheduler;
std::vector<Fiber> fibers;
int current = 0;
std::function<void()> body;
Barrier block;
std::vector<Barrier> warps;
/// Per warp: 32 lanes x 6 words exchanged by shuffles and mma.
std::vector<uint32_t> exchange;
std::vector<uint4> dynamicShared;
} // namespace emu

emu::Dim3 threadIdx, blockIdx, blockDim;

namespace emu {
void yield() { swapcontext(&fibers[current].context, &scheduler); }

void arriveAndWait(Barrier &b) {
  unsigned generation = b.generation;
  if (++b.arrived == b.count) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  while (b.generation == generation)
    yield();
}

void fiberMain() {
  body();
  fibers[current].done = true;
}

/// Runs `kernel` on a grid of x by y blocks of `threads` threads.
void launch(unsigned gridX, unsigned gridY, unsigned threads,
            size_t sharedBytes, std::function<void()> kernel) {
  blockDim = {threads, 1, 1};
  body = std::move(kernel);
  for (unsigned by = 0; by < gridY; ++by)
    for (unsigned bx = 0; bx < gridX; ++bx) {
      blockIdx = {bx, by, 0};
      fibers.assign(threads, Fiber());
      block = Barrier{static_cast<int>(threads), 0, 0};
      warps.assign(threads / 32, Barrier{32, 0, 0});
      exchange.assign(threads / 32 * 32 * 6, 0);
      // Garbage, as on a GPU: the kernels must not read what they did not
      // write.
      dynamicShared.assign(sharedBytes / 16 + 1,
                           make_uint4(0x7fc00000u, 1u, 0xffffffffu, 7u));
      for (unsigned t = 0; t < threads; ++t) {
        Fiber &f = fibers[t];
        f.stack.resize(256 * 1024);
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack.data();
        f.context.uc_stack.ss_size = f.stack.size();
        f.context.uc_link = &scheduler;
        makecontext(&f.context, fiberMain, 0);
      }
      for (bool running = true; running;) {
        running = false;
        for (unsigned t = 0; t < threads; ++t) {
          if (fibers[t].done)
            continue;
          running = true;
          current = static_cast<int>(t);
          threadIdx = {t, 0, 0};
          swapcontext(&scheduler, &fibers[t].context);
        }
      }
    }
}

int lane() { return static_cast<int>(threadIdx.x % 32); }
int warp() { return static_cast<int>(threadIdx.x / 32); }
uint32_t *warpExchange() { return exchange.data() + warp() * 32 * 6; }

float shuffle(float v, int source) {
  uint32_t *x = warpExchange();
  std::memcpy(&x[lane() * 6], &v, 4);
  arriveAndWait(warps[warp()]);
  float r;
  std::memcpy(&r, &x[source * 6], 4);
  arriveAndWait(warps[warp()]);
  return r;
}

float halfToFloat(uint16_t bits, bool bf16) {
  if (bf16) {
    uint32_t w = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  }
  __half h;
  std::memcpy(&h, &bits, 2);
  return __half2float(h);
}
} // namespace emu

void __syncthreads() { emu::arriveAndWait(emu::block); }
float __shfl_xor_sync(unsigned, float v, int mask) {
  return emu::shuffle(v, emu::lane() ^ mask);
}
float __shfl_sync(unsigned, float v, int source) {
  return emu::shuffle(v, source);
}
float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline int min(int a, int b) { return a < b ? a : b; }

/// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: d = a b + c over the
/// warp's fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16").
void emulatedMma(float c[4], const uint32_t a[4], const uint32_t b[2],
                 bool bf16) {
  using namespace emu;
  uint32_t *x = warpExchange();
  int me = lane();
  for (int i = 0; i < 4; ++i)
    x[me * 6 + i] = a[i];
  x[me * 6 + 4] = b[0];
  x[me * 6 + 5] = b[1];
  arriveAndWait(warps[warp()]);
  auto element = [&](uint32_t word, int k) {
    return halfToFloat(static_cast<uint16_t>(k % 2 ? word >> 16 : word), bf16);
  };
  // A (16 x 16): row g (+8), column 2t (+1) (+8): lane 4g + t,
  // register (row >= 8) + 2 (col >= 8).
  auto A = [&](int row, int k) {
    int l = (row % 8) * 4 + (k % 8) / 2;
    return element(x[l * 6 + (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)], k);
  };
  // B (16 x 8): row (k) 2t (+1) (+8), column g: lane 4n + t, register k >= 8.
  auto B = [&](int k, int n) {
    int l = n * 4 + (k % 8) / 2;
    return element(x[l * 6 + 4 + (k >= 8 ? 1 : 0)], k);
  };
  int g = me / 4, t = me % 4;
  float d[4];
  for (int e = 0; e < 4; ++e) {
    int row = g + (e >= 2 ? 8 : 0), col = 2 * t + (e & 1);
    double sum = c[e];
    for (int k = 0; k < 16; ++k)
      sum += double(A(row, k)) * double(B(k, col));
    d[e] = static_cast<float>(sum);
  }
  arriveAndWait(warps[warp()]);
  for (int e = 0; e < 4; ++e)
    c[e] = d[e];
}

/// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 over the warp's lanes
/// (PTX ISA, "ldmatrix"): lane l gives row l % 8 of matrix l / 8 and
/// receives in r[i] the 16-bit pair of matrix i at row l / 4, columns
/// 2 (l % 4) and +1, or with `trans` rows 2 (l % 4) and +1 of column l / 4.
/// Each row address must be 16-byte aligned and in shared memory.
void emulatedLdmatrix(uint32_t r[4], const void *row, bool trans) {
  using namespace emu;
  uint32_t *x = warpExchange();
  int me = lane();
  uintptr_t address = reinterpret_cast<uintptr_t>(row);
  uintptr_t shared = reinterpret_cast<uintptr_t>(dynamicShared.data());
  if (address % 16 != 0 || address < shared ||
      address + 16 > shared + dynamicShared.size() * sizeof(uint4)) {
    std::fprintf(stderr, "ldmatrix: lane %d's row address is not a 16-byte "
                         "aligned row of shared memory\n", me);
    std::abort();
  }
  x[me * 6] = static_cast<uint32_t>(address);
  x[me * 6 + 1] = static_cast<uint32_t>(uint64_t(address) >> 32);
  arriveAndWait(warps[warp()]);
  auto rowOf = [&](int l) {
    return reinterpret_cast<const uint16_t *>(
        uintptr_t(x[l * 6]) | uintptr_t(uint64_t(x[l * 6 + 1]) << 32));
  };
  uint32_t out[4];
  for (int i = 0; i < 4; ++i) {
    if (trans) {
      const uint16_t *lo = rowOf(8 * i + 2 * (me % 4));
      const uint16_t *hi = rowOf(8 * i + 2 * (me % 4) + 1);
      out[i] = uint32_t(lo[me / 4]) | (uint32_t(hi[me / 4]) << 16);
    } else {
      const uint16_t *src = rowOf(8 * i + me / 4);
      out[i] = uint32_t(src[2 * (me % 4)]) |
               (uint32_t(src[2 * (me % 4) + 1]) << 16);
    }
  }
  arriveAndWait(warps[warp()]);
  for (int i = 0; i < 4; ++i)
    r[i] = out[i];
}

#define EFFRT_ATTENTION_EMULATION 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define EFFRT_DYNAMIC_SHARED(name) uint4 *name = emu::dynamicShared.data()

#include "../src/cuda/Attention.cu"

//===----------------------------------------------------------------------===//
// The launches of Attention.cpp
//===----------------------------------------------------------------------===//

namespace {

enum Type { F32 = 0, F16 = 1, BF16 = 2 };

/// Device memory: raw bytes of one element type.
struct Buffer {
  std::vector<uint16_t> half;
  std::vector<float> single;
  void *data(Type type) {
    return type == F32 ? static_cast<void *>(single.data())
                       : static_cast<void *>(half.data());
  }
};

uint16_t toHalfBits(float v, Type type) {
  uint16_t bits;
  if (type == BF16) {
    __nv_bfloat16 h = __float2bfloat16_rn(v);
    std::memcpy(&bits, &h, 2);
  } else {
    __half h = __float2half_rn(v);
    std::memcpy(&bits, &h, 2);
  }
  return bits;
}

Buffer makeBuffer(const std::vector<double> &values, Type type) {
  Buffer b;
  if (type == F32)
    b.single.assign(values.begin(), values.end());
  else
    for (double v : values)
      b.half.push_back(toHalfBits(static_cast<float>(v), type));
  return b;
}

Buffer emptyBuffer(size_t n, Type type) {
  Buffer b;
  if (type == F32)
    b.single.assign(n, std::nanf(""));
  else
    b.half.assign(n, 0x7fc0);
  return b;
}

std::vector<double> values(const Buffer &b, Type type) {
  std::vector<double> out;
  if (type == F32)
    out.assign(b.single.begin(), b.single.end());
  else
    for (uint16_t h : b.half)
      out.push_back(emu::halfToFloat(h, type == BF16));
  return out;
}

/// Random values rounded to `type`, as doubles.
std::vector<double> randomRounded(size_t n, Type type, std::mt19937 &rng,
                                  double scale) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<double> out(n);
  for (double &v : out) {
    float x = normal(rng) * static_cast<float>(scale);
    v = type == F32 ? x : emu::halfToFloat(toHalfBits(x, type), type == BF16);
  }
  return out;
}

struct Reference {
  std::vector<double> o, lse, dq, dk, dv;
};

/// float64 attention and its gradients, [heads, T, D].
Reference reference(const std::vector<double> &q, const std::vector<double> &k,
                    const std::vector<double> &v, const std::vector<double> &dO,
                    int heads, int Tq, int Tk, int D, double scale,
                    bool causal) {
  Reference r;
  r.o.assign(size_t(heads) * Tq * D, 0);
  r.lse.assign(size_t(heads) * Tq, 0);
  r.dq.assign(size_t(heads) * Tq * D, 0);
  r.dk.assign(size_t(heads) * Tk * D, 0);
  r.dv.assign(size_t(heads) * Tk * D, 0);
  std::vector<double> p(size_t(Tq) * Tk), dp(size_t(Tq) * Tk);
  for (int h = 0; h < heads; ++h) {
    auto Q = [&](int i, int d) { return q[(size_t(h) * Tq + i) * D + d]; };
    auto K = [&](int j, int d) { return k[(size_t(h) * Tk + j) * D + d]; };
    auto V = [&](int j, int d) { return v[(size_t(h) * Tk + j) * D + d]; };
    auto G = [&](int i, int d) { return dO[(size_t(h) * Tq + i) * D + d]; };
    for (int i = 0; i < Tq; ++i) {
      double m = -INFINITY;
      for (int j = 0; j < Tk; ++j) {
        double s = -INFINITY;
        if (!(causal && j > i)) {
          s = 0;
          for (int d = 0; d < D; ++d)
            s += Q(i, d) * K(j, d);
          s *= scale;
        }
        p[size_t(i) * Tk + j] = s;
        m = std::max(m, s);
      }
      double sum = 0;
      for (int j = 0; j < Tk; ++j)
        sum += std::exp(p[size_t(i) * Tk + j] - m);
      r.lse[size_t(h) * Tq + i] = m + std::log(sum);
      for (int j = 0; j < Tk; ++j)
        p[size_t(i) * Tk + j] = std::exp(p[size_t(i) * Tk + j] - m) / sum;
      for (int d = 0; d < D; ++d) {
        double o = 0;
        for (int j = 0; j < Tk; ++j)
          o += p[size_t(i) * Tk + j] * V(j, d);
        r.o[(size_t(h) * Tq + i) * D + d] = o;
      }
    }
    for (int i = 0; i < Tq; ++i) {
      double rowDot = 0;
      for (int d = 0; d < D; ++d)
        rowDot += G(i, d) * r.o[(size_t(h) * Tq + i) * D + d];
      for (int j = 0; j < Tk; ++j) {
        double g = 0;
        for (int d = 0; d < D; ++d)
          g += G(i, d) * V(j, d);
        dp[size_t(i) * Tk + j] = p[size_t(i) * Tk + j] * (g - rowDot);
      }
    }
    for (int i = 0; i < Tq; ++i)
      for (int d = 0; d < D; ++d) {
        double s = 0;
        for (int j = 0; j < Tk; ++j)
          s += dp[size_t(i) * Tk + j] * K(j, d);
        r.dq[(size_t(h) * Tq + i) * D + d] = s * scale;
      }
    for (int j = 0; j < Tk; ++j)
      for (int d = 0; d < D; ++d) {
        double sk = 0, sv = 0;
        for (int i = 0; i < Tq; ++i) {
          sk += dp[size_t(i) * Tk + j] * Q(i, d);
          sv += p[size_t(i) * Tk + j] * G(i, d);
        }
        r.dk[(size_t(h) * Tk + j) * D + d] = sk * scale;
        r.dv[(size_t(h) * Tk + j) * D + d] = sv;
      }
  }
  return r;
}

double maxError(const std::vector<double> &a, const std::vector<double> &b,
                double *magnitude) {
  double e = 0, m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = std::fabs(a[i] - b[i]);
    e = std::isnan(d) ? INFINITY : std::max(e, d);
    m = std::max(m, std::fabs(b[i]));
  }
  *magnitude = m;
  return e;
}

/// How the operands lie in memory.
enum class Layout {
  /// [heads, T, D] each.
  Contiguous,
  /// As a GPT's projections: q, k, v side by side in one [B1, T, 3, B2, D]
  /// buffer (dq, dk, dv likewise in another), o and dO [B1, T, B2, D];
  /// rows `pad` elements longer than they need to be.
  Packed,
};

/// Where element (head, row, d) of an operand lies: strides and offset.
struct Placement {
  EffrtAttnStrides strides;
  long long offset;
  long long at(int b2Count, int head, int row, int d) const {
    return offset + (head / b2Count) * strides.b1 +
           (head % b2Count) * strides.b2 + row * strides.t + d;
  }
};

/// Contiguous [heads, T, D] values placed as `p` into `into`.
std::vector<double> place(const std::vector<double> &values, const Placement &p,
                          int heads, int b2Count, int T, int D,
                          std::vector<double> into) {
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < T; ++t)
      for (int d = 0; d < D; ++d)
        into[p.at(b2Count, h, t, d)] = values[(size_t(h) * T + t) * D + d];
  return into;
}

/// The contiguous [heads, T, D] view of an operand placed as `p`.
std::vector<double> gather(const std::vector<double> &buffer,
                           const Placement &p, int heads, int b2Count, int T,
                           int D) {
  std::vector<double> out(size_t(heads) * T * D);
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < T; ++t)
      for (int d = 0; d < D; ++d)
        out[(size_t(h) * T + t) * D + d] = buffer[p.at(b2Count, h, t, d)];
  return out;
}

bool runCase(Type type, int D, bool causal, int heads, int Tq, int Tk,
             double qScale, Layout layout = Layout::Contiguous, int b2 = 0,
             int pad = 0) {
  std::mt19937 rng(1234 + D + Tq * 7 + Tk * 13 + type * 5 + causal);
  size_t nq = size_t(heads) * Tq * D, nk = size_t(heads) * Tk * D;
  std::vector<double> q = randomRounded(nq, type, rng, qScale),
                      k = randomRounded(nk, type, rng, 1.0),
                      v = randomRounded(nk, type, rng, 1.0),
                      dO = randomRounded(nq, type, rng, 1.0);
  float scale = 1.0f / std::sqrt(float(D));
  bool packed = layout == Layout::Packed;
  // Placements (packed needs Tq == Tk: one projection).
  int b2Count = packed ? b2 : heads;
  int b1Count = heads / b2Count;
  Placement pq, pk, pv, po, pdo, pdq, pdk, pdv;
  size_t qkvSize = 0, outSize = 0;
  if (!packed) {
    pq = po = pdo = pdq = {{(long long)b2Count * Tq * D, (long long)Tq * D, D},
                           0};
    pk = pv = pdk = pdv = {{(long long)b2Count * Tk * D, (long long)Tk * D, D},
                           0};
  } else {
    long long row = 3LL * b2Count * D + pad;
    EffrtAttnStrides qkv{Tq * row, D, row};
    pq = pdq = {qkv, 0};
    pk = pdk = {qkv, (long long)b2Count * D};
    pv = pdv = {qkv, 2LL * b2Count * D};
    long long orow = (long long)b2Count * D + pad;
    po = pdo = {{Tq * orow, D, orow}, 0};
    qkvSize = size_t(b1Count) * Tq * row;
    outSize = size_t(b1Count) * Tq * orow;
  }
  EffrtAttnLayout L{};
  L.q = pq.strides, L.k = pk.strides, L.v = pv.strides, L.o = po.strides;
  L.dout = pdo.strides, L.dq = pdq.strides, L.dk = pdk.strides;
  L.dv = pdv.strides;
  L.b2Count = b2Count;
  Buffer bq, bk, bv, bdo, bo, bdq, bdk, bdv;
  if (!packed) {
    bq = makeBuffer(q, type), bk = makeBuffer(k, type);
    bv = makeBuffer(v, type), bdo = makeBuffer(dO, type);
    bo = emptyBuffer(nq, type), bdq = emptyBuffer(nq, type);
    bdk = emptyBuffer(nk, type), bdv = emptyBuffer(nk, type);
  } else {
    // q, k, v in one buffer, dq, dk, dv in another (its padding stays NaN).
    std::vector<double> qkv(qkvSize, 0.0);
    qkv = place(q, pq, heads, b2Count, Tq, D, qkv);
    qkv = place(k, pk, heads, b2Count, Tk, D, qkv);
    qkv = place(v, pv, heads, b2Count, Tk, D, qkv);
    bq = makeBuffer(qkv, type);
    bdo = makeBuffer(place(dO, pdo, heads, b2Count, Tq, D,
                           std::vector<double>(outSize, 0.0)),
                     type);
    bo = emptyBuffer(outSize, type);
    bdq = emptyBuffer(qkvSize, type);
  }
  auto element = [&](Buffer &b, long long offset) -> void * {
    return type == F32 ? static_cast<void *>(b.single.data() + offset)
                       : static_cast<void *>(b.half.data() + offset);
  };
  std::vector<float> lse(size_t(heads) * Tq, std::nanf("")),
      delta(size_t(heads) * Tq, std::nanf(""));
  const void *Q = element(bq, pq.offset),
             *K = element(packed ? bq : bk, pk.offset),
             *V = element(packed ? bq : bv, pv.offset), *DO = bdo.data(type);
  void *O = bo.data(type), *DQ = element(bdq, pdq.offset),
       *DK = element(packed ? bdq : bdk, pdk.offset),
       *DV = element(packed ? bdq : bdv, pdv.offset);
  // As Attention.cpp's rowsAligned16 decides: for the tiles (q, k, v,
  // dO) and for the rowdot kernel (o, dO).
  auto aligned16 = [&](std::initializer_list<const void *> pointers,
                       std::initializer_list<EffrtAttnStrides> strides) {
    if (type == F32)
      return 0;
    for (const void *p : pointers)
      if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
        return 0;
    for (const EffrtAttnStrides &st : strides)
      for (long long x : {st.b1, st.b2, st.t})
        if (x % 8 != 0)
          return 0;
    return 1;
  };
  L.vec16 = aligned16({Q, K, V, DO}, {L.q, L.k, L.v, L.dout});
  EffrtAttnLayout rowLayout = L;
  rowLayout.vec16 = aligned16({O, DO}, {L.o, L.dout});
  float *Lse = lse.data(), *Delta = delta.data();
  int c = causal ? 1 : 0;
  unsigned h = unsigned(heads);
  auto blocks = [](int n, int per) { return unsigned((n + per - 1) / per); };

  // As AttentionKernels::forward / backward launch them; `wide`: D = 64's
  // 32-row warps (AttentionTiles.h), else 16.
  auto launchAll = [&](bool wide) {
    if (type == F32) {
      emu::launch(blocks(Tq, 8), h, 256, 0, [&] {
        effrt_attn_fwd_f32((const float *)Q, (const float *)K, (const float *)V,
                           (float *)O, Lse, Tq, Tk, D, scale, c, L);
      });
    } else {
      EffrtAttnPassTiles t = effrtAttnTiles(D, wide).forward;
      emu::launch(blocks(Tq, t.blockRows()), h, 128,
                  effrtAttnForwardShared(t, D), [&] {
        if (type == BF16 && D == 64)
          (wide ? effrt_attn_fwd_bf16_d64 : effrt_attn_fwd_bf16_d64_w16)(
              (const __nv_bfloat16 *)Q, (const __nv_bfloat16 *)K,
              (const __nv_bfloat16 *)V, (__nv_bfloat16 *)O, Lse, Tq, Tk, scale, c,
              L);
        else if (type == BF16)
          effrt_attn_fwd_bf16_d128(
              (const __nv_bfloat16 *)Q, (const __nv_bfloat16 *)K,
              (const __nv_bfloat16 *)V, (__nv_bfloat16 *)O, Lse, Tq, Tk, scale, c,
              L);
        else if (D == 64)
          (wide ? effrt_attn_fwd_f16_d64 : effrt_attn_fwd_f16_d64_w16)((const __half *)Q, (const __half *)K,
                                 (const __half *)V, (__half *)O, Lse, Tq, Tk,
                                 scale, c, L);
        else
          effrt_attn_fwd_f16_d128((const __half *)Q, (const __half *)K,
                                  (const __half *)V, (__half *)O, Lse, Tq, Tk,
                                  scale, c, L);
      });
    }
    long long rows = (long long)heads * Tq;
    emu::launch(blocks(int(rows), effrtAttnRowDotRows(D, rowLayout.vec16)), 1,
                256, 0, [&] {
      if (type == F32)
        effrt_attn_rowdot_f32((const float *)O, (const float *)DO, Delta, rows,
                              D, Tq, rowLayout);
      else if (type == BF16)
        effrt_attn_rowdot_bf16((const __nv_bfloat16 *)O,
                               (const __nv_bfloat16 *)DO, Delta, rows, D, Tq,
                               rowLayout);
      else
        effrt_attn_rowdot_f16((const __half *)O, (const __half *)DO, Delta, rows,
                              D, Tq, rowLayout);
    });
    if (type == F32) {
      emu::launch(blocks(Tk, 8), h, 256, 0, [&] {
        effrt_attn_bwd_kv_f32((const float *)Q, (const float *)K,
                              (const float *)V, Lse, Delta, (const float *)DO,
                              (float *)DK, (float *)DV, Tq, Tk, D, scale, c, L);
      });
      emu::launch(blocks(Tq, 8), h, 256, 0, [&] {
        effrt_attn_bwd_q_f32((const float *)Q, (const float *)K, (const float *)V,
                             Lse, Delta, (const float *)DO, (float *)DQ, Tq, Tk,
                             D, scale, c, L);
      });
    } else {
      EffrtAttnTiles t = effrtAttnTiles(D, wide);
      unsigned kvSmem = effrtAttnKeyShared(t.key, D),
               qSmem = effrtAttnQueryShared(t.query, D);
  #define EFFRT_BWD(TY, T, DD)                                                   \
    do {                                                                         \
      emu::launch(blocks(Tk, t.key.blockRows()), h, 128, kvSmem, [&] {                          \
        effrt_attn_bwd_kv_##TY##_d##DD((const T *)Q, (const T *)K, (const T *)V, \
                                       Lse, Delta, (const T *)DO, (T *)DK,       \
                                       (T *)DV, Tq, Tk, scale, c, L);            \
      });                                                                        \
      emu::launch(blocks(Tq, t.query.blockRows()), h, 128, qSmem, [&] {                           \
        effrt_attn_bwd_q_##TY##_d##DD((const T *)Q, (const T *)K, (const T *)V,  \
                                      Lse, Delta, (const T *)DO, (T *)DQ, Tq,    \
                                      Tk, scale, c, L);                          \
      });                                                                        \
    } while (0)
      if (type == BF16 && D == 64 && wide)
        EFFRT_BWD(bf16, __nv_bfloat16, 64);
      else if (type == BF16 && D == 64)
        EFFRT_BWD(bf16, __nv_bfloat16, 64_w16);
      else if (type == BF16)
        EFFRT_BWD(bf16, __nv_bfloat16, 128);
      else if (D == 64 && wide)
        EFFRT_BWD(f16, __half, 64);
      else if (D == 64)
        EFFRT_BWD(f16, __half, 64_w16);
      else
        EFFRT_BWD(f16, __half, 128);
  #undef EFFRT_BWD
    }
  };
  launchAll(/*wide=*/true);
  // D = 64's two tile sets must give the same bits (AttentionTiles.h).
  std::string sameBits;
  if (type != F32 && D == 64) {
    std::vector<Buffer *> outputs = {&bo, &bdq};
    if (!packed)
      outputs.insert(outputs.end(), {&bdk, &bdv});
    std::vector<std::vector<uint16_t>> wideBits;
    for (Buffer *b : outputs) {
      wideBits.push_back(b->half);
      std::fill(b->half.begin(), b->half.end(), uint16_t(0x7fc0));
    }
    std::vector<float> wideLse = lse;
    std::fill(lse.begin(), lse.end(), std::nanf(""));
    launchAll(/*wide=*/false);
    bool same = std::memcmp(wideLse.data(), lse.data(),
                            lse.size() * sizeof(float)) == 0;
    for (size_t i = 0; i < outputs.size(); ++i)
      same = same && wideBits[i] == outputs[i]->half;
    sameBits = same ? "; 16- and 32-row warps: the same bits"
                    : "; 16- and 32-row warps DIFFER";
  }
  Reference r = reference(q, k, v, dO, heads, Tq, Tk, D, scale, causal);
  std::vector<double> lse64(lse.begin(), lse.end());
  const double tolerance = type == F32 ? 1e-4 : 2e-2;
  const char *names[] = {"f32", "f16", "bf16"};
  char label[128];
  std::snprintf(label, sizeof label, "%s d%d %s %dx%dx%d%s", names[type], D,
                causal ? "causal" : "full", heads, Tq, Tk,
                !packed ? ""
                : pad   ? " packed, rows not 16-byte aligned"
                        : " packed");
  bool ok = true;
  std::string line;
  struct Item {
    const char *name;
    std::vector<double> got;
    const std::vector<double> &want;
  } items[] = {
      {"o", packed ? gather(values(bo, type), po, heads, b2Count, Tq, D)
                   : values(bo, type),
       r.o},
      {"lse", lse64, r.lse},
      {"dq", packed ? gather(values(bdq, type), pdq, heads, b2Count, Tq, D)
                    : values(bdq, type),
       r.dq},
      {"dk", packed ? gather(values(bdq, type), pdk, heads, b2Count, Tk, D)
                    : values(bdk, type),
       r.dk},
      {"dv", packed ? gather(values(bdq, type), pdv, heads, b2Count, Tk, D)
                    : values(bdv, type),
       r.dv}};
  for (const Item &item : items) {
    double magnitude;
    double e = maxError(item.got, item.want, &magnitude);
    double bound = tolerance * std::max(1.0, magnitude);
    char part[96];
    std::snprintf(part, sizeof part, " %s %.2e", item.name, e);
    line += part;
    if (!(e <= bound))
      ok = false;
  }
  if (sameBits.find("DIFFER") != std::string::npos)
    ok = false;
  std::printf("%s %s:%s%s\n", ok ? "PASS" : "FAIL", label, line.c_str(),
              sameBits.c_str());
  return ok;
}

} // namespace

int main() {
  int failed = 0, passed = 0;
  for (Type type : {BF16, F16, F32})
    for (int D : {64, 128})
      for (bool causal : {false, true})
        (runCase(type, D, causal, 2, 77, 77, 1.0) ? passed : failed) += 1;
  // Tq > Tk and a sharper softmax (the online maximum moves).
  (runCase(BF16, 64, true, 2, 130, 77, 2.0) ? passed : failed) += 1;
  (runCase(F32, 64, true, 2, 130, 77, 2.0) ? passed : failed) += 1;
  // Several blocks of each D = 64 tile set and many streamed tiles (the
  // causal skips of 32-row warps).
  (runCase(F16, 64, true, 1, 300, 300, 1.0) ? passed : failed) += 1;
  // Tq < Tk: keys no query sees get zero gradients.
  (runCase(F16, 64, true, 1, 40, 150, 1.0) ? passed : failed) += 1;
  // Operands read and written in place (AttentionLayout.h): q, k, v out of
  // one [B1, T, 3, B2, D] projection, o and dO [B1, T, B2, D], dq, dk, dv
  // into one buffer like the projection; 2 x 2 heads. Rows padded by two
  // elements are not 16-byte aligned: the 2-byte tile loads.
  for (Type type : {BF16, F16, F32})
    (runCase(type, 64, true, 4, 77, 77, 1.0, Layout::Packed, 2) ? passed
                                                                : failed) += 1;
  (runCase(BF16, 128, false, 4, 77, 77, 1.0, Layout::Packed, 2) ? passed
                                                                : failed) += 1;
  (runCase(BF16, 64, true, 4, 77, 77, 1.0, Layout::Packed, 2, 2) ? passed
                                                                 : failed) += 1;
  (runCase(F32, 64, false, 4, 77, 77, 1.0, Layout::Packed, 2, 1) ? passed
                                                                 : failed) += 1;
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
