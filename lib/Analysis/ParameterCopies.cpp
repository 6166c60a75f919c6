//===- ParameterCopies.cpp - cheap copies of parameters -------------------===//

#include "effopt/Analysis/ParameterCopies.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace effopt;

/// Ops that only move or round their operands' elements: zero or one
/// conversion per element written, nothing worth keeping a copy for.
static bool isCopyOp(Operation *op) {
  return isa<eff::ReshapeOp, eff::TransposeOp, eff::BroadcastToOp,
             eff::SliceOp, eff::ConcatOp, eff::SplitOp, eff::PadOp,
             eff::CastOp>(op);
}

ParameterCopies::ParameterCopies(func::FuncOp func) {
  Block &body = func.getBody().front();
  llvm::DenseSet<Value> sources;
  for (BlockArgument arg : body.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), eff::kParameterAttrName))
      sources.insert(arg);
  for (Operation &op : body) {
    if (isa<eff::ConstantOp>(op)) {
      sources.insert(op.result_begin(), op.result_end());
      continue;
    }
    if (!isCopyOp(&op) || op.getNumOperands() == 0)
      continue;
    if (llvm::all_of(op.getOperands(), [&](Value v) {
          return sources.contains(v) || copies.contains(v);
        }))
      copies.insert(op.result_begin(), op.result_end());
  }
}

SmallVector<Operation *> ParameterCopies::chainOf(Value value) const {
  llvm::SetVector<Operation *> chain;
  SmallVector<Value> worklist;
  if (isCopy(value))
    worklist.push_back(value);
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val().getDefiningOp();
    if (!chain.insert(op))
      continue;
    for (Value operand : op->getOperands())
      if (isCopy(operand))
        worklist.push_back(operand);
  }
  SmallVector<Operation *> ordered(chain.begin(), chain.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return ordered;
}
