//===- Blas.cpp - Matrix products for compiled code -----------------------===//
//
// effrt_sgemm and effrt_sgemm_batched, which compiled CPU code calls for
// every matrix product, on OpenBLAS's cblas_sgemm. A portable loop takes
// over for degenerate shapes (and when sizes exceed BLAS's 32-bit ints, or
// when the runtime is built without OpenBLAS).
//
// Threads: compiled loop nests run on OpenMP (LLVM's libomp), and so do
// the products: OpenBLAS itself stays single-threaded and a large product
// is cut into blocks of rows (or columns) of C, one cblas_sgemm each, that
// the OpenMP threads share; a batched product shares out its batches. One
// pool of threads serves the whole step, with no second pool spinning
// against it. The blocks depend only on the shape, never on the number of
// threads, so every element of C comes from the same call with the same
// operands: results are bit-identical for any number of threads.
//
//===----------------------------------------------------------------------===//

#include "effrt/Kernels.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <thread>

#ifdef EFFRT_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef EFFRT_HAVE_OPENMP
#include <omp.h>
#endif

#ifdef EFFRT_HAVE_OPENBLAS
extern "C" {
// OpenBLAS extensions (declared in its cblas.h, not in every cblas.h).
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
char *openblas_get_config(void);
}
#endif

namespace {
/// C = alpha op(A) op(B) + beta C by definition, accumulating in double.
void referenceSgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, int64_t lda, const float *B,
                    int64_t ldb, float beta, float *C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        float a = transA ? A[k * lda + i] : A[i * lda + k];
        float b = transB ? B[j * ldb + k] : B[k * ldb + j];
        sum += static_cast<double>(a) * b;
      }
      float &c = C[i * ldc + j];
      float scaled = alpha * static_cast<float>(sum);
      c = beta == 0.0f ? scaled : scaled + beta * c;
    }
  }
}

bool fitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

/// One product on the calling thread.
void sgemmSerial(int32_t transA, int32_t transB, int64_t M, int64_t N,
                 int64_t K, float alpha, const float *A, int64_t lda,
                 const float *B, int64_t ldb, float beta, float *C,
                 int64_t ldc) {
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0 || alpha == 0.0f) {
    // C = beta C; BLAS does not read C when beta is zero.
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float &c = C[i * ldc + j];
        c = beta == 0.0f ? 0.0f : beta * c;
      }
    return;
  }
#ifdef EFFRT_HAVE_OPENBLAS
  // Leading dimensions as BLAS requires them (row-major): at least the
  // number of columns stored. Compiled code passes exact ones; a one-row or
  // one-column operand may come with a smaller, unused one.
  int64_t colsA = transA ? M : K, colsB = transB ? K : N;
  int64_t lda2 = std::max(lda, colsA), ldb2 = std::max(ldb, colsB),
          ldc2 = std::max(ldc, N);
  bool rowsA1 = (transA ? K : M) == 1, rowsB1 = (transB ? N : K) == 1;
  bool ldOk = (lda >= colsA || rowsA1) && (ldb >= colsB || rowsB1) &&
              (ldc >= N || M == 1);
  if (ldOk && fitsInt(M) && fitsInt(N) && fitsInt(K) && fitsInt(lda2) &&
      fitsInt(ldb2) && fitsInt(ldc2)) {
#ifdef EFFRT_HAVE_OPENMP
    // OpenMP's threads call it: OpenBLAS must not start threads of its own
    // (whoever loaded the runtime, effrun or Python, and whatever
    // OPENBLAS_NUM_THREADS says).
    static const bool singleThreaded = (openblas_set_num_threads(1), true);
    (void)singleThreaded;
#endif
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, static_cast<int>(M),
                static_cast<int>(N), static_cast<int>(K), alpha, A,
                static_cast<int>(lda2), B, static_cast<int>(ldb2), beta, C,
                static_cast<int>(ldc2));
    return;
  }
#endif
  referenceSgemm(transA != 0, transB != 0, M, N, K, alpha, A, lda, B, ldb,
                 beta, C, ldc);
}

/// Products below this many multiply-adds run as one call: splitting
/// them costs more than it saves.
constexpr int64_t kSplitMinWork = int64_t(1) << 21;
/// Rows (or columns) of C per block at least, a multiple of every
/// microkernel's tile.
constexpr int64_t kMinBlock = 64;
/// Every block packs the operand it shares with the others again (the
/// weight of a linear layer, or the K x M activation of a weight
/// gradient): 16 blocks cost 3% more CPU time than one call on a 2048 x
/// 768 x 256 product and 12-30% on 768/256 x 256 x 2048 weight gradients,
/// 4 blocks 1-7% (single-threaded OpenBLAS 0.3.21, Zen 4). Four blocks
/// still give two threads two each.
constexpr int64_t kMaxBlocks = 4;

