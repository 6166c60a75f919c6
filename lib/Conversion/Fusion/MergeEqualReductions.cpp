//===- MergeEqualReductions.cpp - one pass over the data per reduction ----===//
//
// The backward often recomputes a reduction the forward already made: a
// cross-entropy's gradient needs each row's max and sum of exponentials,
// which the loss computed from the same logits. The result is small (one
// value per row) and the reduction reads the whole input, so keeping the
// forward's result is cheap and computing it again is not. Equal scalar
// computations (each optimizer update's bias corrections) are merged too:
// on a GPU each is a launch. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace effopt {
#define GEN_PASS_DEF_EFFMERGEEQUALREDUCTIONSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// A reduction's results are at most this fraction of what it reads.
constexpr int64_t kReadToResultRatio = 16;

int64_t tensorBytes(Type type) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return -1;
  return storageBytes(shaped);
}

/// Two fills of one constant into empty tensors of one type: equal values
/// that are distinct ops (each reduction starts from its own identity).
bool equalFills(Value a, Value b) {
  auto fa = a.getDefiningOp<linalg::FillOp>();
  auto fb = b.getDefiningOp<linalg::FillOp>();
  if (!fa || !fb || a.getType() != b.getType() ||
      !fa.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>() ||
      !fb.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
    return false;
  Value va = fa.getDpsInputs()[0], vb = fb.getDpsInputs()[0];
  if (va == vb)
    return true;
  Attribute ca, cb;
  return matchPattern(va, m_Constant(&ca)) &&
         matchPattern(vb, m_Constant(&cb)) && ca == cb;
}

/// Whether `op` is a reduction worth keeping: static tensors, results
/// small against what it reads.
bool isSmallReduction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumReductionLoops() == 0)
    return false;
  int64_t read = 0, written = 0;
  for (Value input : op.getDpsInputs()) {
    int64_t bytes = tensorBytes(input.getType());
    if (bytes < 0)
      return false;
    read += bytes;
  }
  for (Value result : op->getResults()) {
    int64_t bytes = tensorBytes(result.getType());
    if (bytes < 0)
      return false;
    written += bytes;
  }
  return written * kReadToResultRatio <= read;
}

/// Two empty tensors of one type: the uninitialized outputs of equal
/// elementwise computations.
bool equalEmpties(Value a, Value b) {
  return a.getType() == b.getType() && a.getDefiningOp<tensor::EmptyOp>() &&
         b.getDefiningOp<tensor::EmptyOp>();
}

/// Whether `op` computes scalars from scalars: the per-step values each
/// optimizer update derives from the learning rate and the step count
/// (bias corrections), one computation per parameter as lowered.
bool isScalarComputation(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() != 0)
    return false;
  auto isScalar = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && type.getRank() == 0;
  };
  return llvm::all_of(op->getOperands(), isScalar) &&
         llvm::all_of(op->getResults(), isScalar);
}

bool isReshape(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op);
}

struct EffMergeEqualReductionsPass
    : impl::EffMergeEqualReductionsPassBase<EffMergeEqualReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      for (Block &block : func.getBody())
        mergeIn(block);
    });
  }

  void mergeIn(Block &block) {
    // Candidates by their first operand: the earlier ops a later one may
    // equal.
    DenseMap<Value, SmallVector<Operation *>> earlier;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto generic = dyn_cast<linalg::GenericOp>(op);
      bool candidate =
          isReshape(&op) || (generic && (isSmallReduction(generic) ||
                                         isScalarComputation(generic)));
      if (!candidate || op.getNumOperands() == 0)
        continue;
      SmallVector<Operation *> &same = earlier[op.getOperand(0)];
      auto equal = [&](Operation *prev) {
        // Values the comparison found equal (block arguments, results of
        // nested ops), besides identical values and equal fills.
        DenseMap<Value, Value> matched;
        return OperationEquivalence::isEquivalentTo(
            prev, &op,
            [&](Value a, Value b) {
              return success(a == b || matched.lookup(a) == b ||
                             equalFills(a, b) || equalEmpties(a, b));
            },
            [&](Value a, Value b) { matched[a] = b; },
            OperationEquivalence::IgnoreLocations);
      };
      auto found = llvm::find_if(same, equal);
      Operation *twin = found == same.end() ? nullptr : *found;
      if (!twin) {
        same.push_back(&op);
        continue;
      }
      op.replaceAllUsesWith(twin->getResults());
      if (generic)
        ++numMerged;
      op.erase();
    }
  }
};

} // namespace
} // namespace effopt
