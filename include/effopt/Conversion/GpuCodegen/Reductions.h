//===- Reductions.h - how a linalg.generic reduces, for GPU kernels -------===//
//
// What the GPU passes ask of a reduction: each output's combine op (with
// its gpu.all_reduce kind and identity), and which loop dimension walks
// the contiguous dimension of its widest input. Shared by
// eff-gpu-split-reductions (tensors) and eff-gpu-form-kernels (memrefs).
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_CONVERSION_GPUCODEGEN_REDUCTIONS_H
#define EFFOPT_CONVERSION_GPUCODEGEN_REDUCTIONS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace effopt {

/// How one output of a reduction combines: `combiner` (in the payload) is
/// the only user of the output's block argument and its result is yielded
/// for that output and used nowhere else.
struct Combiner {
  mlir::Operation *combiner;
  mlir::gpu::AllReduceOperation kind;
  mlir::TypedAttr identity;
};

/// The combiner of every output of `op`, or failure when one is not a
/// recognised associative and commutative combine.
mlir::FailureOr<llvm::SmallVector<Combiner>>
matchCombiners(mlir::linalg::GenericOp op);

/// The loop dimension that indexes the innermost (contiguous) dimension of
/// the highest-rank input (tensor or memref), which decides whether
/// neighbouring threads should walk a reduction or a parallel dimension.
std::optional<unsigned> innermostAccessedDim(mlir::linalg::GenericOp op);

} // namespace effopt

#endif // EFFOPT_CONVERSION_GPUCODEGEN_REDUCTIONS_H