bool inParallel() {
#ifdef EFFRT_HAVE_OPENMP
  return omp_in_parallel() != 0;
#else
  return true;
#endif
}
} // namespace

extern "C" void effrt_sgemm(int32_t transA, int32_t transB, int64_t M,
                            int64_t N, int64_t K, float alpha, const float *A,
                            int64_t lda, const float *B, int64_t ldb,
                            float beta, float *C, int64_t ldc) {
  // Blocks of C from the shape alone: the larger of M and N is cut.
  bool splitRows = M >= N;
  int64_t extent = splitRows ? M : N;
  int64_t blocks = 1;
  if (M > 0 && N > 0 && K > 0 && M * N > 0 && M * N * K >= kSplitMinWork)
    blocks = std::min(kMaxBlocks, extent / kMinBlock);
  if (blocks <= 1) {
    sgemmSerial(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Block sizes: multiples of 16, the last one takes the rest.
  int64_t size = ((extent + blocks - 1) / blocks + 15) / 16 * 16;
  blocks = (extent + size - 1) / size;
  auto run = [&](int64_t i) {
    int64_t first = i * size, count = std::min(size, extent - first);
    if (splitRows)
      sgemmSerial(transA, transB, count, N, K, alpha,
                  transA ? A + first : A + first * lda, lda, B, ldb, beta,
                  C + first * ldc, ldc);
    else
      sgemmSerial(transA, transB, M, count, K, alpha, A, lda,
                  transB ? B + first * ldb : B + first, ldb, beta, C + first,
                  ldc);
  };
  if (inParallel()) {
    for (int64_t i = 0; i < blocks; ++i)
      run(i);
    return;
  }
#ifdef EFFRT_HAVE_OPENMP
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < blocks; ++i)
    run(i);
#endif
}

extern "C" void effrt_sgemm_batched(int32_t transA, int32_t transB,
                                    int64_t batch, int64_t M, int64_t N,
                                    int64_t K, float alpha, const float *A,
                                    int64_t lda, int64_t strideA,
                                    const float *B, int64_t ldb,
                                    int64_t strideB, float beta, float *C,
                                    int64_t ldc, int64_t strideC) {
  // With strideC == 0 every batch adds to the one C: beta scales it once.
  auto run = [&](int64_t b) {
    effrt_sgemm(transA, transB, M, N, K, alpha, A + b * strideA, lda,
                B + b * strideB, ldb, strideC == 0 && b > 0 ? 1.0f : beta,
                C + b * strideC, ldc);
  };
  // Batches accumulating into one C (strideC == 0) run in order; others
  // are independent and shared out when there are enough of them to keep
  // every thread busy (a batch's own product then runs on its thread).
  bool shareBatches = strideC != 0 && batch > 1 && !inParallel();
#ifdef EFFRT_HAVE_OPENMP
  shareBatches = shareBatches && batch >= omp_get_max_threads();
  if (shareBatches) {
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < batch; ++b)
      run(b);
    return;
  }
#endif
  (void)shareBatches;
  for (int64_t b = 0; b < batch; ++b)
    run(b);
}

#ifdef EFFRT_HAVE_OPENBLAS
const char *effrt::blasName() { return openblas_get_config(); }
#else
const char *effrt::blasName() { return "reference"; }
#endif

void effrt::setBlasThreads(int threads) {
  threads = std::max(threads, 1);
#ifdef EFFRT_HAVE_OPENMP
  // One pool: OpenMP's threads run the loops and share out the products.
#ifdef EFFRT_HAVE_OPENBLAS
  openblas_set_num_threads(1);
#endif
  omp_set_num_threads(threads);
  // `threads` is an upper bound: on a machine whose cores are busy with
  // other work, libomp's load balancing runs fewer, rather than making
  // every barrier wait for a thread the kernel has descheduled (which costs
  // a time slice per parallel loop). The work split never depends on the
  // number of threads, so neither do the results.
  omp_set_dynamic(1);
#elif defined(EFFRT_HAVE_OPENBLAS)
  openblas_set_num_threads(threads);
#endif
}

int effrt::blasThreads() {
#ifdef EFFRT_HAVE_OPENMP
  return omp_get_max_threads();
#elif defined(EFFRT_HAVE_OPENBLAS)
  return openblas_get_num_threads();
#else
  return 1;
#endif
}
