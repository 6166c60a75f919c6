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

/// Whether `op` is the online log-sum-exp of LowerLoss's cross-entropy
/// (convert-eff-to-linalg online-log-sum-exp): outputs 0 and 1 the running
/// max m and sum s, the payload m' = max(m, x) and
/// s' = s * (m == m' ? 1 : exp(m - m')) + (m' == -inf ? 0 : exp(x - m')),
/// x computed from the inputs alone. Threads combine such pairs by the max
/// of their m and the sum of their s rescaled to it, not output by output,
/// so matchCombiners does not recognise it.
bool isOnlineLogSumExp(mlir::linalg::GenericOp op);

/// The loop dimension that indexes the innermost (contiguous) dimension of
/// the highest-rank input (tensor or memref), which decides whether
/// neighbouring threads should walk a reduction or a parallel dimension.
std::optional<unsigned> innermostAccessedDim(mlir::linalg::GenericOp op);

/// Whether eff-gpu-form-kernels combines `op` (a linalg.generic with
/// reduction dims) across threads (a warp or block reduction, which fold in
/// each output's initial value once, after combining): its combiners are
/// recognised and its innermost accessed dimension is reduced, or it has no
/// parallel dims.
bool isCombinedAcrossThreads(mlir::linalg::GenericOp op);

/// A fill (a generalized `linalg.fill`) whose value can be the initial value
/// of output `output` of `reduction` instead of being stored first.
struct FoldableFill {
  mlir::linalg::GenericOp reduction;
  unsigned output;
  mlir::Value value;
};

/// Matches `fill`, an all-parallel linalg.generic on memrefs that stores one
/// scalar into every element of its output B, when the next op touching B
/// (past at most 16 linalg.generics that touch other memory; any other op
/// with memory effects ends the search) is a reduction (any strategy: each
/// folds in its outputs' initial values once) with B (the same value)
/// as exactly one of its outputs, whose points cover every element of B
/// (a projected-permutation map onto B's static shape), and none of whose
/// other operands may overlap B (see `mayOverlap`). Then nothing reads B
/// between the two and the reduction overwrites all of it, so the fill can
/// go and the reduction start from the fill's value.
std::optional<FoldableFill> matchFoldableFill(mlir::linalg::GenericOp fill);

/// Where a memref's elements lie: `size` bytes from `begin` in `root`, or
/// anywhere in it (size unknown).
struct ByteRange {
  mlir::Value root;
  int64_t begin = 0;
  std::optional<int64_t> size;
};

/// Follows views (memref.view at constant byte shifts, identity-layout
/// expand/collapse_shape and casts) back to their root (bounded: views are
/// few deep).
ByteRange byteRangeOf(mlir::Value value);

/// Whether `a` and `b` are the same elements: one root, one byte offset,
/// one type.
bool sameMemory(mlir::Value a, mlir::Value b);

/// False only when the memory of `a` and `b` is provably disjoint: views
/// (memref.view at constant byte shifts, expand/collapse_shape, casts) of
/// disjoint byte ranges of one root, or different roots that are distinct
/// objects (arguments of the step function, which are separate regions;
/// allocations; constant globals).
bool mayOverlap(mlir::Value a, mlir::Value b);

/// An all-parallel linalg.generic that can run in the epilogue of
/// `reduction` (a warp, block or thread-per-point reduction over parallel
/// dims `parallelDims`), by the thread that stores each output point, on
/// the values it just stored: the next op with memory effects after the
/// reduction, with one loop per parallel dim of the reduction of the same
/// static size, in order; whose memref inputs are outputs of the reduction
/// (the same values) read at the point the reduction stores them, or
/// memory no output of the reduction overlaps, which the epilogue writes
/// only in place (an optimizer update of the gradient summed); whose
/// outputs are indexed by a permutation of its loops (one writer per
/// element), overlap no input of the reduction (other threads may still
/// read those) and overlap an output of the reduction only when they are
/// the same memory written at the same point (in place). `sizes` are the
/// reduction's loop sizes. Null when there is none.
mlir::linalg::GenericOp matchEpilogue(mlir::linalg::GenericOp reduction,
                                      llvm::ArrayRef<mlir::Value> sizes,
                                      llvm::ArrayRef<unsigned> parallelDims);

/// The memrefs `op`'s payload loads itself (gathers: a `memref.load` of a
/// memref defined outside the op, at indices it computes: a
/// cross-entropy's target logit, an embedding's rows). No operand shows
/// them, so every check of what an op touches must add them as reads.
llvm::SmallVector<mlir::Value> gatheredMemrefs(mlir::linalg::GenericOp op);

/// The rows of a row reduction with static loops (rows..., row) whose last
/// loop alone is reduced: the sizes of the others. None for other ops.
std::optional<llvm::SmallVector<int64_t>>
rowsOfRowReduction(mlir::linalg::GenericOp op);

/// Whether `op` is all-parallel over `rows` (static loops: the rows, then
/// unit loops only): one point per row.
bool isPerRowOp(mlir::linalg::GenericOp op, llvm::ArrayRef<int64_t> rows);

/// What runs in the blocks of an online log-sum-exp after its totals (see
/// matchRowEpilogue): a cross-entropy's per-row ops and its gradient.
struct RowEpilogue {
  /// All-parallel ops over the rows (trailing unit loops aside), in
  /// order: every thread of a row's block computes them (the values the
  /// log-sum-exp and earlier members computed for the row forwarded from
  /// registers), thread 0 stores their outputs.
  llvm::SmallVector<mlir::linalg::GenericOp> perRow;
  /// The all-parallel op over the log-sum-exp's loops, after a barrier:
  /// the block's threads walk the row again (in L2 since the log-sum-exp
  /// just read it), per-row values from registers.
  mlir::linalg::GenericOp elementwise;
};

/// Whether `read`, an operand of a member of a row epilogue of `rows`
/// (static sizes) read through `map` (of the member's loops, the rows
/// first), reads the per-row value `written` holds for the row of the
/// member's point: the same bytes (views, reshapes), contiguous, with
/// `rows` elements of one type, indexed by the row's linear index.
bool readsRowValue(mlir::Value read, mlir::AffineMap map, mlir::Value written,
                   llvm::ArrayRef<int64_t> rows);

/// The row epilogue of `lse`, an online log-sum-exp on memrefs with loops
/// (rows..., row) of static sizes, the last reduced: the all-parallel ops
/// over the rows that come next (memory-effect-free ops between aside),
/// then an all-parallel op over `lse`'s loops. Each member's memref
/// operand (and memref read in its payload: a gather) either reads a
/// per-row value `lse` or an earlier member wrote for its row
/// (readsRowValue, forwarded) or overlaps nothing they write. Per-row
/// outputs are written at the row's linear index, overlap none of the
/// memory the members or `lse` read from memory, and overlap an earlier
/// per-row output only as the same values (rewritten). The elementwise
/// op's outputs are indexed by the identity, overlap no per-row output,
/// no per-row operand it loads, and `lse`'s or its own row inputs only
/// as the same bytes by the identity (in place: each thread reads the
/// elements it writes). Members may not read their outputs' old values.
/// None unless there is an elementwise op; the kernel's arguments stay
/// within kMaxKernelArgumentBytes.
std::optional<RowEpilogue> matchRowEpilogue(mlir::linalg::GenericOp lse);

} // namespace effopt

#endif // EFFOPT_CONVERSION_GPUCODEGEN_REDUCTIONS_H
