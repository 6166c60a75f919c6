//===- ModelSummary.h - one-screen summary of an imported model -*- C++ -*-===//

#ifndef EFFOPT_ANALYSIS_MODELSUMMARY_H
#define EFFOPT_ANALYSIS_MODELSUMMARY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace effopt {

/// Prints the parameters (by role, with bytes), graph inputs, outputs,
/// buffer updates, op counts by kind and the forward FLOPs of a module
/// produced by the ONNX importer. At most `maxRows` parameters are listed.
void printModelSummary(mlir::ModuleOp module, llvm::raw_ostream &os,
                       unsigned maxRows = 12);

} // namespace effopt

#endif // EFFOPT_ANALYSIS_MODELSUMMARY_H
