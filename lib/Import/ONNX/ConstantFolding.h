//===- ConstantFolding.h - evaluating nodes over constants ------*- C++ -*-===//
//
// Exporters compute shapes, pads, indices and masks inside the graph from
// the shapes of static tensors (torch writes `x.expand(n, -1, -1)` as
// Shape/Gather/Where/Equal/ConstantOfShape/Mul, a computed `F.pad` as
// Mod/Sub/Concat/Cast/Reshape/Slice/Transpose). Under static shapes every
// such value is known at compile time. The importer evaluates any node whose
// inputs are all constants with ONNX's semantics before converting it, so a
// converter that needs a constant operand (Expand's shape, Pad's pads) gets
// one whatever chain of ops computed it.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_IMPORT_ONNX_CONSTANTFOLDING_H
#define EFFOPT_LIB_IMPORT_ONNX_CONSTANTFOLDING_H

#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace effopt::onnx_import {

class NodeContext;

/// The most elements of a tensor the evaluator reads or computes; larger
/// ones are left to the converters (shape arithmetic and masks are small).
inline constexpr int64_t kMaxFoldedElements = int64_t(1) << 20;

/// Evaluates the node of `ctx` at compile time if its op is one the
/// evaluator knows and every input it has is a constant: sets the node's
/// outputs to constants and returns true. Returns false, building nothing,
/// if an input is not constant, the op or an attribute value is not one it
/// evaluates, or a tensor would have more than kMaxFoldedElements elements;
/// the op's converter then imports the node. Fails with the node's one-line
/// error where the inputs are wrong for the op (a Reshape to a shape of
/// another size, an index out of range, an integer division by zero).
/// Shape, Size, Constant, ConstantOfShape and Range need no evaluator:
/// their converters make constants themselves.
mlir::FailureOr<bool> foldConstantNode(NodeContext &ctx);

} // namespace effopt::onnx_import

#endif // EFFOPT_LIB_IMPORT_ONNX_CONSTANTFOLDING_H
