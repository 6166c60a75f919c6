//===- MemoryBudget.h - fitting a step into a byte budget -------*- C++ -*-===//
//
// Fits a training step into a byte budget: for each micro-batch count (the
// global batch fixed) every remat policy is planned (the step, its lowering
// and the memory plan -- no code generation), and the fewest micro-batches,
// then the least recomputed FLOPs (from the cost interface), whose planned
// bytes fit are chosen; for a data-parallel step without a given ZeRO stage,
// the lowest stage for which anything fits. The planned bytes are exactly what
// the runtime allocates, so the choice is a guarantee, not an estimate.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DRIVER_MEMORYBUDGET_H
#define EFFOPT_DRIVER_MEMORYBUDGET_H

#include "effopt/Driver/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <optional>
#include <string>

namespace effopt {

/// "3000000", "512K", "1.5M", "2G" (binary multiples) -> bytes.
std::optional<int64_t> parseBytes(llvm::StringRef text);

struct BudgetChoice {
  RematPolicy policy = RematPolicy::None;
  int64_t plannedBytes = 0;
  /// Micro-batches per optimizer step, and the model imported at the
  /// micro-batch size (global batch / microBatches rows).
  int64_t microBatches = 1;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// The ZeRO stage (chosen when asked to, else the step's).
  int64_t zeroStage = 0;
};

/// The model imported with every batch input's leading dimension bound to
/// `rows`, or null with `why` set (a model whose batch dimension is fixed).
using MicroBatchImporter = std::function<mlir::OwningOpRef<mlir::ModuleOp>(
    int64_t rows, std::string &why)>;

/// Keeps the global batch `globalRows` fixed and tries K = 1, 2, ... micro-
/// batches (K divides it; the model is imported at globalRows / K rows):
/// for each K every remat policy is planned with the other options of
/// `step` and one line per plan printed to `log`; the first K for which a
/// policy fits wins, with the policy of least recomputation. On failure
/// prints one line saying the smallest achievable and returns nullopt.
/// The plans are one rank's under --world-size N. With `chooseZeroStage`
/// (--world-size N > 1 without --zero) the search runs for ZeRO stage 0,
/// 1, 2, 3 in turn and the lowest stage for which anything fits wins:
/// ZeRO shrinks only the model states, which micro-batches and remat
/// cannot, and every stage above 0 adds communication to every step.
std::optional<BudgetChoice> fitMemoryBudget(int64_t budget, int64_t globalRows,
                                            const MicroBatchImporter &importAt,
                                            const TrainStepOptions &step,
                                            llvm::raw_ostream &log,
                                            bool chooseZeroStage = false);

/// --remat budget:BYTES: eff-remat{policy=budget free-bytes=N} with N from
/// the memory plan: start with what `none` exceeds the budget by, plan, add
/// what is still missing, until the planned bytes fit. Returns N (0: nothing
/// needs recomputing); on failure prints one line with the smallest
/// achievable memory.
std::optional<int64_t> fitRematBudget(mlir::ModuleOp imported, int64_t budget,
                                      const TrainStepOptions &step,
                                      llvm::raw_ostream &log);

} // namespace effopt

#endif // EFFOPT_DRIVER_MEMORYBUDGET_H
