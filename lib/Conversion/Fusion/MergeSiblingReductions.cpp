//===- MergeSiblingReductions.cpp - one pass over an input for two sums ---===//
//
// A LayerNorm's weight and bias gradients are two column sums over the
// same output gradient; each reads it in full. Merged into one reduction
// with two outputs, the gradient is read once. See the pass description in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

namespace effopt {
#define GEN_PASS_DEF_EFFMERGESIBLINGREDUCTIONSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// A reduction over outer dimensions on static tensors: its innermost loop
/// is parallel (a column sum; row reductions are a GPU target's warp and
/// row-group kernels, which combine per row).
bool isOuterReduction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumReductionLoops() == 0 ||
      !op->getDiscardableAttrDictionary().empty())
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return false;
  return op.getIteratorTypesArray().back() == utils::IteratorType::parallel;
}

/// Whether `a` and `b` iterate the same space the same way and read one
/// input the same way.
bool areSiblings(linalg::GenericOp a, linalg::GenericOp b) {
  if (a.getStaticLoopRanges() != b.getStaticLoopRanges() ||
      a.getIteratorTypesArray() != b.getIteratorTypesArray())
    return false;
  for (OpOperand *x : a.getDpsInputOperands())
    for (OpOperand *y : b.getDpsInputOperands())
      if (x->get() == y->get() && isa<ShapedType>(x->get().getType()) &&
          a.getMatchingIndexingMap(x) == b.getMatchingIndexingMap(y))
        return true;
  return false;
}

/// The ops strictly between `a` and `b` (one block) that use `a`'s results,
/// directly or through each other, in their operands or regions, in order; nullopt when `b` is one of
/// them or one of them has memory effects.
std::optional<SmallVector<Operation *>> usersBetween(linalg::GenericOp a,
                                                     linalg::GenericOp b) {
  llvm::SetVector<Value> reached(a->getResults().begin(),
                                 a->getResults().end());
  SmallVector<Operation *> users;
  for (Operation *op = a->getNextNode(); op; op = op->getNextNode()) {
    // A use inside the op's regions counts (a generic's payload may
    // tensor.extract from a value it captures).
    bool uses = false;
    op->walk([&](Operation *nested) {
      if (llvm::any_of(nested->getOperands(),
                       [&](Value v) { return reached.contains(v); })) {
        uses = true;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (op == b)
      return uses ? std::nullopt : std::optional(users);
    if (!uses)
      continue;
    if (!isMemoryEffectFree(op))
      return std::nullopt;
    users.push_back(op);
    reached.insert(op->getResults().begin(), op->getResults().end());
  }
  return std::nullopt;
}

/// One generic computing what `a` and `b` compute, before `b`: the inputs
/// of both (one block argument for an input both read through one map),
/// the outputs of `a` then those of `b`, each payload as it was.
linalg::GenericOp merge(linalg::GenericOp a, linalg::GenericOp b) {
  OpBuilder builder(b);
  SmallVector<Value> inputs, outputs;
  SmallVector<AffineMap> maps;
  // Per input operand of a and b, its index among the merged inputs.
  DenseMap<OpOperand *, unsigned> inputIndex;
  for (linalg::GenericOp op : {a, b})
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      auto same = llvm::find_if(llvm::seq<unsigned>(0, inputs.size()),
                                [&](unsigned i) {
                                  return inputs[i] == input->get() &&
                                         maps[i] == map;
                                });
      if (same != llvm::seq<unsigned>(0, inputs.size()).end()) {
        inputIndex[input] = *same;
        continue;
      }
      inputIndex[input] = inputs.size();
      inputs.push_back(input->get());
      maps.push_back(map);
    }
  for (linalg::GenericOp op : {a, b})
    for (OpOperand &init : op.getDpsInitsMutable()) {
      outputs.push_back(init.get());
      maps.push_back(op.getMatchingIndexingMap(&init));
    }
  SmallVector<Type> resultTypes(a->getResultTypes());
  llvm::append_range(resultTypes, b->getResultTypes());
  auto merged = linalg::GenericOp::create(
      builder, b.getLoc(), resultTypes, inputs, outputs, maps,
      a.getIteratorTypesArray(),
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        SmallVector<Value> yielded;
        unsigned outputBase = inputs.size();
        for (linalg::GenericOp op : {a, b}) {
          IRMapping mapping;
          for (OpOperand *input : op.getDpsInputOperands())
            mapping.map(op.getMatchingBlockArgument(input),
                        args[inputIndex[input]]);
          for (OpOperand &init : op.getDpsInitsMutable())
            mapping.map(op.getMatchingBlockArgument(&init),
                        args[outputBase++]);
          for (Operation &inner : op.getRegion().front().without_terminator())
            nested.clone(inner, mapping);
          for (Value v : op.getRegion().front().getTerminator()->getOperands())
            yielded.push_back(mapping.lookupOrDefault(v));
        }
        linalg::YieldOp::create(nested, loc, yielded);
      });
  return merged;
}

struct EffMergeSiblingReductionsPass
    : impl::EffMergeSiblingReductionsPassBase<EffMergeSiblingReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      for (Block &block : func.getBody())
        mergeIn(block);
    });
  }

  /// Each reduction merges with the first later sibling it can, and the
  /// result keeps merging (three column sums of one input become one).
  void mergeIn(Block &block) {
    SmallVector<linalg::GenericOp> candidates;
    for (auto op : block.getOps<linalg::GenericOp>())
      if (isOuterReduction(op))
        candidates.push_back(op);
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!candidates[i])
        continue;
      for (size_t j = i + 1; j < candidates.size(); ++j) {
        linalg::GenericOp a = candidates[i], b = candidates[j];
        if (!b || !areSiblings(a, b))
          continue;
        std::optional<SmallVector<Operation *>> users = usersBetween(a, b);
        if (!users)
          continue;
        // What reads a's results moves after b, where they now appear.
        Operation *after = b;
        for (Operation *user : *users) {
          user->moveAfter(after);
          after = user;
        }
        linalg::GenericOp merged = merge(a, b);
        unsigned numA = a->getNumResults();
        a->replaceAllUsesWith(merged->getResults().take_front(numA));
        b->replaceAllUsesWith(merged->getResults().drop_front(numA));
        a.erase();
        b.erase();
        ++numMerged;
        candidates[i] = merged;
        candidates[j] = nullptr;
      }
    }
  }
};

} // namespace
} // namespace effopt
