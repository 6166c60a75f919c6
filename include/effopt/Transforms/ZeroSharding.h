//===- ZeroSharding.h - How ZeRO cuts a tensor over the ranks --*- C++ -*-===//
//
// eff-zero (stage 2: gradients, stage 3: parameters) and eff-optimizer
// (stages 1-3: optimizer state) cut the same tensors the same way: the
// tensor flattened, zero-padded to N x S elements and cut into N blocks of
// S, rank r keeping elements [r*S, (r+1)*S). S is the smallest multiple of
// a granule that covers the tensor: one element for elementwise optimizer
// state, a quantization block for block-wise 8-bit state (each rank owns
// whole blocks: codes and absmax), a row (or a whole matrix) for
// Adafactor's factored second moment. One function decides, so the passes
// cannot disagree about a layout.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_TRANSFORMS_ZEROSHARDING_H
#define EFFOPT_TRANSFORMS_ZEROSHARDING_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace effopt {

/// What one rank's shard of a tensor holds whole.
struct ZeroShardPolicy {
  enum class Unit {
    /// Any elements: S = ceil(elements / N) (sgd, adam, adamw).
    Element,
    /// Whole blocks of `quantBlockSize` elements for tensors of at least
    /// `min8bitSize` elements (adam8bit, adamw8bit; the smaller ones keep
    /// fp32 moments and shard by element).
    QuantBlock,
    /// Adafactor: a matrix (the last two dimensions, R x C) with one
    /// matrix in all (every leading dimension 1) is cut by whole rows of C;
    /// a stack of B > 1 matrices by whole matrices of R x C; a vector or a
    /// scalar by element.
    Row,
  };
  Unit unit = Unit::Element;
  int64_t quantBlockSize = 256;
  int64_t min8bitSize = 4096;

  /// The policy eff-optimizer's `optimizer` needs (adam8bit / adamw8bit:
  /// QuantBlock, adafactor: Row, the others Element).
  static ZeroShardPolicy forOptimizer(llvm::StringRef optimizer,
                                      int64_t quantBlockSize,
                                      int64_t min8bitSize);
  /// Parses eff-zero's `shard-unit` (element, quant-block or row).
  static std::optional<Unit> parseUnit(llvm::StringRef name);
  static llvm::StringRef unitName(Unit unit);

  /// The granule of a tensor of `shape`: S is a multiple of it.
  int64_t granule(llvm::ArrayRef<int64_t> shape) const;
  /// S: the elements of one rank's shard of a tensor of `shape` across
  /// `worldSize` ranks, ceil(ceil(elements / granule) / N) x granule.
  int64_t shardElements(llvm::ArrayRef<int64_t> shape, int64_t worldSize) const;
};

/// Adafactor under ZeRO: a tensor of rank >= 2 viewed as B matrices of
/// R x C (B the product of the leading dimensions).
struct FactoredShape {
  int64_t matrices;
  int64_t rows;
  int64_t cols;
  /// Whether ranks own whole rows of the one matrix (B = 1), rather than
  /// whole matrices.
  bool byRows() const { return matrices == 1; }
  static FactoredShape of(llvm::ArrayRef<int64_t> shape);
};

} // namespace effopt

#endif // EFFOPT_TRANSFORMS_ZEROSHARDING_H
