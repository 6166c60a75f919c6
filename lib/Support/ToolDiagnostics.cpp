//===- ToolDiagnostics.cpp - one-line diagnostics for effopt tools --------===//

#include "effopt/Support/ToolDiagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

using namespace mlir;

/// The file (and line:col where meaningful) a location points into.
static std::string describeLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    std::string text = file.getFilename().str();
    if (file.getLine() > 0)
      text += ":" + std::to_string(file.getLine()) + ":" +
              std::to_string(file.getColumn());
    return text;
  }
  if (auto name = dyn_cast<NameLoc>(loc))
    return describeLocation(name.getChildLoc());
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return describeLocation(callSite.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations()) {
      std::string text = describeLocation(inner);
      if (!text.empty())
        return text;
    }
  }
  return "";
}

static const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Remark:
    return "remark";
  case DiagnosticSeverity::Note:
    return "note";
  }
  return "error";
}

effopt::OneLineDiagnosticHandler::OneLineDiagnosticHandler(MLIRContext *context,
                                                           llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(context) {
  setHandler([&os](Diagnostic &diag) {
    std::string where = describeLocation(diag.getLocation());
    if (!where.empty())
      os << where << ": ";
    os << severityName(diag.getSeverity()) << ": " << diag.str();
    for (const Diagnostic &note : diag.getNotes())
      os << " (" << note.str() << ")";
    os << "\n";
    os.flush();
    return success();
  });
}
