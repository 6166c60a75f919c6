//===- ShareKernels.cpp - identical outlined kernels compiled once --------===//
//
// See the pass description in Passes.td. gpu-kernel-outlining gives every
// launch its own gpu.module and kernel name, so two modules are compared
// with their kernels renamed alike; a module's other symbols (constants,
// device functions) keep their names and are compared as they are.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"
#include "effopt/Support/StructuralHash.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace effopt {
#define GEN_PASS_DEF_EFFGPUSHAREKERNELSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace {

/// A module's kernels in order, with the names outlining gave them.
struct KernelModule {
  gpu::GPUModuleOp module;
  SmallVector<std::pair<gpu::GPUFuncOp, StringAttr>> kernels;
};

bool sameContents(gpu::GPUModuleOp a, gpu::GPUModuleOp b) {
  return a.getTargetsAttr() == b.getTargetsAttr() &&
         a.getOffloadingHandlerAttr() == b.getOffloadingHandlerAttr() &&
         a->getDiscardableAttrDictionary() ==
             b->getDiscardableAttrDictionary() &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getBodyRegion(), &b.getBodyRegion(),
             OperationEquivalence::IgnoreLocations);
}

struct EffGpuShareKernelsPass
    : effopt::impl::EffGpuShareKernelsPassBase<EffGpuShareKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp top = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<KernelModule> modules;
    for (auto module : top.getOps<gpu::GPUModuleOp>()) {
      KernelModule &entry = modules.emplace_back();
      entry.module = module;
      for (auto func : module.getOps<gpu::GPUFuncOp>())
        if (func.isKernel())
          entry.kernels.push_back({func, func.getNameAttr()});
    }
    // Kernels renamed alike (by their place in the module) for the
    // comparison; the kept ones get their names back below.
    for (KernelModule &entry : modules)
      for (auto [i, kernel] : llvm::enumerate(entry.kernels))
        SymbolTable::setSymbolName(
            kernel.first,
            StringAttr::get(ctx, "__effx_kernel_" + std::to_string(i)));

    // (module, kernel) of an erased module -> the kept one's.
    DenseMap<std::pair<StringAttr, StringAttr>, SymbolRefAttr> redirect;
    DenseMap<llvm::hash_code, SmallVector<KernelModule *, 1>> byHash;
    SmallVector<gpu::GPUModuleOp> erased;
    for (KernelModule &entry : modules) {
      SmallVector<KernelModule *, 1> &bucket =
          byHash[effopt::structuralHash(
          entry.module.getBodyRegion(),
          hash_value(entry.module->getDiscardableAttrDictionary()))];
      auto same = llvm::find_if(bucket, [&](KernelModule *kept) {
        return sameContents(kept->module, entry.module);
      });
      if (same == bucket.end()) {
        bucket.push_back(&entry);
        continue;
      }
      // Equal contents: the same kernels in the same order.
      for (auto [mine, theirs] : llvm::zip_equal(entry.kernels,
                                                 (*same)->kernels))
        redirect[{entry.module.getNameAttr(), mine.second}] = SymbolRefAttr::get(
            (*same)->module.getNameAttr(),
            {FlatSymbolRefAttr::get(theirs.second)});
      erased.push_back(entry.module);
    }
    for (KernelModule &entry : modules)
      for (auto [kernel, name] : entry.kernels)
        SymbolTable::setSymbolName(kernel, name);

    top.walk([&](gpu::LaunchFuncOp launch) {
      auto it = redirect.find(
          {launch.getKernelModuleName(), launch.getKernelName()});
      if (it != redirect.end())
        launch.setKernelAttr(it->second);
    });
    for (gpu::GPUModuleOp module : erased)
      module.erase();
    numShared += erased.size();
  }
};

} // namespace
