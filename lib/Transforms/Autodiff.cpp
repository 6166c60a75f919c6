//===- Autodiff.cpp - eff-autodiff: reverse-mode differentiation ----------===//
//
// One generic pass over GradientOpInterface:
//   1. activity: values that depend differentiably on a trainable parameter;
//   2. relevance: active values the loss depends on differentiably;
//   3. reverse sweep: from d(loss) = 1, each relevant op's rule builds its
//      operands' gradients; fan-out accumulates with eff.add;
//   4. every forward value the backward reads is routed through one
//      eff.save, placed between the forward and the backward -- except
//      cheap copies of parameters (ParameterCopies: a transposed or cast
//      weight), which are recomputed right before their first backward
//      reader, so no weight-sized copy lives across the gap.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Analysis/ParameterCopies.h"
#include "effopt/Dialect/Eff/IR/EffGradientInterface.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace effopt {
#define GEN_PASS_DEF_EFFAUTODIFFPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt;
using namespace effopt::eff;

namespace {

/// Whether operand `index` of `op` can carry a gradient.
bool isDifferentiableOperand(Operation *op, unsigned index) {
  if (auto gradient = dyn_cast<GradientOpInterface>(op))
    return gradient.isDifferentiableOperand(index);
  return eff::detail::isFloatTensor(op->getOperand(index).getType());
}

struct EffAutodiffPass
    : effopt::impl::EffAutodiffPassBase<EffAutodiffPass> {
  void runOnOperation() override;
  LogicalResult differentiate(func::FuncOp forward);
};

} // namespace

void EffAutodiffPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto forward = module.lookupSymbol<func::FuncOp>(kForwardFuncName);
  if (!forward) {
    module.emitError("eff-autodiff expects a func.func @forward (the ONNX "
                     "importer's output)");
    return signalPassFailure();
  }
  if (failed(differentiate(forward)))
    return signalPassFailure();
}

