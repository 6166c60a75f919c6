//===- OffloadOptimizer.cpp - the optimizer's state in host memory --------===//
//
// ZeRO-Offload's placement (Ren et al. 2021) as a step of the layout: the
// optimizer's persistent state moves out of the device's `state` region into
// a `host` region. eff-step-abi lays out what this pass marks; nothing else
// in the step changes, so the update computes exactly what it computed with
// the state on the device.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Offload.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"
#include "effopt/Support/StorageBytes.h"

#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

namespace effopt {
#define GEN_PASS_DEF_EFFOFFLOADOPTIMIZERPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// eff-optimizer's step counter, which eff.dropout's lowering reads too.
constexpr llvm::StringLiteral kStepCounterName = "optimizer.step";

/// The low-precision float type that every reader of `arg` but the
/// optimizer's ops casts it to (autocast's cast of a GEMM or convolution
/// weight), or null when some reader reads it otherwise (in fp32, or cast
/// to two types) or none casts it.
FloatType castOnlyType(BlockArgument arg) {
  FloatType to;
  for (Operation *user : arg.getUsers()) {
    if (auto castOp = dyn_cast<eff::CastOp>(user)) {
      auto type = dyn_cast<FloatType>(
          cast<ShapedType>(castOp.getResult().getType()).getElementType());
      if (!type || !(type.isBF16() || type.isF16()) || (to && to != type))
        return {};
      to = type;
      continue;
    }
    if (eff::provenanceOf(user->getLoc()) != eff::Provenance::Optimizer)
      return {};
  }
  return to;
}

/// `value` (f32 elements) rounded to `type`'s element type, to nearest even
/// as eff.cast rounds.
FailureOr<ElementsAttr> castInitialValue(ElementsAttr value,
                                         RankedTensorType type) {
  const llvm::fltSemantics &semantics =
      cast<FloatType>(type.getElementType()).getFloatSemantics();
  SmallVector<APFloat> rounded;
  rounded.reserve(type.getNumElements());
  auto push = [&](float f) {
    APFloat v(f);
    bool lost;
    v.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
    rounded.push_back(v);
  };
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return failure();
    ArrayRef<char> data = blob->getData();
    if (static_cast<int64_t>(data.size()) != type.getNumElements() * 4)
      return failure();
    for (int64_t i = 0; i < type.getNumElements(); ++i) {
      float f;
      std::memcpy(&f, data.data() + 4 * i, 4);
      push(f);
    }
  } else if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    for (float f : dense.getValues<float>())
      push(f);
  } else {
    return failure();
  }
  return cast<ElementsAttr>(DenseElementsAttr::get(type, rounded));
}

