//===- ToolDiagnostics.cpp - one-line diagnostics for effopt tools --------===//

#include "effopt/Support/ToolDiagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

#include <algorithm>

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
    std::string message = diag.str();
    std::replace(message.begin(), message.end(), '\n', ' ');
    os << severityName(diag.getSeverity()) << ": " << message;
    for (const Diagnostic &note : diag.getNotes()) {
      // The IR of the op a failing pass ran on is for compiler developers
      // (effopt-opt shows it); in a tool's one line it is a page of noise.
      if (StringRef(note.str()).starts_with("see current operation"))
        continue;
      // A note's own lines fold into the one line.
      std::string text = note.str();
      std::replace(text.begin(), text.end(), '\n', ' ');
      os << " (" << text << ")";
    }
    os << "\n";
    os.flush();
    return success();
  });
}
