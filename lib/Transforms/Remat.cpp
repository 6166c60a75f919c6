//===- Remat.cpp - eff-remat: recompute saved activations -----------------===//
//
// eff-autodiff routes every forward value the backward reads through one
// eff.save. This pass decides, per policy, which of them to keep and which
// to recompute in the backward: a recomputed value's producer chain is
// cloned right before the value's first backward reader, from values that
// stay kept (saved), parameters, batch inputs and constants. The clones are
// the same ops on the same inputs (dropout masks are a function of seed,
// step and index), so training is bit-identical to keeping everything.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Analysis/ForwardBlocks.h"
#include "effopt/Analysis/ParameterCopies.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"
#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <limits>

namespace effopt {
#define GEN_PASS_DEF_EFFREMATPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt::eff;

namespace effopt {
namespace {

using eff::kRecomputedAttrName;

int64_t tensorBytes(Type type) { return storageBytes(type); }

/// The repeated-structure scope of an ONNX node name: the path up to the
/// first component that ends in an index ("/blocks.3/attn/MatMul" ->
/// "/blocks.3", "/layers/2/fc/Gemm" -> "/layers/2"), or "" outside any.
std::string repeatedScopeOf(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '/');
  std::string scope;
  for (StringRef part : parts) {
    if (part.empty())
      continue;
    scope += "/" + part.str();
    StringRef index = part.rsplit('.').second;
    if (index.empty())
      index = part;
    if (llvm::all_of(index, llvm::isDigit))
      return scope;
  }
  return "";
}

class Rematerializer {
public:
  Rematerializer(func::FuncOp func, StringRef policy, StringRef boundary,
                 int64_t freeBytes)
      : func(func), policy(policy), boundary(boundary), freeBytes(freeBytes),
        parameterCopies(func) {}

  LogicalResult run(int64_t &numRecomputed, int64_t &numKept,
                    int64_t &numClonedOps) {
    Block &body = func.getBody().front();
    for (Operation &op : body)
      if (auto save = dyn_cast<SaveOp>(op))
        saves.push_back(save);
    if (saves.empty() || policy == "none")
      return success();
    // The forward: every op before the first save (eff-autodiff places the
    // saves between the forward and the backward).
    for (Operation &op : body) {
      if (isa<SaveOp>(op))
        break;
      forwardIndex[&op] = static_cast<int64_t>(forwardOps.size());
      forwardOps.push_back(&op);
    }
    for (SaveOp save : saves)
      savedBy[save.getInput()] = save;
    // Activations: values that depend on the batch (not only on parameters
    // and constants).
    for (BlockArgument arg : body.getArguments())
      if (!func.getArgAttr(arg.getArgNumber(), kParameterAttrName))
        activations.insert(arg);
    for (Operation *op : forwardOps)
      if (llvm::any_of(op->getOperands(),
                       [&](Value v) { return activations.contains(v); }))
        activations.insert(op->result_begin(), op->result_end());
    if (failed(assignSegments()))
      return failure();

    // 1. Decide: which saved values to recompute.
    if (policy == "budget")
      chooseForBudget();
    else
      for (SaveOp save : saves)
        if (shouldRecompute(save.getInput()))
          recompute.insert(save.getInput());
    // Their chains need inputs: kept values become (or stay) saved.
    for (Value v : llvm::make_early_inc_range(recompute))
      collectInputs(v);

    // 2. New saves for kept values that were not saved before, next to the
    // others.
    OpBuilder builder(saves.front());
    for (Value v : keep) {
      if (savedBy.count(v))
        continue;
      Operation *producer = v.getDefiningOp();
      producer->setLoc(withProvenance(producer->getLoc(), Provenance::Saved));
      savedBy[v] = SaveOp::create(builder, producer->getLoc(), v);
      ++numKept;
    }

    // 3. Recompute: each recomputed save's chain goes right before its
    // first reader; later saves reuse clones that already exist.
    SmallVector<SaveOp> recomputedSaves;
    for (SaveOp save : saves)
      if (recompute.contains(save.getInput()))
        recomputedSaves.push_back(save);
    for (SaveOp save : recomputedSaves) {
      Operation *firstReader = nullptr;
      for (Operation *user : save->getUsers())
        if (!firstReader || user->isBeforeInBlock(firstReader))
          firstReader = user;
      if (!firstReader) {
        save.erase();
        continue;
      }
      builder.setInsertionPoint(firstReader);
      Value value = materialize(save.getInput(), builder, numClonedOps);
      save.getResult().replaceAllUsesWith(value);
      save.erase();
      ++numRecomputed;
    }
    // Forward producers no longer saved lose their saved tag.
    for (Value v : recompute) {
      Operation *producer = v.getDefiningOp();
      if (!keep.contains(v))
        producer->setLoc(
            withProvenance(producer->getLoc(), Provenance::Forward));
    }
    return success();
  }

private:
  /// The segment of every forward op for full, sqrt and boundary policies
  /// (-1: outside every segment, never recomputed).
  LogicalResult assignSegments() {
    if (policy == "selective")
      return success();
    if (!boundary.empty()) {
      llvm::Regex regex(boundary);
      std::string error;
      if (!regex.isValid(error))
        return func.emitError("eff-remat: invalid boundary regex '")
               << boundary << "': " << error;
      int64_t segment = -1;
      for (Operation *op : forwardOps) {
        if (regex.match(nodeNameOf(op->getLoc())))
          ++segment;
        segmentOf[op] = segment;
      }
      return success();
    }
    if (policy == "sqrt") {
      // Chen et al. 2016: sqrt(n) segments of the forward.
      int64_t n = static_cast<int64_t>(forwardOps.size());
      int64_t size = std::max<int64_t>(
          1, static_cast<int64_t>(std::ceil(n / std::ceil(std::sqrt(n)))));
      for (Operation *op : forwardOps)
        segmentOf[op] = forwardIndex[op] / size;
      return success();
    }
    // full: the repeated-structure scopes of the ONNX node names where they
    // give blocks (a transformer's layers, one block each) ...
    llvm::StringMap<int64_t> ids;
    for (Operation *op : forwardOps) {
      std::string scope = repeatedScopeOf(nodeNameOf(op->getLoc()));
      segmentOf[op] =
          scope.empty() ? -1 : ids.try_emplace(scope, ids.size()).first->second;
    }
    if (!ids.empty())
      return success();
    // ... otherwise blocks between separators of the forward's dataflow
    // (single tensors every later op reaches the earlier ones through).
    ForwardBlocks blocks(func);
    if (blocks.numBlocks() < 2) {
      if (policy == "budget")
        return success(); // no whole-block candidates
      return func.emitError(
          "eff-remat: policy full found no blocks: no repeated scopes in the "
          "ONNX node names (like /layers.3/...) and no single tensor that "
          "separates the forward; give boundary=REGEX");
    }
    for (Operation *op : forwardOps)
      segmentOf[op] = blocks.blockOf(op);
    return success();
  }

