//===- effc.cpp - the effopt compiler driver ------------------------------===//
//
// effc MODEL.onnx -o OUT.effx [options]
//
// Imports the ONNX training graph, builds the training step (eff-autodiff,
// eff-optimizer, eff-step-abi), lowers it with the registered CPU pipeline
// (replayable with effopt-opt --effopt-cpu-lowering), generates native code
// and writes one self-contained .effx. Errors are one line and exit 1.
//
// --mode forward compiles the imported forward function instead (no
// autodiff, no optimizer: eff-step-abi{mode=forward}): initializers are
// read-only state, and every graph output is written to io, for inference
// and for checking ops against ONNX's backend node tests.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"
#include "effopt/Conversion/Pipelines.h"
#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Import/ONNX/ONNXImporter.h"
#include "effopt/Support/ToolDiagnostics.h"
#include "effopt/Target/CpuObject.h"
#include "effopt/Target/Effx.h"
#include "effopt/Transforms/Passes.h"

#include "MemoryBudget.h"
#include "ReportOutput.h"
#include "TrainConfig.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>

using namespace mlir;
using namespace llvm;

static cl::OptionCategory category("effc options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output .effx file"),
                                       cl::value_desc("file"), cl::cat(category));
static cl::list<std::string>
    shapes("shape", cl::desc("Bind an input's symbolic dimensions"),
           cl::value_desc("name=d0,d1,..."), cl::cat(category));
static cl::opt<std::string> mode(
    "mode",
    cl::desc("train: one training step (the default); forward: the forward "
             "function only (inference: no autodiff or optimizer, every graph "
             "output written to io, run with effrt_session_forward)"),
    cl::value_desc("train|forward"), cl::init("train"), cl::cat(category));
static cl::list<std::string> constantInputs(
    "constant-input",
    cl::desc("Replace a graph input by the TensorProto in a file (shape "
             "operands of ONNX node tests)"),
    cl::value_desc("name=file.pb"), cl::cat(category));
static cl::opt<std::string>
    freeze("freeze", cl::desc("Freeze parameters whose name matches"),
           cl::value_desc("regex"), cl::cat(category));

static cl::opt<std::string> optimizer("optimizer",
                                      cl::desc("sgd, adam or adamw"),
                                      cl::init("adamw"), cl::cat(category));
static cl::opt<double> lr("lr", cl::desc("Peak learning rate"), cl::init(1e-3),
                          cl::cat(category));
static cl::opt<double> weightDecay(
    "weight-decay",
    cl::desc("Weight decay (default 0.01 for adamw, 0 otherwise)"),
    cl::init(-1.0), cl::cat(category));
static cl::opt<double> momentum("momentum", cl::desc("SGD momentum"),
                                cl::init(0.0), cl::cat(category));
static cl::opt<double> dampening("dampening", cl::desc("SGD dampening"),
                                 cl::init(0.0), cl::cat(category));
static cl::opt<bool> nesterov("nesterov", cl::desc("SGD Nesterov momentum"),
                              cl::cat(category));
static cl::opt<double> beta1("beta1", cl::init(0.9), cl::cat(category),
                             cl::desc("Adam beta1"));
static cl::opt<double> beta2("beta2", cl::init(0.999), cl::cat(category),
                             cl::desc("Adam beta2"));
static cl::opt<double> eps("eps", cl::init(1e-8), cl::cat(category),
                           cl::desc("Adam epsilon"));
static cl::opt<bool> amsgrad("amsgrad", cl::desc("Adam AMSGrad"),
                             cl::cat(category));
static cl::opt<std::string>
    schedule("schedule", cl::desc("constant, linear_warmup or cosine"),
             cl::init("constant"), cl::cat(category));
static cl::opt<int64_t> warmupSteps("warmup-steps", cl::init(0),
                                    cl::desc("Linear warmup steps"),
                                    cl::cat(category));
static cl::opt<int64_t> totalSteps("total-steps", cl::init(0),
                                   cl::desc("Steps of the cosine schedule"),
                                   cl::cat(category));
static cl::opt<double> minLr("min-lr", cl::init(0.0),
                             cl::desc("Final learning rate of cosine"),
                             cl::cat(category));
