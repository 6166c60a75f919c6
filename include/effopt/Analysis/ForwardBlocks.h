//===- ForwardBlocks.h - blocks of the forward from its dataflow -*- C++ -*-===//
//
// Where a forward computation can be cut into blocks, found from the graph
// itself (not from node names): the separators of its dataflow, and a
// choice of them as block boundaries balanced by bytes. Used by eff-remat
// (policies full and budget) when the ONNX node names have no repeated
// scopes.
//
// The forward is the function's operations in program order up to the first
// eff.save (eff-autodiff puts the saves between forward and backward) or the
// terminator. Activations are the values that depend on a batch input (a
// function argument that is not a parameter). A separator is the gap after
// a forward op that exactly one floating-point activation crosses: every op
// after the gap reads what was computed before it only through that one
// tensor (graph inputs, parameters and constants are always at hand;
// integer and boolean activations -- labels, indices, masks -- may cross as
// well: they carry no gradient and are kept whole). Every path from the
// inputs through the float dataflow to the loss passes through the
// separating tensor, so cutting there splits the network into a part that
// is a function of the inputs and one that is a function of the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_ANALYSIS_FORWARDBLOCKS_H
#define EFFOPT_ANALYSIS_FORWARDBLOCKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <vector>

namespace effopt {

class ForwardBlocks {
public:
  /// One place where the forward can be cut.
  struct Separator {
    /// Index (in forwardOps()) of the last op before the gap.
    int64_t position = 0;
    /// The one float activation that crosses the gap.
    mlir::Value value;
    /// Activation bytes written by the ops up to and including `position`.
    int64_t bytesBefore = 0;
  };

  /// Analyses the forward of `func`. Linear in its ops and uses; no
  /// recursion.
  explicit ForwardBlocks(mlir::func::FuncOp func);

  llvm::ArrayRef<mlir::Operation *> forwardOps() const { return ops; }
  llvm::ArrayRef<Separator> separators() const { return cuts; }
  /// Activation bytes the forward writes (the cost interface's bytes
  /// written by each op that produces an activation).
  int64_t activationBytes() const { return totalBytes; }

  /// A block boundary: the gap after forward op `position`.
  struct Boundary {
    int64_t position = 0;
    /// Activation bytes written by the ops up to and including `position`.
    int64_t bytesBefore = 0;
    /// Bytes of the float tensors crossing here that no earlier boundary
    /// crosses: what cutting here keeps in addition.
    int64_t newBytes = 0;
  };

  /// The block boundaries, in order: gaps that at most one float tensor
  /// crosses besides those an earlier boundary keeps already -- the
  /// separators, and also the gaps between the layers of a region whose
  /// long-lived tensors are kept anyway (a dense block's features: each
  /// layer adds one). Chosen greedily in blocks of about sqrt(activation
  /// bytes * separator bytes) (Chen et al. 2016: k blocks keep about k
  /// tensors and recompute one block at a time, least near sqrt(n)
  /// blocks). Empty when the forward has no separator.
  llvm::ArrayRef<Boundary> boundaries() const { return chosen; }

  /// The block of a forward op (0 for the ops before the first boundary);
  /// -1 for an op outside the forward.
  int64_t blockOf(mlir::Operation *op) const;
  int64_t numBlocks() const {
    return ops.empty() ? 0 : static_cast<int64_t>(chosen.size()) + 1;
  }

private:
  void findSeparators(mlir::func::FuncOp func);
  void chooseBoundaries();

  std::vector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Operation *, int64_t> indexOf;
  std::vector<int64_t> opBytes;
  std::vector<Separator> cuts;
  std::vector<Boundary> chosen;
  /// Per float activation that crosses a gap: its producer's index and
  /// its last forward reader's.
  std::vector<std::pair<int64_t, int64_t>> lifetimes;
  std::vector<mlir::Value> floatValues;
  int64_t totalBytes = 0;
};

} // namespace effopt

#endif // EFFOPT_ANALYSIS_FORWARDBLOCKS_H
