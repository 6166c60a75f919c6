//===- effopt-opt.cpp - the effopt pass driver ----------------------------===//
//
// Runs eff passes and pipelines on `.mlir` files. Registers only what effopt
// needs: the eff and func dialects (with eff's gradient rules), effopt's
// training passes and the generic cleanup passes.
//
//===----------------------------------------------------------------------===//

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/EffGradientInterface.h"
#include "effopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace effopt::test {
void registerTestCostInterfacePass();
} // namespace effopt::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<effopt::eff::EffDialect, mlir::func::FuncDialect>();
  effopt::eff::registerGradientInterfaceModels(registry);
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  effopt::registerEffoptPasses();
  effopt::test::registerTestCostInterfacePass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "effopt-opt: runs effopt's passes on eff-dialect .mlir files.\n\n"
      "  effopt-opt model.mlir --canonicalize\n"
      "  effopt-opt model.mlir --eff-autodiff\n",
      registry));
}
