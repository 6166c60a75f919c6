//===- Attention.cpp - Loading and launching the attention kernels --------===//
//
// The host half of Attention.cu: the embedded fatbin loaded with the driver
// API, one function per pass, element type and head dimension looked up at
// load (not while a step is captured as a CUDA graph), and the launches.
// The tiles (AttentionTiles.h) size the grids and shared memory; D = 64
// has two sets of kernels, 32 rows a warp (the default) and 16
// (EFFRT_ATTENTION_WARP_ROWS=16), which give the same bits.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "AttentionTiles.h"
#include "CudaDriver.h"

#include "effrt/Error.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#ifdef EFFRT_HAVE_ATTENTION_FATBIN
// kAttentionFatbin: Attention.cu compiled for sm_80 and sm_90 (+ PTX),
// generated at build time (runtime/src/CMakeLists.txt).
#include "AttentionFatbin.inc"
#endif

using namespace effrt;
using namespace effrt::cuda;

namespace {
/// Rows per block of the f32 kernels (a warp per row).
constexpr int64_t kF32Rows = 8;
constexpr unsigned kMmaThreads = 32 * kEffrtAttnWarps, kF32Threads = 256,
                   kRowDotThreads = 256;
constexpr int64_t kMaxGridY = 65535;

const char *typeSuffix(int32_t type) {
  return type == 0 ? "f32" : type == 1 ? "f16" : "bf16";
}

/// EFFRT_ATTENTION_WARP_ROWS: which D = 64 tiles run (16 or 32 rows a
/// warp; unset: 32). For measuring one against the other.
int warpRowsFromEnvironment() {
  const char *value = std::getenv("EFFRT_ATTENTION_WARP_ROWS");
  if (!value || !*value)
    return 32;
  if (std::strcmp(value, "16") == 0)
    return 16;
  if (std::strcmp(value, "32") == 0)
    return 32;
  fail("EFFRT_ATTENTION_WARP_ROWS is '", value,
       "': the attention kernels have 16 or 32 rows a warp");
}
} // namespace

bool cuda::attentionKernelsBuilt() {
#ifdef EFFRT_HAVE_ATTENTION_FATBIN
  return true;
#else
  return false;
#endif
}

AttentionProblem cuda::attentionProblem(int64_t B1, int64_t B2, int64_t Tq,
                                        int64_t Tk, int64_t D, int64_t Dv,
                                        float scale, int32_t causal,
                                        int32_t type) {
  if (B1 < 0 || B2 < 0)
    fail("attention over ", B1, " x ", B2, " heads");
  if (D != Dv)
    fail("attention with head dimension ", D, " for queries and keys but ", Dv,
         " for values is not supported on cuda");
  AttentionProblem p;
  p.heads = B1 * B2;
  p.b2 = B2 > 0 ? B2 : 1;
  p.tq = Tq;
  p.tk = Tk;
  p.d = D;
  p.scale = scale;
  p.causal = causal != 0;
  p.type = type;
  return p;
}

EffrtAttnLayout cuda::contiguousLayout(const AttentionProblem &p) {
  EffrtAttnLayout layout{};
  int64_t b2 = p.b2 > 0 ? p.b2 : 1;
  EffrtAttnStrides queries{b2 * p.tq * p.d, p.tq * p.d, p.d};
  EffrtAttnStrides keys{b2 * p.tk * p.d, p.tk * p.d, p.d};
  layout.q = layout.o = layout.dout = layout.dq = queries;
  layout.k = layout.v = layout.dk = layout.dv = keys;
  layout.b2Count = static_cast<int>(b2);
  return layout;
}

bool cuda::rowsAligned16(std::initializer_list<AttentionOperand> operands) {
  for (const AttentionOperand &a : operands) {
    if (reinterpret_cast<uintptr_t>(a.data) % 16 != 0)
      return false;
    for (long long stride : {a.strides.b1, a.strides.b2, a.strides.t})
      if (stride % 8 != 0) // 8 two-byte elements
        return false;
  }
  return true;
}