LogicalResult EffAutodiffPass::differentiate(func::FuncOp forward) {
  ModuleOp module = getOperation();
  Block &body = forward.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  if (returnOp.getNumOperands() == 0)
    return forward.emitError("@forward returns nothing; its first result must "
                             "be the loss");
  Value loss = returnOp.getOperand(0);
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return forward.emitError("the loss (result 0 of @forward) must be a "
                             "floating-point scalar, got ")
           << loss.getType();

  // Trainable parameters, in argument order.
  SmallVector<std::pair<BlockArgument, ParameterOp>> trainable;
  SmallVector<Attribute> noGradient;
  for (BlockArgument arg : body.getArguments()) {
    auto symbol = forward.getArgAttrOfType<FlatSymbolRefAttr>(
        arg.getArgNumber(), kParameterAttrName);
    if (!symbol)
      continue;
    auto param = module.lookupSymbol<ParameterOp>(symbol);
    if (!param)
      return forward.emitError("argument ")
             << arg.getArgNumber() << " names the unknown parameter "
             << symbol;
    if (param.getRole() == ParamRole::Trainable)
      trainable.push_back({arg, param});
  }

  // 1. Activity, forward.
  llvm::DenseSet<Value> active;
  for (auto &[arg, param] : trainable)
    active.insert(arg);
  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator()) {
    forwardOps.push_back(&op);
    bool anyActive = false;
    for (OpOperand &operand : op.getOpOperands())
      anyActive |= active.contains(operand.get()) &&
                   isDifferentiableOperand(&op, operand.getOperandNumber());
    if (!anyActive)
      continue;
    for (Value result : op.getResults())
      if (eff::detail::isFloatTensor(result.getType()))
        active.insert(result);
  }
  if (!active.contains(loss))
    return forward.emitError(
        "the loss does not depend on any trainable parameter");

  // 2. Relevance, backward from the loss.
  llvm::DenseSet<Value> relevant = {loss};
  for (Operation *op : llvm::reverse(forwardOps)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value r) { return relevant.contains(r); }))
      continue;
    for (OpOperand &operand : op->getOpOperands())
      if (active.contains(operand.get()) &&
          isDifferentiableOperand(op, operand.getOperandNumber()))
        relevant.insert(operand.get());
  }

  // 3. Reverse sweep.
  // The backward is built in order before the return; it starts with the
  // seed d(loss)/d(loss) = 1.
  OpBuilder builder(returnOp);
  llvm::DenseMap<Value, Value> gradients;
  auto accumulate = [&](Value value, Value grad) {
    auto it = gradients.find(value);
    if (it == gradients.end()) {
      gradients[value] = grad;
      return;
    }
    auto sum = AddOp::create(builder, grad.getLoc(), it->second, grad);
    it->second = sum;
  };
  auto seed = ConstantOp::create(
      builder, eff::withProvenance(loss.getLoc(), eff::Provenance::Backward),
      DenseElementsAttr::get(lossType,
                             builder.getFloatAttr(lossType.getElementType(), 1.0)));
  // Marked so that later passes find it (eff-loss-scaling replaces it by
  // the loss scale), wherever eff-grad-accum moves it.
  seed->setAttr(kLossSeedAttrName, builder.getUnitAttr());
  Operation *firstBackwardOp = seed;
  gradients[loss] = seed;

  for (Operation *op : llvm::reverse(forwardOps)) {
    SmallVector<Value> resultGradients;
    bool anyGradient = false;
    for (Value result : op->getResults()) {
      Value grad = relevant.contains(result) ? gradients.lookup(result) : Value();
      resultGradients.push_back(grad);
      anyGradient |= static_cast<bool>(grad);
    }
    if (!anyGradient)
      continue;
    SmallVector<bool> needed;
    bool anyNeeded = false;
    for (OpOperand &operand : op->getOpOperands()) {
      bool need = relevant.contains(operand.get()) &&
                  isDifferentiableOperand(op, operand.getOperandNumber());
      needed.push_back(need);
      anyNeeded |= need;
    }
    if (!anyNeeded)
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitOpError("has no gradient rule, but lies on a path from a "
                             "trainable parameter to the loss");
    SmallVector<Value> operandGradients;
    if (failed(rule.buildGradients(builder, resultGradients, needed,
                                   operandGradients)))
      return failure();
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGradients))
      if (grad)
        accumulate(operand, grad);
  }

  // 4. Saved values: forward values (not constants, not arguments) that
  // backward ops read go through one eff.save each.
  llvm::DenseSet<Operation *> isForward(forwardOps.begin(), forwardOps.end());
  llvm::MapVector<Value, SmallVector<OpOperand *>> savedUses;
  for (Operation *op = firstBackwardOp; op && op != returnOp;
       op = op->getNextNode()) {
    ++numBackwardOps;
    for (OpOperand &operand : op->getOpOperands()) {
      Operation *producer = operand.get().getDefiningOp();
      if (!producer || !isForward.contains(producer) ||
          isa<ConstantOp>(producer))
        continue;
      savedUses[operand.get()].push_back(&operand);
    }
  }
  // Copies of parameters are recomputed before their first backward reader
  // (the uses are in block order) instead of saved, under every remat
  // policy. The clones are tagged like eff-remat's, so CSE does not merge
  // them back into the forward ops.
  ParameterCopies parameterCopies(forward);
  for (auto &[value, uses] : savedUses) {
    if (!parameterCopies.isCopy(value))
      continue;
    builder.setInsertionPoint(uses.front()->getOwner());
    IRMapping mapping;
    for (Operation *op : parameterCopies.chainOf(value)) {
      Operation *clone = builder.clone(*op, mapping);
      clone->setLoc(
          eff::withProvenance(op->getLoc(), eff::Provenance::Recomputed));
      clone->setAttr(kRecomputedAttrName, builder.getUnitAttr());
      ++numRecomputedCopies;
    }
    for (OpOperand *use : uses)
      use->set(mapping.lookup(value));
  }
  builder.setInsertionPoint(firstBackwardOp);
  for (auto &[value, uses] : savedUses) {
    if (parameterCopies.isCopy(value))
      continue;
    // The producer's location records the decision, for the memory report
    // (and for eff-remat, which may change it to recomputed).
    Operation *producer = value.getDefiningOp();
    producer->setLoc(
        eff::withProvenance(producer->getLoc(), eff::Provenance::Saved));
    auto save = SaveOp::create(builder, producer->getLoc(), value);
    for (OpOperand *use : uses)
      use->set(save);
    ++numSavedValues;
  }

  // New signature: forward results, then one gradient per trainable
  // parameter that received one.
  SmallVector<Value> results(returnOp.getOperands());
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < forward.getNumResults(); ++i)
    resultAttrs.push_back(forward.getResultAttrDict(i));
  llvm::DenseSet<Value> gradientValues;
  for (auto &[arg, param] : trainable) {
    Value grad = gradients.lookup(arg);
    if (!grad) {
      noGradient.push_back(FlatSymbolRefAttr::get(param.getSymNameAttr()));
      continue;
    }
    results.push_back(grad);
    gradientValues.insert(grad);
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        kGradientAttrName, FlatSymbolRefAttr::get(param.getSymNameAttr()))));
  }
  // Ops whose every result is a parameter's gradient produce gradient
  // memory (a multi-result rule like layer_norm_grad also yields dx).
  for (Value grad : gradientValues) {
    Operation *producer = grad.getDefiningOp();
    if (producer && llvm::all_of(producer->getResults(), [&](Value r) {
          return gradientValues.contains(r);
        }))
      producer->setLoc(
          eff::withProvenance(producer->getLoc(), eff::Provenance::Gradient));
  }
  builder.setInsertionPoint(returnOp);
  func::ReturnOp::create(builder, returnOp.getLoc(), results);
  returnOp.erase();
  forward.setType(builder.getFunctionType(forward.getArgumentTypes(),
                                          ValueRange(results).getTypes()));
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    forward.setResultAttrs(i, attrs);
  if (!noGradient.empty())
    forward->setAttr("eff.no_gradient", builder.getArrayAttr(noGradient));
  forward.setName(kForwardBackwardFuncName);
  return success();
}
