//===- effc.cpp - the effopt compiler driver ------------------------------===//
//
// effc MODEL.onnx -o OUT.effx [options | --config train.toml]
//
// Maps flags (or a TOML config of the same keys) to effopt::CompileOptions,
// calls the compiler library (effopt/Driver/Compiler.h: import, the training
// pipeline of TrainStepOptions, the target backend's code) and writes the
// .effx, the memory report or the IR asked for. Every error is one line,
// "effc: error: ...", and exit status 1.
//
// --mode forward compiles the imported forward function instead (no
// autodiff, no optimizer): initializers are read-only state, and every graph
// output is written to io, for inference and for checking ops against ONNX's
// backend node tests.
//
// Without -o, --report (or --memory-budget) only plans: the pipeline stops
// at the memory plan and generates no code. --shapes-only then reads just
// the weights' shapes, so a model can be planned without its data files.
//
//===----------------------------------------------------------------------===//

#include "effopt/Driver/Compiler.h"
#include "effopt/Driver/CompilerFlags.h"
#include "effopt/Driver/MemoryBudget.h"
#include "effopt/Driver/MemoryReportOutput.h"
#include "effopt/Driver/Registration.h"
#include "effopt/Driver/TrainStep.h"
#include "effopt/Support/ToolDiagnostics.h"
#include "effopt/Target/Cpu/CpuBackend.h"
#include "effopt/Target/Cuda/CudaBackend.h"

#include "TrainConfig.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

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
static cl::opt<std::string> lora(
    "lora",
    cl::desc("LoRA fine-tuning (eff-lora): freeze the model and train "
             "low-rank adapters beside the GEMM weights whose name matches "
             "targets (default: all; targets last, it takes the rest). "
             "Defaults are peft's: rank=8,alpha=8,dropout=0 "
             "(\"--lora on\": all defaults; docs/LoRA.md)"),
    cl::value_desc("rank=R,alpha=A,dropout=P,seed=S,targets=REGEX"),
    cl::cat(category));
static cl::opt<bool> qlora(
    "qlora",
    cl::desc("QLoRA: with --lora, store the frozen base weights as NF4 "
             "(the same as --quantize-frozen nf4; docs/Quantization.md)"),
    cl::cat(category));
static cl::opt<std::string> quantizeFrozen(
    "quantize-frozen",
    cl::desc("Store frozen weights that only matrix products read as: none "
             "(the default) or nf4 (4-bit NormalFloat with double-quantized "
             "block scales, bitsandbytes' layout; dequantized tile by tile "
             "inside the products; docs/Quantization.md)"),
    cl::value_desc("none|nf4"), cl::init("none"), cl::cat(category));
static cl::opt<std::string> quantizeFrozenNames(
    "quantize-frozen-names",
    cl::desc("With --quantize-frozen: quantize exactly the frozen parameters "
             "whose name matches (an error naming any that cannot be), "
             "instead of every frozen parameter that can be"),
    cl::value_desc("regex"), cl::init(""), cl::cat(category));
static cl::opt<std::string> maskLike(
    "mask-like",
    cl::desc("Trainable initializers used only as masks (added to a "
             "softmax's input with values 0 and -inf, compared, cast to "
             "integers): warn (one line each, the default), error, or "
             "freeze them"),
    cl::value_desc("warn|error|freeze"), cl::init("warn"), cl::cat(category));

static cl::opt<std::string> optimizer("optimizer",
                                      cl::desc("sgd, adam, adamw, adam8bit, "
                                               "adamw8bit or adafactor"),
                                      cl::init("adamw"), cl::cat(category));
static cl::opt<double> lr("lr",
                          cl::desc("Peak learning rate (default 1e-3; 1e-2 "
                                   "for adafactor, as torch)"),
                          cl::init(1e-3), cl::cat(category));
