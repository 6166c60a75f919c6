/*===- Kernels.h - Library calls made by compiled code -----------*- C -*-===//
 *
 * Compiled CPU code (.effx, target cpu-x86_64) imports these symbols; the
 * process that loads it provides them: effrun exports them from its
 * executable, libeffrt.so from the library (load it with RTLD_GLOBAL).
 * All matrices are row-major float32; leading dimensions and batch strides
 * count elements.
 *
 *   effrt_sgemm:          C = alpha * op(A) op(B) + beta * C,
 *                         op(A) is M x K, op(B) is K x N, C is M x N;
 *                         op(X) = X, or X transposed when transX != 0.
 *   effrt_sgemm_batched:  the same for `batch` matrices at A + b*strideA,
 *                         B + b*strideB, C + b*strideC; with strideC == 0
 *                         they all add to one C:
 *                         C = alpha * sum_b op(A_b) op(B_b) + beta * C.
 *
 * As in BLAS, C is not read when beta == 0.
 *
 *   effrt_allreduce_sum_f32: in place, `data[0..count)` (inside the step's
 *                         memory) becomes the sum over the ranks of the
 *                         run of every rank's `data` (the device's
 *                         Collectives; one rank: left as it is). Every
 *                         rank calls it in the same order. A failure ends
 *                         the process (all ranks) with one line.
 *   effrt_reduce_scatter_sum_f32: `recv[0..recvCount)` becomes block rank()
 *                         of the sum over the ranks of every rank's
 *                         `send[0..N*recvCount)` (eff.reduce_scatter).
 *   effrt_all_gather_f32: `recv[0..N*sendCount)` becomes every rank's
 *                         `send[0..sendCount)`, in rank order
 *                         (eff.all_gather).
 *   effrt_shard_f32:      `shard[0..shardCount)` becomes block rank() of this
 *                         rank's `whole[0..N*shardCount)` (eff.shard; no
 *                         communication).
 *                         All three work as effrt_allreduce_sum_f32: every
 *                         pointer inside the step's memory, every rank in
 *                         the same order, one rank: a copy.
 *
 *===----------------------------------------------------------------------===*/

#ifndef EFFRT_KERNELS_H
#define EFFRT_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void effrt_sgemm(int32_t transA, int32_t transB, int64_t M, int64_t N,
                 int64_t K, float alpha, const float *A, int64_t lda,
                 const float *B, int64_t ldb, float beta, float *C,
                 int64_t ldc);

void effrt_sgemm_batched(int32_t transA, int32_t transB, int64_t batch,
                         int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t lda, int64_t strideA,
                         const float *B, int64_t ldb, int64_t strideB,
                         float beta, float *C, int64_t ldc, int64_t strideC);

void effrt_allreduce_sum_f32(float *data, int64_t count);
void effrt_reduce_scatter_sum_f32(const float *send, float *recv,
                                  int64_t recvCount);
void effrt_all_gather_f32(const float *send, float *recv, int64_t sendCount);
void effrt_shard_f32(const float *whole, float *shard, int64_t shardCount);

#ifdef __cplusplus
} /* extern "C" */

namespace effrt {
/// Sets the number of BLAS threads (OpenBLAS); values < 1 mean one.
void setBlasThreads(int threads);
/// The number of BLAS threads in use.
int blasThreads();
/// The BLAS in use, e.g. "OpenBLAS 0.3.21 ..." or "reference".
const char *blasName();
} // namespace effrt
#endif

#endif /* EFFRT_KERNELS_H */
