//===- MemoryBudget.cpp - fitting a step into a byte budget ---------------===//

#include "effopt/Driver/MemoryBudget.h"

#include "effopt/Analysis/MemoryReport.h"
#include "effopt/Dialect/Eff/IR/EffInterfaces.h"
#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Target/Effx.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>
#include <cstdlib>

using namespace mlir;

namespace effopt {

std::optional<int64_t> parseBytes(llvm::StringRef text) {
  text = text.trim();
  double scale = 1;
  if (!text.empty()) {
    switch (text.back() & ~0x20) {
    case 'K':
      scale = 1024.0;
      break;
    case 'M':
      scale = 1024.0 * 1024;
      break;
    case 'G':
      scale = 1024.0 * 1024 * 1024;
      break;
    }
    if (scale != 1)
      text = text.drop_back();
  }
  double value;
  if (text.empty() || text.getAsDouble(value) || !(value > 0) ||
      !std::isfinite(value))
    return std::nullopt;
  return static_cast<int64_t>(value * scale);
}

namespace {
struct Plan {
  RematPolicy policy = RematPolicy::None;
  int64_t bytes = 0;
  int64_t stepFlops = 0, recomputedFlops = 0;
  std::string error; // why the policy does not apply to this model
};
} // namespace

/// Plans `step` with `policy`, `freeBytes` and `microBatches` instead of its
/// own: the step, its lowering and the memory plan.
static Plan planPolicy(ModuleOp imported, const TrainStepOptions &step,
                       RematPolicy policy, int64_t freeBytes = 0,
                       int64_t microBatches = 1) {
  Plan plan;
  plan.policy = policy;
  TrainStepOptions options;
  options.copyOptionValuesFrom(step);
  options.remat = policy;
  options.rematFreeBytes = freeBytes;
  options.accum = microBatches;
  options.attachMemoryReport = false;
  const TargetBackend &backend = *lookupTargetBackend(options.target);
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(imported->clone()));
  // A policy may not apply (full without repeated blocks): keep its
  // message for the table instead of printing it as an error.
  std::string firstError;
  ScopedDiagnosticHandler capture(imported.getContext(), [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
      firstError = d.str();
    return success();
  });
  if (failed(runPipelineStage(*module, [&](OpPassManager &pm) {
        buildStepPipeline(pm, options, backend);
      }))) {
    plan.error = firstError.empty() ? "cannot be built" : firstError;
    return plan;
  }
  module->walk([&](effopt::eff::CostOpInterface op) {
    // Ops in the micro-batch loop run once per micro-batch.
    int64_t times = 1;
    for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
      if (p->hasAttr(eff::kAccumulationLoopAttrName))
        times *= microBatches;
    plan.stepFlops += times * op.getFlops();
    if (op->hasAttr(eff::kRecomputedAttrName))
      plan.recomputedFlops += times * op.getFlops();
  });
  FailureOr<effopt::StepLayout> layout = 
      effopt::readStepLayout(*module, /*withInitialState=*/false);
  if (failed(layout) || failed(runPipelineStage(*module, [&](OpPassManager &pm) {
        buildLoweringPipeline(pm, options, backend);
      }))) {
    plan.error = firstError.empty() ? "cannot be lowered" : firstError;
    return plan;
  }
  plan.bytes = layout->stateBytes + plannedArenaBytes(*module) +
               layout->ioBytes + backend.getLibraryWorkspaceBytes();
  return plan;
}

static double recomputedPercent(const Plan &plan) {
  int64_t base = plan.stepFlops - plan.recomputedFlops;
  return base > 0 ? 100.0 * plan.recomputedFlops / base : 0.0;
}

namespace {
/// What the micro-batch x remat search found for one ZeRO stage.
struct SearchResult {
  std::optional<BudgetChoice> choice;
  /// The smallest plan seen (when nothing fits), and its micro-batches.
  std::optional<Plan> smallest;
  int64_t smallestK = 1;
};
} // namespace

