//===- ForwardBlocks.cpp - blocks of the forward from its dataflow --------===//

#include "effopt/Analysis/ForwardBlocks.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Support/StorageBytes.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>

using namespace mlir;
using namespace effopt;

ForwardBlocks::ForwardBlocks(func::FuncOp func) {
  findSeparators(func);
  chooseBoundaries();
}

void ForwardBlocks::findSeparators(func::FuncOp func) {
  if (func.isExternal())
    return;
  Block &body = func.getBody().front();
  for (Operation &op : body) {
    if (isa<eff::SaveOp>(op) || op.hasTrait<OpTrait::IsTerminator>())
      break;
    indexOf[&op] = static_cast<int64_t>(ops.size());
    ops.push_back(&op);
  }
  int64_t n = static_cast<int64_t>(ops.size());

  // Activations: what depends on a batch input.
  llvm::DenseSet<Value> activations;
  for (BlockArgument arg : body.getArguments())
    if (!func.getArgAttr(arg.getArgNumber(), eff::kParameterAttrName))
      activations.insert(arg);
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return activations.contains(v); }))
      activations.insert(op->result_begin(), op->result_end());

  // Each float activation an op produces crosses the gaps from its producer
  // to its last forward reader. Two difference arrays count the crossing
  // values per gap and xor their ids, so a gap crossed by exactly one value
  // names it.
  std::vector<Value> floatValues;
  std::vector<int64_t> count(n + 1, 0), ids(n + 1, 0);
  opBytes.assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    Operation *op = ops[i];
    if (op->getNumResults() == 0 || !activations.contains(op->getResult(0)))
      continue;
    if (auto cost = dyn_cast<eff::CostOpInterface>(op))
      opBytes[i] = cost.getBytesWritten();
    else
      for (Type type : op->getResultTypes())
        opBytes[i] += storageBytes(type);
    for (Value result : op->getResults()) {
      auto type = dyn_cast<ShapedType>(result.getType());
      if (!type || !isa<FloatType>(type.getElementType()))
        continue;
      int64_t last = i;
      for (Operation *user : result.getUsers())
        if (Operation *ancestor = body.findAncestorOpInBlock(*user)) {
          auto it = indexOf.find(ancestor);
          if (it != indexOf.end())
            last = std::max(last, it->second);
        }
      if (last == i)
        continue;
      int64_t id = static_cast<int64_t>(floatValues.size());
      floatValues.push_back(result);
      ++count[i];
      --count[last];
      ids[i] ^= id;
      ids[last] ^= id;
    }
  }
  int64_t crossing = 0, idXor = 0, bytes = 0;
  for (int64_t g = 0; g < n; ++g) {
    crossing += count[g];
    idXor ^= ids[g];
    bytes += opBytes[g];
    if (g + 1 < n && crossing == 1)
      cuts.push_back({g, floatValues[idXor], bytes});
  }
  totalBytes = bytes;
}

void ForwardBlocks::chooseBoundaries() {
  if (cuts.empty() || totalBytes <= 0)
    return;
  // k blocks cost about k separators kept plus one block's activations
  // recomputed at a time: k * s + T / k, least at blocks of sqrt(T * s)
  // bytes, s the mean separator size.
  double separatorBytes = 0;
  for (const Separator &cut : cuts)
    separatorBytes += storageBytes(cut.value.getType());
  separatorBytes /= static_cast<double>(cuts.size());
  double target =
      std::sqrt(static_cast<double>(totalBytes) * std::max(1.0, separatorBytes));
  int64_t last = 0;
  for (auto [index, cut] : llvm::enumerate(cuts)) {
    if (cut.bytesBefore >= totalBytes)
      break;
    if (static_cast<double>(cut.bytesBefore - last) >= target) {
      chosen.push_back(static_cast<int64_t>(index));
      last = cut.bytesBefore;
    }
  }
  if (!chosen.empty())
    return;
  // No separator after a whole block's worth of bytes: the one closest to
  // halving the forward.
  int64_t best = -1, bestDistance = 0;
  for (auto [index, cut] : llvm::enumerate(cuts)) {
    if (cut.bytesBefore <= 0 || cut.bytesBefore >= totalBytes)
      continue;
    int64_t distance = std::abs(2 * cut.bytesBefore - totalBytes);
    if (best < 0 || distance < bestDistance) {
      best = static_cast<int64_t>(index);
      bestDistance = distance;
    }
  }
  if (best >= 0)
    chosen.push_back(best);
}

int64_t ForwardBlocks::blockOf(Operation *op) const {
  auto it = indexOf.find(op);
  if (it == indexOf.end())
    return -1;
  // Boundaries are few (about the square root of the ops): a scan is fine.
  int64_t block = 0;
  for (int64_t index : chosen)
    if (cuts[index].position < it->second)
      ++block;
  return block;
}
