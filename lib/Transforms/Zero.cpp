//===- Zero.cpp - eff-zero: data parallel across the ranks of a run -------===//
//
// Stage 0: every rank computes the gradients of its own rows; before the
// optimizer sees them each is summed over the ranks (eff.all_reduce) and
// divided by N, so every rank applies the same mean update, as one process
// accumulating the N ranks' micro-batches would (eff-grad-accum steps=N).
// The loss is averaged the same way, so every rank reports the global one. A
// token mean with ignore_index weighs each rank by its count of targets
// (the global mean, not a mean of means); a sum-reduced loss adds up.
//
// Stages 1 and 2 mark the module (eff.zero_stage) so that eff-optimizer
// keeps 1/N of the optimizer state per rank and gathers the updated
// parameter shards. Stage 2 also reduce-scatters each gradient, flattened
// and zero-padded to a multiple of N, so the step returns only this rank's
// shard of it (1/N of the gradient bytes).
//
// Stage 3 also shards the parameters: the step's argument of a trainable
// parameter becomes this rank's 1-D block of it (flattened, zero-padded),
// and every read of the parameter reads a whole copy all-gathered right
// before it: one gather before the first forward reader and another before
// the first backward reader (eff.recomputed, like remat's clones, so CSE
// keeps them apart), each in the block of its readers, so the whole copy
// lives only from its gather to its last reader. `keep-gathered` gathers
// once per block instead and keeps the copy from the forward to the
// backward. Gradients are reduce-scattered as in stage 2.
//
// Shards are cut as eff-optimizer cuts the optimizer state (ZeroSharding.h,
// `shard-unit`): by element, or on whole quantization blocks (8-bit
// optimizers) or whole rows (Adafactor), so a rank's gradient and parameter
// shards line up with its state.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Transforms/LossWeighting.h"
#include "effopt/Transforms/ZeroSharding.h"

#include "effopt/Dialect/Eff/IR/EffInterfaces.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace effopt {
#define GEN_PASS_DEF_EFFZEROPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt;
using namespace effopt::eff;