std::string cuda::checkAttention(
    const AttentionProblem &p, std::initializer_list<AttentionOperand> operands) {
  if (p.type < 0 || p.type > 2)
    return "element type " + std::to_string(p.type) +
           " is none of 0 (f32), 1 (f16), 2 (bf16)";
  if (p.heads < 0 || p.tq < 0 || p.tk < 0)
    return "a negative size";
  if (p.tq > 0 && p.heads > 0 && p.tk == 0)
    return "no keys (Tk = 0): softmax over nothing";
  if (p.tq > INT32_MAX || p.tk > INT32_MAX)
    return "sequences of " + std::to_string(p.tq) + " queries and " +
           std::to_string(p.tk) + " keys are too long (at most 2^31 - 1)";
  if (p.b2 < 1 || (p.heads > 0 && p.heads % p.b2 != 0))
    return std::to_string(p.heads) + " heads are not B1 x " +
           std::to_string(p.b2) + " heads";
  if (p.heads > kMaxGridY)
    return std::to_string(p.heads) + " heads (batch x heads) are too many " +
           "(at most 65535)";
  if (p.type == 0 && (p.d < 1 || p.d > 128))
    return "head dimension " + std::to_string(p.d) +
           " is not supported for f32 (1 to 128 are)";
  if (p.type != 0 && p.d != 64 && p.d != 128)
    return "head dimension " + std::to_string(p.d) + " is not supported for " +
           typeSuffix(p.type) + " (64 and 128 are)";
  // The kernels step between a tile's rows with 32-bit offsets.
  for (const AttentionOperand &a : operands)
    if (a.strides.t < 0 || a.strides.t >= (1LL << 24))
      return "a row stride of " + std::to_string(a.strides.t) +
             " elements is not supported (0 to 2^24 - 1 are)";
  if (p.type != 0)
    for (const AttentionOperand &a : operands) {
      if (reinterpret_cast<uintptr_t>(a.data) % 4 != 0)
        return std::string(typeSuffix(p.type)) +
               " operands must be 4-byte aligned (one is at " +
               std::to_string(reinterpret_cast<uintptr_t>(a.data)) + ")";
      if (a.written && (a.strides.b1 % 2 || a.strides.b2 % 2 || a.strides.t % 2))
        return std::string(typeSuffix(p.type)) +
               " results need even strides (one has " +
               std::to_string(a.strides.b1) + ", " +
               std::to_string(a.strides.b2) + ", " +
               std::to_string(a.strides.t) + ")";
    }
  return "";
}

namespace {
/// What each index of AttentionKernels' kernel table holds.
struct KernelVariant {
  int32_t type; // 0 f32, 1 f16, 2 bf16
  int64_t d;    // 0: any (f32)
  bool narrow;  // D = 64's 16-row warps
};
constexpr KernelVariant kKernelVariants[] = {
    {0, 0, false},  {1, 64, false}, {1, 128, false}, {2, 64, false},
    {2, 128, false}, {1, 64, true}, {2, 64, true}};
} // namespace

int AttentionKernels::variant(int32_t type, int64_t d) const {
  bool narrow = type != 0 && d == 64 && warpRows_ == 16;
  for (int v = 0; v < kVariants; ++v) {
    const KernelVariant &k = kKernelVariants[v];
    if (k.type == type && (type == 0 || k.d == d) && k.narrow == narrow)
      return v;
  }
  fail("attention: no kernels for type ", type, " and head dimension ", d);
}

void AttentionKernels::useWarpRows(int rows) {
  if (rows != 16 && rows != 32)
    fail("attention: ", rows,
         " rows a warp; the kernels have 16 or 32 (AttentionTiles.h)");
  warpRows_ = rows;
}

