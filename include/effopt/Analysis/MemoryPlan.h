//===- MemoryPlan.h - static placement of temporaries in one arena -*- C++ -*-===//
//
// Liveness over a straight-line schedule (the operations of one block, in
// order) and a greedy placement of every buffer allocated there at a fixed
// offset of one arena. Used by eff-memory-plan to rewrite the allocations and
// by the memory report to explain them.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_ANALYSIS_MEMORYPLAN_H
#define EFFOPT_ANALYSIS_MEMORYPLAN_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Block.h"

#include <vector>

namespace effopt {

/// One temporary buffer: where it lives in the arena and when.
struct PlannedBuffer {
  mlir::memref::AllocOp alloc;
  int64_t bytes = 0;
  int64_t offset = 0;
  /// Schedule positions (indices of the block's operations) of the
  /// allocation and of the last operation that uses it or a view of it.
  int64_t first = 0, last = 0;
};

class MemoryPlan {
public:
  /// Plans every statically shaped `memref.alloc` directly in `schedule`.
  static MemoryPlan compute(mlir::Block &schedule, int64_t alignment = 64);

  llvm::ArrayRef<PlannedBuffer> buffers() const { return planned; }
  int64_t arenaBytes() const { return size; }
  /// The schedule position where the sum of live buffers is largest, and
  /// that sum.
  std::pair<int64_t, int64_t> peak() const;

private:
  std::vector<PlannedBuffer> planned;
  int64_t size = 0;
};

/// Bytes of one element in memory (i1 takes a byte).
int64_t storageBytes(mlir::Type elementType);

} // namespace effopt

#endif // EFFOPT_ANALYSIS_MEMORYPLAN_H
