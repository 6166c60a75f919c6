//===- GradAccum.cpp - eff-grad-accum: K micro-batches per optimizer step -===//
//
// Rewrites @forward_backward to take K*B rows on every batch input and run
// its old body once per micro-batch of B rows in an scf.for (not unrolled):
// iteration k reads rows [k*B, (k+1)*B), the gradients are accumulated in
// fp32 weighted by the micro-batch's share of the loss's denominator, BN-style
// buffers are threaded through the iterations (each micro-batch updates the
// running statistics in turn, as a PyTorch accumulation loop does), and after
// the loop everything is divided by the summed weights. The results keep
// @forward_backward's contract, so eff-loss-scaling and eff-optimizer run
// unchanged after it.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Transforms/LossWeighting.h"

#include "effopt/Dialect/Eff/IR/EffInterfaces.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace effopt {
#define GEN_PASS_DEF_EFFGRADACCUMPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt;
using namespace effopt::eff;

namespace {

/// Looks through casts and reshapes from the loss to the op that reduces it.
FailureOr<LossWeighting> classifyLoss(Value loss) {
  Value v = loss;
  while (Operation *def = v.getDefiningOp()) {
    if (isa<CastOp, ReshapeOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    break;
  }
  return classifyLossOp(v.getDefiningOp(), "eff-grad-accum");
}

RankedTensorType withElementType(Value v, Type element) {
  return cast<RankedTensorType>(v.getType()).clone(element);
}

/// `v` as fp32 (a cast unless it already is).
Value toF32(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType().isF32())
    return v;
  return CastOp::create(b, loc, type.clone(b.getF32Type()), v);
}

struct EffGradAccumPass
    : effopt::impl::EffGradAccumPassBase<EffGradAccumPass> {
  using EffGradAccumPassBase::EffGradAccumPassBase;
  void runOnOperation() override;
  LogicalResult accumulate(func::FuncOp func);
};

} // namespace

void EffGradAccumPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (steps < 1) {
    module.emitError("eff-grad-accum: steps must be at least 1, got ")
        << static_cast<int64_t>(steps);
    return signalPassFailure();
  }
  auto func = module.lookupSymbol<func::FuncOp>(kForwardBackwardFuncName);
  if (!func || func.isExternal()) {
    module.emitError("eff-grad-accum expects func.func @forward_backward; run "
                     "eff-autodiff first");
    return signalPassFailure();
  }
  if (steps == 1)
    return; // one micro-batch is the step as it is
  if (failed(accumulate(func)))
    signalPassFailure();
}

