//===- ReportOutput.h - effc --report, --report-json, --report-svg --*- C++ -*-===//

#ifndef EFFC_REPORTOUTPUT_H
#define EFFC_REPORTOUTPUT_H

#include "effopt/Target/Effx.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace effc {

struct ReportRequest {
  bool table = false;     // --report: the table on stdout
  std::string jsonPath;   // --report-json
  std::string svgPath;    // --report-svg
  std::string title;
  bool any() const { return table || !jsonPath.empty() || !svgPath.empty(); }
};

/// Takes the arena report eff-memory-plan attached to `module` (and removes
/// the attribute), completes it with the persistent regions of `layout` and
/// writes what `request` asks for. Fails with one diagnostic.
mlir::LogicalResult emitMemoryReport(mlir::ModuleOp module,
                                     const effopt::StepLayout &layout,
                                     const ReportRequest &request);

} // namespace effc

#endif // EFFC_REPORTOUTPUT_H