static cl::opt<double> clipGradNorm("clip-grad-norm", cl::init(0.0),
                                    cl::desc("Clip the global gradient norm"),
                                    cl::cat(category));
static cl::opt<std::string>
    noWeightDecay("no-weight-decay",
                  cl::desc("Regex of parameters without weight decay"),
                  cl::init(""), cl::cat(category));

static cl::opt<std::string> targetName("target", cl::desc("cpu (cuda later)"),
                                       cl::init("cpu"), cl::cat(category));
static cl::opt<std::string> cpuName(
    "cpu", cl::desc("CPU to generate code for (default: this machine's)"),
    cl::init("native"), cl::cat(category));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32, or bf16/fp16 mixed precision (eff-autocast: GEMMs and "
             "convolutions in low precision, fp32 master weights)"),
    cl::init("fp32"), cl::cat(category));
static cl::opt<std::string> lossScale(
    "loss-scale",
    cl::desc("dynamic, static or none (default: dynamic for fp16, none "
             "otherwise)"),
    cl::init(""), cl::cat(category));
static cl::opt<double> lossScaleInit("loss-scale-init",
                                     cl::desc("Initial (or static) loss scale"),
                                     cl::init(65536.0), cl::cat(category));
static cl::opt<int64_t> lossScaleGrowthInterval(
    "loss-scale-growth-interval",
    cl::desc("Finite steps in a row before the scale doubles"), cl::init(2000),
    cl::cat(category));
static cl::opt<int64_t> lossScaleHysteresis(
    "loss-scale-hysteresis",
    cl::desc("Overflows tolerated before the scale halves (DeepSpeed; 1 = "
             "PyTorch)"),
    cl::init(1), cl::cat(category));
static cl::opt<double> lossScaleMin("loss-scale-min",
                                    cl::desc("Smallest loss scale (0: none)"),
                                    cl::init(0.0), cl::cat(category));
static cl::opt<std::string>
    remat("remat",
          cl::desc("Rematerialization: none, selective (recompute all but "
                   "GEMM/conv outputs), full (keep block inputs), sqrt"),
          cl::init("none"), cl::cat(category));
static cl::opt<std::string> rematBoundary(
    "remat-boundary",
    cl::desc("--remat full: a block starts at each op whose ONNX node name "
             "matches this regex (default: /layers.N/-style scopes)"),
    cl::value_desc("regex"), cl::init(""), cl::cat(category));