LogicalResult EffGradAccumPass::accumulate(func::FuncOp func) {
  MLIRContext *ctx = &getContext();
  const int64_t K = steps;
  Block &body = func.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  Location loc = func.getLoc();

  // Batch inputs (arguments that are not persistent state) and their
  // micro-batch size B: the leading dimension as compiled.
  SmallVector<BlockArgument> batchInputs;
  for (BlockArgument arg : body.getArguments()) {
    if (func.getArgAttr(arg.getArgNumber(), kParameterAttrName))
      continue;
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  kInputAttrName);
    std::string label = name ? ("'" + name.getValue() + "'").str()
                             : "argument " + std::to_string(arg.getArgNumber());
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0)
      return func.emitError("eff-grad-accum: batch input ")
             << label << " is a scalar: it has no batch dimension to split "
                         "into micro-batches";
    if (type.isDynamicDim(0))
      return func.emitError("eff-grad-accum: batch input ")
             << label << " has a dynamic batch dimension";
    batchInputs.push_back(arg);
  }
  if (batchInputs.empty())
    return func.emitError("eff-grad-accum: @forward_backward has no batch "
                          "input to split into micro-batches");

  // Results: the loss, other forward outputs (not kept: they are per
  // micro-batch), gradients and buffer updates.
  llvm::DenseMap<Attribute, BlockArgument> argumentOf;
  for (BlockArgument arg : body.getArguments())
    if (auto symbol = func.getArgAttrOfType<FlatSymbolRefAttr>(
            arg.getArgNumber(), kParameterAttrName))
      argumentOf[symbol] = arg;
  struct Result {
    unsigned index;
    Value value;
    enum { Loss, Gradient, Buffer } kind;
    BlockArgument buffer; // Buffer: the argument it updates
  };
  SmallVector<Result> results;
  for (auto [i, value] : llvm::enumerate(returnOp.getOperands())) {
    if (i == 0) {
      results.push_back({0, value, Result::Loss, {}});
    } else if (func.getResultAttr(i, kGradientAttrName)) {
      results.push_back({static_cast<unsigned>(i), value, Result::Gradient, {}});
    } else if (auto buffer = func.getResultAttrOfType<FlatSymbolRefAttr>(
                   i, kBufferUpdateAttrName)) {
      auto it = argumentOf.find(buffer);
      if (it == argumentOf.end())
        return func.emitError("eff-grad-accum: result ")
               << i << " updates " << buffer << ", which is not an argument";
      results.push_back(
          {static_cast<unsigned>(i), value, Result::Buffer, it->second});
    }
  }
  Value loss = returnOp.getOperand(0);
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || lossType.getRank() != 0)
    return func.emitError("eff-grad-accum: result 0 must be the scalar loss");
  FailureOr<LossWeighting> weighting = classifyLoss(loss);
  if (failed(weighting))
    return failure();

  SmallVector<Operation *> oldOps;
  for (Operation &op : body.without_terminator())
    oldOps.push_back(&op);

  // The batch inputs now hold K micro-batches.
  for (BlockArgument arg : batchInputs) {
    auto type = cast<RankedTensorType>(arg.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] *= K;
    arg.setType(type.clone(shape));
  }

  OpBuilder b(returnOp);
  Location accumLoc = withProvenance(loc, Provenance::Gradient);
  // Loop-carried values: the weighted loss sum, the weight sum, one fp32
  // accumulator per gradient (zero), one value per buffer (a copy of its
  // argument).
  Value zeroSum = scalarF32(b, loc, 0.0);
  SmallVector<Value> inits{zeroSum, zeroSum};
  for (Result &r : results) {
    if (r.kind == Result::Gradient) {
      auto type = withElementType(r.value, b.getF32Type());
      inits.push_back(ConstantOp::create(
          b, accumLoc, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0))));
    } else if (r.kind == Result::Buffer) {
      // The loop updates a copy: bufferization cannot update the argument
      // in place in the loop and then write the loop's result into it.
      inits.push_back(bufferization::AllocTensorOp::create(
          b, loc, cast<RankedTensorType>(r.buffer.getType()), ValueRange{},
          r.buffer));
    }
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value upper = arith::ConstantIndexOp::create(b, loc, K);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  // Bufferization allocates the accumulators at the loop's location: they
  // are gradient memory.
  auto loop = scf::ForOp::create(b, accumLoc, zero, upper, one, inits);
  loop->setAttr(kAccumulationLoopAttrName, UnitAttr::get(ctx));

  // The body: the old body on the k-th micro-batch.
  OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
  Value k = loop.getInductionVar();
  ValueRange carried = loop.getRegionIterArgs();
  IRMapping mapping;
  for (BlockArgument arg : batchInputs) {
    auto type = cast<RankedTensorType>(arg.getType());
    int64_t B = type.getDimSize(0) / K;
    Value offset = arith::MulIOp::create(
        lb, loc, k, arith::ConstantIndexOp::create(lb, loc, B));
    SmallVector<OpFoldResult> offsets(type.getRank(), lb.getIndexAttr(0));
    offsets[0] = offset;
    SmallVector<OpFoldResult> sizes, strides(type.getRank(),
                                             lb.getIndexAttr(1));
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(lb.getIndexAttr(d == 0 ? B : type.getDimSize(d)));
    auto sliceType = type.clone(
        [&] {
          SmallVector<int64_t> s(type.getShape());
          s[0] = B;
          return s;
        }());
    Value slice = tensor::ExtractSliceOp::create(lb, loc, sliceType, arg,
                                                 offsets, sizes, strides);
    mapping.map(arg, slice);
  }
  {
    unsigned next = 2;
    for (Result &r : results) {
      if (r.kind == Result::Gradient)
        ++next;
      else if (r.kind == Result::Buffer)
        mapping.map(r.buffer, carried[next++]);
    }
  }
  for (Operation *op : oldOps)
    lb.clone(*op, mapping);

  // This micro-batch's weight.
  Value weight = scalarF32(lb, loc, 1.0);
  Value nonEmpty; // CountedMean: whether anything was counted
  if (weighting->kind == LossWeighting::CountedMean) {
    weight = countTargets(lb, loc, mapping.lookupOrDefault(weighting->labels),
                          weighting->ignoreIndex);
    nonEmpty = CmpOp::create(lb, loc, RankedTensorType::get({}, lb.getI1Type()),
                             CmpPredicate::gt, weight, scalarF32(lb, loc, 0.0));
  }
  bool weighted = weighting->kind == LossWeighting::CountedMean;
  // w * x, or 0 for a micro-batch without counted targets (its mean is
  // 0/0: it must not poison the sum).
  auto weigh = [&](Location l, Value x) -> Value {
    if (!weighted)
      return x;
    Value product = MulOp::create(lb, l, x, weight);
    return WhereOp::create(lb, l, product.getType(), nonEmpty, product,
                           scalarF32(lb, l, 0.0));
  };
  // Each carried value is updated in its own storage (the materialization
  // anchors bufferization: no copy per micro-batch).
  auto inPlace = [&](Value value, Value destination) -> Value {
    return bufferization::MaterializeInDestinationOp::create(
               lb, value.getLoc(), value, destination)
        .getResult();
  };
  SmallVector<Value> yields;
  Value microLoss = toF32(lb, loc, mapping.lookupOrDefault(loss));
  yields.push_back(inPlace(
      AddOp::create(lb, loc, carried[0], weigh(loc, microLoss)), carried[0]));
  yields.push_back(inPlace(AddOp::create(lb, loc, carried[1], weight),
                           carried[1]));
  {
    unsigned next = 2;
    for (Result &r : results) {
      if (r.kind == Result::Gradient) {
        Value grad = mapping.lookupOrDefault(r.value);
        Location gl = withProvenance(grad.getLoc(), Provenance::Gradient);
        Value sum = AddOp::create(lb, gl, carried[next],
                                  weigh(gl, toF32(lb, gl, grad)));
        yields.push_back(inPlace(sum, carried[next]));
        ++next;
      } else if (r.kind == Result::Buffer) {
        yields.push_back(inPlace(mapping.lookupOrDefault(r.value), carried[next]));
        ++next;
      }
    }
  }
  scf::YieldOp::create(lb, loc, yields);

  // After the loop: divide by the summed weights (a sum-reduced loss adds
  // up as it is).
  b.setInsertionPoint(returnOp);
  Value weightSum = loop.getResult(1);
  auto finish = [&](Location l, Value sum, Type type) -> Value {
    Value mean = weighting->kind == LossWeighting::Sum
                     ? sum
                     : DivOp::create(b, l, sum, weightSum).getResult();
    if (mean.getType() != type)
      mean = CastOp::create(b, l, type, mean);
    return mean;
  };
  SmallVector<Value> newResults;
  SmallVector<DictionaryAttr> newAttrs;
  {
    unsigned next = 2;
    for (Result &r : results) {
      newAttrs.push_back(func.getResultAttrDict(r.index));
      if (r.kind == Result::Loss) {
        newResults.push_back(finish(loc, loop.getResult(0), lossType));
      } else if (r.kind == Result::Gradient) {
        newResults.push_back(finish(accumLoc, loop.getResult(next++),
                                    r.value.getType()));
      } else {
        newResults.push_back(loop.getResult(next++));
      }
    }
  }
  func::ReturnOp::create(b, returnOp.getLoc(), newResults);
  returnOp.erase();
  for (Operation *op : llvm::reverse(oldOps)) {
    op->dropAllUses();
    op->erase();
  }
  func.setType(FunctionType::get(ctx, body.getArgumentTypes(),
                                 ValueRange(newResults).getTypes()));
  func.setAllResultAttrs(newAttrs);

  // What computes something independent of the micro-batch (casts of the
  // master weights, constants) runs once per optimizer step. Pure data
  // movement (zero FLOPs: a transposed copy of a weight) is redone in each
  // micro-batch instead: hoisted, its copy would stay live across the whole
  // loop for no arithmetic saved.
  if (hoist) {
    auto loopLike = cast<LoopLikeOpInterface>(loop.getOperation());
    numHoistedOps += moveLoopInvariantCode(
        loopLike.getLoopRegions(),
        [&](Value value, Region *) {
          return loopLike.isDefinedOutsideOfLoop(value);
        },
        [&](Operation *op, Region *) {
          auto cost = dyn_cast<CostOpInterface>(op);
          bool computes =
              !cost || isa<ConstantOp>(op) || cost.getFlops() > 0;
          return computes && isMemoryEffectFree(op) && isSpeculatable(op);
        },
        [&](Operation *op, Region *) { loopLike.moveOutOfLoop(op); });
  }
  return success();
}
