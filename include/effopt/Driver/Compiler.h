//===- Compiler.h - ONNX model to compiled training step --------*- C++ -*-===//
//
// The compiler as a library: what effc, the Python package and tests call.
//
//   CompileOptions options;            // import options, TrainStepOptions,
//   options.step.lr = 3e-4;            // budgets, code generation
//   FailureOr<CompiledStep> step = compileModel(context, "gpt.onnx", options);
//   writeEffx("gpt.effx", *step, options.codegen);
//
// Errors are diagnostics on the context (one line each with effopt's
// OneLineDiagnosticHandler); the memory-budget searches print their table to
// the log stream they are given.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DRIVER_COMPILER_H
#define EFFOPT_DRIVER_COMPILER_H

#include "effopt/Driver/TrainStep.h"
#include "effopt/Import/ONNX/ONNXImporter.h"
#include "effopt/Target/Effx.h"
#include "effopt/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace effopt {

/// What to do with trainable initializers that look like buffers
/// (MaskLikeParameters: attention masks and the like).
enum class MaskLikePolicy { Warn, Error, Freeze };

struct CompileOptions {
  ONNXImportOptions import;
  /// Training steps only: warn about mask-like initializers (one line each on
  /// the log), refuse the model, or freeze them.
  MaskLikePolicy maskLike = MaskLikePolicy::Warn;
  /// The pipeline. The budget searches below set its remat, remat-free-bytes
  /// and accum options to what they chose.
  TrainStepOptions step;
  /// Fit the whole step into this many bytes: choose the micro-batch count
  /// (keeping the global batch) and the remat policy (effc --memory-budget).
  std::optional<int64_t> memoryBudget;
  /// With memoryBudget and step.worldSize > 1: choose step.zero too, the
  /// lowest ZeRO stage whose per-rank plan fits (effc: --zero not given).
  bool chooseZeroStage = false;
  /// Choose remat-free-bytes so the step fits this many bytes with
  /// remat=budget (effc --remat budget:BYTES).
  std::optional<int64_t> rematBudget;
  CodegenOptions codegen;
};

/// Seconds per phase of compileModel and serializeStep.
struct CompileTimes {
  double import = 0, step = 0, lowering = 0, codegen = 0;
};

struct CompiledStep {
  /// After the pipeline, as far as `step.until` says.
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// Where every tensor lives (read after the step stage; the arena size
  /// after the memory plan).
  StepLayout layout;
  /// The target's code (after serializeStep).
  std::optional<TargetArtifacts> artifacts;
  /// Manifest fields describing how it was compiled: model, source,
  /// compiler, the exact pipeline, the training options.
  llvm::json::Object description;
  CompileTimes times;
};

/// Imports the ONNX model at `path` and runs the pipeline `options` describe
/// (after fitting a budget, if one is set), up to `options.step.until`.
mlir::FailureOr<CompiledStep> compileModel(mlir::MLIRContext &context,
                                           llvm::StringRef path,
                                           CompileOptions &options,
                                           llvm::raw_ostream &log = llvm::errs());

/// The same from a module already imported (effopt-translate's output, a
/// model built in Python): `options.memoryBudget` is not supported.
mlir::FailureOr<CompiledStep> compileImported(mlir::OwningOpRef<mlir::ModuleOp> module,
                                              llvm::StringRef modelName,
                                              CompileOptions &options,
                                              llvm::raw_ostream &log = llvm::errs());

/// Generates the target's code from a step compiled to the end of the
/// pipeline (fills `artifacts`; the module is consumed).
mlir::LogicalResult serializeStep(CompiledStep &step,
                                  const CompileOptions &options);

/// Writes the .effx of a serialized step, atomically.
mlir::LogicalResult writeEffx(llvm::StringRef path, const CompiledStep &step);

} // namespace effopt

#endif // EFFOPT_DRIVER_COMPILER_H
