//===- effopt-translate.cpp - ONNX to eff importer tool -------------------===//
//
// Imports an ONNX training graph into the eff dialect and prints it (text or
// bytecode), optionally with a one-screen summary. Errors are one line on
// stderr and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "effopt/Analysis/ModelSummary.h"
#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Import/ONNX/ONNXImporter.h"
#include "effopt/Support/ToolDiagnostics.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace llvm;

static cl::OptionCategory category("effopt-translate options");

static cl::opt<bool> importOnnx("import-onnx",
                                cl::desc("Import an ONNX model (the default)"),
                                cl::init(true), cl::cat(category));
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::cat(category));
static cl::opt<bool> listOps("list-supported-ops",
                             cl::desc("List the ONNX op types effopt imports"),
                             cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::list<std::string>
    shapes("shape",
           cl::desc("Bind an input's symbolic dimensions: --shape x=32,64"),
           cl::value_desc("name=d0,d1,..."), cl::cat(category));
static cl::list<std::string> constantInputs(
    "constant-input",
    cl::desc("Replace a graph input by the TensorProto in a file (used for "
             "shape operands of ONNX node tests)"),
    cl::value_desc("name=file.pb"), cl::cat(category));
static cl::opt<std::string>
    freeze("freeze", cl::desc("Mark parameters whose name matches as frozen"),
           cl::value_desc("regex"), cl::cat(category));
static cl::opt<bool> summary("summary",
                             cl::desc("Print a summary of parameters, inputs and "
                                      "ops after the IR"),
                             cl::cat(category));
static cl::opt<bool> summaryOnly("summary-only",
                                 cl::desc("Print only the summary"),
                                 cl::cat(category));
static cl::opt<bool>
    elideWeights("elide-weights",
                 cl::desc("Print weights larger than 16 bytes as \"__elided__\" "
                          "(the output cannot be parsed back)"),
                 cl::cat(category));
static cl::opt<bool> shapesOnly(
    "shapes-only",
    cl::desc("Read only the shapes of float initializers: parameters get no "
             "initial value, and their data (and external data files) may be "
             "absent"),
    cl::cat(category));
static cl::opt<bool> emitBytecode("emit-bytecode",
                                  cl::desc("Write MLIR bytecode instead of text"),
                                  cl::cat(category));
static cl::opt<bool> noChecker("no-onnx-checker",
                               cl::desc("Skip ONNX's model checker"),
                               cl::cat(category));
static cl::opt<bool> noShapeCheck(
    "no-shape-check",
    cl::desc("Skip cross-checking eff's types with ONNX shape inference"),
    cl::cat(category));

/// Parses "name=d0,d1,..." into the options; false with a message on error.
static bool parseShape(StringRef text, effopt::ONNXImportOptions &options) {
  auto [name, dims] = text.split('=');
  if (name.empty() || dims.empty()) {
    errs() << "effopt-translate: error: --shape expects name=d0,d1,..., got '"
           << text << "'\n";
    return false;
  }
  SmallVector<int64_t> shape;
  SmallVector<StringRef> parts;
  dims.split(parts, ',');
  for (StringRef part : parts) {
    int64_t dim;
    if (part.trim().getAsInteger(10, dim) || dim < 0) {
      errs() << "effopt-translate: error: --shape " << name << ": '" << part
             << "' is not a non-negative integer\n";
      return false;
    }
    shape.push_back(dim);
  }
  options.inputShapes[name] = shape;
  return true;
}

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "effopt-translate: imports an ONNX training graph into the eff dialect.\n\n"
      "The model's first output is the loss; float initializers become\n"
      "parameters (eff.parameter, named as in the file); graph inputs are the\n"
      "batch. Examples:\n"
      "  effopt-translate --import-onnx model.onnx -o model.mlir\n"
      "  effopt-translate model.onnx --summary-only\n"
      "  effopt-translate model.onnx --shape x=32,64 --freeze 'embed\\..*'\n");

  if (listOps) {
    for (const std::string &op : effopt::getSupportedONNXOps())
      outs() << op << "\n";
    return 0;
  }
  if (inputFile.empty()) {
    errs() << "effopt-translate: error: no input model (see --help)\n";
    return 1;
  }

  effopt::ONNXImportOptions options;
  for (const std::string &shape : shapes)
    if (!parseShape(shape, options))
      return 1;
  for (const std::string &binding : constantInputs) {
    auto [name, file] = StringRef(binding).split('=');
    if (name.empty() || file.empty()) {
      errs() << "effopt-translate: error: --constant-input expects "
                "name=file.pb, got '"
             << binding << "'\n";
      return 1;
    }
    options.constantInputs[name] = file.str();
  }
  options.freezeRegex = freeze;
  options.runChecker = !noChecker;
  options.checkShapes = !noShapeCheck;
  options.shapesOnly = shapesOnly;

  MLIRContext context;
  context.loadDialect<effopt::eff::EffDialect, func::FuncDialect>();
  effopt::OneLineDiagnosticHandler diagnostics(&context);

  OwningOpRef<ModuleOp> module =
      effopt::importONNXFile(inputFile, &context, options);
  if (!module)
    return 1;
  if (failed(verify(*module)))
    return 1;

  std::string errorMessage;
  auto output = mlir::openOutputFile(outputFile, &errorMessage);
  if (!output) {
    errs() << "effopt-translate: error: " << errorMessage << "\n";
    return 1;
  }
  if (!summaryOnly) {
    if (emitBytecode) {
      if (failed(writeBytecodeToFile(*module, output->os())))
        return 1;
    } else {
      OpPrintingFlags flags;
      if (elideWeights)
        flags.elideLargeResourceString(16).elideLargeElementsAttrs(16);
      module->print(output->os(), flags);
      output->os() << "\n";
    }
  }
  if (summary || summaryOnly)
    effopt::printModelSummary(*module,
                              summaryOnly || outputFile != "-" ? output->os()
                                                               : errs());
  output->keep();
  return 0;
}
