//===- ForwardBlocks.cpp - blocks of the forward from its dataflow --------===//

#include "effopt/Analysis/ForwardBlocks.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Support/StorageBytes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

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
      lifetimes.push_back({i, last});
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

  // 1. Separators, greedily: a boundary at the first one a block's worth of
  // bytes after the last boundary; if none, the one closest to halving the
  // forward.
  std::vector<const Separator *> primary;
  int64_t last = 0;
  for (const Separator &cut : cuts) {
    if (cut.bytesBefore >= totalBytes)
      break;
    if (static_cast<double>(cut.bytesBefore - last) >= target) {
      primary.push_back(&cut);
      last = cut.bytesBefore;
    }
  }
  if (primary.empty()) {
    int64_t bestDistance = 0;
    for (const Separator &cut : cuts) {
      if (cut.bytesBefore <= 0 || cut.bytesBefore >= totalBytes)
        continue;
      int64_t distance = std::abs(2 * cut.bytesBefore - totalBytes);
      if (primary.empty() || distance < bestDistance) {
        primary.assign(1, &cut);
        bestDistance = distance;
      }
    }
  }
  if (primary.empty())
    return;

  // 2. Blocks between them worth more than two (nothing inside separates:
  // a dense block, whose input and every layer's output live on) are cut
  // further, at gaps that at most one float tensor crosses besides those
  // any cut there keeps anyway: tensors that crossed an earlier boundary,
  // and tensors read at or after the block's end, which cross every later
  // gap of the block (the dense layers' outputs). In a dense block these
  // are the layers' ends and the bottlenecks. Among the candidates between
  // one and two blocks' worth of bytes after the last boundary, the one
  // that keeps the fewest new bytes. One sweep over the gaps (each window
  // looked at twice).
  int64_t n = static_cast<int64_t>(ops.size());
  std::vector<std::vector<int64_t>> defined(n), dying(n);
  for (auto [id, lifetime] : llvm::enumerate(lifetimes)) {
    defined[lifetime.first].push_back(static_cast<int64_t>(id));
    dying[lifetime.second].push_back(static_cast<int64_t>(id));
  }
  std::vector<bool> kept(lifetimes.size(), false);
  size_t next = 0;
  int64_t blockStart = 0;
  last = 0;
  auto blockEndPosition = [&] {
    return next < primary.size() ? primary[next]->position : n - 1;
  };
  auto blockEndBytes = [&] {
    return next < primary.size() ? primary[next]->bytesBefore : totalBytes;
  };
  auto counted = [&](int64_t id) {
    return !kept[id] && lifetimes[id].second < blockEndPosition();
  };
  /// The live float tensors after an op; `fresh` counts those not kept
  /// anyway.
  struct State {
    llvm::SetVector<int64_t> live;
    int64_t fresh = 0, bytes = 0;
  };
  auto advance = [&](State &state, int64_t g) {
    state.bytes += opBytes[g];
    for (int64_t id : dying[g]) {
      state.live.remove(id);
      if (counted(id))
        --state.fresh;
    }
    for (int64_t id : defined[g]) {
      state.live.insert(id);
      if (counted(id))
        ++state.fresh;
    }
  };
  auto eligible = [&](const State &state) {
    double bytes = static_cast<double>(state.bytes);
    return static_cast<double>(blockEndBytes() - blockStart) > 2 * target &&
           state.fresh <= 1 && bytes - static_cast<double>(last) >= target &&
           static_cast<double>(blockEndBytes()) - bytes >= target / 2;
  };
  auto newBytes = [&](const State &state) {
    int64_t bytes = 0;
    for (int64_t id : state.live)
      if (!kept[id])
        bytes += storageBytes(floatValues[id].getType());
    return bytes;
  };
  auto choose = [&](State &state, int64_t g, int64_t keptBytes) {
    chosen.push_back({g, state.bytes, keptBytes});
    for (int64_t id : state.live)
      kept[id] = true;
    state.fresh = 0;
    last = state.bytes;
  };
  State state;
  for (int64_t g = 0; g + 1 < n; ++g) {
    advance(state, g);
    if (next < primary.size() && primary[next]->position == g) {
      choose(state, g, storageBytes(primary[next]->value.getType()));
      blockStart = state.bytes;
      ++next;
      continue;
    }
    if (!eligible(state))
      continue;
    State probe = state;
    int64_t best = g, bestBytes = newBytes(state);
    for (int64_t h = g + 1; h < blockEndPosition(); ++h) {
      advance(probe, h);
      if (static_cast<double>(probe.bytes - last) > 2 * target)
        break;
      if (eligible(probe) && newBytes(probe) < bestBytes) {
        best = h;
        bestBytes = newBytes(probe);
      }
    }
    while (g < best)
      advance(state, ++g);
    choose(state, g, bestBytes);
  }
}

int64_t ForwardBlocks::blockOf(Operation *op) const {
  auto it = indexOf.find(op);
  if (it == indexOf.end())
    return -1;
  // Boundaries are few (about the square root of the ops): a scan is fine.
  int64_t block = 0;
  for (const Boundary &boundary : chosen)
    if (boundary.position < it->second)
      ++block;
  return block;
}
