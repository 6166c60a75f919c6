//===- TrainStep.h - the training pipeline, typed ---------------*- C++ -*-===//
//
// Everything effc does between importing a model and serializing its code is
// one pass pipeline, built in C++ from TrainStepOptions:
//
//   step        eff-autocast, eff-autodiff, eff-remat, eff-grad-accum,
//               eff-loss-scaling, eff-optimizer, eff-step-abi,
//               eff-schedule-memory            (or the forward function)
//   lowering    eff -> linalg (the target's policy), fusion, bufferization,
//               library calls, the step entry, eff-memory-plan
//   codegen     the target backend's passes (CPU: loops, OpenMP, LLVM)
//
// The same pipeline is registered for effopt-opt as
// --effopt-train-step="optimizer=adamw lr=3e-4 remat=selective ...", so
// `effc --print-pipeline` prints what effopt-opt replays to the same IR.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DRIVER_TRAINSTEP_H
#define EFFOPT_DRIVER_TRAINSTEP_H

#include "effopt/Support/ExactDouble.h"
#include "effopt/Target/Cpu/CpuBackend.h"
#include "effopt/Target/TargetBackend.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/Error.h"

namespace effopt {

/// What the compiled function is.
enum class StepMode { Train, Forward };
enum class OptimizerKind { Sgd, Adam, AdamW, Adam8bit, AdamW8bit, Adafactor };
enum class LrSchedule { Constant, LinearWarmup, Cosine };
enum class RematPolicy { None, Selective, Full, Sqrt, Budget };
enum class Precision { FP32, BF16, FP16 };
/// How frozen GEMM weights are stored (eff-quantize-frozen).
enum class FrozenStorage { None, NF4 };
/// Auto: dynamic for fp16, none otherwise.
enum class LossScaleMode { Auto, Dynamic, Static, None };
/// Where the pipeline ends.
enum class PipelineStage {
  /// The eff-level step, laid out (eff-step-abi, eff-schedule-memory).
  Step,
  /// Lowered, bufferized, one arena (eff-memory-plan): the planned bytes.
  MemoryPlan,
  /// The target's code generation done: what its serializer reads.
  Codegen
};

/// The options of a training step (or forward function), with effc's flag
/// names and PyTorch's semantics (docs/UserGuide.md).
struct TrainStepOptions : public mlir::PassPipelineOptions<TrainStepOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("Target backend (effc --target)"),
                             llvm::cl::init(std::string(kCpuTargetName))};
  Option<StepMode> mode{
      *this, "mode", llvm::cl::desc("train: one training step; forward: the "
                                    "forward function only (inference)"),
      llvm::cl::init(StepMode::Train),
      llvm::cl::values(clEnumValN(StepMode::Train, "train", "training step"),
                       clEnumValN(StepMode::Forward, "forward",
                                  "forward function"))};
  Option<PipelineStage> until{
      *this, "until", llvm::cl::desc("Where the pipeline stops"),
      llvm::cl::init(PipelineStage::Codegen),
      llvm::cl::values(
          clEnumValN(PipelineStage::Step, "step", "the laid-out eff step"),
          clEnumValN(PipelineStage::MemoryPlan, "memory-plan",
                     "lowered to one planned arena"),
          clEnumValN(PipelineStage::Codegen, "codegen",
                     "the target's code generation"))};

  // The optimizer (eff-optimizer).
  Option<OptimizerKind> optimizer{
      *this, "optimizer",
      llvm::cl::desc("sgd, adam, adamw, adam8bit, adamw8bit or adafactor"),
      llvm::cl::init(OptimizerKind::AdamW),
      llvm::cl::values(clEnumValN(OptimizerKind::Sgd, "sgd", "torch.optim.SGD"),
                       clEnumValN(OptimizerKind::Adam, "adam", "torch.optim.Adam"),
                       clEnumValN(OptimizerKind::AdamW, "adamw",
                                  "torch.optim.AdamW"),
                       clEnumValN(OptimizerKind::Adam8bit, "adam8bit",
                                  "Adam with block-wise 8-bit moments"),
                       clEnumValN(OptimizerKind::AdamW8bit, "adamw8bit",
                                  "AdamW with block-wise 8-bit moments "
                                  "(bitsandbytes' AdamW8bit)"),
                       clEnumValN(OptimizerKind::Adafactor, "adafactor",
                                  "torch.optim.Adafactor"))};
  Option<ExactDouble> lr{*this, "lr", llvm::cl::desc("Peak learning rate"),
                         llvm::cl::init(1e-3)};
  Option<ExactDouble> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay; negative: the optimizer's default (0.01 "
                     "for adamw and adamw8bit, 0 otherwise)"),
      llvm::cl::init(-1.0)};
  Option<ExactDouble> momentum{*this, "momentum",
                               llvm::cl::desc("SGD momentum"),
                               llvm::cl::init(0.0)};
  Option<ExactDouble> dampening{*this, "dampening",
                                llvm::cl::desc("SGD dampening"),
                                llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov",
                        llvm::cl::desc("SGD Nesterov momentum"),
                        llvm::cl::init(false)};
  Option<ExactDouble> beta1{*this, "beta1", llvm::cl::desc("Adam beta1"),
                            llvm::cl::init(0.9)};
  Option<ExactDouble> beta2{*this, "beta2", llvm::cl::desc("Adam beta2"),
                            llvm::cl::init(0.999)};
  Option<ExactDouble> eps{*this, "eps", llvm::cl::desc("Adam epsilon"),
                          llvm::cl::init(1e-8)};
  Option<bool> amsgrad{*this, "amsgrad", llvm::cl::desc("Adam AMSGrad"),
                       llvm::cl::init(false)};
  Option<ExactDouble> beta2Decay{
      *this, "beta2-decay",
      llvm::cl::desc("Adafactor beta2 decay (torch's beta2_decay)"),
      llvm::cl::init(-0.8)};
  Option<ExactDouble> eps1{
      *this, "eps1",
      llvm::cl::desc("Adafactor epsilon1 (negative: the parameter type's "
                     "machine epsilon, torch's None)"),
      llvm::cl::init(-1.0)};
  Option<ExactDouble> eps2{*this, "eps2",
                           llvm::cl::desc("Adafactor epsilon2"),
                           llvm::cl::init(1e-3)};
  Option<ExactDouble> clipThreshold{
      *this, "clip-threshold",
      llvm::cl::desc("Adafactor update clipping threshold (torch's d)"),
      llvm::cl::init(1.0)};
  Option<LrSchedule> schedule{
      *this, "schedule", llvm::cl::desc("constant, linear_warmup or cosine"),
      llvm::cl::init(LrSchedule::Constant),
      llvm::cl::values(
          clEnumValN(LrSchedule::Constant, "constant", "constant"),
          clEnumValN(LrSchedule::LinearWarmup, "linear_warmup",
                     "linear warmup"),
          clEnumValN(LrSchedule::Cosine, "cosine", "cosine with warmup"))};
  Option<int64_t> warmupSteps{*this, "warmup-steps",
                              llvm::cl::desc("Linear warmup steps"),
                              llvm::cl::init(0)};
  Option<int64_t> totalSteps{*this, "total-steps",
                             llvm::cl::desc("Steps of the cosine schedule"),
                             llvm::cl::init(0)};
  Option<ExactDouble> minLr{*this, "min-lr",
                            llvm::cl::desc("Final learning rate of cosine"),
                            llvm::cl::init(0.0)};
  Option<ExactDouble> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("Clip the global gradient norm (0: off)"),
      llvm::cl::init(0.0)};
  Option<std::string> noWeightDecay{
      *this, "no-weight-decay",
      llvm::cl::desc("Regex of parameters without weight decay"),
      llvm::cl::init("")};

  // LoRA (eff-lora): effc's --lora rank=R,alpha=A,dropout=P,targets=REGEX.
  Option<bool> lora{*this, "lora",
                    llvm::cl::desc("Freeze the model and train low-rank "
                                   "adapters beside its GEMMs (eff-lora)"),
                    llvm::cl::init(false)};
  Option<int64_t> loraRank{*this, "lora-rank",
                           llvm::cl::desc("LoRA rank r (peft's default 8)"),
                           llvm::cl::init(8)};
  Option<ExactDouble> loraAlpha{
      *this, "lora-alpha",
      llvm::cl::desc("LoRA alpha: adapters are scaled by alpha/rank (peft's "
                     "default 8)"),
      llvm::cl::init(8.0)};
  Option<ExactDouble> loraDropout{
      *this, "lora-dropout",
      llvm::cl::desc("Dropout on the adapters' input (default 0)"),
      llvm::cl::init(0.0)};
  Option<std::string> loraTargets{
      *this, "lora-targets",
      llvm::cl::desc("Regex of the GEMM weights to adapt (default: all)"),
      llvm::cl::init("")};
  Option<int64_t> loraSeed{
      *this, "lora-seed",
      llvm::cl::desc("Seed of the adapters' initial A and dropout masks"),
      llvm::cl::init(0)};

  // Memory (eff-remat, eff-grad-accum, eff-schedule-memory).
  Option<RematPolicy> remat{
      *this, "remat", llvm::cl::desc("Rematerialization policy"),
      llvm::cl::init(RematPolicy::None),
      llvm::cl::values(
          clEnumValN(RematPolicy::None, "none", "keep every activation"),
          clEnumValN(RematPolicy::Selective, "selective",
                     "recompute cheap activations"),
          clEnumValN(RematPolicy::Full, "full", "keep block inputs"),
          clEnumValN(RematPolicy::Sqrt, "sqrt", "sqrt(n) segments"),
          clEnumValN(RematPolicy::Budget, "budget",
                     "free remat-free-bytes with the fewest FLOPs"))};
  Option<int64_t> rematFreeBytes{
      *this, "remat-free-bytes",
      llvm::cl::desc("remat=budget: saved bytes to free"), llvm::cl::init(0)};
  Option<std::string> rematBoundary{
      *this, "remat-boundary",
      llvm::cl::desc("remat=full: a block starts at each op whose ONNX node "
                     "name matches"),
      llvm::cl::init("")};
  Option<int64_t> accum{*this, "accum",
                        llvm::cl::desc("Micro-batches per optimizer step"),
                        llvm::cl::init(1)};
  // Frozen weights (eff-quantize-frozen).
  Option<FrozenStorage> quantizeFrozen{
      *this, "quantize-frozen",
      llvm::cl::desc("Store frozen GEMM weights as: none or nf4 (4-bit "
                     "NormalFloat, double-quantized block scales)"),
      llvm::cl::init(FrozenStorage::None),
      llvm::cl::values(
          clEnumValN(FrozenStorage::None, "none", "as they are"),
          clEnumValN(FrozenStorage::NF4, "nf4", "bitsandbytes NF4"))};
  Option<std::string> quantizeFrozenNames{
      *this, "quantize-frozen-names",
      llvm::cl::desc("Regex: quantize exactly the frozen parameters it "
                     "matches (an error for one that cannot be); empty: "
                     "every frozen parameter that can be"),
      llvm::cl::init("")};
  // Data parallel (eff-zero).
  Option<int64_t> zero{*this, "zero",
                       llvm::cl::desc("ZeRO stage (0: plain data parallel; 1: sharded "
                                      "optimizer state; 2: and gradients; "
                                      "3: and parameters)"),
                       llvm::cl::init(0)};
  Option<int64_t> worldSize{
      *this, "world-size",
      llvm::cl::desc("Ranks of a data-parallel run (1: one process)"),
      llvm::cl::init(1)};
  Option<bool> zeroKeepGathered{
      *this, "zero-keep-gathered",
      llvm::cl::desc("ZeRO-3: keep each gathered parameter from the forward "
                     "to the backward instead of gathering it again"),
      llvm::cl::init(false)};
  Option<bool> zeroOneRankCollectives{
      *this, "zero-one-rank-collectives",
      llvm::cl::desc("At world-size 1, keep the step's collectives (sums "
                     "and gathers over one rank; eff-zero "
                     "one-rank-collectives): to check a collective engine "
                     "on one GPU"),
      llvm::cl::init(false)};
  Option<int64_t> zeroBucketBytes{
      *this, "zero-bucket-bytes",
      llvm::cl::desc("Largest bucket of gradients summed by one all-reduce "
                     "(eff-zero bucket-bytes)"),
      llvm::cl::init(26214400)};
  Option<int64_t> zeroMinBuckets{
      *this, "zero-min-buckets",
      llvm::cl::desc("Cut the summed gradients into at least this many "
                     "buckets (eff-zero min-buckets)"),
      llvm::cl::init(8)};
  Option<bool> zeroOverlap{
      *this, "zero-overlap",
      llvm::cl::desc("Split each collective into a start and a wait so that "
                     "it moves while the step computes "
                     "(eff-overlap-collectives); false: blocking collectives"),
      llvm::cl::init(true)};
  Option<int64_t> zeroPrefetch{
      *this, "zero-prefetch",
      llvm::cl::desc("ZeRO-3: parameters gathered ahead of their use"),
      llvm::cl::init(1)};
  // Optimizer-state offload (eff-offload-optimizer).
  Option<std::string> offload{
      *this, "offload",
      llvm::cl::desc("none, or optimizer: keep the optimizer's state in host "
                     "memory (a host region apart from the device's) and "
                     "update it there"),
      llvm::cl::init("none")};
  Option<bool> offloadOverlap{
      *this, "offload-overlap",
      llvm::cl::desc("With offload=optimizer (cpu): run the ops on host "
                     "state on a runtime worker thread, overlapped with the "
                     "rest of the step (eff-host-tasks); their inputs stay "
                     "live until they are waited for"),
      llvm::cl::init(false)};
  Option<bool> offloadHoist{
      *this, "offload-hoist",
      llvm::cl::desc("With offload-overlap: start each host task where what "
                     "it reads is complete (eff-host-task-lifetimes hoist; "
                     "always on for a GPU target)"),
      llvm::cl::init(false)};
  Option<bool> foldBiasIntoProducts{
      *this, "fold-bias-into-products",
      llvm::cl::desc("Run eff-gpu-fold-bias-into-products on any target (the "
                     "cuda pipeline always does): a developer check of the "
                     "rewrite on the CPU, where the GEMM adds into the "
                     "broadcast bias"),
      llvm::cl::init(false)};
  Option<int64_t> lossChunks{
      *this, "loss-chunks",
      llvm::cl::desc("Compute the classifier product and cross-entropy, "
                     "forward and backward, in this many chunks of rows "
                     "(eff-chunk-cross-entropy; 0 chooses from the shapes, "
                     "1 is off)"),
      llvm::cl::init(0)};
  Option<bool> scheduleMemory{
      *this, "schedule-memory",
      llvm::cl::desc("Reorder ops for a lower peak (eff-schedule-memory)"),
      llvm::cl::init(true)};

  // Precision (eff-autocast, eff-loss-scaling).
  Option<Precision> precision{
      *this, "precision", llvm::cl::desc("fp32, bf16 or fp16"),
      llvm::cl::init(Precision::FP32),
      llvm::cl::values(clEnumValN(Precision::FP32, "fp32", "fp32"),
                       clEnumValN(Precision::BF16, "bf16", "bf16 autocast"),
                       clEnumValN(Precision::FP16, "fp16", "fp16 autocast"))};
  Option<LossScaleMode> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("auto (dynamic for fp16), dynamic, static or none"),
      llvm::cl::init(LossScaleMode::Auto),
      llvm::cl::values(
          clEnumValN(LossScaleMode::Auto, "auto", "dynamic for fp16"),
          clEnumValN(LossScaleMode::Dynamic, "dynamic", "GradScaler"),
          clEnumValN(LossScaleMode::Static, "static", "a constant scale"),
          clEnumValN(LossScaleMode::None, "none", "no scaling"))};
  Option<ExactDouble> lossScaleInit{
      *this, "loss-scale-init",
      llvm::cl::desc("Initial (or static) loss scale"),
      llvm::cl::init(65536.0)};
  Option<int64_t> lossScaleGrowthInterval{
      *this, "loss-scale-growth-interval",
      llvm::cl::desc("Finite steps in a row before the scale doubles"),
      llvm::cl::init(2000)};
  Option<int64_t> lossScaleHysteresis{
      *this, "loss-scale-hysteresis",
      llvm::cl::desc("Overflows tolerated before the scale halves"),
      llvm::cl::init(1)};
  Option<ExactDouble> lossScaleMin{
      *this, "loss-scale-min",
      llvm::cl::desc("Smallest loss scale (0: none)"), llvm::cl::init(0.0)};

  // The lowering.
  Option<bool> attachMemoryReport{
      *this, "attach-memory-report",
      llvm::cl::desc("eff-memory-plan attaches the memory report"),
      llvm::cl::init(false)};
  Option<std::string> f32Accumulator{
      *this, "f32-accumulator",
      llvm::cl::desc("Override the target's type of f32 sums (f64, f32)"),
      llvm::cl::init("")};
  Option<std::string> lowPrecisionProducts{
      *this, "low-precision-products",
      llvm::cl::desc("Override the target's f16/bf16 products (widen, "
                     "native)"),
      llvm::cl::init("")};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Recognise attention chains as eff.attention "
                     "(eff-fuse-attention): tiled, no Tq x Tk buffer; only "
                     "on targets with an attention kernel"),
      llvm::cl::init(true)};
  Option<std::string> convolution{
      *this, "convolution",
      llvm::cl::desc("Override the target's convolutions (im2col, direct, library)"),
      llvm::cl::init("")};
  Option<int64_t> maxThreads{
      *this, "max-threads",
      llvm::cl::desc("The most threads the step runs on (0: this machine's "
                     "hardware threads): the CPU attention kernels plan one "
                     "workspace slot per thread"),
      llvm::cl::init(0)};

  /// The loss scaling the step does (Auto resolved by the precision).
  LossScaleMode effectiveLossScale() const;
  /// The threads the plan has room for (0 resolved to this machine's).
  int64_t effectiveThreads() const;
  /// The weight decay the optimizer uses (negative resolved).
  double effectiveWeightDecay() const;
};

