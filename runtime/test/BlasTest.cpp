//===- BlasTest.cpp - effrt_sgemm and effrt_sgemm_batched -----------------===//

#include "UnitTest.h"

#include "effrt/Kernels.h"

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

using namespace effrt::test;

namespace {
/// op(A) op(B) by definition, in double.
double reference(bool ta, bool tb, int64_t i, int64_t j, int64_t K,
                 const std::vector<float> &A, int64_t lda,
                 const std::vector<float> &B, int64_t ldb) {
  double sum = 0;
  for (int64_t k = 0; k < K; ++k)
    sum += double(ta ? A[k * lda + i] : A[i * lda + k]) *
           double(tb ? B[j * ldb + k] : B[k * ldb + j]);
  return sum;
}

std::vector<float> pattern(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(((i * 37 + seed * 11) % 23)) / 8.0f - 1.0f;
  return v;
}
} // namespace

TEST(sgemmMatchesDefinition) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                             {5, 7, 3},
                             {33, 17, 65},
                             {1, 40, 9},
                             {64, 1, 128}}) {
        // Leading dimensions padded by 3 to check they are honoured.
        int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 3, ldc = N + 3;
        std::vector<float> A = pattern((ta ? K : M) * lda, 1);
        std::vector<float> B = pattern((tb ? N : K) * ldb, 2);
        std::vector<float> C0 = pattern(M * ldc, 3), C = C0;
        effrt_sgemm(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f,
                    C.data(), ldc);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double want = 0.5 * reference(ta, tb, i, j, K, A, lda, B, ldb) +
                          2.0 * C0[i * ldc + j];
            CHECK(std::fabs(C[i * ldc + j] - want) < 1e-4 * (1 + std::fabs(want)));
          }
        // Padding columns are untouched.
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = N; j < ldc; ++j)
            CHECK_EQ(C[i * ldc + j], C0[i * ldc + j]);
      }
}

TEST(sgemmBetaZeroIgnoresC) {
  std::vector<float> A = pattern(6, 1), B = pattern(6, 2);
  std::vector<float> C(4, std::numeric_limits<float>::quiet_NaN());
  effrt_sgemm(0, 0, 2, 2, 3, 1.0f, A.data(), 3, B.data(), 2, 0.0f, C.data(), 2);
  for (float c : C)
    CHECK(std::isfinite(c));
  // K = 0: C = beta C.
  std::vector<float> D = {1, 2, 3, 4};
  effrt_sgemm(0, 0, 2, 2, 0, 1.0f, A.data(), 1, B.data(), 2, 3.0f, D.data(), 2);
  CHECK_EQ(D[3], 12.0f);
  effrt_sgemm(0, 0, 2, 2, 0, 1.0f, A.data(), 1, B.data(), 2, 0.0f, C.data(), 2);
  CHECK_EQ(C[0], 0.0f);
  // M = 0 or N = 0: nothing.
  effrt_sgemm(0, 0, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 2, 0.0f, nullptr, 2);
}

TEST(sgemmBatched) {
  const int64_t batch = 3, M = 4, N = 5, K = 6;
  std::vector<float> A = pattern(batch * M * K + 7, 1);
  std::vector<float> B = pattern(batch * K * N + 7, 2);
  std::vector<float> C(batch * M * N + 7, 0.0f);
  // A is transposed ([K,M] per batch), strides leave gaps of 2.
  effrt_sgemm_batched(1, 0, batch, M, N, K, 1.0f, A.data(), M, M * K + 2,
                      B.data(), N, K * N + 2, 0.0f, C.data(), N, M * N + 2);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<float> a(A.begin() + b * (M * K + 2), A.end());
    std::vector<float> bb(B.begin() + b * (K * N + 2), B.end());
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double want = reference(true, false, i, j, K, a, M, bb, N);
        CHECK(std::fabs(C[b * (M * N + 2) + i * N + j] - want) < 1e-4);
      }
  }
}

TEST(blasThreads) {
  int before = effrt::blasThreads();
  effrt::setBlasThreads(1);
  CHECK_EQ(effrt::blasThreads(), 1);
  effrt::setBlasThreads(before);
  CHECK(effrt::blasName() != nullptr);
}
