//===- LossScaling.cpp - eff-loss-scaling: scale state inside the step ----===//
//
// The backward is seeded with the loss scale instead of 1; after it, one
// eff.unscale_gradients unscales every gradient and finds inf/NaN, and
// eff.update_loss_scale advances the scale. Everything is state of the
// compiled step: no host round trip, and checkpoints carry it.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace effopt {
#define GEN_PASS_DEF_EFFLOSSSCALINGPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt;
using namespace effopt::eff;

namespace {

struct EffLossScalingPass
    : effopt::impl::EffLossScalingPassBase<EffLossScalingPass> {
  using EffLossScalingPassBase::EffLossScalingPassBase;

  void runOnOperation() override;
};

} // namespace

void EffLossScalingPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto func = module.lookupSymbol<func::FuncOp>(kForwardBackwardFuncName);
  if (!func) {
    module.emitError("eff-loss-scaling expects func.func @forward_backward; "
                     "run eff-autodiff first");
    return signalPassFailure();
  }
  if (!(initScale > 0.0) || !(growthFactor >= 1.0) ||
      !(backoffFactor > 0.0 && backoffFactor <= 1.0) || growthInterval < 1 ||
      hysteresis < 1 || !(minScale >= 0.0) || minScale > initScale) {
    module.emitError("eff-loss-scaling: needs init-scale > 0, growth-factor "
                     ">= 1, backoff-factor in (0, 1], growth-interval >= 1, "
                     "hysteresis >= 1 and 0 <= min-scale <= init-scale");
    return signalPassFailure();
  }
  if (func->hasAttr("eff.loss_scaled")) {
    func.emitError("eff-loss-scaling already ran on this step");
    return signalPassFailure();
  }
  SmallVector<ConstantOp> seeds;
  func.walk([&](ConstantOp op) {
    if (op->hasAttr(kLossSeedAttrName))
      seeds.push_back(op);
  });
  if (seeds.empty()) {
    func.emitError("eff-loss-scaling found no backward seed (the constant "
                   "eff-autodiff marks `eff.loss_seed`)");
    return signalPassFailure();
  }

  MLIRContext *ctx = &getContext();
  OpBuilder builder(ctx);
  Block &body = func.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  Location loc = withProvenance(func.getLoc(), Provenance::Optimizer);
  auto f32Scalar = RankedTensorType::get({}, builder.getF32Type());
  auto i64Scalar = RankedTensorType::get({}, builder.getI64Type());

  // Persistent state, declared next to the parameters.
  SmallVector<std::pair<Value, StringRef>> updates;
  auto addState = [&](StringRef name, RankedTensorType type,
                      Attribute init) -> Value {
    builder.setInsertionPoint(func);
    ParameterOp::create(builder, func.getLoc(), name,
                        ParamRole::OptimizerState, type,
                        DenseElementsAttr::get(type, init));
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(
            index, type,
            builder.getDictionaryAttr(builder.getNamedAttr(
                kParameterAttrName, FlatSymbolRefAttr::get(ctx, name))),
            func.getLoc())))
      return Value();
    return body.getArgument(index);
  };
  Value scale = addState("loss_scale.scale", f32Scalar,
                         builder.getF32FloatAttr(initScale));
  Value tracker = addState("loss_scale.growth_tracker", i64Scalar,
                           builder.getI64IntegerAttr(0));
  Value hysteresisLeft = addState("loss_scale.hysteresis", i64Scalar,
                                  builder.getI64IntegerAttr(hysteresis));
  Value skippedSteps = addState("loss_scale.skipped_steps", i64Scalar,
                                builder.getI64IntegerAttr(0));
  Value lastSkipped = addState("loss_scale.last_step_skipped", i64Scalar,
                               builder.getI64IntegerAttr(0));
  if (!scale || !tracker || !hysteresisLeft || !skippedSteps || !lastSkipped)
    return signalPassFailure();

  // Seed the backward with the scale: every gradient comes out scaled.
  for (ConstantOp seed : seeds) {
    builder.setInsertionPoint(seed);
    Value seedValue = scale;
    if (seed.getType() != scale.getType())
      seedValue = CastOp::create(builder, seed.getLoc(), seed.getType(), scale);
    seed.getResult().replaceAllUsesWith(seedValue);
    seed.erase();
  }

  // Unscale every gradient and find inf/NaN in one op.
  SmallVector<unsigned> gradientResults;
  SmallVector<Value> gradients;
  for (auto [i, value] : llvm::enumerate(returnOp.getOperands()))
    if (func.getResultAttr(i, kGradientAttrName)) {
      gradientResults.push_back(i);
      gradients.push_back(value);
    }
  builder.setInsertionPoint(returnOp);
  SmallVector<Type> unscaledTypes{RankedTensorType::get({}, builder.getI1Type())};
  for (Value g : gradients)
    unscaledTypes.push_back(g.getType());
  auto unscale = UnscaleGradientsOp::create(builder, loc, unscaledTypes, scale,
                                            gradients);
  Value foundInf = unscale.getFoundInf();
  // ZeRO stage 2: each rank checked only its shards of the gradients; the
  // step is skipped (and the scale backs off) on every rank when any found
  // inf/NaN, so the ranks stay in step.
  auto zeroStage = module->getAttrOfType<IntegerAttr>(kZeroStageAttrName);
  auto worldSize = module->getAttrOfType<IntegerAttr>(kWorldSizeAttrName);
  if (zeroStage && zeroStage.getInt() >= 2 && worldSize &&
      stepCommunicates(module)) {
    Value count = CastOp::create(builder, loc, f32Scalar, foundInf);
    Value total = AllReduceOp::create(builder, loc, ValueRange{count},
                                      builder.getI64IntegerAttr(worldSize.getInt()))
                      .getResult(0);
    Value zero = ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(f32Scalar, builder.getF32FloatAttr(0.0f)));
    foundInf = CmpOp::create(builder, loc, foundInf.getType(),
                             CmpPredicate::gt, total, zero);
  }
  for (auto [index, unscaled] : llvm::zip(gradientResults, unscale.getUnscaled()))
    returnOp->setOperand(index, unscaled);

  // The scale's own update (not skipped: it is how an overflow is answered).
  if (!staticScale) {
    auto update = UpdateLossScaleOp::create(
        builder, loc, TypeRange{f32Scalar, i64Scalar, i64Scalar}, scale,
        tracker, hysteresisLeft, foundInf,
        builder.getF64FloatAttr(growthFactor),
        builder.getF64FloatAttr(backoffFactor),
        builder.getI64IntegerAttr(growthInterval),
        builder.getI64IntegerAttr(hysteresis),
        builder.getF64FloatAttr(minScale));
    updates.push_back({update.getNewScale(), "loss_scale.scale"});
    updates.push_back({update.getNewGrowthTracker(),
                       "loss_scale.growth_tracker"});
    updates.push_back({update.getNewHysteresisLeft(), "loss_scale.hysteresis"});
  }
  Value skipped = CastOp::create(builder, loc, i64Scalar, foundInf);
  updates.push_back({AddOp::create(builder, loc, skippedSteps, skipped),
                     "loss_scale.skipped_steps"});
  updates.push_back({skipped, "loss_scale.last_step_skipped"});

  // New results: the old ones, then the skip decision and the state updates.
  SmallVector<Value> results(returnOp.getOperands());
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    resultAttrs.push_back(func.getResultAttrDict(i));
  results.push_back(foundInf);
  resultAttrs.push_back(builder.getDictionaryAttr(
      builder.getNamedAttr(kSkipStepAttrName, builder.getUnitAttr())));
  for (auto &[value, name] : updates) {
    results.push_back(value);
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        kBufferUpdateAttrName, FlatSymbolRefAttr::get(ctx, name))));
  }
  func::ReturnOp::create(builder, returnOp.getLoc(), results);
  returnOp.erase();
  func.setType(builder.getFunctionType(func.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    func.setResultAttrs(i, attrs);
  func->setAttr("eff.loss_scaled", builder.getUnitAttr());
}