namespace {

struct EffZeroPass : effopt::impl::EffZeroPassBase<EffZeroPass> {
  using EffZeroPassBase::EffZeroPassBase;
  void runOnOperation() override;
  /// Stage 3: trainable parameter arguments become this rank's shards,
  /// gathered before their readers.
  LogicalResult shardParameters(ModuleOp module, func::FuncOp func);
  /// What a rank's shard holds whole, from the shard-unit options.
  ZeroShardPolicy shardPolicy;
};

/// Finds the loss op of the step (a classification loss anywhere in it,
/// also inside an accumulation loop) and how ranks combine it.
FailureOr<LossWeighting> classifyLoss(func::FuncOp func) {
  Operation *lossOp = nullptr;
  func.walk([&](Operation *op) {
    if (isa<SoftmaxCrossEntropyOp, NllLossOp>(op)) {
      lossOp = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  FailureOr<LossWeighting> weighting = classifyLossOp(lossOp, "eff-zero");
  if (failed(weighting) || weighting->kind != LossWeighting::CountedMean)
    return weighting;
  // The rank's labels: a step argument, sliced per micro-batch
  // (eff-grad-accum) or reshaped on the way.
  Value labels = weighting->labels;
  while (Operation *def = labels.getDefiningOp()) {
    if (!isa<tensor::ExtractSliceOp, ReshapeOp, CastOp>(def))
      break;
    labels = def->getOperand(0);
  }
  auto arg = dyn_cast<BlockArgument>(labels);
  if (!arg || arg.getOwner() != &func.getBody().front())
    return lossOp->emitOpError(
        "with ignore_index: eff-zero cannot find its labels among the "
        "step's inputs, to count the targets of each rank");
  weighting->labels = arg;
  return weighting;
}

} // namespace

static void placeEarly(Block &body, Operation *lastStepOp,
                       Operation *returnOp);

void EffZeroPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (worldSize < 1) {
    module.emitError("eff-zero: world-size must be at least 1, got ")
        << static_cast<int64_t>(worldSize);
    return signalPassFailure();
  }
  if (bucketBytes < 0) {
    module.emitError("eff-zero: bucket-bytes must be at least 0, got ")
        << static_cast<int64_t>(bucketBytes);
    return signalPassFailure();
  }
  if (minBuckets < 1) {
    module.emitError("eff-zero: min-buckets must be at least 1, got ")
        << static_cast<int64_t>(minBuckets);
    return signalPassFailure();
  }
  if (stage < 0 || stage > 3) {
    module.emitError("eff-zero: stage must be 0, 1, 2 or 3, got ")
        << static_cast<int64_t>(stage);
    return signalPassFailure();
  }
  std::optional<ZeroShardPolicy::Unit> unit =
      ZeroShardPolicy::parseUnit(shardUnit);
  if (!unit) {
    module.emitError("eff-zero: shard-unit must be element, quant-block or "
                     "row, got '")
        << shardUnit << "'";
    return signalPassFailure();
  }
  if (*unit == ZeroShardPolicy::Unit::QuantBlock &&
      (quantBlockSize <= 0 || min8bitSize < 0)) {
    module.emitError("eff-zero: quant-block-size must be > 0 and "
                     "min-8bit-size >= 0, got ")
        << static_cast<int64_t>(quantBlockSize) << " and "
        << static_cast<int64_t>(min8bitSize);
    return signalPassFailure();
  }
  shardPolicy.unit = *unit;
  shardPolicy.quantBlockSize = quantBlockSize;
  shardPolicy.min8bitSize = min8bitSize;
  auto func = module.lookupSymbol<func::FuncOp>(kForwardBackwardFuncName);
  if (!func || func.isExternal()) {
    module.emitError("eff-zero expects func.func @forward_backward; run "
                     "eff-autodiff first");
    return signalPassFailure();
  }
  if (func->hasAttr("eff.loss_scaled")) {
    func.emitError("eff-zero runs before eff-loss-scaling (the gradients it "
                   "sums are the scaled ones, so an overflow on any rank "
                   "skips the step on all)");
    return signalPassFailure();
  }
  OpBuilder builder(&getContext());
  module->setAttr(kWorldSizeAttrName, builder.getI64IntegerAttr(worldSize));
  if (stage != 0)
    module->setAttr(kZeroStageAttrName, builder.getI64IntegerAttr(stage));
  if (worldSize == 1 && !oneRankCollectives)
    return; // a sum over one rank is the value itself
  if (worldSize == 1)
    module->setAttr(kOneRankCollectivesAttrName, builder.getUnitAttr());
  FailureOr<LossWeighting> weighting = classifyLoss(func);
  if (failed(weighting))
    return signalPassFailure();

  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  // Everything built from here on is placed by `placeEarly` afterwards.
  Operation *lastStepOp = returnOp->getPrevNode();
  builder.setInsertionPoint(returnOp);
  Location loc = withProvenance(func.getLoc(), Provenance::Gradient);
  // CountedMean: this rank's count of targets (a rank without any adds
  // nothing: its mean is 0/0). It depends only on the labels, so it is
  // computed at the start of the step.
  Value count, hasTargets, zero;
  if (weighting->kind == LossWeighting::CountedMean) {
    zero = scalarF32(builder, loc, 0.0);
    count = countTargets(builder, loc, weighting->labels,
                         weighting->ignoreIndex);
    hasTargets = CmpOp::create(builder, loc,
                               RankedTensorType::get({}, builder.getI1Type()),
                               CmpPredicate::gt, count, zero);
  }
  // `x` times `weight`, or 0 on a rank without counted targets (whose
  // unweighted mean is 0/0).
  auto weigh = [&](Value x, Value weight) -> Value {
    Value product = MulOp::create(builder, loc, x, weight);
    return WhereOp::create(builder, loc, product.getType(), hasTargets, product,
                           zero);
  };

  auto checkF32 = [&](unsigned i) {
    Value value = returnOp.getOperand(i);
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (type && type.getElementType().isF32())
      return true;
    func.emitError("eff-zero: ")
        << (i == 0 ? "the loss" : "gradient result " + std::to_string(i))
        << " is " << value.getType() << "; only f32 tensors are all-reduced";
    return false;
  };

  // The loss (with the count) in a bucket of its own, summed first, right
  // after the forward: in a gradient bucket it would keep that bucket live
  // from the forward on, and the global count divides every sum after it.
  if (!checkF32(0))
    return signalPassFailure();
  SmallVector<Value> lossBucket;
  if (count)
    lossBucket.push_back(count);
  lossBucket.push_back(count ? weigh(returnOp.getOperand(0), count)
                             : returnOp.getOperand(0));
  auto lossSum = AllReduceOp::create(builder, loc, lossBucket,
                                     builder.getI64IntegerAttr(worldSize));
  ++numAllReduces;
  for (Value v : lossBucket)
    numAllReducedBytes += effopt::eff::detail::tensorBytes(v.getType());
  // The global values: sums divided by the global count, by N, or not. A
  // counted mean weighs each rank's gradients by its own count before the
  // sum, as soon as the backward produces them (the count is known from
  // the start), and divides the sums by the global count after them, as
  // eff-grad-accum does over micro-batches: the same bits as one process
  // accumulating the N ranks' micro-batches whenever the sums are (the
  // same rows on every rank).
  Value divisor;
  if (count) {
    divisor = lossSum.getResult(0);
  } else if (weighting->kind == LossWeighting::EqualMean) {
    divisor = scalarF32(builder, loc, static_cast<double>(worldSize));
  }
  auto global = [&](Value sum) -> Value {
    return divisor ? DivOp::create(builder, loc, sum, divisor).getResult()
                   : sum;
  };
  Value globalLoss = global(lossSum.getResults().back());
  returnOp->setOperand(0, globalLoss);

  // The gradients in the order the step produces them (weighted for a
  // counted mean), so that a bucket is final as soon as its last gradient
  // is, as DDP's buckets in reverse parameter order.
  Block &body = func.getBody().front();
  DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i + 1;
  auto producedAt = [&](Value v) -> unsigned {
    Operation *def = v.getDefiningOp();
    Operation *inBody = def ? body.findAncestorOpInBlock(*def) : nullptr;
    return inBody ? position.lookup(inBody) : 0;
  };
  SmallVector<unsigned> order;
  for (unsigned i = 1; i < returnOp.getNumOperands(); ++i)
    if (func.getResultAttr(i, kGradientAttrName))
      order.push_back(i);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return producedAt(returnOp.getOperand(a)) <
           producedAt(returnOp.getOperand(b));
  });
  SmallVector<unsigned> resultIndices, scatteredIndices;
  SmallVector<Value> summands, scattered;
  for (unsigned i : order) {
    if (!checkF32(i))
      return signalPassFailure();
    Value value = returnOp.getOperand(i);
    if (count)
      value = weigh(value, count);
    if (stage >= 2) {
      scatteredIndices.push_back(i);
      scattered.push_back(value);
      continue;
    }
    resultIndices.push_back(i);
    summands.push_back(value);
  }

