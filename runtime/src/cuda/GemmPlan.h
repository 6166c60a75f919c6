//===- GemmPlan.h - Row-major products for cuBLASLt -------------*- C++ -*-===//
//
// effrt_cuda_gemm has effrt_sgemm's row-major semantics; cuBLASLt computes
// column-major D = op(X) op(Y) + C. The plan says which operand goes where,
// transposed or not, and each one's column-major layout. Pure arithmetic,
// so it is tested against effrt_sgemm without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_GEMMPLAN_H
#define EFFRT_SRC_CUDA_GEMMPLAN_H

#include <cstdint>
#include <string>

namespace effrt::cuda {

/// A column-major matrix as stored: rows x cols, leading dimension ld
/// (elements between columns), and whether the product reads it transposed.
struct ColumnMajorOperand {
  int64_t rows = 0, cols = 0, ld = 0;
  bool transposed = false;
};

/// Row-major C (M x N) = op(A) op(B) is column-major C^T (N x M) =
/// op(B)^T op(A)^T, and a row-major matrix's memory is its transpose read
/// column-major: cuBLASLt's first operand is B, its second A.
struct GemmPlan {
  ColumnMajorOperand first;  ///< B's memory
  ColumnMajorOperand second; ///< A's memory
  ColumnMajorOperand c;      ///< C's memory (never transposed)
  /// The column-major product's sizes: first is m x k after its op,
  /// second k x n, C m x n.
  int64_t m = 0, n = 0, k = 0;
};

/// Plans effrt_sgemm(transA, transB, M, N, K, ..., lda, ..., ldb, ...,
/// ldc). A single column (in column-major terms) may come with a smaller,
/// unused leading dimension, as compiled code passes them: it is raised to
/// the rows. Returns an empty string, or what is wrong ("leading dimension
/// 2 of A is below its 3 elements per column").
std::string planGemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
                     int64_t lda, int64_t ldb, int64_t ldc, GemmPlan &plan);

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_GEMMPLAN_H
