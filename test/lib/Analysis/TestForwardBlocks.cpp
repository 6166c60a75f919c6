//===- TestForwardBlocks.cpp - prints the forward's separators for lit ----===//

#include "effopt/Analysis/ForwardBlocks.h"

#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {
/// Emits a remark on every forward op a separator follows ("separator: 64 B
/// cross, 192 B written up to here", ", ends block 0" where a boundary is
/// chosen, and which op produced the crossing tensor when it is not this
/// one), on every other block boundary ("boundary: 32 B kept besides
/// earlier boundaries', ..."), and one on the function with the totals.
struct TestForwardBlocksPass
    : PassWrapper<TestForwardBlocksPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestForwardBlocksPass)
  StringRef getArgument() const final { return "test-eff-forward-blocks"; }
  StringRef getDescription() const final {
    return "Print the separators and blocks of the forward as remarks";
  }
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    effopt::ForwardBlocks blocks(func);
    ArrayRef<Operation *> ops = blocks.forwardOps();
    llvm::DenseMap<Operation *, int64_t> indexOf;
    for (auto [i, op] : llvm::enumerate(ops))
      indexOf[op] = static_cast<int64_t>(i);
    // Block boundaries by position: separators are printed with theirs;
    // the other boundaries (after tensors kept anyway) on their own.
    llvm::DenseMap<int64_t, int64_t> blockEnding;
    for (auto [block, boundary] : llvm::enumerate(blocks.boundaries()))
      blockEnding[boundary.position] = static_cast<int64_t>(block);
    llvm::DenseSet<int64_t> separatorPositions;
    for (const effopt::ForwardBlocks::Separator &cut : blocks.separators()) {
      separatorPositions.insert(cut.position);
      Operation *op = ops[cut.position];
      InFlightDiagnostic remark = op->emitRemark();
      remark << "separator: "
             << effopt::storageBytes(cut.value.getType()) << " B cross, "
             << cut.bytesBefore << " B written up to here";
      Operation *producer = cut.value.getDefiningOp();
      if (producer != op)
        remark << ", crossing: result #"
               << cast<OpResult>(cut.value).getResultNumber() << " of op #"
               << indexOf.lookup(producer);
      auto ending = blockEnding.find(cut.position);
      if (ending != blockEnding.end())
        remark << ", ends block " << ending->second;
    }
    for (auto [block, boundary] : llvm::enumerate(blocks.boundaries()))
      if (!separatorPositions.contains(boundary.position))
        ops[boundary.position]->emitRemark()
            << "boundary: " << boundary.newBytes << " B kept besides "
            << "earlier boundaries', " << boundary.bytesBefore
            << " B written up to here, ends block " << block;
    func.emitRemark() << "forward: " << ops.size() << " ops, "
                      << blocks.separators().size() << " separators, "
                      << blocks.numBlocks() << " blocks, "
                      << blocks.activationBytes() << " B of activations";
  }
};
} // namespace

namespace effopt::test {
void registerTestForwardBlocksPass() {
  PassRegistration<TestForwardBlocksPass>();
}
} // namespace effopt::test
