//===- ConstantFolding.h - folding helpers for small eff constants -*- C++ -*-===//
//
// Folders only act on inline `DenseElementsAttr` constants of bounded size:
// they exist to remove the shape arithmetic exporters emit, not to evaluate
// models at compile time. Weights (`dense_resource`) are never folded.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_DIALECT_EFF_IR_CONSTANTFOLDING_H
#define EFFOPT_LIB_DIALECT_EFF_IR_CONSTANTFOLDING_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace effopt::eff::folding {

/// Largest constant (in elements) a folder materialises.
inline constexpr int64_t kMaxFoldedElements = 1 << 16;

/// `attr` as a foldable dense constant, or null.
mlir::DenseElementsAttr getFoldable(mlir::Attribute attr);

/// Builds a constant of `resultType` whose element `i` is element
/// `sourceIndex(i)` of `source`. Null if too large.
mlir::DenseElementsAttr
gatherElements(mlir::DenseElementsAttr source, mlir::RankedTensorType resultType,
               llvm::function_ref<int64_t(int64_t)> sourceIndex);

/// Maps a linear index of a broadcast result to the linear index of an
/// operand of shape `operandShape` (numpy broadcasting).
int64_t broadcastSourceIndex(int64_t resultIndex,
                             llvm::ArrayRef<int64_t> resultShape,
                             llvm::ArrayRef<int64_t> operandShape);

/// True if integers of `type` compare and divide as unsigned: the `uiN`
/// types and `i1` (a boolean is 0 or 1, never -1). Other signless integers
/// are signed, as ONNX's `intN`.
bool isUnsignedInteger(mlir::Type type);

/// The elements of an integer constant, each carrying its signedness.
llvm::APSInt toAPSInt(const llvm::APInt &value, mlir::Type elementType);

/// Integer operands carry their signedness (see `isUnsignedInteger`), so
/// comparisons and division on `llvm::APSInt` do the right thing.
using IntBinaryFn =
    llvm::function_ref<std::optional<llvm::APInt>(const llvm::APSInt &,
                                                  const llvm::APSInt &)>;
using FloatBinaryFn =
    llvm::function_ref<std::optional<llvm::APFloat>(const llvm::APFloat &,
                                                    const llvm::APFloat &)>;

/// Folds a broadcasting binary op on two foldable constants; either function
/// may be null when the op is undefined for that element kind.
mlir::Attribute foldBroadcastBinary(mlir::Attribute lhs, mlir::Attribute rhs,
                                    mlir::RankedTensorType resultType,
                                    IntBinaryFn intFn, FloatBinaryFn floatFn);

} // namespace effopt::eff::folding

#endif // EFFOPT_LIB_DIALECT_EFF_IR_CONSTANTFOLDING_H
