//===- ONNXImporter.h - ONNX model to eff dialect ---------------*- C++ -*-===//
//
// Imports an ONNX training graph (forward + loss) into a module holding
// `eff.parameter` declarations and a `func.func @forward`. Loading, checking
// and opset conversion go through ONNX's own C++ library.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_IMPORT_ONNX_ONNXIMPORTER_H
#define EFFOPT_IMPORT_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace effopt {

struct ONNXImportOptions {
  /// Static shapes for graph inputs with symbolic dimensions (`--shape`).
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// Parameters whose name matches this regex are `frozen` (`--freeze`).
  std::string freezeRegex;
  /// Run ONNX's model checker before importing.
  bool runChecker = true;
  /// Run ONNX's shape inference and check that eff's inferred types agree.
  bool checkShapes = true;
  /// Graph inputs that become constants with the data of a TensorProto
  /// file (`--constant-input name=file.pb`): shape operands of node tests.
  llvm::StringMap<std::string> constantInputs;
  /// Read only the shapes of float initializers (`--shapes-only`): they
  /// become parameters without an initial value, and their data (inline or
  /// in external data files, which need not exist) is never read. Enough
  /// for the memory plan and its report; a .effx needs the weights.
  /// Non-float initializers are still read: constant folding needs them.
  bool shapesOnly = false;
};

/// Imports the ONNX model at `path`. Errors are emitted as one diagnostic
/// (naming the file, and the node or input where there is one) and return
/// null.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXFile(llvm::StringRef path, mlir::MLIRContext *context,
               const ONNXImportOptions &options = {});

/// Imports a serialized ModelProto held in memory; external data files are
/// looked up relative to `baseDirectory`. `displayName` names the model in
/// diagnostics and locations.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXBuffer(llvm::StringRef bytes, llvm::StringRef displayName,
                 llvm::StringRef baseDirectory, mlir::MLIRContext *context,
                 const ONNXImportOptions &options = {});

/// The ONNX op types the importer converts, sorted.
std::vector<std::string> getSupportedONNXOps();

/// The opsets of the default ONNX domain the importer handles natively;
/// older models are converted up with ONNX's version converter.
inline constexpr int64_t kMinSupportedOpset = 13;
inline constexpr int64_t kMaxSupportedOpset = 18;

} // namespace effopt

#endif // EFFOPT_IMPORT_ONNX_ONNXIMPORTER_H
