//===- Registration.cpp - what the compiler's tools register --------------===//

#include "effopt/Driver/Registration.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/EffGradientInterface.h"
#include "effopt/Target/Cpu/CpuBackend.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void effopt::registerCompilerDialects(mlir::DialectRegistry &registry) {
  registry.insert<eff::EffDialect>();
  eff::registerGradientInterfaceModels(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
}

void effopt::registerAllTargetBackends() {
  static bool registered = [] {
    registerCpuTargetBackend();
    return true;
  }();
  (void)registered;
}