/// Keeps the global batch fixed and tries K = 1, 2, ... micro-batches, each
/// with every remat policy, one line per plan on `log`: the first K for
/// which a policy fits wins, with the least recomputation.
static SearchResult searchAccumRemat(int64_t budget, int64_t globalRows,
                                     const MicroBatchImporter &importAt,
                                     const TrainStepOptions &step,
                                     llvm::raw_ostream &log) {
  SearchResult result;
  // Fewest micro-batches first (each one more makes the GEMMs smaller),
  // then the least recomputation.
  for (int64_t k = 1; k <= globalRows; ++k) {
    if (globalRows % k)
      continue;
    int64_t rows = globalRows / k;
    std::string why;
    OwningOpRef<ModuleOp> imported = importAt(rows, why);
    if (!imported) {
      log << llvm::formatv("  accum {0,-3} batch {1,-5} does not apply: {2}\n",
                           k, rows, why);
      break; // a batch dimension that cannot be rebound stays so
    }
    std::optional<Plan> best;
    for (RematPolicy policy : {RematPolicy::None, RematPolicy::Selective,
                               RematPolicy::Sqrt, RematPolicy::Full}) {
      Plan plan = planPolicy(*imported, step, policy, 0, k);
      if (!plan.error.empty()) {
        log << llvm::formatv("  accum {0,-3} batch {1,-5} {2,-10} does not "
                             "apply: {3}\n",
                             k, rows, stringifyRemat(policy), plan.error);
        continue;
      }
      bool fits = plan.bytes <= budget;
      log << llvm::formatv("  accum {0,-3} batch {1,-5} {2,-10} {3,12} bytes "
                           "({4,10})  recomputes {5:f1}% of the step's FLOPs  "
                           "{6}\n",
                           k, rows, stringifyRemat(policy), plan.bytes,
                           effopt::formatBytes(plan.bytes),
                           recomputedPercent(plan),
                           fits ? "fits" : "too large");
      if (!result.smallest || plan.bytes < result.smallest->bytes) {
        result.smallest = plan;
        result.smallestK = k;
      }
      if (fits && (!best || plan.recomputedFlops < best->recomputedFlops))
        best = plan;
    }
    if (best) {
      result.choice = BudgetChoice{best->policy, best->bytes, k,
                                   std::move(imported), step.zero};
      return result;
    }
  }
  return result;
}

std::optional<BudgetChoice> fitMemoryBudget(int64_t budget, int64_t globalRows,
                                            const MicroBatchImporter &importAt,
                                            const TrainStepOptions &step,
                                            llvm::raw_ostream &log,
                                            bool chooseZeroStage) {
  int64_t worldSize = step.worldSize;
  chooseZeroStage = chooseZeroStage && worldSize > 1;
  log << "effc: memory budget " << effopt::formatBytes(budget) << " (" << budget
      << " bytes";
  if (worldSize > 1)
    log << " per rank, " << worldSize << " ranks";
  log << "), global batch " << globalRows * worldSize << " rows";
  if (worldSize > 1)
    log << " (" << globalRows << " per rank)";
  log << "; planned memory per " << (chooseZeroStage ? "ZeRO stage, " : "")
      << "micro-batch count and remat policy:\n";
  // --world-size N without --zero: the lowest stage whose per-rank plan
  // fits. ZeRO shards only the model states (parameters, gradients,
  // optimizer state), which micro-batches and remat do not shrink, and
  // every stage above 0 adds communication on every step whose cost
  // depends on the interconnect; so a higher stage is taken only when no
  // micro-batch count and remat policy fit below it.
  SmallVector<int64_t, 4> stages;
  if (chooseZeroStage)
    stages = {0, 1, 2, 3};
  else
    stages = {step.zero};
  std::optional<Plan> smallest, previous;
  int64_t smallestK = 1, smallestStage = step.zero;
  for (int64_t stage : stages) {
    TrainStepOptions options;
    options.copyOptionValuesFrom(step);
    options.zero = stage;
    if (chooseZeroStage)
      log << llvm::formatv(" zero {0} (one of {1} ranks):\n", stage, worldSize);
    SearchResult result =
        searchAccumRemat(budget, globalRows, importAt, options, log);
    if (result.choice) {
      BudgetChoice &choice = *result.choice;
      int64_t rows = globalRows / choice.microBatches;
      if (chooseZeroStage) {
        log << llvm::formatv("effc: chose --zero {0} --accum {1} --remat {2} "
                             "(micro-batch {3} rows): the lowest ZeRO stage "
                             "whose per-rank plan fits",
                             stage, choice.microBatches,
                             stringifyRemat(choice.policy), rows);
        if (stage > 0 && previous)
          log << llvm::formatv(" (zero {0} needs at least {1} bytes, {2} "
                               "over)",
                               stage - 1, previous->bytes,
                               previous->bytes - budget);
        log << llvm::formatv(", then the fewest micro-batches, then the "
                             "least recomputation ({0} bytes planned, {1} to "
                             "spare)\n",
                             choice.plannedBytes,
                             effopt::formatBytes(budget - choice.plannedBytes));
      } else {
        log << llvm::formatv(
            "effc: chose --accum {0} --remat {1} (micro-batch {2} rows): the "
            "fewest micro-batches, then the least recomputation, that fit "
            "({3} bytes planned, {4} to spare)\n",
            choice.microBatches, stringifyRemat(choice.policy), rows,
            choice.plannedBytes,
            effopt::formatBytes(budget - choice.plannedBytes));
      }
      return std::move(result.choice);
    }
    previous = result.smallest;
    if (result.smallest &&
        (!smallest || result.smallest->bytes < smallest->bytes)) {
      smallest = result.smallest;
      smallestK = result.smallestK;
      smallestStage = stage;
    }
  }
  if (smallest) {
    log << llvm::formatv(
        "effc: error: cannot fit {0} bytes: the smallest planned memory is "
        "{1} bytes ({2}) with ",
        budget, smallest->bytes, effopt::formatBytes(smallest->bytes));
    if (chooseZeroStage)
      log << "--zero " << smallestStage << " ";
    log << llvm::formatv("--accum {0} --remat {1}, {2} bytes over\n", smallestK,
                         stringifyRemat(smallest->policy),
                         smallest->bytes - budget);
  } else {
    log << "effc: error: cannot fit the budget: no remat policy applies\n";
  }
  return std::nullopt;
}

