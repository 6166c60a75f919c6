//===- ShapeUtils.h - static shape arithmetic shared by ops and importer -===//

#ifndef EFFOPT_DIALECT_EFF_IR_SHAPEUTILS_H
#define EFFOPT_DIALECT_EFF_IR_SHAPEUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace effopt::eff {

/// numpy broadcast of two static shapes, or nullopt if they do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// True if `from` broadcasts to exactly `to` (numpy rules, one direction).
bool isBroadcastableTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// `axis` in `[-rank, rank)` mapped to `[0, rank)`, or nullopt if outside.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// "axis 4 is out of range [-4, 3]" (or, for rank 0, that a scalar has no
/// axis) for diagnostics.
std::string formatAxisOutOfRange(int64_t axis, int64_t rank);

/// A number as "%g" prints it ("0.5", "1e-05") for diagnostics.
std::string formatNumber(double value);

/// "[2, 3, 4]" for diagnostics.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Output size of a convolution or pooling window along one dimension. The
/// padded input and the dilated kernel must not overflow.
int64_t windowOutputSize(int64_t input, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode);

/// Number of elements selected by a normalised strided slice. `limit - start`
/// and `-stride` must not overflow.
int64_t sliceLength(int64_t start, int64_t limit, int64_t stride);

} // namespace effopt::eff

#endif // EFFOPT_DIALECT_EFF_IR_SHAPEUTILS_H