AttentionKernels::AttentionKernels(const Driver &driver)
    : driver_(driver), warpRows_(warpRowsFromEnvironment()) {
#ifndef EFFRT_HAVE_ATTENTION_FATBIN
  fail("fused attention on cuda: this runtime was built without the CUDA "
       "toolkit's nvcc, so it has no attention kernels (rebuild runtime/ "
       "where nvcc is found, or -DEFFRT_NVCC=/path/to/nvcc)");
#else
  const DriverSymbols &cu = driver_.api();
  driver_.check(cu.cuModuleLoadData(&module_, kAttentionFatbin),
                "loading the attention kernels (sm_80, sm_90) with "
                "cuModuleLoadData");
  try {
    static_assert(sizeof(kKernelVariants) / sizeof(kKernelVariants[0]) ==
                  kVariants);
    for (int v = 0; v < kVariants; ++v) {
      const auto [type, d, narrow] = kKernelVariants[v];
      std::string suffix = typeSuffix(type);
      if (type != 0)
        suffix += "_d" + std::to_string(d) + (narrow ? "_w16" : "");
      auto find = [&](const std::string &name, unsigned sharedBytes,
                      unsigned blockRows) {
        Kernel k;
        driver_.check(
            cu.cuModuleGetFunction(&k.function, module_, name.c_str()),
            "cuModuleGetFunction '" + name + "'");
        k.sharedBytes = sharedBytes;
        k.blockRows = blockRows;
        if (sharedBytes > 0)
          driver_.check(cu.cuFuncSetAttribute(
                            k.function,
                            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            static_cast<int>(sharedBytes)),
                        "allowing " + std::to_string(sharedBytes) +
                            " bytes of shared memory to '" + name + "'");
        return k;
      };
      if (type == 0) {
        // Static shared arrays, a warp per row.
        kernels_[Forward][v] = find("effrt_attn_fwd_f32", 0, kF32Rows);
        kernels_[BackwardKey][v] = find("effrt_attn_bwd_kv_f32", 0, kF32Rows);
        kernels_[BackwardQuery][v] =
            find("effrt_attn_bwd_q_f32", 0, kF32Rows);
      } else {
        EffrtAttnTiles tiles = effrtAttnTiles(static_cast<int>(d), !narrow);
        int di = static_cast<int>(d);
        kernels_[Forward][v] =
            find("effrt_attn_fwd_" + suffix,
                 effrtAttnForwardShared(tiles.forward, di),
                 static_cast<unsigned>(tiles.forward.blockRows()));
        kernels_[BackwardKey][v] =
            find("effrt_attn_bwd_kv_" + suffix,
                 effrtAttnKeyShared(tiles.key, di),
                 static_cast<unsigned>(tiles.key.blockRows()));
        kernels_[BackwardQuery][v] =
            find("effrt_attn_bwd_q_" + suffix,
                 effrtAttnQueryShared(tiles.query, di),
                 static_cast<unsigned>(tiles.query.blockRows()));
      }
      // Its grid depends on the operands' alignment (backward()).
      kernels_[RowDot][v] =
          find(std::string("effrt_attn_rowdot_") + typeSuffix(type), 0, 1);
    }
  } catch (...) {
    cu.cuModuleUnload(module_);
    throw;
  }
#endif
}

AttentionKernels::~AttentionKernels() {
  if (module_)
    driver_.api().cuModuleUnload(module_);
}

unsigned AttentionKernels::blocksFor(const Kernel &kernel, int64_t rows) {
  return static_cast<unsigned>((rows + kernel.blockRows - 1) /
                               kernel.blockRows);
}

void AttentionKernels::launch(const Kernel &kernel, CUstream stream,
                              unsigned gridX, unsigned gridY, unsigned threads,
                              void **params) const {
  driver_.check(driver_.api().cuLaunchKernel(kernel.function, gridX, gridY, 1,
                                             threads, 1, 1, kernel.sharedBytes,
                                             stream, params, nullptr),
                "cuLaunchKernel (attention)");
}

void AttentionKernels::forward(CUstream stream, const AttentionProblem &p,
                               EffrtAttnLayout layout, const void *q,
                               const void *k, const void *v, void *o,
                               float *lse) const {
  std::initializer_list<AttentionOperand> loaded = {
      {q, layout.q, false}, {k, layout.k, false}, {v, layout.v, false}};
  if (std::string why = checkAttention(
          p, {loaded.begin()[0], loaded.begin()[1], loaded.begin()[2],
              {o, layout.o, true}});
      !why.empty())
    fail("attention: ", why);
  layout.b2Count = static_cast<int>(p.b2);
  layout.vec16 = p.type != 0 && rowsAligned16(loaded) ? 1 : 0;
  if (p.heads == 0 || p.tq == 0)
    return;
  int tq = static_cast<int>(p.tq), tk = static_cast<int>(p.tk),
      d = static_cast<int>(p.d), causal = p.causal ? 1 : 0;
  float scale = p.scale;
  unsigned heads = static_cast<unsigned>(p.heads);
  const Kernel &kernel = kernels_[Forward][variant(p.type, p.d)];
  if (p.type == 0) {
    void *params[] = {&q,  &k, &v,     &o,      &lse,
                      &tq, &tk, &d, &scale, &causal, &layout};
    launch(kernel, stream, blocksFor(kernel, p.tq), heads, kF32Threads,
           params);
  } else {
    void *params[] = {&q,  &k,  &v,     &o,      &lse,
                      &tq, &tk, &scale, &causal, &layout};
    launch(kernel, stream, blocksFor(kernel, p.tq), heads, kMmaThreads,
           params);
  }
}

