//===- ShapeUtils.cpp - static shape arithmetic ---------------------------===//

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace effopt::eff {

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> lhs,
                                                    ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l != r && l != 1 && r != 1)
      return std::nullopt;
    result[i] = l == 1 ? r : l;
  }
  return result;
}

bool isBroadcastableTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[i + offset])
      return false;
  return true;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::string formatAxisOutOfRange(int64_t axis, int64_t rank) {
  std::string text;
  raw_string_ostream os(text);
  os << "axis " << axis << " is out of range ";
  if (rank == 0)
    os << "for a rank-0 tensor, which has no axes";
  else
    os << "[" << -rank << ", " << rank - 1 << "]";
  return text;
}

std::string formatNumber(double value) {
  std::string text;
  raw_string_ostream os(text);
  os << format("%g", value);
  return text;
}

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  raw_string_ostream os(text);
  os << "[";
  interleaveComma(shape, os);
  os << "]";
  return text;
}

int64_t windowOutputSize(int64_t input, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode) {
  int64_t effectiveKernel = dilation * (kernel - 1) + 1;
  int64_t span = input + padBegin + padEnd - effectiveKernel;
  if (span < 0)
    return 0;
  // Rounded up without computing `span + stride - 1`, which may overflow.
  int64_t steps = span / stride;
  if (ceilMode && span % stride != 0)
    ++steps;
  // As PyTorch: with ceil_mode the last window must start inside the input
  // or the left padding.
  if (ceilMode && steps * stride >= input + padBegin)
    --steps;
  return steps + 1;
}

int64_t sliceLength(int64_t start, int64_t limit, int64_t stride) {
  // ceil(distance / step), without computing `distance + step - 1`.
  auto ceilDiv = [](int64_t distance, int64_t step) {
    return distance / step + (distance % step != 0 ? 1 : 0);
  };
  if (stride > 0)
    return limit > start ? ceilDiv(limit - start, stride) : 0;
  return start > limit ? ceilDiv(start - limit, -stride) : 0;
}

} // namespace effopt::eff
