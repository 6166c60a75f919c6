//===- ImportFuzzer.cpp - libFuzzer target for the ONNX importer ----------===//
//
// Feeds arbitrary bytes to the importer as a serialized ModelProto. Any
// input must end in a module or a diagnostic: never a crash, an abort, an
// uncaught exception or a sanitizer report.
//
//===----------------------------------------------------------------------===//

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Import/ONNX/ONNXImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<effopt::eff::EffDialect, mlir::func::FuncDialect>();
  // Diagnostics are expected for most inputs; swallow them.
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module = effopt::importONNXBuffer(
      bytes, "fuzz.onnx", "/nonexistent-fuzz-dir", &context);
  // A module that imports must also verify.
  if (module && mlir::failed(mlir::verify(*module)))
    __builtin_trap();
  return 0;
}
