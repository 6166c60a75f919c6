//===- MemoryBudget.h - effc --memory-budget ---------------------*- C++ -*-===//
//
// Fits a training step into a byte budget: every remat policy is planned
// (training step, lowering and the memory plan -- no code generation), and
// the one with the least recomputed FLOPs (from the cost interface) whose
// planned bytes fit is chosen. The planned bytes are exactly what effrun
// allocates, so the choice is a guarantee, not an estimate.
//
//===----------------------------------------------------------------------===//

#ifndef EFFC_MEMORYBUDGET_H
#define EFFC_MEMORYBUDGET_H

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <optional>
#include <string>

namespace effc {

/// "3000000", "512K", "1.5M", "2G" (binary multiples) -> bytes.
std::optional<int64_t> parseBytes(llvm::StringRef text);

struct BudgetChoice {
  std::string policy;
  int64_t plannedBytes = 0;
};

/// Plans `imported` under each policy (`trainingPipeline(policy)` builds
/// the step, `lowering` runs up to the memory plan), prints one line per
/// policy to `log`, and returns the fastest that fits in `budget`; on
/// failure prints one line saying the smallest achievable and returns
/// nullopt.
using TrainingPipeline =
    std::function<std::string(llvm::StringRef policy, int64_t freeBytes)>;

std::optional<BudgetChoice> fitMemoryBudget(mlir::ModuleOp imported,
                                            int64_t budget,
                                            const TrainingPipeline &training,
                                            llvm::StringRef lowering,
                                            llvm::raw_ostream &log);

/// --remat budget:BYTES: eff-remat{policy=budget free-bytes=N} with N from
/// the memory plan: start with what `none` exceeds the budget by, plan,
/// add what is still missing, until the planned bytes fit. Returns N (0:
/// nothing needs recomputing); on failure prints one line with the
/// smallest achievable memory.
std::optional<int64_t> fitRematBudget(mlir::ModuleOp imported, int64_t budget,
                                      const TrainingPipeline &training,
                                      llvm::StringRef lowering,
                                      llvm::raw_ostream &log);

} // namespace effc

#endif // EFFC_MEMORYBUDGET_H