  /// budget: the cheapest set of saved values to recompute that frees at
  /// least `freeBytes`, by dynamic programming (0/1 knapsack, minimising the
  /// recomputed FLOPs from the cost interface). Besides single values, each
  /// repeated block is a candidate as a whole (recompute everything that
  /// stays inside it from what enters it, as full does), so full
  /// checkpointing is one of the plans the optimiser sees. The memory
  /// planner, run by the caller (effc), verifies the result and asks for
  /// more if needed.
  void chooseForBudget() {
    struct Candidate {
      SmallVector<Value> values;
      int64_t bytes = 0, flops = 0;
    };
    /// FLOPs of recomputing `values` through the forward producers that
    /// `inChain` admits, each op counted once.
    auto chainFlops = [&](ArrayRef<Value> values,
                          llvm::function_ref<bool(Value)> inChain) {
      int64_t flops = 0;
      llvm::SmallPtrSet<Operation *, 16> chain;
      SmallVector<Operation *> worklist;
      for (Value v : values)
        worklist.push_back(v.getDefiningOp());
      while (!worklist.empty()) {
        Operation *op = worklist.pop_back_val();
        if (!chain.insert(op).second)
          continue;
        if (auto cost = dyn_cast<CostOpInterface>(op))
          flops += cost.getFlops();
        for (Value operand : op->getOperands())
          if (isForwardValue(operand) && inChain(operand))
            worklist.push_back(operand.getDefiningOp());
      }
      return flops;
    };
    // A single value is recomputed through its chain of unsaved forward
    // producers back to saved values, arguments and constants: it frees its
    // own bytes and costs the chain's FLOPs.
    std::vector<Candidate> singles;
    std::vector<int64_t> singleBlock;
    llvm::MapVector<int64_t, Candidate> blocks;
    for (SaveOp save : saves) {
      Value v = save.getInput();
      if (!isForwardValue(v))
        continue;
      Candidate c;
      c.values.push_back(v);
      c.bytes = tensorBytes(v.getType());
      c.flops = chainFlops(v, [&](Value operand) {
        return !savedBy.count(operand);
      });
      singles.push_back(c);
      int64_t block = segment(v.getDefiningOp());
      singleBlock.push_back(block);
      // A block as a whole frees every saved value that stays inside it.
      if (block >= 0 && shouldRecomputeInBlock(v)) {
        Candidate &whole = blocks[block];
        whole.values.push_back(v);
        whole.bytes += c.bytes;
      }
    }
    // A block but one: the same with the value whose keeping saves the most
    // FLOPs per byte kept (a GEMM output, typically) left saved -- a plan
    // between full checkpointing and keeping more.
    llvm::MapVector<int64_t, Candidate> blocksButOne;
    for (auto &entry : blocks) {
      int64_t block = entry.first;
      Candidate &whole = entry.second;
      llvm::SmallPtrSet<Value, 16> members(whole.values.begin(),
                                           whole.values.end());
      auto flopsWithout = [&](Value kept) {
        SmallVector<Value> rest;
        for (Value v : whole.values)
          if (v != kept)
            rest.push_back(v);
        return chainFlops(rest, [&](Value operand) {
          return segment(operand.getDefiningOp()) == block &&
                 operand != kept &&
                 (members.contains(operand) || !savedBy.count(operand));
        });
      };
      whole.flops = flopsWithout(Value());
      if (whole.values.size() < 2)
        continue;
      Value best;
      double bestGain = 0;
      for (Value v : whole.values) {
        double gain = double(whole.flops - flopsWithout(v)) /
                      double(tensorBytes(v.getType()));
        if (gain > bestGain) {
          best = v;
          bestGain = gain;
        }
      }
      if (!best)
        continue;
      Candidate &butOne = blocksButOne[block];
      for (Value v : whole.values)
        if (v != best)
          butOne.values.push_back(v);
      butOne.bytes = whole.bytes - tensorBytes(best.getType());
      butOne.flops = flopsWithout(best);
    }
    if (freeBytes <= 0 || singles.empty())
      return;
    // Bytes in units so the table stays small; the need is rounded up.
    int64_t unit = std::max<int64_t>(1, freeBytes / 4096);
    int64_t need = (freeBytes + unit - 1) / unit;
    constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
    // Stages of the DP: the singles outside every block, then per block its
    // singles followed by the block as a whole and the block but one (one
    // of the three kinds per block). tables[k][j]: least FLOPs freeing at least j
    // units after stage k.
    struct Stage {
      const Candidate *candidate;
      bool whole;
      size_t groupStart; // whole: the table before the block's singles
    };
    std::vector<Stage> stages;
    for (size_t i = 0; i < singles.size(); ++i)
      if (singleBlock[i] < 0 || !blocks.count(singleBlock[i]))
        stages.push_back({&singles[i], false, 0});
    for (auto &[block, whole] : blocks) {
      size_t start = stages.size();
      for (size_t i = 0; i < singles.size(); ++i)
        if (singleBlock[i] == block)
          stages.push_back({&singles[i], false, 0});
      stages.push_back({&whole, true, start});
      if (blocksButOne.count(block))
        stages.push_back({&blocksButOne[block], true, start});
    }
    std::vector<std::vector<int64_t>> tables(
        stages.size() + 1, std::vector<int64_t>(need + 1, kInf));
    tables[0][0] = 0;
    for (size_t k = 0; k < stages.size(); ++k) {
      const Stage &stage = stages[k];
      const std::vector<int64_t> &from =
          tables[stage.whole ? stage.groupStart : k];
      int64_t units = stage.candidate->bytes / unit;
      for (int64_t j = 0; j <= need; ++j) {
        tables[k + 1][j] = tables[k][j];
        int64_t rest = std::max<int64_t>(0, j - units);
        if (from[rest] < kInf)
          tables[k + 1][j] = std::min(tables[k + 1][j],
                                      from[rest] + stage.candidate->flops);
      }
    }
    if (tables.back()[need] >= kInf) {
      // The budget cannot be met: recompute the most this policy can free
      // without chains across blocks (every block as a whole, as full does;
      // every single value when there are no blocks), and let the planner
      // report what that achieves.
      if (blocks.empty())
        for (const Candidate &c : singles)
          recompute.insert(c.values.front());
      for (auto &[block, whole] : blocks)
        recompute.insert(whole.values.begin(), whole.values.end());
      return;
    }
    int64_t j = need;
    for (size_t k = stages.size(); k > 0;) {
      const Stage &stage = stages[k - 1];
      if (tables[k][j] == tables[k - 1][j]) {
        --k;
        continue;
      }
      recompute.insert(stage.candidate->values.begin(),
                       stage.candidate->values.end());
      j = std::max<int64_t>(0, j - stage.candidate->bytes / unit);
      k = stage.whole ? stage.groupStart : k - 1;
    }
  }

