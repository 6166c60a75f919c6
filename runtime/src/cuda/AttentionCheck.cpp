//===- AttentionCheck.cpp - The attention kernels for a test harness ------===//
//
// libeffrt_attention_check.so: the kernels of Attention.cu on the caller's
// current CUDA context and stream, through a C ABI that Python's ctypes can
// call with PyTorch's tensors (scripts/gpu/attention_check.py compares them
// with torch's attention). Not part of effrun. Errors are returned, never
// thrown: 0 on success, else 1 and one line in
// effrt_attention_check_error().
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "CudaDriver.h"

#include "effrt/Error.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

using namespace effrt;
using namespace effrt::cuda;

namespace {
std::string &lastError() {
  static thread_local std::string error;
  return error;
}

/// The kernels loaded into the current context, once per context (kept
/// until the process ends: the caller owns the context).
AttentionKernels &kernelsOfCurrentContext() {
  static std::mutex mutex;
  static auto *loaded = new std::map<CUcontext, AttentionKernels *>;
  const Driver &driver = Driver::get();
  CUcontext context = nullptr;
  driver.check(driver.api().cuCtxGetCurrent(&context), "cuCtxGetCurrent");
  if (!context)
    fail("no CUDA context is current on this thread (initialise one first, "
         "e.g. torch.cuda.init())");
  std::lock_guard<std::mutex> lock(mutex);
  AttentionKernels *&kernels = (*loaded)[context];
  if (!kernels)
    kernels = new AttentionKernels(driver);
  return *kernels;
}

template <typename Body> int guarded(Body body) {
  lastError().clear();
  try {
    body();
    return 0;
  } catch (const std::exception &e) {
    lastError() = e.what();
    return 1;
  }
}

AttentionProblem problem(int64_t heads, int64_t tq, int64_t tk, int64_t d,
                         float scale, int32_t causal, int32_t type) {
  AttentionProblem p;
  p.heads = heads;
  p.tq = tq;
  p.tk = tk;
  p.d = d;
  p.scale = scale;
  p.causal = causal != 0;
  p.type = type;
  return p;
}
} // namespace

extern "C" {

/// 1 when the runtime was built with the kernels (nvcc found), else 0.
__attribute__((visibility("default"))) int effrt_attention_check_built() {
  return attentionKernelsBuilt() ? 1 : 0;
}

/// The error of the last failed call on this thread, one line.
__attribute__((visibility("default"))) const char *
effrt_attention_check_error() {
  return lastError().c_str();
}

/// Which D = 64 kernels the calls below run on the current context: 16 or
/// 32 rows a warp (AttentionTiles.h); starts as EFFRT_ATTENTION_WARP_ROWS
/// says (unset: 32).
__attribute__((visibility("default"))) int
effrt_attention_check_use_warp_rows(int32_t rows) {
  return guarded([&] { kernelsOfCurrentContext().useWarpRows(rows); });
}

/// Queues the forward on `stream` (a CUstream of the current context).
__attribute__((visibility("default"))) int
effrt_attention_check_fwd(void *stream, const void *q, const void *k,
                          const void *v, void *o, float *lse, int64_t heads,
                          int64_t tq, int64_t tk, int64_t d, float scale,
                          int32_t causal, int32_t type) {
  return guarded([&] {
    AttentionProblem p = problem(heads, tq, tk, d, scale, causal, type);
    kernelsOfCurrentContext().forward(static_cast<CUstream>(stream), p,
                                      contiguousLayout(p), q, k, v, o, lse);
  });
}

/// The forward on operands of any layout: `b2` heads per B1, `strides`
/// the B1, B2 and T element strides of q, k, v and o (12 values).
__attribute__((visibility("default"))) int effrt_attention_check_fwd_strided(
    void *stream, const void *q, const void *k, const void *v, void *o,
    float *lse, int64_t heads, int64_t b2, int64_t tq, int64_t tk, int64_t d,
    float scale, int32_t causal, int32_t type, const int64_t *strides) {
  return guarded([&] {
    AttentionProblem p = problem(heads, tq, tk, d, scale, causal, type);
    p.b2 = b2;
    EffrtAttnLayout layout = contiguousLayout(p);
    EffrtAttnStrides *fields[] = {&layout.q, &layout.k, &layout.v, &layout.o};
    for (int i = 0; i < 4; ++i)
      *fields[i] = {strides[3 * i], strides[3 * i + 1], strides[3 * i + 2]};
    kernelsOfCurrentContext().forward(static_cast<CUstream>(stream), p, layout,
                                      q, k, v, o, lse);
  });
}

/// Queues the backward on `stream`; `delta` holds heads x tq floats.
__attribute__((visibility("default"))) int effrt_attention_check_bwd(
    void *stream, const void *q, const void *k, const void *v, const void *o,
    const float *lse, const void *dout, void *dq, void *dk, void *dv,
    float *delta, int64_t heads, int64_t tq, int64_t tk, int64_t d, float scale,
    int32_t causal, int32_t type) {
  return guarded([&] {
    AttentionProblem p = problem(heads, tq, tk, d, scale, causal, type);
    kernelsOfCurrentContext().backward(static_cast<CUstream>(stream), p,
                                       contiguousLayout(p), q, k, v, o, lse,
                                       dout, dq, dk, dv, delta);
  });
}

/// The backward on operands of any layout: `strides` the B1, B2 and T
/// element strides of q, k, v, o, dout, dq, dk and dv (24 values).
__attribute__((visibility("default"))) int effrt_attention_check_bwd_strided(
    void *stream, const void *q, const void *k, const void *v, const void *o,
    const float *lse, const void *dout, void *dq, void *dk, void *dv,
    float *delta, int64_t heads, int64_t b2, int64_t tq, int64_t tk, int64_t d,
    float scale, int32_t causal, int32_t type, const int64_t *strides) {
  return guarded([&] {
    AttentionProblem p = problem(heads, tq, tk, d, scale, causal, type);
    p.b2 = b2;
    EffrtAttnLayout layout = contiguousLayout(p);
    EffrtAttnStrides *fields[] = {&layout.q,    &layout.k,  &layout.v,
                                  &layout.o,    &layout.dout, &layout.dq,
                                  &layout.dk,   &layout.dv};
    for (int i = 0; i < 8; ++i)
      *fields[i] = {strides[3 * i], strides[3 * i + 1], strides[3 * i + 2]};
    kernelsOfCurrentContext().backward(static_cast<CUstream>(stream), p, layout,
                                       q, k, v, o, lse, dout, dq, dk, dv,
                                       delta);
  });
}

} // extern "C"
