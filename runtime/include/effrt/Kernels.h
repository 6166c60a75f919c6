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
 *   effrt_allreduce_sum_f32_start / effrt_reduce_scatter_sum_f32_start /
 *   effrt_all_gather_f32_start: the same collectives, started: each
 *                         returns a request at once, and the collective
 *                         runs on the rank's communication thread while
 *                         the step computes (eff.*_start, from
 *                         eff-overlap-collectives). The buffers are the
 *                         collective's until it is waited for: nothing
 *                         reads the result or writes the input before.
 *                         Collectives run in the order they start (started
 *                         and blocking ones alike), on every rank the same,
 *                         with the same MPI calls as the blocking entry
 *                         points: results are bit-identical.
 *   effrt_collective_wait: returns once `request` has finished (and every
 *                         one started before it); `send` and `recv` are
 *                         its buffers (for an all-reduce the same one),
 *                         checked against the request. With one rank, or
 *                         where MPI cannot run a communication thread, the
 *                         start runs the collective itself and the wait
 *                         returns at once.
 *
 *   effrt_attention_fwd_tiled_f32 / effrt_attention_bwd_tiled_f32:
 *                         eff.attention and eff.attention_grad
 *                         (runtime/src/cpu/Attention.cpp,
 *                         docs/Attention.md) on [B1, B2, T, D] tensors
 *                         with any element strides of B1, B2 and T (D
 *                         contiguous), tiled (FlashAttention-2, the
 *                         caller's tile): nothing Tq x Tk is stored.
 *                         `workspace` holds `slots` per-thread slots of
 *                         effrt_attention_*_slot_floats() floats each, all
 *                         the memory the kernels use; each work item is
 *                         computed whole in one slot, so results do not
 *                         depend on the number of threads or slots. (The
 *                         _strided_ and contiguous entry points of earlier
 *                         .effx files allocate their own.)
 *
 * Compiled CUDA code (target cuda) imports, besides the MLIR GPU runtime
 * ABI (mgpu*, runtime/src/cuda/CudaRuntime.cpp):
 *
 *   effrt_cuda_gemm / effrt_cuda_gemm_batched: effrt_sgemm(_batched)'s
 *                         semantics on device pointers, through cuBLASLt
 *                         on the step stream; A and B of `abType`, C of
 *                         `cType` (0 f32, 1 f16, 2 bf16), accumulated in
 *                         f32; f32 products use TF32 only when the model
 *                         was compiled with effc --allow-tf32.
 *   effrt_cuda_allreduce_sum_f32, effrt_cuda_reduce_scatter_sum_f32,
 *   effrt_cuda_all_gather_f32, effrt_cuda_shard_f32, their _start variants
 *   and effrt_cuda_collective_wait: the collectives above with the same
 *                         arguments, on device pointers (inside the
 *                         step's regions). They are queued, not run: a
 *                         start queues the collective (NCCL, or copies on
 *                         one rank) on the device's communication stream
 *                         after what the step stream holds, the wait
 *                         queues the step stream's wait for it; the
 *                         blocking ones do both. Nothing waits on the
 *                         host, so the step can be captured as a CUDA
 *                         graph (runtime/src/cuda/CudaRuntime.cpp).
 *
 * Compiled CPU code lowered with convolution=library imports:
 *
 *   effrt_conv2d_fwd_f32 / effrt_conv2d_bwd_data_f32 /
 *   effrt_conv2d_bwd_weights_f32: eff.conv2d, eff.conv2d_input_grad and
 *                         eff.conv2d_filter_grad (f32, NCHW activations,
 *                         [F, C/groups, KH, KW] filters, all contiguous)
 *                         through oneDNN (runtime/src/cpu/Convolution.cpp,
 *                         docs/CpuBackend.md). Only in a runtime built with
 *                         oneDNN (libdnnl-dev): elsewhere an .effx that
 *                         calls them fails to load, naming the symbol.
 *                         `workspace` (inside the step's memory) holds
 *                         oneDNN's scratchpad and the blocked copies of the
 *                         operands, workspaceBytes as
 *                         effrt_conv2d_workspace_bytes() said at compile
 *                         time; nothing is allocated per call.
 *   effrt_conv2d_workspace_bytes: those bytes for one call (kind is
 *                         EFFRT_CONV2D_*), with oneDNN sized for `threads`
 *                         OpenMP threads (0: this process's default), or
 *                         -1 when oneDNN has no such convolution. The
 *                         compiler calls it; a run whose threads need more
 *                         than the plan gave runs that convolution on fewer
 *                         threads.
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
int64_t effrt_allreduce_sum_f32_start(float *data, int64_t count);
int64_t effrt_reduce_scatter_sum_f32_start(const float *send, float *recv,
                                           int64_t recvCount);
int64_t effrt_all_gather_f32_start(const float *send, float *recv,
                                   int64_t sendCount);
void effrt_collective_wait(int64_t request, const float *send,
                           const float *recv);

/* Host tasks (a step with a host region, effc --offload optimizer;
 * eff-host-tasks): `task` is a function of the step's object taking the
 * four regions as MLIR memref descriptors, expanded (allocated, aligned,
 * offset, size, stride for each of state, arena, io, host).
 *   effrt_host_task_start: queues `task` on the device's worker thread,
 *                          which runs the queued tasks in order on the
 *                          step's regions; returns a handle (> 0).
 *   effrt_host_task_wait:  returns once task `handle` (and every one
 *                          queued before it) has run. A step waits for
 *                          every task it starts. */
typedef void (*effrt_host_task_fn)(void *, void *, int64_t, int64_t, int64_t,
                                   void *, void *, int64_t, int64_t, int64_t,
                                   void *, void *, int64_t, int64_t, int64_t,
                                   void *, void *, int64_t, int64_t, int64_t);
int64_t effrt_host_task_start(effrt_host_task_fn task);
void effrt_host_task_wait(int64_t handle);

/* The tile of the attention kernels that predate the caller's choice
 * (effrt_attention_*_strided_f32, effrt_attention_*_f32): query rows and
 * key columns per tile. */
#define EFFRT_ATTENTION_TILE_Q 64
#define EFFRT_ATTENTION_TILE_K 64
/* Mask kinds: none, a float added to the scores, a byte (i1) that is
 * nonzero where the position is masked out. */
#define EFFRT_ATTENTION_MASK_NONE 0
#define EFFRT_ATTENTION_MASK_ADD 1
#define EFFRT_ATTENTION_MASK_BOOL 2

/* The tile (query rows = key columns per tile) the compiler passes to
 * effrt_attention_*_tiled_f32 (bench/attention_tiles.cpp has the figures,
 * docs/Attention.md the table). Causal up to T = 128: 16, since the
 * kernels skip key tiles past a query tile's last row, and smaller tiles
 * skip more (T = 64: 23% less time than 64-wide tiles, T = 128: 11-17%).
 * Otherwise at most 64, the longer sequence cut into as few tiles of equal
 * size (a multiple of 8) as fit: a short sequence gets one tile of its own
 * size (T = 20: 24, not 64; the workspace shrinks with it), T = 96 two of
 * 48 (as fast as 64 + 32, a smaller workspace). */
static inline int64_t effrt_attention_tile(int64_t Tq, int64_t Tk,
                                           int32_t causal) {
  int64_t T = Tq > Tk ? Tq : Tk;
  if (T < 1)
    T = 1;
  int64_t tiles = (T + 63) / 64;
  int64_t tile = (T + tiles - 1) / tiles;
  tile = (tile + 7) / 8 * 8;
  if (causal && T <= 128 && tile > 16)
    tile = 16;
  return tile;
}

/* Floats of one slot's workspace of effrt_attention_*_tiled_f32, where
 * `tile` is the call's tile. Forward: the score tile and row statistics,
 * the key tile transposed, and room for a query, value and output tile of
 * operands whose rows are not contiguous (the heads of a [B, T, H*D]
 * projection). Backward: the probability, gradient and keep-factor tiles,
 * one head's rowsum(dO * O), the key and value tiles transposed, and room
 * for one head's q, k, v, dO, dq, dk and dv when their rows are not
 * contiguous (o is read in place, once). Everything the kernels touch is
 * in the workspace the compiler planned. */
static inline int64_t effrt_attention_fwd_slot_floats(int64_t tile, int64_t D,
                                                      int64_t Dv) {
  return tile * tile + 2 * tile + 2 * tile * (D + Dv);
}
static inline int64_t effrt_attention_bwd_slot_floats(int64_t tile, int64_t Tq,
                                                      int64_t Tk, int64_t D,
                                                      int64_t Dv) {
  return 3 * tile * tile + Tq + tile * (D + Dv) + 2 * (Tq + Tk) * D +
         2 * Tk * Dv + Tq * Dv;
}

/* o = dropout(softmax(scale * q k^T + mask)) v and lse per query row.
 * q [B1, B2, Tq, D], k [B1, B2, Tk, D], v [B1, B2, Tk, Dv], o [B1, B2, Tq,
 * Dv]: each tensor operand is followed by the element strides of its B1, B2
 * and T dimensions; its last dimension is contiguous. So a [B, T, H, D]
 * projection is read (or written) as the [B, H, T, D] operand in place:
 * strides T*H*D, D, H*D. lse [B1, B2, Tq] is contiguous. The mask element
 * (b1, b2, i, j) is at b1*maskStrideB1 + b2*maskStrideB2 + i*maskStrideQ +
 * j*maskStrideK (zero strides broadcast). causal: column j > row i is
 * masked. Dropout (when dropoutScale != 0) keeps element index e = ((b1*B2
 * + b2)*Tq + i)*Tk + j iff (mix64(dropoutKey ^ e) >> 40) >=
 * dropoutThreshold, as eff.dropout's lowering, and scales it by
 * dropoutScale. Output and input operands must not overlap. */
void effrt_attention_fwd_strided_f32(
    const float *q, int64_t qStrideB1, int64_t qStrideB2, int64_t qStrideT,
    const float *k, int64_t kStrideB1, int64_t kStrideB2, int64_t kStrideT,
    const float *v, int64_t vStrideB1, int64_t vStrideB2, int64_t vStrideT,
    float *o, int64_t oStrideB1, int64_t oStrideB2, int64_t oStrideT,
    float *lse, const void *mask, int32_t maskKind, int64_t maskStrideB1,
    int64_t maskStrideB2, int64_t maskStrideQ, int64_t maskStrideK,
    int64_t B1, int64_t B2, int64_t Tq, int64_t Tk, int64_t D, int64_t Dv,
    float scale, int32_t causal, int64_t dropoutKey, int64_t dropoutThreshold,
    float dropoutScale, float *workspace, int64_t slots);

/* dq, dk, dv of the forward above from q, k, v, o, lse and dout (strided
 * as the forward's operands; dq, dk, dv likewise). */
void effrt_attention_bwd_strided_f32(
    const float *q, int64_t qStrideB1, int64_t qStrideB2, int64_t qStrideT,
    const float *k, int64_t kStrideB1, int64_t kStrideB2, int64_t kStrideT,
    const float *v, int64_t vStrideB1, int64_t vStrideB2, int64_t vStrideT,
    const float *o, int64_t oStrideB1, int64_t oStrideB2, int64_t oStrideT,
    const float *lse, const float *dout, int64_t dStrideB1, int64_t dStrideB2,
    int64_t dStrideT, float *dq, int64_t dqStrideB1, int64_t dqStrideB2,
    int64_t dqStrideT, float *dk, int64_t dkStrideB1, int64_t dkStrideB2,
    int64_t dkStrideT, float *dv, int64_t dvStrideB1, int64_t dvStrideB2,
    int64_t dvStrideT, const void *mask, int32_t maskKind,
    int64_t maskStrideB1, int64_t maskStrideB2, int64_t maskStrideQ,
    int64_t maskStrideK, int64_t B1, int64_t B2, int64_t Tq, int64_t Tk,
    int64_t D, int64_t Dv, float scale, int32_t causal, int64_t dropoutKey,
    int64_t dropoutThreshold, float dropoutScale, float *workspace,
    int64_t slots);

/* The kernels compiled code calls: the strided kernels above with the
 * tile (effrt_attention_tile) chosen by the caller. `workspace` holds
 * `slots` slots of effrt_attention_{fwd,bwd}_slot_floats() floats, all the
 * memory the kernels use; a call runs on min(slots, OpenMP threads) threads,
 * each with a slot of its own, and computes each work item (forward: a
 * query tile of a head; backward: a head) whole in one slot, so results do
 * not depend on the number of slots or threads. */
void effrt_attention_fwd_tiled_f32(
    const float *q, int64_t qStrideB1, int64_t qStrideB2, int64_t qStrideT,
    const float *k, int64_t kStrideB1, int64_t kStrideB2, int64_t kStrideT,
    const float *v, int64_t vStrideB1, int64_t vStrideB2, int64_t vStrideT,
    float *o, int64_t oStrideB1, int64_t oStrideB2, int64_t oStrideT,
    float *lse, const void *mask, int32_t maskKind, int64_t maskStrideB1,
    int64_t maskStrideB2, int64_t maskStrideQ, int64_t maskStrideK, int64_t B1,
    int64_t B2, int64_t Tq, int64_t Tk, int64_t D, int64_t Dv, float scale,
    int32_t causal, int64_t dropoutKey, int64_t dropoutThreshold,
    float dropoutScale, int64_t tile, float *workspace, int64_t slots);
void effrt_attention_bwd_tiled_f32(
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
    float dropoutScale, int64_t tile, float *workspace, int64_t slots);

/* The same on contiguous operands: what .effx files compiled before the
 * strided kernels call (kept so that they still run). */
void effrt_attention_fwd_f32(const float *q, const float *k, const float *v,
                             float *o, float *lse, const void *mask,
                             int32_t maskKind, int64_t maskStrideB1,
                             int64_t maskStrideB2, int64_t maskStrideQ,
                             int64_t maskStrideK, int64_t B1, int64_t B2,
                             int64_t Tq, int64_t Tk, int64_t D, int64_t Dv,
                             float scale, int32_t causal, int64_t dropoutKey,
                             int64_t dropoutThreshold, float dropoutScale,
                             float *workspace, int64_t slots);
void effrt_attention_bwd_f32(const float *q, const float *k, const float *v,
                             const float *o, const float *lse,
                             const float *dout, float *dq, float *dk,
                             float *dv, const void *mask, int32_t maskKind,
                             int64_t maskStrideB1, int64_t maskStrideB2,
                             int64_t maskStrideQ, int64_t maskStrideK,
                             int64_t B1, int64_t B2, int64_t Tq, int64_t Tk,
                             int64_t D, int64_t Dv, float scale,
                             int32_t causal, int64_t dropoutKey,
                             int64_t dropoutThreshold, float dropoutScale,
                             float *workspace, int64_t slots);

/* eff.attention on the GPU (runtime/src/cuda/Attention.cu, FlashAttention-2
 * on tensor cores for f16/bf16): q, k, v, o, dout, dq, dk, dv contiguous
 * [B1, B2, T, D] device tensors of `type` (0 f32, 1 f16, 2 bf16; f16/bf16
 * 16-byte aligned), lse [B1, B2, Tq] f32 (natural log), accumulation in f32;
 * causal as effrt_attention_fwd_f32 (column j > row i masked); no mask, no
 * dropout; D == Dv, 64 or 128 for f16/bf16, 1..128 for f32. Deterministic
 * (no atomics). The backward's workspace holds
 * effrt_cuda_attention_bwd_workspace() floats (rowsum(dO * o)). */
void effrt_cuda_attention_fwd(const void *q, const void *k, const void *v,
                              void *o, float *lse, int64_t B1, int64_t B2,
                              int64_t Tq, int64_t Tk, int64_t D, int64_t Dv,
                              float scale, int32_t causal, int32_t type);
void effrt_cuda_attention_bwd(const void *q, const void *k, const void *v,
                              const void *o, const float *lse,
                              const void *dout, void *dq, void *dk, void *dv,
                              float *workspace, int64_t B1, int64_t B2,
                              int64_t Tq, int64_t Tk, int64_t D, int64_t Dv,
                              float scale, int32_t causal, int32_t type);
/* The same on operands of any layout with D contiguous: each tensor X is
 * followed by its element strides of B1, B2 and T (q, k, v read in place
 * from a [B, T, H, D] projection; o and the gradients written in the layout
 * their users read). lse and the workspace stay contiguous. f16/bf16
 * operands: 4-byte aligned, results with even strides; rows 16-byte aligned
 * are loaded 16 bytes at a time. */
void effrt_cuda_attention_fwd_strided(
    const void *q, int64_t qB1, int64_t qB2, int64_t qT, const void *k,
    int64_t kB1, int64_t kB2, int64_t kT, const void *v, int64_t vB1,
    int64_t vB2, int64_t vT, void *o, int64_t oB1, int64_t oB2, int64_t oT,
    float *lse, int64_t B1, int64_t B2, int64_t Tq, int64_t Tk, int64_t D,
    int64_t Dv, float scale, int32_t causal, int32_t type);
void effrt_cuda_attention_bwd_strided(
    const void *q, int64_t qB1, int64_t qB2, int64_t qT, const void *k,
    int64_t kB1, int64_t kB2, int64_t kT, const void *v, int64_t vB1,
    int64_t vB2, int64_t vT, const void *o, int64_t oB1, int64_t oB2,
    int64_t oT, const float *lse, const void *dout, int64_t dB1, int64_t dB2,
    int64_t dT, void *dq, int64_t dqB1, int64_t dqB2, int64_t dqT, void *dk,
    int64_t dkB1, int64_t dkB2, int64_t dkT, void *dv, int64_t dvB1,
    int64_t dvB2, int64_t dvT, float *workspace, int64_t B1, int64_t B2,
    int64_t Tq, int64_t Tk, int64_t D, int64_t Dv, float scale, int32_t causal,
    int32_t type);
static inline int64_t effrt_cuda_attention_bwd_workspace(int64_t B1,
                                                         int64_t B2,
                                                         int64_t Tq) {
  return B1 * B2 * Tq;
}

void effrt_cuda_gemm(int32_t transA, int32_t transB, int64_t M, int64_t N,
                     int64_t K, float alpha, const void *A, int64_t lda,
                     const void *B, int64_t ldb, float beta, void *C,
                     int64_t ldc, int32_t abType, int32_t cType);
void effrt_cuda_gemm_batched(int32_t transA, int32_t transB, int64_t batch,
                             int64_t M, int64_t N, int64_t K, float alpha,
                             const void *A, int64_t lda, int64_t strideA,
                             const void *B, int64_t ldb, int64_t strideB,
                             float beta, void *C, int64_t ldc,
                             int64_t strideC, int32_t abType, int32_t cType);
/* C = alpha * op(A) * op(B) + bias, `bias` a vector of N elements of C's type
 * added to every row (cuBLASLt's bias epilogue: to the f32 accumulator,
 * before C is rounded); C is not read. */
void effrt_cuda_gemm_bias(int32_t transA, int32_t transB, int64_t M, int64_t N,
                          int64_t K, float alpha, const void *A, int64_t lda,
                          const void *B, int64_t ldb, void *C, int64_t ldc,
                          const void *bias, int32_t abType, int32_t cType);

void effrt_cuda_allreduce_sum_f32(float *data, int64_t count);
void effrt_cuda_reduce_scatter_sum_f32(const float *send, float *recv,
                                       int64_t recvCount);
void effrt_cuda_all_gather_f32(const float *send, float *recv,
                               int64_t sendCount);
void effrt_cuda_shard_f32(const float *whole, float *shard, int64_t shardCount);
int64_t effrt_cuda_allreduce_sum_f32_start(float *data, int64_t count);
int64_t effrt_cuda_reduce_scatter_sum_f32_start(const float *send, float *recv,
                                                int64_t recvCount);
int64_t effrt_cuda_all_gather_f32_start(const float *send, float *recv,
                                        int64_t sendCount);
void effrt_cuda_collective_wait(int64_t request, const float *send,
                                const float *recv);

/* Host tasks on a GPU (effc --offload optimizer --target cuda;
 * eff-host-tasks abi=cuda): the task function is the CPU's
 * (effrt_host_task_fn), called with the pinned staging buffer
 * (`host_staging_bytes` in the manifest) for state, arena and io and with
 * the host region.
 *   effrt_cuda_host_task_copy:  names `bytes` bytes at `offset` of device
 *                               region `region` (0 state, 1 arena, 2 io)
 *                               and offset `staging` of the staging
 *                               buffer; the next start copies them to the
 *                               host before its task (`toHost` != 0) or to
 *                               the device after it.
 *   effrt_cuda_host_task_start: queues those copies and the task, in that
 *                               order, on the device's task stream after
 *                               everything the step stream holds; returns
 *                               a handle (> 0).
 *   effrt_cuda_host_task_wait:  orders the step stream after task `handle`
 *                               (and every one started before it). */
void effrt_cuda_host_task_copy(int32_t toHost, int32_t region, int64_t offset,
                               int64_t staging, int64_t bytes);
int64_t effrt_cuda_host_task_start(effrt_host_task_fn task);
void effrt_cuda_host_task_wait(int64_t handle);

/* Convolutions (oneDNN). Every call takes the same shape arguments:
 * x [N, C, H, W], w [F, C/groups, KH, KW], y [N, F, OH, OW], strides,
 * dilations (1 = dense), padding top, left, bottom, right, groups. */
#define EFFRT_CONV2D_FWD 0
#define EFFRT_CONV2D_BWD_DATA 1
#define EFFRT_CONV2D_BWD_WEIGHTS 2
#define EFFRT_CONV2D_SHAPE_ARGS                                               \
  int64_t N, int64_t C, int64_t H, int64_t W, int64_t F, int64_t KH,          \
      int64_t KW, int64_t OH, int64_t OW, int64_t strideH, int64_t strideW,   \
      int64_t dilationH, int64_t dilationW, int64_t padTop, int64_t padLeft,  \
      int64_t padBottom, int64_t padRight, int64_t groups

int64_t effrt_conv2d_workspace_bytes(int32_t kind, int32_t hasBias,
                                     EFFRT_CONV2D_SHAPE_ARGS, int32_t threads);
/* y = conv(x, w) + bias (bias may be null). */
void effrt_conv2d_fwd_f32(const float *x, const float *w, const float *bias,
                          float *y, EFFRT_CONV2D_SHAPE_ARGS, void *workspace,
                          int64_t workspaceBytes);
/* dx = the input gradient of y = conv(x, w) from dy. */
void effrt_conv2d_bwd_data_f32(const float *dy, const float *w, float *dx,
                               EFFRT_CONV2D_SHAPE_ARGS, void *workspace,
                               int64_t workspaceBytes);
/* dw = the filter gradient of y = conv(x, w) from x and dy. */
void effrt_conv2d_bwd_weights_f32(const float *x, const float *dy, float *dw,
                                  EFFRT_CONV2D_SHAPE_ARGS, void *workspace,
                                  int64_t workspaceBytes);

/* Convolutions on cuda (cuDNN 9, runtime/src/cuda/Convolution.cpp): the
 * same three calls on NCHW device tensors of `type` (effrt_cuda_gemm's
 * codes: 0 f32, 1 f16, 2 bf16; every tensor the same, f32 accumulation)
 * with the device's library workspace; no bias (the compiled code adds
 * it). The plan of each shape is chosen on its first call: deterministic
 * engines only, and f32 without TF32 unless the step allows it. */
void effrt_cuda_conv2d_fwd(const void *x, const void *w, void *y,
                           EFFRT_CONV2D_SHAPE_ARGS, int32_t type);
void effrt_cuda_conv2d_bwd_data(const void *dy, const void *w, void *dx,
                                EFFRT_CONV2D_SHAPE_ARGS, int32_t type);
void effrt_cuda_conv2d_bwd_weights(const void *x, const void *dy, void *dw,
                                   EFFRT_CONV2D_SHAPE_ARGS, int32_t type);

/* Compiled cuda-emulated code (effc --target cuda-emulated: the cuda step,
 * its kernels emulated on the CPU) imports effrt_emulated_cuda_X for each
 * effrt_cuda_X above (GEMMs, attention, convolutions, collectives): the
 * same arguments and results on host memory, computed in f32 by plain
 * loops (runtime/src/cpu/EmulatedCuda.cpp; the collectives are the CPU's). */
void effrt_emulated_cuda_gemm(int32_t transA, int32_t transB, int64_t M,
                              int64_t N, int64_t K, float alpha, const void *A,
                              int64_t lda, const void *B, int64_t ldb,
                              float beta, void *C, int64_t ldc, int32_t abType,
                              int32_t cType);
void effrt_emulated_cuda_gemm_batched(
    int32_t transA, int32_t transB, int64_t batch, int64_t M, int64_t N,
    int64_t K, float alpha, const void *A, int64_t lda, int64_t strideA,
    const void *B, int64_t ldb, int64_t strideB, float beta, void *C,
    int64_t ldc, int64_t strideC, int32_t abType, int32_t cType);
void effrt_emulated_cuda_gemm_bias(int32_t transA, int32_t transB, int64_t M,
                                   int64_t N, int64_t K, float alpha,
                                   const void *A, int64_t lda, const void *B,
                                   int64_t ldb, void *C, int64_t ldc,
                                   const void *bias, int32_t abType,
                                   int32_t cType);
void effrt_emulated_cuda_attention_fwd(const void *q, const void *k,
                                       const void *v, void *o, float *lse,
                                       int64_t B1, int64_t B2, int64_t Tq,
                                       int64_t Tk, int64_t D, int64_t Dv,
                                       float scale, int32_t causal,
                                       int32_t type);
void effrt_emulated_cuda_attention_bwd(
    const void *q, const void *k, const void *v, const void *o,
    const float *lse, const void *dout, void *dq, void *dk, void *dv,
    float *workspace, int64_t B1, int64_t B2, int64_t Tq, int64_t Tk,
    int64_t D, int64_t Dv, float scale, int32_t causal, int32_t type);
void effrt_emulated_cuda_attention_fwd_strided(
    const void *q, int64_t qB1, int64_t qB2, int64_t qT, const void *k,
    int64_t kB1, int64_t kB2, int64_t kT, const void *v, int64_t vB1,
    int64_t vB2, int64_t vT, void *o, int64_t oB1, int64_t oB2, int64_t oT,
    float *lse, int64_t B1, int64_t B2, int64_t Tq, int64_t Tk, int64_t D,
    int64_t Dv, float scale, int32_t causal, int32_t type);
void effrt_emulated_cuda_attention_bwd_strided(
    const void *q, int64_t qB1, int64_t qB2, int64_t qT, const void *k,
    int64_t kB1, int64_t kB2, int64_t kT, const void *v, int64_t vB1,
    int64_t vB2, int64_t vT, const void *o, int64_t oB1, int64_t oB2,
    int64_t oT, const float *lse, const void *dout, int64_t dB1, int64_t dB2,
    int64_t dT, void *dq, int64_t dqB1, int64_t dqB2, int64_t dqT, void *dk,
    int64_t dkB1, int64_t dkB2, int64_t dkT, void *dv, int64_t dvB1,
    int64_t dvB2, int64_t dvT, float *workspace, int64_t B1, int64_t B2,
    int64_t Tq, int64_t Tk, int64_t D, int64_t Dv, float scale, int32_t causal,
    int32_t type);
void effrt_emulated_cuda_conv2d_fwd(const void *x, const void *w, void *y,
                                    EFFRT_CONV2D_SHAPE_ARGS, int32_t type);
void effrt_emulated_cuda_conv2d_bwd_data(const void *dy, const void *w,
                                         void *dx, EFFRT_CONV2D_SHAPE_ARGS,
                                         int32_t type);
void effrt_emulated_cuda_conv2d_bwd_weights(const void *x, const void *dy,
                                            void *dw, EFFRT_CONV2D_SHAPE_ARGS,
                                            int32_t type);
void effrt_emulated_cuda_allreduce_sum_f32(float *data, int64_t count);
void effrt_emulated_cuda_reduce_scatter_sum_f32(const float *send, float *recv,
                                                int64_t recvCount);
void effrt_emulated_cuda_all_gather_f32(const float *send, float *recv,
                                        int64_t sendCount);
void effrt_emulated_cuda_shard_f32(const float *whole, float *shard,
                                   int64_t shardCount);
int64_t effrt_emulated_cuda_allreduce_sum_f32_start(float *data,
                                                    int64_t count);
int64_t effrt_emulated_cuda_reduce_scatter_sum_f32_start(const float *send,
                                                         float *recv,
                                                         int64_t recvCount);
int64_t effrt_emulated_cuda_all_gather_f32_start(const float *send,
                                                 float *recv,
                                                 int64_t sendCount);
void effrt_emulated_cuda_collective_wait(int64_t request, const float *send,
                                         const float *recv);

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