struct EffOffloadOptimizerPass
    : impl::EffOffloadOptimizerPassBase<EffOffloadOptimizerPass> {
  using Base::Base;

  /// Moves the fp32 master weight `arg` (parameter `parameter`, read by the
  /// step only through casts to `to`, and by the optimizer) to the host:
  /// the casts read a persistent low-precision copy instead, which the
  /// step updates to the cast of the new value. Returns false after an
  /// error.
  bool offloadMasterWeight(func::FuncOp step, eff::ParameterOp parameter,
                           unsigned argIndex, FloatType to) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto returnOp = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    // The parameter's new value, returned as its update.
    std::optional<unsigned> updateResult;
    for (unsigned r = 0; r < step.getNumResults(); ++r)
      if (auto target = step.getResultAttrOfType<FlatSymbolRefAttr>(
              r, eff::kUpdateAttrName);
          target && target.getValue() == parameter.getSymName())
        updateResult = r;
    if (!updateResult)
      return true; // no gradient: not updated, nothing to copy back
    std::string name =
        (parameter.getSymName() + (to.isBF16() ? ".bf16" : ".f16")).str();
    if (module.lookupSymbol(name)) {
      parameter.emitError("eff-offload-optimizer: the device copy of '")
          << parameter.getSymName() << "' would be named '" << name
          << "', which is taken";
      return false;
    }
    auto paramType = cast<RankedTensorType>(parameter.getType());
    auto copyType = RankedTensorType::get(paramType.getShape(), to);
    ElementsAttr initial;
    if (std::optional<ElementsAttr> value = parameter.getInitialValue()) {
      FailureOr<ElementsAttr> rounded = castInitialValue(*value, copyType);
      if (failed(rounded)) {
        parameter.emitError("eff-offload-optimizer: cannot read the initial "
                            "value of '")
            << parameter.getSymName() << "' to make its device copy";
        return false;
      }
      initial = *rounded;
    }
    OpBuilder builder(parameter);
    builder.setInsertionPointAfter(parameter);
    auto copyOp = eff::ParameterOp::create(builder, parameter.getLoc(), name,
                                           eff::ParamRole::Buffer, copyType,
                                           initial);
    copyOp->setAttr(eff::kCopyOfAttrName,
                    FlatSymbolRefAttr::get(parameter.getSymNameAttr()));

    unsigned copyIndex = step.getNumArguments();
    if (failed(step.insertArgument(
            copyIndex, copyType,
            builder.getDictionaryAttr(builder.getNamedAttr(
                eff::kParameterAttrName, FlatSymbolRefAttr::get(ctx, name))),
            step.getLoc())))
      return false;
    BlockArgument copy = step.getArgument(copyIndex);
    BlockArgument master = step.getArgument(argIndex);
    for (Operation *user : llvm::make_early_inc_range(master.getUsers()))
      if (auto castOp = dyn_cast<eff::CastOp>(user)) {
        castOp.getResult().replaceAllUsesWith(copy);
        castOp.erase();
      }

    // The copy's update: the new master value, cast.
    Value updated = returnOp.getOperand(*updateResult);
    builder.setInsertionPoint(returnOp);
    if (Operation *producer = updated.getDefiningOp())
      builder.setInsertionPointAfter(producer);
    Value newCopy = eff::CastOp::create(
        builder, eff::withProvenance(step.getLoc(), eff::Provenance::Optimizer),
        copyType, updated);
    unsigned resultIndex = step.getNumResults();
    returnOp->insertOperands(returnOp->getNumOperands(), newCopy);
    if (failed(step.insertResult(
            resultIndex, copyType,
            builder.getDictionaryAttr(builder.getNamedAttr(
                eff::kUpdateAttrName, FlatSymbolRefAttr::get(ctx, name))))))
      return false;
    step.setArgAttr(argIndex, eff::kHostAttrName, UnitAttr::get(ctx));
    ++numMasterWeights;
    ++numHostTensors;
    numHostBytes += storageBytes(paramType);
    return true;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(eff::kTrainStepFuncName);
    if (!step || step.isExternal()) {
      module.emitError("eff-offload-optimizer needs func.func @train_step "
                       "(run eff-optimizer first)");
      return signalPassFailure();
    }
    // ZeRO's shards are placed and gathered by the collectives on the
    // device's memory; where a shard would live is not decided yet.
    if (auto stage = module->getAttrOfType<IntegerAttr>(eff::kZeroStageAttrName);
        stage && stage.getInt() > 0) {
      module.emitError("eff-offload-optimizer: the optimizer state is "
                       "sharded by ZeRO stage ")
          << stage.getInt()
          << "; offloading sharded state is not supported (use zero stage 0)";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    // Under autocast: fp32 master weights read only through casts.
    if (masterWeights) {
      unsigned numArgs = step.getNumArguments();
      for (unsigned i = 0; i < numArgs; ++i) {
        auto symbol =
            step.getArgAttrOfType<FlatSymbolRefAttr>(i, eff::kParameterAttrName);
        if (!symbol)
          continue;
        auto parameter = module.lookupSymbol<eff::ParameterOp>(symbol);
        if (!parameter || parameter.getRole() != eff::ParamRole::Trainable ||
            !parameter.getType().getElementType().isF32())
          continue;
        if (FloatType to = castOnlyType(step.getArgument(i)))
          if (!offloadMasterWeight(step, parameter, i, to))
            return signalPassFailure();
      }
    }
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      auto symbol =
          step.getArgAttrOfType<FlatSymbolRefAttr>(i, eff::kParameterAttrName);
      if (!symbol)
        continue;
      auto parameter = module.lookupSymbol<eff::ParameterOp>(symbol);
      if (!parameter || parameter.getRole() != eff::ParamRole::OptimizerState ||
          !parameter.getSymName().starts_with(eff::kOptimizerStatePrefix))
        continue;
      // A GPU's kernels cannot read host memory: state the forward or
      // backward reads stays. So does the step counter (8 bytes), which
      // the lowering of eff.dropout reads to vary its masks by step.
      if (keepDeviceRead &&
          (parameter.getSymName() == kStepCounterName ||
           llvm::any_of(step.getArgument(i).getUsers(), [](Operation *user) {
             return eff::provenanceOf(user->getLoc()) !=
                    eff::Provenance::Optimizer;
           })))
        continue;
      step.setArgAttr(i, eff::kHostAttrName, UnitAttr::get(ctx));
      ++numHostTensors;
      numHostBytes +=
          storageBytes(cast<ShapedType>(step.getArgument(i).getType()));
    }
  }
};

} // namespace
} // namespace effopt