  int64_t segment(Operation *op) const {
    auto it = segmentOf.find(op);
    return it == segmentOf.end() ? -1 : it->second;
  }

  bool isForwardValue(Value v) const {
    Operation *producer = v.getDefiningOp();
    return producer && forwardIndex.count(producer) &&
           !isa<ConstantOp>(producer);
  }

  /// Whether `v` stays inside its block: every forward reader is in it.
  bool shouldRecomputeInBlock(Value v) const {
    int64_t s = segment(v.getDefiningOp());
    if (s < 0)
      return false;
    for (Operation *user : v.getUsers())
      if (forwardIndex.count(user) && segment(user) != s)
        return false;
    return true;
  }

  /// What selective recomputation keeps (Korthikanti et al. 2022 keep the
  /// GEMM outputs and recompute the attention core between them):
  /// - outputs of GEMMs and convolutions with a weight operand: recomputing
  ///   them costs as much as the forward itself;
  /// - values read by more than one forward op (the residual stream): this
  ///   bounds every recomputed chain to the ops between two kept values,
  ///   instead of chains through the whole network held for the whole
  ///   backward.
  /// A product of two activations whose result is larger than both inputs
  /// (attention scores, sequence x sequence per head) is recomputed: few
  /// FLOPs per byte freed.
  ///
  /// Low-rank GEMMs (LoRA's adapters, eff-lora) are the exception on both
  /// counts: the expansion B (r -> out) costs 2r FLOPs per output element,
  /// as little as an elementwise op, so it is recomputed; and the
  /// projection A (in -> r) reading a layer's input is not a second reader
  /// of it (the input stays recomputable, as without the adapter).
  /// An eff.attention's output and log-sum-exp are kept: they are all its
  /// backward reads, O(T) per head, and recomputing them costs the whole
  /// attention forward.
  bool selectiveKeeps(Value v) const {
    Operation *producer = v.getDefiningOp();
    if (isLowRankExpansion(producer))
      return false;
    if (isa<LinearOp, Conv2DOp, AttentionOp>(producer))
      return true;
    if (auto matmul = dyn_cast<MatmulOp>(producer)) {
      int64_t inputs = 0;
      bool weightOperand = false;
      for (Value operand : matmul->getOperands()) {
        inputs += tensorBytes(operand.getType());
        weightOperand |= !activations.contains(operand);
      }
      if (weightOperand || tensorBytes(v.getType()) <= inputs)
        return true;
    }
    llvm::SmallPtrSet<Operation *, 4> readers;
    for (Operation *user : v.getUsers())
      if (forwardIndex.count(user) && !isLowRankProjectionOf(user, v))
        readers.insert(user);
    return readers.size() > 1;
  }

