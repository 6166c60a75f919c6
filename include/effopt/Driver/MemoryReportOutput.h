//===- MemoryReportOutput.h - the memory report as table, JSON, SVG -*- C++ -*-===//

#ifndef EFFOPT_DRIVER_MEMORYREPORTOUTPUT_H
#define EFFOPT_DRIVER_MEMORYREPORTOUTPUT_H

#include "effopt/Target/Effx.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace effopt {

struct ReportRequest {
  bool table = false;     // --report: the table on stdout
  std::string jsonPath;   // --report-json
  std::string svgPath;    // --report-svg
  std::string title;
  std::string tablePath;  // the table into a file (the Python package)
  bool any() const {
    return table || !jsonPath.empty() || !svgPath.empty() ||
           !tablePath.empty();
  }
};

/// Takes the arena report eff-memory-plan attached to `module` (and removes
/// the attribute), completes it with the persistent regions of `layout` and
/// writes what `request` asks for. Fails with one diagnostic.
mlir::LogicalResult emitMemoryReport(mlir::ModuleOp module,
                                     const StepLayout &layout,
                                     const ReportRequest &request);

} // namespace effopt

#endif // EFFOPT_DRIVER_MEMORYREPORTOUTPUT_H
