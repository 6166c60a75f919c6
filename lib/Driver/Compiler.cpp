//===- Compiler.cpp - ONNX model to compiled training step ----------------===//

#include "effopt/Driver/Compiler.h"

#include "effopt/Analysis/MaskLikeParameters.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/Offload.h"
#include "effopt/Driver/MemoryBudget.h"
#include "effopt/Transforms/Lora.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <chrono>

using namespace mlir;

namespace effopt {

using Clock = std::chrono::steady_clock;

static double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The leading dimension shared by every batch input as imported, and the
/// inputs; `splittable` false when they do not share one.
struct BatchInputs {
  SmallVector<std::pair<std::string, RankedTensorType>> inputs;
  int64_t globalRows = 1;
  bool splittable = false;
};

static BatchInputs batchInputsOf(ModuleOp module) {
  BatchInputs batch;
  auto forward = module.lookupSymbol<func::FuncOp>(eff::kForwardFuncName);
  for (unsigned i = 0; forward && i < forward.getNumArguments(); ++i)
    if (auto name =
            forward.getArgAttrOfType<StringAttr>(i, eff::kInputAttrName))
      if (auto type =
              dyn_cast<RankedTensorType>(forward.getArgument(i).getType()))
        batch.inputs.push_back({name.str(), type});
  batch.splittable = !batch.inputs.empty();
  for (auto &[name, type] : batch.inputs) {
    if (type.getRank() == 0) {
      batch.splittable = false;
      continue;
    }
    batch.globalRows = std::max(batch.globalRows, type.getDimSize(0));
  }
  for (auto &[name, type] : batch.inputs)
    if (type.getRank() > 0 && type.getDimSize(0) != batch.globalRows)
      batch.splittable = false;
  return batch;
}

/// Warns about, refuses or freezes (by re-importing with them frozen) the
/// trainable initializers that look like buffers.
static LogicalResult handleMaskLikeParameters(MLIRContext &context,
                                              StringRef path,
                                              CompileOptions &options,
                                              OwningOpRef<ModuleOp> &module,
                                              llvm::raw_ostream &log) {
  if (options.step.mode == StepMode::Forward)
    return success();
  // eff-lora freezes every parameter: nothing mask-like is trained.
  if (options.step.lora)
    return success();
  MaskLikeParameters maskLike(*module);
  if (maskLike.entries().empty())
    return success();
  SmallVector<StringRef> trained;
  for (auto param : module->getOps<eff::ParameterOp>())
    if (param.getRole() == eff::ParamRole::Trainable)
      trained.push_back(param.getSymName());
  std::string freeze = options.import.freezeRegex;
  for (MaskLikeParameters::Entry entry : maskLike.entries()) {
    std::string warning = MaskLikeParameters::warning(entry);
    switch (options.maskLike) {
    case MaskLikePolicy::Error:
      return emitError(entry.parameter.getLoc(), warning)
             << " (--mask-like=error)";
    case MaskLikePolicy::Warn:
      log << "effc: warning: " << warning << "\n";
      break;
    case MaskLikePolicy::Freeze: {
      std::string exact =
          "^" + llvm::Regex::escape(entry.parameter.getSymName()) + "$";
      log << "effc: freezing '" << entry.parameter.getSymName()
          << "' (--mask-like=freeze): it is only " << entry.use << "\n";
      freeze = freeze.empty() ? exact : "(" + freeze + ")|" + exact;
      break;
    }
    }
  }
  if (options.maskLike == MaskLikePolicy::Warn) {
    log << "effc: training " << trained.size() << " tensors:";
    for (StringRef name : trained)
      log << " " << name;
    log << "\n";
    return success();
  }
  options.import.freezeRegex = freeze;
  module = importONNXFile(path, &context, options.import);
  return success(static_cast<bool>(module));
}

FailureOr<CompiledStep> compileModel(MLIRContext &context, StringRef path,
                                     CompileOptions &options,
                                     llvm::raw_ostream &log) {
  if (options.import.shapesOnly &&
      options.step.until == PipelineStage::Codegen)
    return emitError(FileLineColLoc::get(&context, path, 0, 0),
                     "without the weights (--shapes-only) the pipeline stops "
                     "at the memory plan (a report); generating code needs "
                     "them");
  auto start = Clock::now();
  OwningOpRef<ModuleOp> module =
      importONNXFile(path, &context, options.import);
  if (!module)
    return failure();
  if (failed(handleMaskLikeParameters(context, path, options, module, log)))
    return failure();
  if (options.memoryBudget && options.rematBudget)
    return emitError(UnknownLoc::get(&context),
                     "a memory budget chooses the remat policy itself; give "
                     "a memory budget or a remat budget, not both");
  if (options.memoryBudget) {
    // Micro-batches re-import the model with the global batch divided.
    BatchInputs batch = batchInputsOf(*module);
    auto importAt = [&](int64_t rows,
                        std::string &why) -> OwningOpRef<ModuleOp> {
      if (rows == batch.globalRows)
        return OwningOpRef<ModuleOp>(cast<ModuleOp>((*module)->clone()));
      if (!batch.splittable) {
        why = "the batch inputs do not share one leading (batch) dimension";
        return {};
      }
      ONNXImportOptions rebound = options.import;
      for (auto &[name, type] : batch.inputs) {
        SmallVector<int64_t> shape(type.getShape());
        shape[0] = rows;
        rebound.inputShapes[name] = shape;
      }
      std::string firstError;
      ScopedDiagnosticHandler capture(&context, [&](Diagnostic &d) {
        if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
          firstError = d.str();
        return success();
      });
      OwningOpRef<ModuleOp> imported = importONNXFile(path, &context, rebound);
      if (!imported)
        why = firstError.empty() ? "the model does not import" : firstError;
      return imported;
    };
    std::optional<BudgetChoice> choice =
        fitMemoryBudget(*options.memoryBudget, batch.globalRows, importAt,
                        options.step, log, options.chooseZeroStage);
    if (!choice)
      return failure();
    options.step.remat = choice->policy;
    options.step.accum = choice->microBatches;
    options.step.zero = choice->zeroStage;
    module = std::move(choice->module);
  }
  if (options.rematBudget) {
    std::optional<int64_t> freeBytes =
        fitRematBudget(*module, *options.rematBudget, options.step, log);
    if (!freeBytes)
      return failure();
    options.step.remat = *freeBytes ? RematPolicy::Budget : RematPolicy::None;
    options.step.rematFreeBytes = *freeBytes;
  }
  double importSeconds = secondsSince(start);
  FailureOr<CompiledStep> step =
      compileImported(std::move(module), llvm::sys::path::stem(path), options,
                      log);
  if (failed(step))
    return failure();
  step->description["source"] = path.str();
  step->times.import = importSeconds;
  return step;
}

/// How it was compiled, for the manifest.
static llvm::json::Object describe(StringRef modelName,
                                   const TrainStepOptions &step) {
  llvm::json::Object description{
      {"model", modelName.str()},
      {"compiler", "effc 0.1 (LLVM/MLIR 22)"},
      {"pipeline", printTrainStepPipeline(step)},
      // The threads the plan has room for: the CPU attention kernels use
      // at most this many, whatever effrun --threads says.
      {"threads", step.effectiveThreads()}};
  if (step.mode == StepMode::Forward)
    return description;
  LossScaleMode lossScale = step.effectiveLossScale();
  description["training"] = llvm::json::Object{
      {"optimizer", stringifyOptimizer(step.optimizer)},
      {"lr", static_cast<double>(step.lr)},
      {"schedule", stringifySchedule(step.schedule)},
      {"precision", stringifyPrecision(step.precision)},
      {"loss_scale", stringifyLossScale(lossScale)},
      {"remat", stringifyRemat(step.remat)},
      {"accum", static_cast<int64_t>(step.accum)},
      {"zero", static_cast<int64_t>(step.zero)}};
  // The runtime checks it against the ranks it runs on.
  description["world_size"] = static_cast<int64_t>(step.worldSize);
  if (lossScale != LossScaleMode::None)
    description["loss_scaling"] = llvm::json::Object{
        {"mode", stringifyLossScale(lossScale)},
        {"init_scale", static_cast<double>(step.lossScaleInit)},
        {"min_scale", static_cast<double>(step.lossScaleMin)},
        {"growth_interval", static_cast<int64_t>(step.lossScaleGrowthInterval)},
        {"hysteresis", static_cast<int64_t>(step.lossScaleHysteresis)}};
  return description;
}

FailureOr<CompiledStep> compileImported(OwningOpRef<ModuleOp> module,
                                        StringRef modelName,
                                        CompileOptions &options,
                                        llvm::raw_ostream &log) {
  const TrainStepOptions &stepOptions = options.step;
  if (llvm::Error error = verifyTrainStepOptions(stepOptions))
    return module->emitError(llvm::toString(std::move(error)));
  const TargetBackend &backend = *lookupTargetBackend(stepOptions.target);
  CompiledStep step;
  auto start = Clock::now();
  if (failed(runPipelineStage(*module, [&](OpPassManager &pm) {
        buildStepPipeline(pm, stepOptions, backend);
      })))
    return failure();
  // The initial state is only needed for the .effx: a plan (until the
  // memory plan) never copies the weights.
  FailureOr<StepLayout> layout = readStepLayout(
      *module, stepOptions.until == PipelineStage::Codegen);
  if (failed(layout))
    return failure();
  step.layout = std::move(*layout);
  step.description = describe(modelName, stepOptions);
  // What effrun --merge-lora needs to fold the adapters into the weights.
  if (std::optional<llvm::json::Object> lora = describeLoraAdapters(*module))
    step.description["lora"] = std::move(*lora);
  step.times.step = secondsSince(start);
  step.module = std::move(module);
  if (stepOptions.until == PipelineStage::Step)
    return step;

  start = Clock::now();
  if (failed(runPipelineStage(*step.module, [&](OpPassManager &pm) {
        buildLoweringPipeline(pm, stepOptions, backend);
      })))
    return failure();
  step.layout.arenaBytes = plannedArenaBytes(*step.module);
  step.layout.workspaceBytes = backend.getLibraryWorkspaceBytes();
  if (auto staging = (*step.module)->getAttrOfType<mlir::IntegerAttr>(
          eff::kHostStagingBytesAttrName))
    step.layout.hostStagingBytes = staging.getInt();
  if (stepOptions.until == PipelineStage::MemoryPlan) {
    step.times.lowering = secondsSince(start);
    return step;
  }
  if (failed(runPipelineStage(*step.module, [&](OpPassManager &pm) {
        backend.buildCodegenPipeline(pm, options.codegen);
      })))
    return failure();
  step.times.lowering = secondsSince(start);
  return step;
}

LogicalResult serializeStep(CompiledStep &step, const CompileOptions &options) {
  if (options.step.until != PipelineStage::Codegen)
    return step.module->emitError(
        "the step was not compiled to the end of the pipeline");
  auto start = Clock::now();
  const TargetBackend &backend = *lookupTargetBackend(options.step.target);
  FailureOr<TargetArtifacts> artifacts =
      backend.serialize(*step.module, options.codegen);
  if (failed(artifacts))
    return failure();
  step.artifacts = std::move(*artifacts);
  step.description["opt_level"] = static_cast<int64_t>(options.codegen.optLevel);
  step.times.codegen = secondsSince(start);
  return success();
}

LogicalResult writeEffx(StringRef path, const CompiledStep &step) {
  Location loc = step.module.get()->getLoc();
  if (!step.artifacts)
    return emitError(loc, "the step has no code yet (serializeStep)");
  llvm::json::Object description(step.description);
  for (const auto &field : step.artifacts->manifest)
    description[field.first] = field.second;
  return writeEffx(path, step.layout, step.artifacts->sections, description,
                   loc);
}

} // namespace effopt