std::optional<int64_t> fitRematBudget(ModuleOp imported, int64_t budget,
                                      const TrainStepOptions &step,
                                      llvm::raw_ostream &log) {
  int64_t microBatches = step.accum;
  Plan none = planPolicy(imported, step, RematPolicy::None, 0, microBatches);
  if (!none.error.empty()) {
    log << "effc: error: " << none.error << "\n";
    return std::nullopt;
  }
  log << llvm::formatv("effc: --remat budget:{0}: without remat {1} bytes "
                       "({2})\n",
                       budget, none.bytes, effopt::formatBytes(none.bytes));
  if (none.bytes <= budget)
    return 0;
  // The planned bytes do not fall one for one with the freed saved bytes
  // (recomputed chains need backward temporaries, placement has gaps):
  // ask for what is still missing, and for more each time that gained
  // nothing.
  int64_t freeBytes = none.bytes - budget;
  int64_t smallest = none.bytes,
          increment = std::max<int64_t>(1, freeBytes / 64);
  auto attempt = [&](int64_t bytes) -> std::optional<Plan> {
    Plan plan = planPolicy(imported, step, RematPolicy::Budget, bytes,
                           microBatches);
    if (!plan.error.empty()) {
      log << "effc: error: " << plan.error << "\n";
      return std::nullopt;
    }
    log << llvm::formatv("  free {0,12} saved bytes: planned {1,12} bytes "
                         "({2,10}), recomputes {3:f1}% of the step's FLOPs\n",
                         bytes, plan.bytes, effopt::formatBytes(plan.bytes),
                         recomputedPercent(plan));
    return plan;
  };
  int64_t tooFew = 0; // the most freed bytes known not to fit
  for (int tries = 0; tries < 10; ++tries) {
    std::optional<Plan> plan = attempt(freeBytes);
    if (!plan)
      return std::nullopt;
    if (plan->bytes <= budget) {
      // The planned peak does not fall one for one with the freed bytes:
      // between what did not fit and what fits, less may fit too, with
      // less recomputation. Bisect a few times; keep the cheapest fit.
      int64_t best = freeBytes, bestFlops = plan->recomputedFlops;
      int64_t low = tooFew, high = freeBytes;
      for (int halving = 0; halving < 4 && high - low > high / 64; ++halving) {
        int64_t middle = low + (high - low) / 2;
        std::optional<Plan> between = attempt(middle);
        if (!between)
          return std::nullopt;
        if (between->bytes <= budget) {
          high = middle;
          if (between->recomputedFlops < bestFlops) {
            best = middle;
            bestFlops = between->recomputedFlops;
          }
        } else {
          low = middle;
        }
      }
      return best;
    }
    tooFew = std::max(tooFew, freeBytes);
    const Plan &p = *plan;
    if (p.bytes < smallest)
      smallest = p.bytes;
    else
      increment *= 2;
    freeBytes += std::max(p.bytes - budget, increment);
  }
  // The floor of this policy: every block recomputed as a whole (full
  // checkpointing's plan, or less), or every value without blocks.
  int64_t everything = std::numeric_limits<int64_t>::max() / 16;
  Plan all = planPolicy(imported, step, RematPolicy::Budget, everything,
                        microBatches);
  if (all.error.empty()) {
    log << llvm::formatv("  every block recomputed:  planned {0,12} bytes "
                         "({1,10}), recomputes {2:f1}% of the step's FLOPs\n",
                         all.bytes, effopt::formatBytes(all.bytes),
                         recomputedPercent(all));
    if (all.bytes <= budget)
      return everything;
    smallest = std::min(smallest, all.bytes);
  }
  log << llvm::formatv("effc: error: cannot fit {0} bytes: the smallest "
                       "planned memory with --remat budget is {1} bytes ({2}), "
                       "{3} bytes over\n",
                       budget, smallest, effopt::formatBytes(smallest), smallest - budget);
  return std::nullopt;
}

} // namespace effopt
