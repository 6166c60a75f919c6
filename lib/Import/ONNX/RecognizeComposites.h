//===- RecognizeComposites.h - exporter idioms to eff ops --------*- C++ -*-===//

#ifndef EFFOPT_LIB_IMPORT_ONNX_RECOGNIZECOMPOSITES_H
#define EFFOPT_LIB_IMPORT_ONNX_RECOGNIZECOMPOSITES_H

#include "mlir/IR/PatternMatch.h"

namespace effopt::onnx_import {
/// Patterns that turn decomposed exports (erf GELU) into single eff ops.
void populateRecognizeCompositesPatterns(mlir::RewritePatternSet &patterns);
} // namespace effopt::onnx_import

#endif // EFFOPT_LIB_IMPORT_ONNX_RECOGNIZECOMPOSITES_H
