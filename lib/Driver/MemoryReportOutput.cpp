//===- MemoryReportOutput.cpp - the memory report as table, JSON, SVG -----===//

#include "effopt/Driver/MemoryReportOutput.h"

#include "effopt/Analysis/MemoryReport.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

namespace effopt {

static effopt::MemoryCategory categoryOfRole(llvm::StringRef role) {
  if (role == "buffer")
    return effopt::MemoryCategory::Buffers;
  if (role == "optimizer_state")
    return effopt::MemoryCategory::OptimizerState;
  if (role == "input")
    return effopt::MemoryCategory::Batch;
  return effopt::MemoryCategory::Parameters; // trainable, frozen
}

/// Writes `write(os)` to `path` ("-" is stdout), keeping the file only when
/// complete.
template <typename Writer>
static LogicalResult writeFile(Location loc, llvm::StringRef path,
                               Writer write) {
  std::string error;
  auto file = mlir::openOutputFile(path, &error);
  if (!file)
    return emitError(loc) << error;
  write(file->os());
  file->os().flush();
  if (file->os().has_error())
    return emitError(loc) << path << ": cannot write the memory report";
  file->keep();
  return success();
}

LogicalResult emitMemoryReport(ModuleOp module,
                               const effopt::StepLayout &layout,
                               const ReportRequest &request) {
  auto attr = module->getAttrOfType<StringAttr>(effopt::kMemoryReportAttrName);
  if (!attr)
    return module.emitError("no memory report: eff-memory-plan did not run "
                            "with attach-report");
  module->removeAttr(effopt::kMemoryReportAttrName);
  llvm::Expected<effopt::MemoryReport> report =
      effopt::MemoryReport::fromJSON(attr.getValue());
  if (!report)
    return module.emitError(llvm::toString(report.takeError()));

  std::vector<effopt::ReportTensor> tensors;
  for (const effopt::StepTensor &t : layout.state)
    tensors.push_back(
        {t.name, categoryOfRole(t.role), t.bytes, t.offset, t.onHost});
  for (const effopt::StepTensor &t : layout.inputs)
    tensors.push_back({t.name, effopt::MemoryCategory::Batch, t.bytes,
                       t.offset});
  tensors.push_back({"loss", effopt::MemoryCategory::Batch, 4,
                     layout.lossOffset});
  report->setRegions(layout.stateBytes, layout.ioBytes, std::move(tensors),
                     layout.hostBytes);
  // The target libraries' scratch space (cuda: cuBLASLt's workspace).
  report->setLibraryWorkspace("library workspace", layout.workspaceBytes);
  // The pinned buffer a GPU's host tasks stage device bytes in.
  report->setHostStaging(layout.hostStagingBytes);
  report->setTitle(request.title);

  if (request.table)
    report->printTable(llvm::outs());
  if (!request.jsonPath.empty() &&
      failed(writeFile(module.getLoc(), request.jsonPath,
                       [&](llvm::raw_ostream &os) {
                         os << llvm::formatv("{0:2}", report->toJSON()) << "\n";
                       })))
    return failure();
  if (!request.tablePath.empty() &&
      failed(writeFile(module.getLoc(), request.tablePath,
                       [&](llvm::raw_ostream &os) { report->printTable(os); })))
    return failure();
  if (!request.svgPath.empty() &&
      failed(writeFile(module.getLoc(), request.svgPath,
                       [&](llvm::raw_ostream &os) { report->writeSvg(os); })))
    return failure();
  return success();
}

} // namespace effopt
