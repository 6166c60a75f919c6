//===- Registration.cpp - what the compiler's tools register --------------===//

#include "effopt/Driver/Registration.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/EffGradientInterface.h"
#include "effopt/Target/Cpu/CpuBackend.h"
#include "effopt/Target/Cuda/CudaBackend.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void effopt::registerCompilerDialects(mlir::DialectRegistry &registry) {
  registry.insert<eff::EffDialect>();
  eff::registerGradientInterfaceModels(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // GPU, NVVM and the gpu.binary offloading handler included: the cuda
  // target's host object embeds its fatbin through them.
  mlir::registerAllToLLVMIRTranslations(registry);
  // #nvvm.target's serializer (PTX through LLVM's NVPTX back end).
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
}

void effopt::registerAllTargetBackends() {
  static bool registered = [] {
    registerCpuTargetBackend();
    registerCudaTargetBackend();
    registerCudaEmulatedTargetBackend();
    return true;
  }();
  (void)registered;
}
