//===- ToolDiagnostics.h - one-line diagnostics for effopt tools -*- C++ -*-===//

#ifndef EFFOPT_SUPPORT_TOOLDIAGNOSTICS_H
#define EFFOPT_SUPPORT_TOOLDIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

namespace effopt {

/// Prints every diagnostic as one line, `FILE[:LINE:COL]: error: MESSAGE`,
/// naming the file from the diagnostic's location (node names are part of
/// importer messages). Notes are folded into the line they belong to.
class OneLineDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  OneLineDiagnosticHandler(mlir::MLIRContext *context,
                           llvm::raw_ostream &os = llvm::errs());
};

} // namespace effopt

#endif // EFFOPT_SUPPORT_TOOLDIAGNOSTICS_H
