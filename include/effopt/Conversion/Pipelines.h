//===- Pipelines.h - the registered compilation pipelines -------*- C++ -*-===//
//
// effc runs exactly these pipelines; effopt-opt registers them under the
// same names so every step can be replayed on a .mlir file.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_CONVERSION_PIPELINES_H
#define EFFOPT_CONVERSION_PIPELINES_H

#include "mlir/IR/DialectRegistry.h"

#include <string>

namespace effopt {

struct CpuPipelineOptions {
  /// eff-memory-plan leaves the memory report on the module (effc --report).
  bool attachMemoryReport = false;
  /// Stop after the memory plan: enough to know the planned bytes
  /// (effc --memory-budget, --remat budget:), no code generation.
  bool stopAfterMemoryPlan = false;
};

/// `@train_step` on eff tensors (after eff-step-abi) to the LLVM dialect with the C entry point
/// `effx_step(state, arena, io)`, as a textual pass pipeline on a module
/// (the passes, without the `builtin.module(...)` anchor).
std::string cpuLoweringPipeline(const CpuPipelineOptions &options = {});

/// Registers `effopt-cpu-lowering` (the pipeline above).
void registerEffoptPipelines();

/// Every dialect, interface model and LLVM translation the compiler uses.
void registerCompilerDialects(mlir::DialectRegistry &registry);

} // namespace effopt

#endif // EFFOPT_CONVERSION_PIPELINES_H