  // Buckets in that order: one all-reduce sums each. At least min-buckets
  // of them, so that a model smaller than bucket-bytes still sums (and,
  // with the buffers written in place, frees) its gradients during the
  // backward.
  int64_t summedBytes = 0;
  for (Value v : summands)
    summedBytes += effopt::eff::detail::tensorBytes(v.getType());
  int64_t limit =
      std::min<int64_t>(bucketBytes, llvm::divideCeil(summedBytes, minBuckets));
  SmallVector<Value> sums;
  SmallVector<Value> bucket;
  int64_t bucketed = 0;
  auto flush = [&]() {
    if (bucket.empty())
      return;
    auto op = AllReduceOp::create(builder, loc, bucket,
                                  builder.getI64IntegerAttr(worldSize));
    llvm::append_range(sums, op.getResults());
    ++numAllReduces;
    numAllReducedBytes += bucketed;
    bucket.clear();
    bucketed = 0;
  };
  for (Value v : summands) {
    int64_t bytes = effopt::eff::detail::tensorBytes(v.getType());
    if (!bucket.empty() && bucketed + bytes > limit)
      flush();
    bucket.push_back(v);
    bucketed += bytes;
  }
  flush();
  for (auto [i, sum] : llvm::zip_equal(resultIndices, sums))
    returnOp->setOperand(i, global(sum));