void AttentionKernels::backward(CUstream stream, const AttentionProblem &p,
                                EffrtAttnLayout layout, const void *q,
                                const void *k, const void *v, const void *o,
                                const float *lse, const void *dout, void *dq,
                                void *dk, void *dv, float *delta) const {
  std::initializer_list<AttentionOperand> loaded = {{q, layout.q, false},
                                                    {k, layout.k, false},
                                                    {v, layout.v, false},
                                                    {dout, layout.dout, false}};
  if (std::string why = checkAttention(
          p, {loaded.begin()[0], loaded.begin()[1], loaded.begin()[2],
              loaded.begin()[3], {o, layout.o, false}, {dq, layout.dq, true},
              {dk, layout.dk, true}, {dv, layout.dv, true}});
      !why.empty())
    fail("attention: ", why);
  layout.b2Count = static_cast<int>(p.b2);
  layout.vec16 = p.type != 0 && rowsAligned16(loaded) ? 1 : 0;
  if (p.heads == 0 || (p.tq == 0 && p.tk == 0))
    return;
  if (p.tq == 0)
    fail("attention: the backward of no queries (Tq = 0) with ", p.tk,
         " keys is not supported on cuda");
  int tq = static_cast<int>(p.tq), tk = static_cast<int>(p.tk),
      d = static_cast<int>(p.d), causal = p.causal ? 1 : 0;
  float scale = p.scale;
  unsigned heads = static_cast<unsigned>(p.heads);
  int v8 = variant(p.type, p.d);

  // delta = rowsum(dO * o) (rows numbered in 32 bits).
  long long rows = static_cast<long long>(p.heads * p.tq);
  if (rows > INT32_MAX)
    fail("attention: the backward of ", p.heads, " heads x ", p.tq,
         " queries has too many rows (at most 2^31 - 1)");
  {
    // Its vec16: o's and dO's rows (the other kernels': q, k, v and dO's).
    EffrtAttnLayout rowLayout = layout;
    rowLayout.vec16 = p.type != 0 && rowsAligned16({{o, layout.o, false},
                                                    {dout, layout.dout, false}})
                          ? 1
                          : 0;
    void *params[] = {&o, &dout, &delta, &rows, &d, &tq, &rowLayout};
    int64_t perBlock = effrtAttnRowDotRows(d, rowLayout.vec16);
    launch(kernels_[RowDot][v8], stream,
           static_cast<unsigned>((rows + perBlock - 1) / perBlock), 1,
           kRowDotThreads, params);
  }
  const float *deltaIn = delta;
  if (p.type == 0) {
    void *keyParams[] = {&q,  &k,  &v,  &lse,   &deltaIn, &dout,  &dk,
                         &dv, &tq, &tk, &d, &scale,   &causal, &layout};
    launch(kernels_[BackwardKey][v8], stream,
           blocksFor(kernels_[BackwardKey][v8], p.tk), heads, kF32Threads,
           keyParams);
    void *queryParams[] = {&q,  &k,  &v,  &lse,   &deltaIn, &dout,
                           &dq, &tq, &tk, &d, &scale,   &causal, &layout};
    launch(kernels_[BackwardQuery][v8], stream,
           blocksFor(kernels_[BackwardQuery][v8], p.tq), heads, kF32Threads,
           queryParams);
  } else {
    void *keyParams[] = {&q,  &k,  &v,  &lse, &deltaIn, &dout,   &dk,
                         &dv, &tq, &tk, &scale, &causal, &layout};
    launch(kernels_[BackwardKey][v8], stream,
           blocksFor(kernels_[BackwardKey][v8], p.tk), heads, kMmaThreads,
           keyParams);
    void *queryParams[] = {&q,  &k,     &v,      &lse,   &deltaIn, &dout,
                           &dq, &tq, &tk, &scale, &causal, &layout};
    launch(kernels_[BackwardQuery][v8], stream,
           blocksFor(kernels_[BackwardQuery][v8], p.tq), heads, kMmaThreads,
           queryParams);
  }
}
