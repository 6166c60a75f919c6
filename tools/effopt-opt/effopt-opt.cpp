//===- effopt-opt.cpp - the effopt pass driver ----------------------------===//
//
// Runs eff passes and pipelines on `.mlir` files: effopt's training passes,
// its lowering passes and registered pipelines (so every step effc takes can
// be replayed), and the upstream MLIR passes those pipelines use.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"
#include "effopt/Driver/Registration.h"
#include "effopt/Driver/TrainStep.h"
#include "effopt/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace effopt::test {
void registerTestCostInterfacePass();
void registerTestEmulateHostTaskCopiesPass();
void registerTestForwardBlocksPass();
void registerTestMaskLikeParametersPass();
} // namespace effopt::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  effopt::registerCompilerDialects(registry);
  mlir::registerAllPasses();
  effopt::registerEffoptPasses();
  effopt::registerEffoptConversionPasses();
  effopt::registerAllTargetBackends();
  effopt::registerTrainStepPipelines();
  effopt::test::registerTestCostInterfacePass();
  effopt::test::registerTestEmulateHostTaskCopiesPass();
  effopt::test::registerTestForwardBlocksPass();
  effopt::test::registerTestMaskLikeParametersPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "effopt-opt: runs effopt's passes on eff-dialect .mlir files.\n\n"
      "  effopt-opt model.mlir --canonicalize\n"
      "  effopt-opt model.mlir --eff-autodiff\n"
      "  effopt-opt step.mlir --effopt-cpu-lowering\n"
      "  effopt-opt model.mlir --effopt-train-step=\"optimizer=adamw "
      "lr=3e-4 remat=selective\"\n",
      registry));
}