  // Stage 2: each gradient flattened, padded with zeros to N*S elements and
  // reduce-scattered; the result is this rank's S elements (S from the
  // shard policy: whole quantization blocks or rows where the optimizer
  // needs them).
  for (auto [i, value] : llvm::zip_equal(scatteredIndices, scattered)) {
    auto valueType = cast<RankedTensorType>(value.getType());
    int64_t elements = valueType.getNumElements();
    int64_t shard = shardPolicy.shardElements(valueType.getShape(), worldSize);
    Type f32 = builder.getF32Type();
    Value flat = ReshapeOp::create(
        builder, loc, RankedTensorType::get({elements}, f32), value);
    if (shard * worldSize != elements)
      flat = PadOp::create(builder, loc, flat,
                           builder.getDenseI64ArrayAttr({0}),
                           builder.getDenseI64ArrayAttr(
                               {shard * worldSize - elements}),
                           builder.getF64FloatAttr(0.0));
    Value mine = ReduceScatterOp::create(
        builder, loc, RankedTensorType::get({shard}, f32), flat,
        builder.getI64IntegerAttr(worldSize));
    ++numReduceScatters;
    numAllReducedBytes += effopt::eff::detail::tensorBytes(flat.getType());
    returnOp->setOperand(i, global(mine));
  }
  placeEarly(body, lastStepOp, returnOp);
  // The global loss at the end, where it is returned.
  if (auto mean = globalLoss.getDefiningOp<DivOp>())
    mean->moveBefore(returnOp);
  if (stage == 3 && failed(shardParameters(module, func)))
    return signalPassFailure();
  if (!scattered.empty() || stage == 3)
    func.setType(builder.getFunctionType(
        func.getBody().front().getArgumentTypes(),
        returnOp.getOperandTypes()));
}

/// Moves the ops eff-zero built before the return (after `lastStepOp`)
/// each to just after the last producer of its operands: a bucket's
/// all-reduce (a gradient's reduce-scatter) runs as soon as its last
/// gradient is final, in the middle of the rest of the backward, instead
/// of after all of it. The data flow decides; the ranks still run every
/// collective in one order, the block's.
static void placeEarly(Block &body, Operation *lastStepOp,
                       Operation *returnOp) {
  SmallVector<Operation *> built;
  for (Operation *op = lastStepOp ? lastStepOp->getNextNode() : &body.front();
       op != returnOp; op = op->getNextNode())
    built.push_back(op);
  // Ops placed after the same producer keep the order they were built in.
  DenseMap<Operation *, Operation *> lastPlaced;
  for (Operation *op : built) {
    Operation *after = nullptr;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      Operation *inBody = def ? body.findAncestorOpInBlock(*def) : nullptr;
      if (inBody && (!after || after->isBeforeInBlock(inBody)))
        after = inBody;
    }
    if (Operation *previous = lastPlaced.lookup(after))
      op->moveAfter(previous);
    else if (after)
      op->moveAfter(after);
    else
      op->moveBefore(&body.front());
    lastPlaced[after] = op;
  }
}