static cl::opt<double> weightDecay(
    "weight-decay",
    cl::desc("Weight decay (default 0.01 for adamw and adamw8bit, 0 "
             "otherwise)"),
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
static cl::opt<double> beta2Decay(
    "beta2-decay", cl::init(-0.8), cl::cat(category),
    cl::desc("Adafactor: weight t^beta2-decay of the squared gradient"));
static cl::opt<double> eps1(
    "eps1", cl::init(-1.0), cl::cat(category),
    cl::desc("Adafactor epsilon1 (default: the parameter type's machine "
             "epsilon)"));
static cl::opt<double> eps2("eps2", cl::init(1e-3), cl::cat(category),
                            cl::desc("Adafactor epsilon2"));
static cl::opt<double> clipThreshold(
    "clip-threshold", cl::init(1.0), cl::cat(category),
    cl::desc("Adafactor update clipping threshold (torch's d)"));
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

static cl::opt<std::string> targetName(
    "target", cl::desc("Target backend (effc --help lists them)"),
    cl::init(effopt::kCpuTargetName.str()), cl::cat(category));
static cl::opt<std::string> cpuName(
    "arch",
    cl::desc("Processor to generate code for: a CPU name for --target cpu "
             "(default: this machine's)"),
    cl::value_desc("name"), cl::init("native"), cl::cat(category));
static cl::alias cpuAlias("cpu", cl::desc("Alias for --arch"),
                          cl::aliasopt(cpuName), cl::cat(category));
static cl::opt<bool> allowTf32(
    "allow-tf32",
    cl::desc("--target cuda: f32 GEMMs may round operands to TF32 on tensor "
             "cores (PyTorch's torch.backends.cuda.matmul.allow_tf32; off by "
             "default, like PyTorch's)"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> emulatedOrder(
    "emulated-order",
    cl::desc("--target cuda-emulated: the order each kernel's blocks and "
             "threads run in, ascending (default) or descending ids (a "
             "kernel correct on a GPU gives the same values both ways; a "
             "race between threads shows in one of them)"),
    cl::value_desc("ascending|descending"), cl::init("ascending"),
    cl::cat(category));
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
static cl::opt<std::string> offload(
    "offload",
    cl::desc("none, or optimizer: keep the optimizer's state in host memory, "
             "a region apart from the device's, and update it there "
             "(eff-offload-optimizer; the report shows device and host "
             "bytes, --memory-budget counts the device's)"),
    cl::init("none"), cl::cat(category));
static cl::opt<bool> offloadOverlap(
    "offload-overlap",
    cl::desc("With --offload optimizer: run the update on a host worker "
             "thread, overlapped with the rest of the step (eff-host-tasks); "
             "the buffers it reads stay live until it is waited for"),
    cl::init(false), cl::cat(category));
// The GPU's schedule of the update on the CPU (each task where its
// gradient completes), to test it there: hidden, for developers.
static cl::opt<bool> offloadHoist(
    "offload-hoist",
    cl::desc("With --offload-overlap: start each host task where what it "
             "reads is complete, as on a GPU"),
    cl::init(false), cl::Hidden, cl::cat(category));
static cl::opt<int64_t> lossChunks(
    "loss-chunks",
    cl::desc("Compute the LM head's product and the cross-entropy, forward "
             "and backward, a chunk of rows at a time so that one chunk's "
             "logits are live, not all of them (0: chosen from the shapes, "
             "1: off, N: N chunks)"),
    cl::init(0), cl::cat(category));
// The cuda target's bias fold, to check its rewrite by training on the CPU:
// hidden, for developers.
static cl::opt<bool> foldBiasIntoProducts(
    "fold-bias-into-products",
    cl::desc("Fold per-column biases into their GEMMs' init on any target "
             "(as cuda does)"),
    cl::init(false), cl::Hidden, cl::cat(category));
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
static cl::opt<bool> shapesOnly(
    "shapes-only",
    cl::desc("Read only the weights' shapes: their data (and external data "
             "files) may be absent. Plans memory for --report and "
             "--memory-budget; writes no .effx"),
    cl::cat(category));
static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("Fit the step into BYTES (suffixes K, M, G = KiB, MiB, GiB): "
             "keeping the global batch, choose the fewest micro-batches "
             "(--accum; needs a batch dimension --shape can bind) and then "
             "the remat policy with the least recomputation whose planned "
             "memory fits, or fail saying by how much it cannot; with "
             "--world-size N, per rank, and without --zero also the lowest "
             "ZeRO stage that fits"),
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
static cl::opt<int64_t> zero(
    "zero",
    cl::desc("ZeRO stage of a data-parallel step: 0 sums the gradients over "
             "the ranks; 1 shards the optimizer state, 2 also the gradients, "
             "3 also the parameters (docs/Distributed.md)"),
    cl::value_desc("K"), cl::init(0), cl::cat(category));
static cl::opt<bool> zeroKeepGathered(
    "zero-keep-gathered",
    cl::desc("ZeRO-3: gather each parameter once and keep it from the "
             "forward to the backward (default: gathered again for the "
             "backward, freed after each use)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> zeroOneRankCollectives(
    "zero-one-rank-collectives",
    cl::desc("At --world-size 1, keep the step's collectives (sums and "
             "gathers over one rank) instead of dropping them: the same "
             "step as N ranks run, to check the collective engine (NCCL on "
             "--target cuda) on one GPU"),
    cl::init(false), cl::cat(category));
static cl::opt<int64_t> zeroBucketBytes(
    "zero-bucket-bytes",
    cl::desc("Largest bucket of gradients one all-reduce sums (default 25 "
             "MiB, as DDP); smaller buckets start earlier in the backward"),
    cl::value_desc("BYTES"), cl::init(26214400), cl::cat(category));
static cl::opt<int64_t> zeroMinBuckets(
    "zero-min-buckets",
    cl::desc("Cut the summed gradients into at least this many buckets "
             "(default 8): each at most 1/K of their bytes and at most "
             "--zero-bucket-bytes, so that a model smaller than one bucket "
             "still sums its gradients while the backward runs"),
    cl::value_desc("K"), cl::init(8), cl::cat(category));
static cl::opt<bool> zeroOverlap(
    "zero-overlap",
    cl::desc("Run each collective of a data-parallel step while the step "
             "computes (a start and a wait; eff-overlap-collectives). On by "
             "default; =false blocks at each collective (same values)"),
    cl::init(true), cl::cat(category));
static cl::opt<int64_t> zeroPrefetch(
    "zero-prefetch",
    cl::desc("ZeRO-3: gather parameters this many gathers ahead of their "
             "use (default 1; 0: each where it is used)"),
    cl::value_desc("K"), cl::init(1), cl::cat(category));
static cl::opt<int64_t> worldSize(
    "world-size",
    cl::desc("Ranks of a data-parallel run (mpirun -np N effrun, or effrun "
             "--nproc N); global batch N*B"),
    cl::value_desc("N"), cl::init(1), cl::cat(category));
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
// The target's numerics, overridden (to try one target's choices on
// another, e.g. a GPU's on the CPU): hidden, for developers of targets.
static cl::opt<std::string> f32Accumulator(
    "f32-accumulator", cl::desc("Override the target's f32 sum type (f64, f32)"),
    cl::init(""), cl::Hidden, cl::cat(category));
static cl::opt<std::string> lowPrecisionProducts(
    "low-precision-products",
    cl::desc("Override the target's f16/bf16 products (widen, native)"),
    cl::init(""), cl::Hidden, cl::cat(category));
static cl::opt<bool> fuseAttention(
    "fuse-attention",
    cl::desc("Recognise attention (MatMul-Softmax-MatMul chains) as one "
             "tiled op that stores no Tq x Tk scores (default true)"),
    cl::init(true), cl::cat(category));
static cl::opt<int64_t> maxThreads(
    "max-threads",
    cl::desc("The most threads the step runs on (effrun --threads; default "
             "0: this machine's hardware threads): the CPU attention "
             "kernels plan one workspace slot per thread, and use no more"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<std::string> convolution(
    "convolution",
    cl::desc("Override the target's convolutions: im2col (columns + GEMM), "
             "direct (loops), or the target's library (cpu: library, "
             "oneDNN; cuda: cudnn, the default there)"),
    cl::value_desc("kind"), cl::init(""), cl::cat(category));

namespace {

[[noreturn]] void die(const Twine &message) {
  errs() << "effc: error: " << message << "\n";
  exit(1);
}

/// The enum value `text` names among `names`, or an error naming the flag.
template <typename Enum>
Enum parseChoice(cl::opt<std::string> &flag,
                 std::initializer_list<std::pair<StringRef, Enum>> names,
                 StringRef expected) {
  for (auto [name, value] : names)
    if (flag.getValue() == name)
      return value;
  die("--" + flag.ArgStr + " must be " + expected + ", got '" +
      flag.getValue() + "'");
}

void checkFlags() {
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
             &beta1, &beta2, &eps, &amsgrad, &beta2Decay, &eps1, &eps2,
             &clipThreshold, &schedule, &warmupSteps,
             &totalSteps, &minLr, &clipGradNorm, &noWeightDecay, &freeze, &maskLike,
             &quantizeFrozen, &quantizeFrozenNames, &qlora,
             &remat, &rematBoundary, &memoryBudget, &accum, &zero, &zeroKeepGathered,
             &zeroOneRankCollectives,
             &zeroBucketBytes, &zeroMinBuckets, &zeroOverlap, &zeroPrefetch, &worldSize,
             &precision, &lossScale, &lossScaleInit, &lossScaleGrowthInterval,
             &lossScaleHysteresis, &lossScaleMin, &scheduleMemory, &lora,
             &offload, &offloadOverlap, &offloadHoist})
      if (option->getNumOccurrences())
        die("--" + option->ArgStr + " applies to training steps only, not to "
            "--mode forward");
  }
  if (StringRef(remat).starts_with("budget:")) {
    if (!effopt::parseBytes(StringRef(remat).drop_front(strlen("budget:"))))
      die("--remat " + remat + ": the budget is not a byte count (like "
          "budget:3000000, budget:1.5M)");
  }
  if (!memoryBudget.empty()) {
    if (remat.getNumOccurrences())
      die("--memory-budget chooses --remat itself; give only one of them");
    if (accum.getNumOccurrences())
      die("--memory-budget chooses --accum itself; give only one of them");
    if (!effopt::parseBytes(memoryBudget))
      die("--memory-budget: '" + memoryBudget +
          "' is not a byte count (like 3000000, 512K, 1.5M, 2G)");
  }
  if (shapesOnly && !outputFile.empty())
    die("--shapes-only reads no weights, so it cannot write a .effx: leave "
        "out -o " + outputFile + " to plan memory (--report)");
  if (shapesOnly && emit == "llvm")
    die("--shapes-only stops at the memory plan; --emit llvm needs the "
        "weights");
}

/// Whether only the memory plan is asked for (a report or a budget and no
/// output): the pipeline then stops at the memory plan, without the
/// target's code generation (most of the compile time of a large step).
bool planOnly() {
  return outputFile.empty() && emit.empty() && batch.empty() &&
         (report || !reportJson.empty() || !reportSvg.empty() ||
          !memoryBudget.empty());
}

/// The step's options from the flags; a flag's bad value dies naming it.
void fillStepOptions(effopt::TrainStepOptions &step) {
  using namespace effopt;
  step.target = targetName.getValue();
  step.mode = mode == "forward" ? StepMode::Forward : StepMode::Train;
  step.optimizer = parseChoice<OptimizerKind>(
      optimizer,
      {{"sgd", OptimizerKind::Sgd},
       {"adam", OptimizerKind::Adam},
       {"adamw", OptimizerKind::AdamW},
       {"adam8bit", OptimizerKind::Adam8bit},
       {"adamw8bit", OptimizerKind::AdamW8bit},
       {"adafactor", OptimizerKind::Adafactor}},
      "sgd, adam, adamw, adam8bit, adamw8bit or adafactor");
  // torch.optim.Adafactor's default lr is 1e-2 (the paper's cap of the
  // relative step).
  step.lr = step.optimizer == OptimizerKind::Adafactor && !lr.getNumOccurrences()
                ? 1e-2
                : lr.getValue();
  step.weightDecay = weightDecay.getValue();
  step.momentum = momentum.getValue();
  step.dampening = dampening.getValue();
  step.nesterov = nesterov.getValue();
  step.beta1 = beta1.getValue();
  step.beta2 = beta2.getValue();
  step.eps = eps.getValue();
  step.amsgrad = amsgrad.getValue();
  step.beta2Decay = beta2Decay.getValue();
  step.eps1 = eps1.getValue();
  step.eps2 = eps2.getValue();
  step.clipThreshold = clipThreshold.getValue();
  step.schedule = parseChoice<LrSchedule>(
      schedule,
      {{"constant", LrSchedule::Constant},
       {"linear_warmup", LrSchedule::LinearWarmup},
       {"cosine", LrSchedule::Cosine}},
      "constant, linear_warmup or cosine");
  step.warmupSteps = warmupSteps.getValue();
  step.totalSteps = totalSteps.getValue();
  step.minLr = minLr.getValue();
  step.clipGradNorm = clipGradNorm.getValue();
  step.noWeightDecay = noWeightDecay.getValue();
  // budget:BYTES is a search (CompileOptions::rematBudget); before it ran,
  // the step has no saved bytes to free.
  step.remat = StringRef(remat).starts_with("budget:")
                   ? RematPolicy::Budget
                   : parseChoice<RematPolicy>(
                         remat,
                         {{"none", RematPolicy::None},
                          {"selective", RematPolicy::Selective},
                          {"full", RematPolicy::Full},
                          {"sqrt", RematPolicy::Sqrt}},
                         "none, selective, full, sqrt or budget:BYTES");
  step.rematBoundary = rematBoundary.getValue();
  step.quantizeFrozen = parseChoice<FrozenStorage>(
      quantizeFrozen,
      {{"none", FrozenStorage::None}, {"nf4", FrozenStorage::NF4}},
      "none or nf4");
  step.quantizeFrozenNames = quantizeFrozenNames.getValue();
  step.accum = accum.getValue();
  step.zero = zero.getValue();
  step.zeroKeepGathered = zeroKeepGathered.getValue();
  step.zeroOneRankCollectives = zeroOneRankCollectives.getValue();
  step.zeroBucketBytes = zeroBucketBytes.getValue();
  step.zeroMinBuckets = zeroMinBuckets.getValue();
  step.zeroOverlap = zeroOverlap.getValue();
  step.zeroPrefetch = zeroPrefetch.getValue();
  step.worldSize = worldSize.getValue();
  step.scheduleMemory = scheduleMemory.getValue();
  step.offload = offload.getValue();
  step.offloadOverlap = offloadOverlap.getValue();
  step.offloadHoist = offloadHoist.getValue();
  step.foldBiasIntoProducts = foldBiasIntoProducts.getValue();
  if (lossChunks < 0)
    die("--loss-chunks " + std::to_string(lossChunks) +
        ": the chunk count must be 0 (chosen from the shapes), 1 (off) or "
        "more");
  step.lossChunks = lossChunks.getValue();
  step.precision = parseChoice<Precision>(precision,
                                          {{"fp32", Precision::FP32},
                                           {"bf16", Precision::BF16},
                                           {"fp16", Precision::FP16}},
                                          "fp32, bf16 or fp16");
  step.lossScale = lossScale.empty()
                       ? LossScaleMode::Auto
                       : parseChoice<LossScaleMode>(
                             lossScale,
                             {{"dynamic", LossScaleMode::Dynamic},
                              {"static", LossScaleMode::Static},
                              {"none", LossScaleMode::None}},
                             "dynamic, static or none");
  step.lossScaleInit = lossScaleInit.getValue();
  step.lossScaleGrowthInterval = lossScaleGrowthInterval.getValue();
  step.lossScaleHysteresis = lossScaleHysteresis.getValue();
  step.lossScaleMin = lossScaleMin.getValue();
  step.f32Accumulator = f32Accumulator.getValue();
  step.lowPrecisionProducts = lowPrecisionProducts.getValue();
  step.convolution = convolution.getValue();
  step.maxThreads = maxThreads.getValue();
  step.fuseAttention = fuseAttention.getValue();
  // A target without an attention kernel computes attention unfused (the
  // pipeline skips eff-fuse-attention there); asking for it is an error.
  if (const effopt::TargetBackend *backend =
          effopt::lookupTargetBackend(step.target))
    if (!backend->supportsFusedAttention() &&
        fuseAttention.getNumOccurrences() && fuseAttention)
      die("--fuse-attention: target " + step.target +
          " has no fused attention kernel (attention runs as batched GEMMs "
          "and softmax kernels); drop the flag");
  step.attachMemoryReport = report || !reportJson.empty() || !reportSvg.empty();
  if (lora.getNumOccurrences())
    if (Error error = applyLoraSpec(step, lora))
      die(toString(std::move(error)));
  if (qlora) {
    if (!step.lora)
      die("--qlora quantizes the base weights LoRA freezes: give --lora too");
    if (quantizeFrozen.getNumOccurrences() &&
        step.quantizeFrozen != FrozenStorage::NF4)
      die("--qlora stores frozen weights as nf4, but --quantize-frozen is '" +
          quantizeFrozen + "'");
    step.quantizeFrozen = FrozenStorage::NF4;
  }
  if (Error error = verifyTrainStepOptions(step))
    die(toString(std::move(error)));
}

/// Every option of the compilation from the flags (`constants`: the
/// --constant-input bindings of this model).
void fillCompileOptions(effopt::CompileOptions &options,
                        ArrayRef<std::string> constants) {
  // The flags the compiler C ABI also takes by name are parsed by the same
  // code (effopt/Driver/CompilerFlags.h).
  auto apply = [&](StringRef name, StringRef value) {
    if (Error error = effopt::applyCompilerFlag(options, name, value))
      die(toString(std::move(error)));
  };
  for (const std::string &shape : shapes)
    apply("shape", shape);
  for (const std::string &binding : constants) {
    auto [name, file] = StringRef(binding).split('=');
    if (name.empty() || file.empty())
      die("--constant-input expects name=file.pb, got '" + binding + "'");
    options.import.constantInputs[name] = file.str();
  }
  options.import.freezeRegex = freeze;
  if (shapesOnly)
    apply("shapes-only", "true");
  apply("mask-like", maskLike);
  fillStepOptions(options.step);
  if (StringRef(remat).starts_with("budget:"))
    options.rematBudget =
        *effopt::parseBytes(StringRef(remat).drop_front(strlen("budget:")));
  if (!memoryBudget.empty()) {
    options.memoryBudget = *effopt::parseBytes(memoryBudget);
    // --world-size N without --zero (flag or config): the budget chooses it.
    options.chooseZeroStage = !zero.getNumOccurrences();
  }
  options.codegen.arch = cpuName;
  options.codegen.optLevel = optLevel;
  options.codegen.allowTf32 = allowTf32;
  apply("emulated-order", emulatedOrder);
  if (emulatedOrder.getNumOccurrences() &&
      options.step.target != effopt::kCudaEmulatedTargetName)
    die("--emulated-order: only --target cuda-emulated emulates kernels "
        "(the target is " + options.step.target + ")");
}

/// --print-pipeline: the pipeline as effopt-opt replays it, by name and
/// expanded into its stages.
void printReplayablePipeline() {
  effopt::TrainStepOptions step;
  fillStepOptions(step);
  const effopt::TargetBackend &backend =
      *effopt::lookupTargetBackend(step.target);
  auto print = [](const OpPassManager &pm) {
    std::string text;
    raw_string_ostream os(text);
    pm.printAsTextualPipeline(os);
    return text;
  };
  OpPassManager stepStage("builtin.module"), lowering("builtin.module");
  effopt::buildStepPipeline(stepStage, step, backend);
  effopt::buildLoweringPipeline(lowering, step, backend);
  effopt::CodegenOptions codegen;
  codegen.optLevel = optLevel;
  backend.buildCodegenPipeline(lowering, codegen);
  outs() << "effopt-opt: --effopt-train-step=\""
         << effopt::printTrainStepOptions(step) << "\"\n"
         << (mode == "forward" ? "forward" : "training") << ": "
         << print(stepStage) << "\n"
         << "lowering: " << print(lowering) << "\n";
}

/// Compiles one model into `output` (or prints what --emit asks for).
LogicalResult compileOne(MLIRContext &context, StringRef input,
                         StringRef output, ArrayRef<std::string> constants) {
  effopt::CompileOptions options;
  fillCompileOptions(options, constants);
  if (emit == "train-step")
    options.step.until = effopt::PipelineStage::Step;
  else if (planOnly())
    options.step.until = effopt::PipelineStage::MemoryPlan;
  FailureOr<effopt::CompiledStep> step =
      effopt::compileModel(context, input, options, errs());
  if (failed(step))
    return failure();
  if (emit == "train-step") {
    step->module->print(outs());
    outs() << "\n";
    return success();
  }
  effopt::ReportRequest reportRequest{
      report, reportJson, reportSvg,
      sys::path::filename(input).str() +
          (mode == "forward"
               ? std::string(" (forward)")
               : " (train_step, " + precision + ", remat " +
                     (options.rematBudget
                          ? remat.getValue()
                          : effopt::stringifyRemat(options.step.remat).str()) +
                     (options.step.accum > 1
                          ? ", accum " + std::to_string(options.step.accum)
                          : std::string()) +
                     // A data-parallel plan is one rank's.
                     (options.step.worldSize > 1
                          ? ", one of " +
                                std::to_string(options.step.worldSize) +
                                " ranks, zero " +
                                std::to_string(options.step.zero)
                          : std::string()) +
                     ")"),
      /*tablePath=*/""};
  if (reportRequest.any() &&
      failed(effopt::emitMemoryReport(*step->module, step->layout,
                                      reportRequest)))
    return failure();
  auto printTimes = [&] {
    if (!timing)
      return;
    const effopt::CompileTimes &t = step->times;
    errs() << formatv("effc: import {0:f2} s, step {1:f2} s, "
                      "lowering {2:f2} s, codegen {3:f2} s, total {4:f2} s\n",
                      t.import, t.step, t.lowering, t.codegen,
                      t.import + t.step + t.lowering + t.codegen);
  };
  if (options.step.until == effopt::PipelineStage::MemoryPlan) {
    printTimes();
    return success();
  }
  if (emit == "llvm") {
    step->module->print(outs());
    outs() << "\n";
    return success();
  }
  if (failed(effopt::serializeStep(*step, options)) ||
      failed(effopt::writeEffx(output, *step)))
    return failure();
  printTimes();
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
      result = compileOne(context, words[0], words[1], constants);
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

/// Parses the command line; LLVM's several-line complaints (an unknown
/// flag, a suggestion, a usage hint) become one line.
void parseCommandLine(int argc, char **argv) {
  std::string complaints;
  raw_string_ostream os(complaints);
  bool parsed = cl::ParseCommandLineOptions(
      argc, argv,
      "effc: compiles an ONNX training graph into a .effx training step\n\n"
      "  effc model.onnx -o model.effx --optimizer adamw --lr 3e-4\n"
      "  effrun model.effx --data data.npz --steps 100\n\n"
      "  effc model.onnx -o model.effx --mode forward   (inference: every\n"
      "  graph output in the manifest's \"outputs\"; run it with\n"
      "  effrt_session_forward / effrt_session_get_output)\n",
      &os);
  if (parsed)
    return;
  // "effc: Unknown command line argument '--lrr'.  Try: 'effc --help'"
  // "effc: Did you mean '--lr'?"
  SmallVector<StringRef> lines;
  StringRef(complaints).split(lines, '\n', -1, false);
  std::string message;
  for (StringRef line : lines) {
    line = line.trim();
    StringRef tool = sys::path::filename(argv[0]);
    if (line.consume_front(tool) && line.consume_front(":"))
      line = line.trim();
    line = line.split("  Try:").first.split(": See:").first.trim();
    line.consume_back(".");
    line.consume_back("!");
    if (line.empty())
      continue;
    if (message.empty())
      message = line.substr(0, 1).lower() + line.drop_front().str();
    else
      message += "; " + line.substr(0, 1).lower() + line.drop_front().str();
  }
  die(message + " (see effc --help)");
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  effopt::registerAllTargetBackends();
  static std::string targetHelp = [] {
    std::string help = "Target backend:";
    for (const std::string &name : effopt::getRegisteredTargetNames())
      help += " " + name + " (" +
              effopt::lookupTargetBackend(name)->getDescription().str() + ")";
    return help;
  }();
  targetName.setDescription(targetHelp);
  cl::HideUnrelatedOptions(category);
  parseCommandLine(argc, argv);

  if (!configFile.empty())
    if (Error error = effc::applyTrainConfig(configFile, category, inputFile))
      die(toString(std::move(error)));

  checkFlags();
  if (printPipeline) {
    printReplayablePipeline();
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
    if (outputFile.empty() && emit.empty() && !planOnly())
      die("no output file (-o OUT.effx; --report without -o plans memory "
          "only)");
  }

  DialectRegistry registry;
  effopt::registerCompilerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics are one line; the IR of a failing op is effopt-opt's to show.
  context.printOpOnDiagnostic(false);
  if (!batch.empty())
    return compileBatch(context, batch);
  effopt::OneLineDiagnosticHandler diagnostics(&context);
  return failed(compileOne(context, inputFile, outputFile, constantInputs))
             ? 1
             : 0;
}
