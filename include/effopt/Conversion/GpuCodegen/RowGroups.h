//===- RowGroups.h - chains of row ops one warp per row can run -----------===//
//
// A layer norm is two row reductions (mean, variance), a per-row op (the
// reciprocal standard deviation) and an elementwise op over the rows (the
// normalisation); its backward is elementwise ops, two row reductions and
// an elementwise op again. As separate kernels each reads the row from
// DRAM; a row group runs them in one kernel, one warp per row, so the row
// is read from DRAM once and the per-row values stay in registers.
// eff-gpu-form-kernels matches groups here and emits them (docs/
// GpuKernels.md).
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_CONVERSION_GPUCODEGEN_ROWGROUPS_H
#define EFFOPT_CONVERSION_GPUCODEGEN_ROWGROUPS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace effopt {

/// How a member of a row group iterates the rows.
enum class RowOpKind {
  /// A reduction of each row: loops (rows..., row) with the last reduced.
  Reduction,
  /// All-parallel over (rows..., row): each element of each row.
  Elementwise,
  /// All-parallel over the rows (or rows x 1): one point per row.
  PerRow,
  /// Partial column sums over the rows a block runs: loops (rows..., with
  /// the last row dim split as (size / blockRows, blockRows), row), the
  /// blockRows dim reduced, every other loop parallel and every output
  /// indexed by them all (eff-gpu-split-reductions makes these). Each lane
  /// computes what its elements add, the block combines its warps' values
  /// in row order after the last member (workgroup memory, one barrier):
  /// the same order, so the same bits, as the op alone.
  ColumnPartial,
};

/// Where a member reads a value an earlier member computed for the same
/// row (a per-row output at the same address): member `member`'s output
/// `output`.
struct ForwardedRowValue {
  unsigned member;
  unsigned output;
};

/// linalg.generic ops of one block, in program order, over one row space:
/// `rows` (static sizes) of `rowLength` elements. One warp per row runs
/// each member in turn over its row; every element-of-row access of a
/// member to memory an earlier member wrote is at the same address
/// function of (row, element), so the lane that wrote an element is the
/// lane that reads it (no barrier), and per-row values pass in registers.
struct RowGroup {
  llvm::SmallVector<int64_t> rows;
  int64_t rowLength = 0;
  /// Rows (warps) a block runs: the chunk of a column partial sum.
  int64_t blockRows = 0;
  /// Elements a lane takes at a time in every member: the reductions' own
  /// width (as each would run alone, so a reduction adds up in the same
  /// order in or out of a group: remat and grouping keep the bits).
  int64_t width = 0;
  llvm::SmallVector<mlir::linalg::GenericOp> members;
  llvm::SmallVector<RowOpKind> kinds;
  /// Per member: operand number -> the earlier member's per-row value it
  /// reads (in place of a load).
  llvm::SmallVector<llvm::DenseMap<unsigned, ForwardedRowValue>> forwarded;
  /// Per member: the outputs it does not store (their operand numbers
  /// among its inits): per-row values of a temporary buffer that only later
  /// members read, each from the register (see matchRowGroup).
  llvm::SmallVector<llvm::SmallVector<unsigned>> unstored;
  /// Linalg ops between the members, none of them a member, that touch no
  /// memory an earlier member or deferred op touches (where either
  /// writes): they run before the group's kernel, in their order (GPT-2:
  /// a layer norm backward's weight-gradient column sums, which read the
  /// gradient the group then overwrites with its bf16 copy).
  llvm::SmallVector<mlir::Operation *> hoisted;
  /// The other ops between the members: they touch no memory a later
  /// member touches (where either writes) and run after the group's
  /// kernel, in their order.
  llvm::SmallVector<mlir::Operation *> deferred;
};

/// The most workgroup memory a row group's column partial sums take (a
/// block's warps' values, one buffer per output): CUDA's static shared
/// memory limit.
constexpr int64_t kMaxRowGroupWorkgroupBytes = 48 * 1024;

/// The most bytes of arguments a kernel formed from several ops takes: a
/// CUDA kernel's parameters hold 4352 bytes (ptxas refuses more).
constexpr int64_t kMaxKernelArgumentBytes = 3072;

/// The bytes of kernel arguments the operands of `ops` take once outlined:
/// a memref is a descriptor of 8 * (3 + 2 * rank) bytes, other values 8;
/// constants are sunk into the kernel, a value used twice passed once.
int64_t kernelArgumentBytes(llvm::ArrayRef<mlir::linalg::GenericOp> ops);

/// What matchRowGroup asks of the kernel former about an op.
struct RowGroupQueries {
  /// Whether a reduction can run as a warp reduction (combiners
  /// recognised, outputs that shuffles move).
  llvm::function_ref<bool(mlir::linalg::GenericOp)> isWarpReduction;
  /// Elements a lane takes at a time when the op runs alone.
  llvm::function_ref<int64_t(mlir::linalg::GenericOp, RowOpKind)> ownWidth;
  /// Whether something reads the op's outputs that the uses of their
  /// buffers do not show (an erased recomputation's readers): then it
  /// stores all of them.
  llvm::function_ref<bool(mlir::linalg::GenericOp)> storesAll;
  /// Whether output `n` of a reduction starts from a folded fill's value
  /// (not loaded).
  llvm::function_ref<bool(mlir::linalg::GenericOp, unsigned n)>
      startsFromFill;
};

/// The row group starting at `seed` (a reduction or an elementwise op over
/// (rows..., row) of a static shape with rows of at most `maxRowLength`
/// elements): the ops after it in its block that join it, up to the first
/// op with memory effects that is not a linalg.generic.
///
/// A reduction joins when `queries.isWarpReduction` accepts it, its
/// `ownWidth` equals the other reductions' and each output starts from a
/// folded fill or an earlier member's register (every lane needs the
/// total); an elementwise op when its `ownWidth` is at least that. Every
/// dependency between two members (one writes what the other reads or
/// writes) must be row-local at one address function (see RowGroup), and
/// the group's arguments stay within kMaxKernelArgumentBytes. An op that
/// would write memory an earlier member reads does not join, unless the
/// same lane read it (the same address function: after an elementwise
/// member, or after a reduction member when no reduction follows); a
/// per-row op does not join when it would store over a per-row input it
/// loads from memory (every lane loads it, lane 0 stores).
///
/// A per-row output of a temporary (a `memref.alloc`, or a view of the
/// step's arena) that nothing but later members reads, all from the
/// register, is not stored (RowGroup::unstored): its writer joins although
/// the planner put those bytes over what an earlier member reads (GPT-2: a
/// layer norm's sum of squares over the GEMM output the residual add
/// before it reads). Members `queries.storesAll` names store everything.
///
/// A column partial sum (RowOpKind::ColumnPartial, over chunks of
/// `blockRows` rows: one block's) joins like an elementwise op that reads
/// its inputs and writes nothing a member touches; its outputs' workgroup
/// buffers stay within kMaxRowGroupWorkgroupBytes.
///
/// Ops between the members that do not join are hoisted or deferred (see
/// RowGroup). Null unless the group has two reductions, or one and an
/// elementwise op (one reduction and per-row ops are a warp reduction with
/// an epilogue).
std::optional<RowGroup> matchRowGroup(mlir::linalg::GenericOp seed,
                                      int64_t maxRowLength, int64_t blockRows,
                                      const RowGroupQueries &queries);

} // namespace effopt

#endif // EFFOPT_CONVERSION_GPUCODEGEN_ROWGROUPS_H