/// Whether `op` belongs to the backward of the step (a recomputed forward
/// op included): its parameter reads get the backward's gather.
static bool isBackwardOp(Operation *op) {
  Provenance provenance = provenanceOf(op->getLoc());
  return provenance == Provenance::Backward ||
         provenance == Provenance::Gradient ||
         provenance == Provenance::Recomputed ||
         op->hasAttr(kRecomputedAttrName);
}

LogicalResult EffZeroPass::shardParameters(ModuleOp module,
                                           func::FuncOp func) {
  Block &body = func.getBody().front();
  llvm::SmallDenseSet<Attribute> trained;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto param =
            func.getResultAttrOfType<FlatSymbolRefAttr>(i, kGradientAttrName))
      trained.insert(param);
  OpBuilder builder(module.getContext());
  Type f32 = builder.getF32Type();
  for (BlockArgument arg : body.getArguments()) {
    auto symbol = func.getArgAttrOfType<FlatSymbolRefAttr>(
        arg.getArgNumber(), kParameterAttrName);
    if (!symbol || !trained.contains(symbol))
      continue; // frozen parameters and buffers stay whole on every rank
    auto param = module.lookupSymbol<ParameterOp>(symbol);
    auto type = cast<RankedTensorType>(arg.getType());
    if (!param || param.getType() != type ||
        param->hasAttr(kShardOfAttrName))
      return func.emitError("eff-zero: stage 3: argument ")
             << arg.getArgNumber() << " is not the whole parameter "
             << symbol << " (was the step sharded already?)";
    if (!type.getElementType().isF32())
      return param.emitError("eff-zero: stage 3 shards f32 parameters (the "
                             "master weights); ")
             << symbol << " is " << type;
    int64_t elements = type.getNumElements();
    int64_t shard = shardPolicy.shardElements(type.getShape(), worldSize);
    auto shardType = RankedTensorType::get({shard}, f32);
    auto paddedType = RankedTensorType::get({shard * worldSize}, f32);

    // The readers, grouped by block and by forward / backward (one group
    // per block with keep-gathered), in order of first appearance.
    llvm::MapVector<std::pair<Block *, int>, SmallVector<OpOperand *>>
        groups;
    for (OpOperand &use : arg.getUses()) {
      Operation *user = use.getOwner();
      bool backward = !keepGathered && isBackwardOp(user);
      groups[{user->getBlock(), backward ? 1 : 0}].push_back(&use);
    }
    for (auto &[key, uses] : groups) {
      Operation *first = uses.front()->getOwner();
      for (OpOperand *use : uses)
        if (use->getOwner()->isBeforeInBlock(first))
          first = use->getOwner();
      bool backward = key.second != 0;
      Location loc = withProvenance(
          first->getLoc(),
          backward ? Provenance::Recomputed : Provenance::Forward);
      builder.setInsertionPoint(first);
      auto gather = AllGatherOp::create(builder, loc, paddedType, arg,
                                        builder.getI64IntegerAttr(worldSize));
      ++numAllGathers;
      Value whole = gather;
      if (shard * worldSize != elements)
        whole = SliceOp::create(builder, loc, whole,
                                builder.getDenseI64ArrayAttr({0}),
                                builder.getDenseI64ArrayAttr({elements}),
                                builder.getDenseI64ArrayAttr({1}));
      if (type.getRank() != 1)
        whole = ReshapeOp::create(builder, loc, type, whole);
      // The backward's copy is a recomputation of the forward's: tagged
      // like eff-remat's clones, so CSE does not merge it back.
      if (backward)
        for (Operation *op = gather; op != first; op = op->getNextNode())
          op->setAttr(kRecomputedAttrName, builder.getUnitAttr());
      for (OpOperand *use : uses)
        use->set(whole);
    }
    arg.setType(shardType);
    param.setType(shardType);
    param->setAttr(kShardOfAttrName,
                   builder.getDenseI64ArrayAttr(type.getShape()));
    ++numShardedParameters;
  }
  return success();
}
