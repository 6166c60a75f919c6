//===- Blas.cpp - Matrix products for compiled code -----------------------===//
//
// effrt_sgemm and effrt_sgemm_batched, which compiled CPU code calls for
// every matrix product, on OpenBLAS's cblas_sgemm. A portable loop takes
// over for degenerate shapes (and when sizes exceed BLAS's 32-bit ints, or
// when the runtime is built without OpenBLAS).
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
} // namespace

extern "C" void effrt_sgemm(int32_t transA, int32_t transB, int64_t M,
                            int64_t N, int64_t K, float alpha, const float *A,
                            int64_t lda, const float *B, int64_t ldb,
                            float beta, float *C, int64_t ldc) {
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

extern "C" void effrt_sgemm_batched(int32_t transA, int32_t transB,
                                    int64_t batch, int64_t M, int64_t N,
                                    int64_t K, float alpha, const float *A,
                                    int64_t lda, int64_t strideA,
                                    const float *B, int64_t ldb,
                                    int64_t strideB, float beta, float *C,
                                    int64_t ldc, int64_t strideC) {
  for (int64_t b = 0; b < batch; ++b)
    effrt_sgemm(transA, transB, M, N, K, alpha, A + b * strideA, lda,
                B + b * strideB, ldb, beta, C + b * strideC, ldc);
}

#ifdef EFFRT_HAVE_OPENBLAS
extern "C" {
// OpenBLAS extensions (declared in its cblas.h, not in every cblas.h).
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
char *openblas_get_config(void);
}

void effrt::setBlasThreads(int threads) {
  openblas_set_num_threads(std::max(threads, 1));
}
int effrt::blasThreads() { return openblas_get_num_threads(); }
const char *effrt::blasName() { return openblas_get_config(); }
#else
void effrt::setBlasThreads(int) {}
int effrt::blasThreads() { return 1; }
const char *effrt::blasName() { return "reference"; }
#endif
