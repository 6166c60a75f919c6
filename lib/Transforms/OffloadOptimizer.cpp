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
#include "effopt/Support/StorageBytes.h"

namespace effopt {
#define GEN_PASS_DEF_EFFOFFLOADOPTIMIZERPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

struct EffOffloadOptimizerPass
    : impl::EffOffloadOptimizerPassBase<EffOffloadOptimizerPass> {
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
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      auto symbol =
          step.getArgAttrOfType<FlatSymbolRefAttr>(i, eff::kParameterAttrName);
      if (!symbol)
        continue;
      auto parameter = module.lookupSymbol<eff::ParameterOp>(symbol);
      if (!parameter || parameter.getRole() != eff::ParamRole::OptimizerState ||
          !parameter.getSymName().starts_with(eff::kOptimizerStatePrefix))
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