  /// The bytes of the activation operands of a GEMM (matmul or linear)
  /// that also has a weight operand (one that depends on no batch input);
  /// nothing for other ops.
  std::optional<int64_t> weightGemmActivationBytes(Operation *op) const {
    if (!isa<MatmulOp, LinearOp>(op))
      return std::nullopt;
    int64_t bytes = 0;
    bool weightOperand = false;
    for (Value operand : op->getOperands().take_front(2)) {
      if (activations.contains(operand))
        bytes += tensorBytes(operand.getType());
      else
        weightOperand = true;
    }
    if (!weightOperand || bytes == 0)
      return std::nullopt;
    return bytes;
  }

  /// The second GEMM of a low-rank pair x -> A -> B: a GEMM with a weight
  /// whose output is at least kLowRank times its activation input, which a
  /// GEMM with a weight produced.
  bool isLowRankExpansion(Operation *op) const {
    std::optional<int64_t> in = weightGemmActivationBytes(op);
    if (!in || tensorBytes(op->getResult(0).getType()) < kLowRank * *in)
      return false;
    return llvm::any_of(op->getOperands().take_front(2), [&](Value operand) {
      Operation *producer = operand.getDefiningOp();
      return activations.contains(operand) && producer &&
             weightGemmActivationBytes(producer);
    });
  }

  /// `user` is the first GEMM of a low-rank pair reading `v` (directly or
  /// through a dropout): a GEMM with a weight whose output, at most
  /// 1/kLowRank of `v`, only a low-rank expansion reads.
  bool isLowRankProjectionOf(Operation *user, Value v) const {
    if (auto dropout = dyn_cast<DropoutOp>(user)) {
      Operation *reader = onlyForwardReader(dropout.getOutput());
      return reader && isLowRankProjectionOf(reader, dropout.getOutput());
    }
    std::optional<int64_t> in = weightGemmActivationBytes(user);
    if (!in || kLowRank * tensorBytes(user->getResult(0).getType()) >
                   tensorBytes(v.getType()))
      return false;
    Operation *reader = onlyForwardReader(user->getResult(0));
    return reader && isLowRankExpansion(reader);
  }

