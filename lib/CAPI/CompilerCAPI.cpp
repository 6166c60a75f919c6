//===- CompilerCAPI.cpp - the compiler's C interface ----------------------===//
//
// effopt_compile: CompilerFlags maps the options, compileModel runs the
// pipeline, emitMemoryReport and writeEffx write the files. Diagnostics are
// captured (the first error is the message), never printed: the caller is a
// Python process whose stderr belongs to its user.
//
//===----------------------------------------------------------------------===//

#include "effopt-c/Compiler.h"

#include "effopt/Driver/Compiler.h"
#include "effopt/Driver/CompilerFlags.h"
#include "effopt/Driver/MemoryReportOutput.h"
#include "effopt/Driver/Registration.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <unistd.h>

using namespace mlir;

namespace {

void setError(char *error, size_t size, llvm::StringRef message) {
  if (!error || size == 0)
    return;
  message = message.split('\n').first;
  size_t n = std::min(size - 1, message.size());
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

/// The report's title, as effc writes it.
std::string reportTitle(llvm::StringRef input,
                        const effopt::CompileOptions &options) {
  const effopt::TrainStepOptions &step = options.step;
  if (step.mode == effopt::StepMode::Forward)
    return llvm::sys::path::filename(input).str() + " (forward)";
  std::string title = llvm::sys::path::filename(input).str() + " (train_step, " +
                      effopt::stringifyPrecision(step.precision).str() +
                      ", remat " + effopt::stringifyRemat(step.remat).str();
  if (step.accum > 1)
    title += ", accum " + std::to_string(step.accum);
  return title + ")";
}

/// Runs `body` with file descriptor 2 sent to a temporary file and returns
/// what was written there. llvm::cl reports a bad option value ("for the
/// --lr option: 'x' is not a number") on llvm::errs() only; the C ABI
/// prints nothing and returns that line instead.
template <typename Body>
std::string captureStderr(Body body) {
  llvm::errs().flush();
  std::FILE *capture = std::tmpfile();
  int saved = capture ? dup(2) : -1;
  if (saved < 0 || dup2(fileno(capture), 2) < 0) {
    if (saved >= 0)
      close(saved);
    if (capture)
      std::fclose(capture);
    body();
    return "";
  }
  body();
  llvm::errs().flush();
  dup2(saved, 2);
  close(saved);
  std::string text;
  std::rewind(capture);
  char buffer[512];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, capture)) > 0)
    text.append(buffer, n);
  std::fclose(capture);
  return text;
}

int compile(const char *onnxPath, const char *effxPath,
            const char *reportPrefix, int count, const char *const *names,
            const char *const *values, std::string &message) {
  effopt::CompileOptions options;
  for (int i = 0; i < count; ++i) {
    llvm::Error error = llvm::Error::success();
    std::string printed = captureStderr([&] {
      error = effopt::applyCompilerFlag(options, names[i], values[i]);
    });
    if (error) {
      // ": for the --lr option: 'x' is not a number" is the better line.
      llvm::StringRef detail =
          llvm::StringRef(printed).trim().split('\n').first.trim();
      detail.consume_front(":");
      message = detail.empty() ? llvm::toString(std::move(error))
                               : (llvm::consumeError(std::move(error)),
                                  detail.trim().str());
      return 1;
    }
  }
  if (options.memoryBudget && options.rematBudget) {
    message = "--memory-budget chooses --remat itself; give only one of them";
    return 1;
  }
  options.step.attachMemoryReport = reportPrefix != nullptr;
  if (!effxPath)
    options.step.until = effopt::PipelineStage::MemoryPlan;

  DialectRegistry registry;
  effopt::registerCompilerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  std::string firstError;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
      firstError = d.str();
    return success();
  });
  // The budget searches print their table and their verdict to a log; keep
  // it out of the caller's stderr, and take the verdict as the message.
  std::string log;
  llvm::raw_string_ostream logStream(log);
  auto fail = [&] {
    message = firstError;
    if (message.empty()) {
      llvm::SmallVector<llvm::StringRef> lines;
      llvm::StringRef(log).split(lines, '\n');
      for (llvm::StringRef line : lines)
        if (line.consume_front("effc: error: "))
          message = line.str();
    }
    if (message.empty())
      message = "compilation failed";
    return 1;
  };
  FailureOr<effopt::CompiledStep> step =
      effopt::compileModel(context, onnxPath, options, logStream);
  if (failed(step))
    return fail();
  if (reportPrefix) {
    std::string prefix = reportPrefix;
    effopt::ReportRequest request;
    request.jsonPath = prefix + ".json";
    request.tablePath = prefix + ".txt";
    request.svgPath = prefix + ".svg";
    request.title = reportTitle(onnxPath, options);
    if (failed(effopt::emitMemoryReport(*step->module, step->layout, request)))
      return fail();
  }
  if (!effxPath)
    return 0;
  if (failed(effopt::serializeStep(*step, options)) ||
      failed(effopt::writeEffx(effxPath, *step)))
    return fail();
  return 0;
}

} // namespace

extern "C" int effopt_compiler_api_version(void) {
  return EFFOPT_COMPILER_C_API_VERSION;
}

extern "C" int effopt_compile(const char *onnx_path, const char *effx_path,
                              const char *report_prefix, int count,
                              const char *const *names,
                              const char *const *values, char *error,
                              size_t error_size) {
  // Target registration and LLVM's global state are process-wide: one
  // compilation at a time.
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  static bool registered = [] {
    effopt::registerAllTargetBackends();
    return true;
  }();
  (void)registered;
  if (!onnx_path || count < 0 || (count > 0 && (!names || !values))) {
    setError(error, error_size, "effopt_compile: bad arguments");
    return 1;
  }
  std::string message;
  int status = compile(onnx_path, effx_path, report_prefix, count, names,
                       values, message);
  setError(error, error_size, status ? message : "");
  return status;
}