static cl::opt<bool> scheduleMemory(
    "schedule-memory",
    cl::desc("Reorder the step's ops for a lower planned peak "
             "(eff-schedule-memory: optimizer updates right after their "
             "gradient, ops moved next to their readers; results unchanged). "
             "On by default; =false keeps the order autodiff, remat and the "
             "optimizer built"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> report(
    "report",
    cl::desc("Print the memory report: bytes by category, the peak, what "
             "is live there and why (docs/MemoryReport.md)"),
    cl::cat(category));
static cl::opt<std::string> reportJson("report-json",
                                       cl::desc("Write the memory report as JSON"),
                                       cl::value_desc("file"), cl::init(""),
                                       cl::cat(category));
static cl::opt<std::string> reportSvg(
    "report-svg",
    cl::desc("Write memory over the schedule, by category, as SVG"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("Fit the step into BYTES (suffixes K, M, G = KiB, MiB, GiB): "
             "keeping the global batch, choose the fewest micro-batches "
             "(--accum; needs a batch dimension --shape can bind) and then "
             "the remat policy with the least recomputation whose planned "
             "memory fits, or fail saying by how much it cannot"),
    cl::value_desc("bytes"), cl::init(""), cl::cat(category));
static cl::opt<std::string> configFile(
    "config",
    cl::desc("Training config (TOML) whose keys are these flags; the "
             "command line wins"),
    cl::value_desc("train.toml"), cl::init(""), cl::cat(category));
static cl::opt<int64_t> accum(
    "accum",
    cl::desc("Gradient accumulation: one optimizer step runs K micro-batches "
             "of the compiled batch size B (K*B rows per step; gradients and "
             "loss are the mean over them)"),
    cl::value_desc("K"), cl::init(1), cl::cat(category));
static cl::opt<int64_t> zero("zero", cl::desc("ZeRO stage"), cl::init(0),
                             cl::cat(category));
static cl::opt<std::string> batch(
    "batch",
    cl::desc("Compile many models in one process: each line of the file is "
             "'MODEL.onnx OUT.effx [NAME=FILE.pb]...' (constant inputs); "
             "prints 'ok OUT' or 'error OUT: MESSAGE' per model"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<unsigned> optLevel(
    "opt-level",
    cl::desc("LLVM optimization level of the generated code, 0-3 (default 3; "
             "lower compiles faster)"),
    cl::init(3), cl::cat(category));
static cl::opt<std::string> emit(
    "emit",
    cl::desc("Stop early and print IR: train-step (eff, after eff-step-abi; "
             "with --mode forward the laid-out @forward) or llvm (LLVM "
             "dialect)"),
    cl::init(""), cl::cat(category));
static cl::opt<bool> printPipeline(
    "print-pipeline", cl::desc("Print the pass pipelines effc runs and exit"),
    cl::cat(category));
static cl::opt<bool> timing("time", cl::desc("Print the compile time per phase"),
                            cl::cat(category));

namespace {

[[noreturn]] void die(const Twine &message) {
  errs() << "effc: error: " << message << "\n";
  exit(1);
}

/// A double as pass-option text that reads back as the same double (the
/// stream's default keeps 7 digits: --lr 0.00123456789 would train with
/// 0.001234568).
std::string exact(double value) {
  char text[32];
  for (int digits = 15; digits <= 17; ++digits) {
    snprintf(text, sizeof text, "%.*g", digits, value);
    if (strtod(text, nullptr) == value)
      break;
  }
  return text;
}

/// --loss-scale with its default: dynamic for fp16 (whose range underflows
/// small gradients), none for bf16 and fp32.
std::string effectiveLossScale() {
  if (!lossScale.empty())
    return lossScale;
  return precision == "fp16" ? "dynamic" : "none";
}

/// The eff-level pipeline before lowering: the training step (with the
/// remat policy and, for budget, the saved bytes to free), or with --mode
/// forward only the layout of @forward.
std::string stepPipeline(StringRef rematPolicy, int64_t freeBytes = 0,
                         int64_t microBatches = accum) {
  if (mode == "forward")
    return "canonicalize,cse,eff-step-abi{mode=forward}";
  double decay = weightDecay >= 0 ? weightDecay.getValue()
                                  : (optimizer == "adamw" ? 0.01 : 0.0);
  std::string options;
  raw_string_ostream os(options);
  os << "optimizer=" << optimizer << " lr=" << exact(lr)
     << " momentum=" << exact(momentum) << " dampening=" << exact(dampening)
     << " nesterov=" << (nesterov ? 1 : 0) << " weight-decay=" << exact(decay)
     << " beta1=" << exact(beta1) << " beta2=" << exact(beta2)
     << " eps=" << exact(eps) << " amsgrad=" << (amsgrad ? 1 : 0)
     << " schedule=" << schedule << " warmup-steps=" << warmupSteps
     << " total-steps=" << totalSteps << " min-lr=" << exact(minLr)
     << " clip-grad-norm=" << exact(clipGradNorm);
  if (!noWeightDecay.empty())
    os << " no-weight-decay=" << noWeightDecay;
  std::string rematPass;
  if (rematPolicy != "none") {
    rematPass = "eff-remat{policy=" + rematPolicy.str();
    if (freeBytes > 0)
      rematPass += " free-bytes=" + std::to_string(freeBytes);
    if (!rematBoundary.empty())
      rematPass += " boundary='" + rematBoundary.getValue() + "'";
    rematPass += "},";
  }
  std::string autocastPass;
  if (precision != "fp32")
    autocastPass = "eff-autocast{precision=" + precision.getValue() + "},";
  std::string lossScalingPass;
  if (effectiveLossScale() != "none") {
    raw_string_ostream ls(lossScalingPass);
    ls << "eff-loss-scaling{init-scale=" << exact(lossScaleInit)
       << " growth-interval=" << lossScaleGrowthInterval
       << " hysteresis=" << lossScaleHysteresis
       << " min-scale=" << exact(lossScaleMin)
       << " static=" << (effectiveLossScale() == "static" ? 1 : 0) << "},";
  }
  std::string accumPass;
  if (microBatches != 1)
    accumPass = "eff-grad-accum{steps=" + std::to_string(microBatches) + "},";
  return autocastPass + "eff-autodiff," + rematPass + accumPass +
         lossScalingPass + "eff-optimizer{" + options +
         "},canonicalize,cse,eff-step-abi" +
         (scheduleMemory ? ",eff-schedule-memory" : "");
}

void checkSupportedOptions() {
  if (mode != "train" && mode != "forward")
    die("--mode must be train or forward, got '" + mode + "'");
  if (optLevel > 3)
    die("--opt-level must be 0, 1, 2 or 3");
  if (mode == "forward") {
    // Options that shape a training step mean nothing for a forward
    // function; silently ignoring them would hide a mistake.
    for (cl::Option *option :
         std::initializer_list<cl::Option *>{
             &optimizer, &lr, &weightDecay, &momentum, &dampening, &nesterov,
             &beta1, &beta2, &eps, &amsgrad, &schedule, &warmupSteps,
             &totalSteps, &minLr, &clipGradNorm, &noWeightDecay, &freeze,
             &remat, &rematBoundary, &memoryBudget, &accum, &zero,
             &precision, &lossScale, &lossScaleInit, &lossScaleGrowthInterval,
             &lossScaleHysteresis, &lossScaleMin, &scheduleMemory})
      if (option->getNumOccurrences())
        die("--" + option->ArgStr + " applies to training steps only, not to "
            "--mode forward");
  }
  if (targetName != "cpu")
    die("--target " + targetName + " is not available yet (only cpu)");
  if (precision != "fp32" && precision != "bf16" && precision != "fp16")
    die("--precision must be fp32, bf16 or fp16, got '" + precision + "'");
  if (!lossScale.empty() && lossScale != "dynamic" && lossScale != "static" &&
      lossScale != "none")
    die("--loss-scale must be dynamic, static or none, got '" + lossScale +
        "'");
  if (!(lossScaleInit > 0))
    die("--loss-scale-init must be > 0");
  if (lossScaleGrowthInterval < 1)
    die("--loss-scale-growth-interval must be >= 1");
  if (lossScaleHysteresis < 1)
    die("--loss-scale-hysteresis must be >= 1");
  if (!(lossScaleMin >= 0) || lossScaleMin > lossScaleInit)
    die("--loss-scale-min must be in [0, --loss-scale-init]");
  if (StringRef(remat).starts_with("budget:")) {
    if (!effc::parseBytes(StringRef(remat).drop_front(strlen("budget:"))))
      die("--remat " + remat + ": the budget is not a byte count (like "
          "budget:3000000, budget:1.5M)");
  } else if (remat != "none" && remat != "selective" && remat != "full" &&
             remat != "sqrt") {
    die("--remat must be none, selective, full, sqrt or budget:BYTES, got '" +
        remat + "'");
  }
  if (!rematBoundary.empty() && remat != "full")
    die("--remat-boundary applies to --remat full only");
  if (rematBoundary.getValue().find('\'') != std::string::npos)
    die("--remat-boundary must not contain a single quote");
  if (accum < 1)
    die("--accum must be at least 1 (micro-batches per optimizer step), got " +
        Twine(accum.getValue()));
  if (zero != 0)
    die("--zero is not implemented yet");
  if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
    die("--optimizer must be sgd, adam or adamw, got '" + optimizer + "'");
}

bool parseShape(StringRef spec, effopt::ONNXImportOptions &options) {
  auto [name, dims] = spec.split('=');
  if (name.empty() || dims.empty())
    die("--shape expects name=d0,d1,..., got '" + spec + "'");
  SmallVector<int64_t> shape;
  SmallVector<StringRef> parts;
  dims.split(parts, ',');
  for (StringRef part : parts) {
    int64_t dim;
    if (part.trim().getAsInteger(10, dim) || dim <= 0)
      die("--shape " + name + ": '" + part + "' is not a positive integer");
    shape.push_back(dim);
  }
  options.inputShapes[name] = shape;
  return true;
}

/// The lowering up to the memory plan: what planning a remat choice needs.
std::string planningPipeline() {
  effopt::CpuPipelineOptions options;
  options.stopAfterMemoryPlan = true;
  return effopt::cpuLoweringPipeline(options);
}

LogicalResult runPipeline(ModuleOp module, StringRef pipeline) {
  PassManager pm(module.getContext());
  if (failed(parsePassPipeline(pipeline, pm)))
    return failure();
  return pm.run(module);
}

/// Imports, builds the step (or forward function), lowers, generates code
/// and writes `output`; errors go to the context's diagnostic handler.
LogicalResult compileModel(MLIRContext &context, StringRef input,
                           StringRef output, ArrayRef<std::string> constants) {
  effopt::ONNXImportOptions importOptions;
  for (const std::string &shape : shapes)
    parseShape(shape, importOptions);
  for (const std::string &binding : constants) {
    auto [name, file] = StringRef(binding).split('=');
    if (name.empty() || file.empty())
      die("--constant-input expects name=file.pb, got '" + binding + "'");
    importOptions.constantInputs[name] = file.str();
  }
  importOptions.freezeRegex = freeze;

  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  OwningOpRef<ModuleOp> module =
      effopt::importONNXFile(input, &context, importOptions);
  if (!module)
    return failure();
  if (!memoryBudget.empty()) {
    if (remat.getNumOccurrences())
      die("--memory-budget chooses --remat itself; give only one of them");
    if (accum.getNumOccurrences())
      die("--memory-budget chooses --accum itself; give only one of them");
    std::optional<int64_t> budget = effc::parseBytes(memoryBudget);
    if (!budget)
      die("--memory-budget: '" + memoryBudget +
          "' is not a byte count (like 3000000, 512K, 1.5M, 2G)");
    // The global batch: the leading dimension of the batch inputs as
    // imported. Micro-batches re-import the model with it divided.
    auto forward = module->lookupSymbol<func::FuncOp>(effopt::eff::kForwardFuncName);
    SmallVector<std::pair<std::string, RankedTensorType>> batchInputs;
    for (unsigned i = 0; forward && i < forward.getNumArguments(); ++i)
      if (auto name = forward.getArgAttrOfType<StringAttr>(
              i, effopt::eff::kInputAttrName))
        if (auto type =
                dyn_cast<RankedTensorType>(forward.getArgument(i).getType()))
          batchInputs.push_back({name.str(), type});
    int64_t globalRows = 1;
    bool splittable = !batchInputs.empty();
    for (auto &[name, type] : batchInputs) {
      if (type.getRank() == 0) {
        splittable = false;
        continue;
      }
      globalRows = std::max(globalRows, type.getDimSize(0));
    }
    for (auto &[name, type] : batchInputs)
      if (type.getRank() > 0 && type.getDimSize(0) != globalRows)
        splittable = false;
    auto importAt = [&](int64_t rows,
                        std::string &why) -> OwningOpRef<ModuleOp> {
      if (rows == globalRows)
        return OwningOpRef<ModuleOp>(cast<ModuleOp>((*module)->clone()));
      if (!splittable) {
        why = "the batch inputs do not share one leading (batch) dimension";
        return {};
      }
      effopt::ONNXImportOptions options = importOptions;
      for (auto &[name, type] : batchInputs) {
        SmallVector<int64_t> shape(type.getShape());
        shape[0] = rows;
        options.inputShapes[name] = shape;
      }
      std::string firstError;
      ScopedDiagnosticHandler capture(&context, [&](Diagnostic &d) {
        if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
          firstError = d.str();
        return success();
      });
      OwningOpRef<ModuleOp> imported =
          effopt::importONNXFile(input, &context, options);
      if (!imported)
        why = firstError.empty() ? "the model does not import" : firstError;
      return imported;
    };
    std::optional<effc::BudgetChoice> choice = effc::fitMemoryBudget(
        *budget, globalRows, importAt,
        [](StringRef policy, int64_t freeBytes, int64_t microBatches) {
          return stepPipeline(policy, freeBytes, microBatches);
        },
        planningPipeline(), errs());
    if (!choice)
      return failure();
    remat.setValue(choice->policy);
    accum.setValue(choice->microBatches);
    module = std::move(choice->module);
  }
  int64_t rematFreeBytes = 0;
  std::string rematPolicy = remat;
  if (StringRef(remat).starts_with("budget:")) {
    int64_t budget =
        *effc::parseBytes(StringRef(remat).drop_front(strlen("budget:")));
    std::optional<int64_t> freeBytes = effc::fitRematBudget(
        *module, budget, accum,
        [](StringRef policy, int64_t bytes, int64_t microBatches) {
          return stepPipeline(policy, bytes, microBatches);
        },
        planningPipeline(), errs());
    if (!freeBytes)
      return failure();
    rematFreeBytes = *freeBytes;
    rematPolicy = rematFreeBytes ? "budget" : "none";
  }
  auto t1 = Clock::now();
  std::string training = stepPipeline(rematPolicy, rematFreeBytes);
  if (failed(runPipeline(*module, training)))
    return failure();
  if (emit == "train-step") {
    module->print(outs());
    return success();
  }
  FailureOr<effopt::StepLayout> layout = effopt::readStepLayout(*module);
  if (failed(layout))
    return failure();
  auto t2 = Clock::now();
  effc::ReportRequest reportRequest{report, reportJson, reportSvg,
                                    sys::path::filename(input).str() +
                                        (mode == "forward"
                                             ? std::string(" (forward)")
                                             : " (train_step, " + precision +
                                                   ", remat " + remat +
                                                   (accum > 1
                                                        ? ", accum " +
                                                              std::to_string(accum)
                                                        : std::string()) +
                                                   ")")};
  effopt::CpuPipelineOptions loweringOptions;
  loweringOptions.attachMemoryReport = reportRequest.any();
  std::string lowering = effopt::cpuLoweringPipeline(loweringOptions);
  if (failed(runPipeline(*module, lowering)))
    return failure();
  if (reportRequest.any() &&
      failed(effc::emitMemoryReport(*module, *layout, reportRequest)))
    return failure();
  module->walk([&](LLVM::LLVMFuncOp func) {
    if (auto bytes = func->getAttrOfType<IntegerAttr>("eff.arena_bytes"))
      layout->arenaBytes = std::max(layout->arenaBytes, bytes.getInt());
  });
  // Discardable eff.* attributes mean nothing to LLVM.
  for (NamedAttribute attr : llvm::to_vector((*module)->getDiscardableAttrs()))
    if (attr.getName().getValue().starts_with("eff."))
      (*module)->removeDiscardableAttr(attr.getName());
  if (emit == "llvm") {
    module->print(outs());
    return success();
  }
  auto t3 = Clock::now();
  effopt::CpuCodegenOptions codegen;
  codegen.cpu = cpuName;
  codegen.optLevel = optLevel;
  FailureOr<effopt::CpuCode> code =
      effopt::emitCpuSharedObject(*module, codegen);
  if (failed(code))
    return failure();
  auto t4 = Clock::now();

  json::Object description{
      {"model", sys::path::stem(input).str()},
      {"source", input.str()},
      {"compiler", "effc 0.1 (LLVM/MLIR 22)"},
      {"opt_level", static_cast<int64_t>(optLevel)},
      {"pipeline", "builtin.module(" + training + ")," +
                       "builtin.module(" + effopt::cpuLoweringPipeline() + ")"}};
  if (mode == "train")
    description["training"] =
        json::Object{{"optimizer", optimizer.getValue()},
                     {"lr", lr.getValue()},
                     {"schedule", schedule.getValue()},
                     {"precision", precision.getValue()},
                     {"loss_scale", effectiveLossScale()},
                     {"remat", remat.getValue()},
                     {"accum", accum.getValue()}};
  if (mode == "train" && effectiveLossScale() != "none")
    description["loss_scaling"] =
        json::Object{{"mode", effectiveLossScale()},
                     {"init_scale", lossScaleInit.getValue()},
                     {"min_scale", lossScaleMin.getValue()},
                     {"growth_interval", lossScaleGrowthInterval.getValue()},
                     {"hysteresis", lossScaleHysteresis.getValue()}};
  description["target"] = "cpu-x86_64";
  description["cpu"] = code->cpu;
  description["entry"] = effrt::kEffxEntrySymbol;
  effopt::EffxSectionData hostCode{effrt::EffxSectionKind::HostCode,
                                   "cpu-x86_64", "step",
                                   std::move(code->sharedObject)};
  if (failed(effopt::writeEffx(output, *layout, hostCode, description,
                               UnknownLoc::get(&context))))
    return failure();
  auto seconds = [](auto a, auto b) {
    return std::chrono::duration<double>(b - a).count();
  };
  if (timing)
    errs() << formatv("effc: import {0:f2} s, step {1:f2} s, "
                      "lowering {2:f2} s, codegen {3:f2} s, total {4:f2} s\n",
                      seconds(t0, t1), seconds(t1, t2), seconds(t2, t3),
                      seconds(t3, t4), seconds(t0, Clock::now()));
  return success();
}

/// --batch FILE: one model per line, `MODEL.onnx OUT.effx [NAME=FILE.pb]...`
/// (the extra words are --constant-input bindings), compiled in this one
/// process with the other options of the command line. Prints `ok OUT` or
/// `error OUT: MESSAGE` per line; the exit status is 1 if any failed.
int compileBatch(MLIRContext &context, StringRef listPath) {
  auto list = MemoryBuffer::getFile(listPath);
  if (!list)
    die(listPath + ": cannot read: " + list.getError().message());
  SmallVector<StringRef> lines;
  (*list)->getBuffer().split(lines, '\n', -1, false);
  int status = 0;
  for (StringRef line : lines) {
    SmallVector<StringRef> words;
    line.trim().split(words, ' ', -1, false);
    if (words.empty())
      continue;
    if (words.size() < 2)
      die(listPath + ": expected 'MODEL.onnx OUT.effx [NAME=FILE.pb]...', "
          "got '" + line.trim() + "'");
    std::vector<std::string> constants;
    for (StringRef word : ArrayRef(words).drop_front(2))
      constants.push_back(word.str());
    std::string errors;
    raw_string_ostream os(errors);
    LogicalResult result = failure();
    {
      effopt::OneLineDiagnosticHandler diagnostics(&context, os);
      result = compileModel(context, words[0], words[1], constants);
    }
    if (succeeded(result)) {
      outs() << "ok " << words[1] << "\n";
    } else {
      StringRef first = StringRef(errors).split('\n').first;
      outs() << "error " << words[1] << ": "
             << (first.empty() ? StringRef("compilation failed") : first)
             << "\n";
      status = 1;
    }
    outs().flush();
  }
  return status;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "effc: compiles an ONNX training graph into a .effx training step\n\n"
      "  effc model.onnx -o model.effx --optimizer adamw --lr 3e-4\n"
      "  effrun model.effx --data data.npz --steps 100\n\n"
      "  effc model.onnx -o model.effx --mode forward   (inference: every\n"
      "  graph output in the manifest's \"outputs\"; run it with\n"
      "  effrt_session_forward / effrt_session_get_output)\n");

  if (!configFile.empty())
    if (Error error = effc::applyTrainConfig(configFile, category, inputFile))
      die(toString(std::move(error)));

  checkSupportedOptions();
  if (printPipeline) {
    outs() << (mode == "forward" ? "forward" : "training")
           << ": builtin.module("
           << stepPipeline(StringRef(remat).starts_with("budget:") ? StringRef("budget")
                                                                   : StringRef(remat))
           << ")\n"
           << "lowering: builtin.module(" << effopt::cpuLoweringPipeline()
           << ")\n";
    return 0;
  }
  if (!batch.empty()) {
    if (!inputFile.empty() || !outputFile.empty() || !emit.empty() ||
        constantInputs.getNumOccurrences())
      die("--batch takes the models, outputs and --constant-input bindings "
          "from its file only");
  } else {
    if (inputFile.empty())
      die("no input model (usage: effc MODEL.onnx -o OUT.effx)");
    if (outputFile.empty() && emit.empty())
      die("no output file (-o OUT.effx)");
  }

  DialectRegistry registry;
  effopt::registerCompilerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::registerAllPasses();
  effopt::registerEffoptPasses();
  effopt::registerEffoptConversionPasses();
  if (!batch.empty())
    return compileBatch(context, batch);
  effopt::OneLineDiagnosticHandler diagnostics(&context);
  return failed(compileModel(context, inputFile, outputFile, constantInputs))
             ? 1
             : 0;
}