  /// The one forward op reading `v` (its saves aside), or null.
  Operation *onlyForwardReader(Value v) const {
    Operation *reader = nullptr;
    for (Operation *user : v.getUsers()) {
      if (!forwardIndex.count(user) || user == reader)
        continue;
      if (reader)
        return nullptr;
      reader = user;
    }
    return reader;
  }

  /// How much narrower than the layer a low-rank GEMM's inner dimension is.
  static constexpr int64_t kLowRank = 8;

  bool shouldRecompute(Value v) const {
    if (!isForwardValue(v))
      return false;
    if (policy == "selective")
      return !selectiveKeeps(v);
    // full / sqrt / boundary: keep only values that leave their segment.
    return shouldRecomputeInBlock(v);
  }

  /// Marks what the recomputation of `v` reads: recomputed producers
  /// recursively, kept values otherwise.
  void collectInputs(Value v) {
    SmallVector<Value> worklist{v};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      Operation *producer = value.getDefiningOp();
      for (Value operand : producer->getOperands()) {
        if (!isForwardValue(operand) || keep.contains(operand) ||
            chain.contains(operand))
          continue;
        Operation *inner = operand.getDefiningOp();
        // A copy of a parameter is never kept (see eff-autodiff): a chain
        // that reads one recomputes it too.
        bool recomputeOperand =
            parameterCopies.isCopy(operand) ? true
            : policy == "budget"
                ? recompute.contains(operand) || !savedBy.count(operand)
            : policy == "selective"
                ? !selectiveKeeps(operand)
                : segment(inner) >= 0 && segment(inner) == segment(producer);
        if (recomputeOperand) {
          chain.insert(operand);
          worklist.push_back(operand);
        } else {
          keep.insert(operand);
        }
      }
    }
  }

  /// `v` available at the builder's insertion point in the backward.
  Value materialize(Value v, OpBuilder &builder, int64_t &numClonedOps) {
    if (!isForwardValue(v))
      return v; // arguments and constants
    if (keep.contains(v) || (!recompute.contains(v) && !chain.contains(v)))
      return savedBy.count(v) ? savedBy[v].getResult() : v;
    if (Value cloned = clones.lookup(v))
      return cloned;
    Operation *producer = v.getDefiningOp();
    IRMapping mapping;
    for (Value operand : producer->getOperands())
      mapping.map(operand, materialize(operand, builder, numClonedOps));
    Operation *clone = builder.clone(*producer, mapping);
    clone->setLoc(withProvenance(producer->getLoc(), Provenance::Recomputed));
    // CSE must not merge the clone back into the forward op when both read
    // the same arguments: the attribute makes them different ops.
    clone->setAttr(kRecomputedAttrName, builder.getUnitAttr());
    ++numClonedOps;
    for (auto [original, copy] :
         llvm::zip(producer->getResults(), clone->getResults()))
      clones[original] = copy;
    return clones[v];
  }

  func::FuncOp func;
  StringRef policy, boundary;
  int64_t freeBytes;
  ParameterCopies parameterCopies;
  SmallVector<SaveOp> saves;
  std::vector<Operation *> forwardOps;
  DenseMap<Operation *, int64_t> forwardIndex, segmentOf;
  llvm::MapVector<Value, SaveOp> savedBy;
  llvm::SetVector<Value> recompute, keep, chain;
  llvm::DenseSet<Value> activations;
  DenseMap<Value, Value> clones;
};

struct EffRematPass : impl::EffRematPassBase<EffRematPass> {
  using Base::Base;

  void runOnOperation() override {
    if (policy != "none" && policy != "selective" && policy != "full" &&
        policy != "sqrt" && policy != "budget") {
      getOperation().emitError("eff-remat: unknown policy '")
          << policy << "' (none, selective, full, sqrt or budget)";
      return signalPassFailure();
    }
    if (!boundary.empty() && policy != "full") {
      getOperation().emitError(
          "eff-remat: boundary applies to policy full only");
      return signalPassFailure();
    }
    int64_t recomputed = 0, kept = 0, cloned = 0;
    WalkResult result = getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal())
        return WalkResult::advance();
      Rematerializer remat(func, policy, boundary, freeBytes);
      if (failed(remat.run(recomputed, kept, cloned)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    numRecomputedValues += recomputed;
    numNewlySavedValues += kept;
    numRecomputedOps += cloned;
  }
};

} // namespace
} // namespace effopt
