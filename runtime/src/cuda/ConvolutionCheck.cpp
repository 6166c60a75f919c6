//===- ConvolutionCheck.cpp - The cuDNN convolutions for a test harness ---===//
//
// libeffrt_conv_check.so: the convolutions of Convolution.cpp (what
// effrt_cuda_conv2d_* run) on the caller's current CUDA context and stream,
// through a C ABI that Python's ctypes can call with PyTorch's tensors
// (scripts/gpu/conv_check.py compares them with torch's convolutions). Not
// part of effrun. Errors are returned, never thrown: 0 on success, else 1
// and one line in effrt_conv_check_error().
//
//===----------------------------------------------------------------------===//

#include "Convolution.h"
#include "CudaDriver.h"

#include "effrt/Error.h"

#include <map>
#include <mutex>
#include <string>

using namespace effrt;
using namespace effrt::cuda;

namespace {
std::string &lastError() {
  static thread_local std::string error;
  return error;
}

/// The cuDNN handle and plans of the current context, once per context
/// (kept until the process ends: the caller owns the context).
Convolutions &convolutionsOfCurrentContext() {
  static std::mutex mutex;
  static auto *made = new std::map<CUcontext, Convolutions *>;
  const Driver &driver = Driver::get();
  CUcontext context = nullptr;
  driver.check(driver.api().cuCtxGetCurrent(&context), "cuCtxGetCurrent");
  if (!context)
    fail("no CUDA context is current on this thread (initialise one first, "
         "e.g. torch.cuda.init())");
  std::lock_guard<std::mutex> lock(mutex);
  Convolutions *&convolutions = (*made)[context];
  if (!convolutions)
    convolutions = new Convolutions();
  return *convolutions;
}
} // namespace

extern "C" {

/// The error of the last failed call on this thread, one line.
__attribute__((visibility("default"))) const char *effrt_conv_check_error() {
  return lastError().c_str();
}

/// Queues one convolution call on `stream` (a CUstream of the current
/// context) as effrt_cuda_conv2d_* would: `kind` EFFRT_CONV2D_*, `shape`
/// the 18 values of EFFRT_CONV2D_SHAPE_ARGS, `type` 0 f32, 1 f16, 2 bf16;
/// `a`, `b`, `out` in the entry points' order.
__attribute__((visibility("default"))) int
effrt_conv_check_run(void *stream, int32_t kind, int32_t type,
                     const int64_t *shape, const void *a, const void *b,
                     void *out, void *workspace, int64_t workspaceBytes,
                     int32_t allowTf32) {
  lastError().clear();
  try {
    ConvProblem p;
    p.kind = kind;
    p.type = type;
    for (size_t i = 0; i < p.shape.size(); ++i)
      p.shape[i] = shape[i];
    convolutionsOfCurrentContext().run(
        p, a, b, out, static_cast<CUstream>(stream),
        reinterpret_cast<CUdeviceptr>(workspace),
        static_cast<uint64_t>(workspaceBytes), allowTf32 != 0);
    return 0;
  } catch (const std::exception &e) {
    lastError() = e.what();
    return 1;
  }
}

} // extern "C"
