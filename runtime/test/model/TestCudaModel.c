/*===- TestCudaModel.c - A hand-written "compiled" CUDA step for tests ----===//
 *
 * Stands in for the host code of a cuda .effx (target "cuda") in the
 * runtime's own tests, as model/TestModel.c does for the CPU: a shared
 * object that receives the regions as memrefs of device addresses and
 * imports what compiled CUDA code imports from the process — the MLIR GPU
 * runtime ABI (a constructor loads its kernel with mgpuModuleLoad, as the
 * code of MLIR's gpu.binary does) and effrt_cuda_gemm.
 *
 * - dot (entry effx_dot_step): model/TestModel.c's dot step on the GPU:
 *   loss = sum(x w) and w -= 0.125 x^T 1 by cuBLASLt products, the step
 *   counter by a PTX kernel (compute_80, JIT-compiled by the driver).
 *
 *===----------------------------------------------------------------------===*/

#include <stddef.h>
#include <stdint.h>

typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
} MemRef1D;

void *mgpuModuleLoad(void *data, size_t size);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate(void);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamDestroy(void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void effrt_cuda_gemm(int32_t transA, int32_t transB, int64_t M, int64_t N,
                     int64_t K, float alpha, const void *A, int64_t lda,
                     const void *B, int64_t ldb, float beta, void *C,
                     int64_t ldc, int32_t abType, int32_t cType);

#include "CountKernel.h"

static void *module;

__attribute__((constructor)) static void loadKernels(void) {
  module = mgpuModuleLoad((void *)kCountPtx, sizeof kCountPtx);
}

__attribute__((destructor)) static void unloadKernels(void) {
  mgpuModuleUnload(module);
}

#define AT(region, type, offset)                                               \
  ((type *)((char *)(region)->aligned + (offset)))

void effx_dot_step(MemRef1D *state, MemRef1D *arena, MemRef1D *io) {
  float *w = AT(state, float, 0), *ones = AT(state, float, 64);
  int64_t *counter = AT(state, int64_t, 128);
  float *t = AT(arena, float, 0);
  const float *x = AT(io, float, 0);
  float *loss = AT(io, float, 64);
  void *stream = mgpuStreamCreate();
  mgpuMemset32(t, 0, 4, stream);
  effrt_cuda_gemm(0, 0, 4, 1, 3, 1.0f, x, 3, w, 1, 0.0f, t, 1, 0, 0);
  effrt_cuda_gemm(0, 0, 1, 1, 4, 1.0f, ones, 4, t, 1, 0.0f, loss, 1, 0, 0);
  effrt_cuda_gemm(1, 0, 3, 1, 4, -0.125f, x, 3, ones, 1, 1.0f, w, 1, 0, 0);
  void *count = mgpuModuleGetFunction(module, "effrt_test_count");
  void *params[] = {&counter};
  mgpuLaunchKernel(count, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL, 1);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}
