//===- MemoryPlan.h - static placement of temporaries in one arena -*- C++ -*-===//
//
// Liveness over the step's schedule (the operations of the function body in
// order, with the body of a loop -- eff-grad-accum's micro-batch loop --
// right after the loop) and a greedy placement of every buffer allocated
// there at a fixed offset of one arena. A buffer whose first writer reads
// another buffer element for element for the last time takes that buffer's
// bytes (the elementwise op runs in place). Used by eff-memory-plan to
// rewrite the allocations and by the memory report to explain them.
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
  /// Schedule positions (indices into MemoryPlan::schedule()) of the
  /// allocation and of the last operation that uses it or a view of it.
  int64_t first = 0, last = 0;
  /// Written in place over a buffer that dies at `first`: its first writer
  /// is an elementwise linalg.generic that reads that buffer, element for
  /// element, for the last time. The two share their bytes (one offset) and
  /// count once at `first`.
  bool inPlace = false;

  /// Whether the buffer's bytes are taken at schedule position `pos`.
  bool liveAt(int64_t pos) const {
    return (inPlace ? first + 1 : first) <= pos && pos <= last;
  }
};

class MemoryPlan {
public:
  /// Plans every statically shaped `memref.alloc` in `body` and in the
  /// bodies of its scf.for loops (a buffer allocated in a loop body lives
  /// within one iteration).
  /// With `inPlace`, a buffer first written by an elementwise op that reads
  /// an equal buffer for the last time takes that buffer's bytes.
  static MemoryPlan compute(mlir::Block &body, int64_t alignment,
                            bool inPlace = false);

  llvm::ArrayRef<PlannedBuffer> buffers() const { return planned; }
  /// The operation at each schedule position.
  llvm::ArrayRef<mlir::Operation *> schedule() const { return scheduleOps; }
  /// Buffers allocated in a loop body and yielded to the next iteration:
  /// they cannot have one static place (bufferization should have updated
  /// the iteration argument in place).
  llvm::ArrayRef<mlir::memref::AllocOp> escapingBuffers() const {
    return escaping;
  }
  int64_t arenaBytes() const { return size; }
  /// The schedule position where the sum of live buffers is largest, and
  /// that sum.
  std::pair<int64_t, int64_t> peak() const;

private:
  std::vector<PlannedBuffer> planned;
  std::vector<mlir::Operation *> scheduleOps;
  std::vector<mlir::memref::AllocOp> escaping;
  int64_t size = 0;
};

} // namespace effopt

#endif // EFFOPT_ANALYSIS_MEMORYPLAN_H