/// The option values' names, as effc's flags and the pipeline spell them.
llvm::StringRef stringifyOptimizer(OptimizerKind kind);
llvm::StringRef stringifySchedule(LrSchedule schedule);
llvm::StringRef stringifyRemat(RematPolicy policy);
llvm::StringRef stringifyPrecision(Precision precision);
llvm::StringRef stringifyLossScale(LossScaleMode mode);
llvm::StringRef stringifyFrozenStorage(FrozenStorage storage);

/// Checks every option against the others; a one-line message naming the
/// option (as effc's flag) and what is wrong.
llvm::Error verifyTrainStepOptions(const TrainStepOptions &options);

/// Appends the whole pipeline to `pm` (anchored on builtin.module), up to
/// `options.until`. Fails like verifyTrainStepOptions, or for an unknown
/// target.
llvm::Error buildTrainStepPipeline(mlir::OpPassManager &pm,
                                   const TrainStepOptions &options);

/// The stages on their own (their concatenation is
/// buildTrainStepPipeline's): the eff-level step; eff -> the memory plan
/// for `backend`. The codegen stage is backend.buildCodegenPipeline.
void buildStepPipeline(mlir::OpPassManager &pm, const TrainStepOptions &options,
                       const TargetBackend &backend);
void buildLoweringPipeline(mlir::OpPassManager &pm,
                           const TrainStepOptions &options,
                           const TargetBackend &backend);

/// Runs the passes `build` appends (a stage above) on `module`.
mlir::LogicalResult
runPipelineStage(mlir::ModuleOp module,
                 llvm::function_ref<void(mlir::OpPassManager &)> build);

/// The arena bytes eff-memory-plan planned for `module` (after the
/// lowering stage).
int64_t plannedArenaBytes(mlir::ModuleOp module);

/// The pipeline as text that `effopt-opt --pass-pipeline=...` runs.
std::string printTrainStepPipeline(const TrainStepOptions &options);

/// The options as text for `effopt-opt --effopt-train-step="..."`.
std::string printTrainStepOptions(const TrainStepOptions &options);

/// Registers `effopt-train-step` (all of it, TrainStepOptions) and, for
/// each registered target, `effopt-<target>-lowering` (after eff-step-abi:
/// the lowering and the target's code generation, as effc runs them).
void registerTrainStepPipelines();

} // namespace effopt

#endif // EFFOPT_DRIVER_TRAINSTEP_H
