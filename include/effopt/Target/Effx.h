//===- Effx.h - writing the .effx compiled-model file -----------*- C++ -*-===//
//
// The layout of the training step (which tensor lives where in the state and
// io regions) is read from @train_step after eff-step-abi, together with the
// initial values of the persistent tensors; after lowering, the code and the
// arena size complete it. The container format is runtime/include/effrt/
// EffxFormat.h, shared with the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_TARGET_EFFX_H
#define EFFOPT_TARGET_EFFX_H

#include "effopt/Target/CpuObject.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace effopt {

struct StepTensor {
  std::string name;
  std::string role; // trainable | frozen | buffer | optimizer_state | input
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t bytes = 0;
};

struct StepLayout {
  /// "train_step" (one training step, the loss in io) or "forward" (the
  /// imported @forward: every graph output in io, state read-only).
  std::string kind = "train_step";
  std::vector<StepTensor> state;
  std::vector<StepTensor> inputs;
  /// Graph outputs in ONNX order, in io ("forward" only).
  std::vector<StepTensor> outputs;
  int64_t stateBytes = 0, ioBytes = 0, arenaBytes = 0;
  int64_t lossOffset = 0;
  std::string lossDtype; // "train_step" only
  std::string stepCounter; // empty without an optimizer step counter
  int64_t batchSize = 0;
  std::vector<char> initialState; // stateBytes bytes
};

/// Reads the layout eff-step-abi recorded on @train_step (or on @forward
/// with eff-step-abi{mode=forward}) and copies every persistent tensor's
/// initial value into `initialState`.
mlir::FailureOr<StepLayout> readStepLayout(mlir::ModuleOp module);

/// The dtype name the runtime uses for an element type ("float32", "bool").
std::string dtypeName(mlir::Type elementType);

/// Writes the .effx file atomically (temporary file + rename).
mlir::LogicalResult writeEffx(llvm::StringRef path, const StepLayout &layout,
                              const CpuCode &code,
                              const llvm::json::Object &description,
                              mlir::Location loc);

} // namespace effopt

#endif // EFFOPT_TARGET_EFFX_H
