//===- GemmPlan.cpp - Row-major products as cuBLASLt's column-major -------===//

#include "GemmPlan.h"

#include <algorithm>

using namespace effrt::cuda;

/// `rows` x `cols` stored with `ld`; a single column's ld is raised to rows.
static std::string operand(const char *name, int64_t rows, int64_t cols,
                           int64_t ld, bool transposed,
                           ColumnMajorOperand &out) {
  if (cols == 1)
    ld = std::max(ld, rows);
  if (ld < rows)
    return "leading dimension " + std::to_string(ld) + " of " + name +
           " is below its " + std::to_string(rows) + " elements per column";
  out = ColumnMajorOperand{rows, cols, ld, transposed};
  return "";
}

std::string effrt::cuda::planGemm(bool transA, bool transB, int64_t M,
                                  int64_t N, int64_t K, int64_t lda,
                                  int64_t ldb, int64_t ldc, GemmPlan &plan) {
  plan.m = N;
  plan.n = M;
  plan.k = K;
  // op(B)^T: B (K x N row-major, or N x K when transposed) read
  // column-major is B^T as stored, which op(B)^T is when not transposed.
  std::string why =
      operand("B", transB ? K : N, transB ? N : K, ldb, transB, plan.first);
  if (why.empty())
    why =
        operand("A", transA ? M : K, transA ? K : M, lda, transA, plan.second);
  if (why.empty())
    why = operand("C", N, M, ldc, false, plan.c);
  return why;
}
