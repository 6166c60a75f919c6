//===- TrainStep.cpp - the training pipeline, typed -----------------------===//

#include "effopt/Driver/TrainStep.h"

#include "effopt/Conversion/Passes.h"
#include "effopt/Transforms/Passes.h"
#include "effopt/Transforms/ZeroSharding.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <thread>

using namespace mlir;

namespace effopt {

LossScaleMode TrainStepOptions::effectiveLossScale() const {
  if (lossScale != LossScaleMode::Auto)
    return lossScale;
  // fp16's range underflows small gradients; bf16 has fp32's.
  return precision == Precision::FP16 ? LossScaleMode::Dynamic
                                      : LossScaleMode::None;
}

int64_t TrainStepOptions::effectiveThreads() const {
  if (maxThreads > 0)
    return maxThreads;
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

double TrainStepOptions::effectiveWeightDecay() const {
  if (weightDecay >= 0)
    return weightDecay;
  return optimizer == OptimizerKind::AdamW ||
                 optimizer == OptimizerKind::AdamW8bit
             ? 0.01
             : 0.0;
}

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error verifyTrainStepOptions(const TrainStepOptions &options) {
  if (!lookupTargetBackend(options.target)) {
    std::string known;
    for (const std::string &name : getRegisteredTargetNames())
      known += (known.empty() ? "" : ", ") + name;
    return fail("--target " + options.target + " is not a target effc was "
                "built with (" + known + ")");
  }
  const TargetBackend &backend = *lookupTargetBackend(options.target);
  if (!backend.supportsCollectives() && options.worldSize > 1)
    return fail("--world-size " +
                llvm::Twine(static_cast<int64_t>(options.worldSize)) +
                ": target " + options.target +
                " has no collectives; compile for one rank");
  if (!backend.supportsCollectives() && options.zero != 0)
    return fail("--zero " + llvm::Twine(static_cast<int64_t>(options.zero)) +
                ": target " + options.target +
                " has no collectives; use --zero 0");
  if (!(options.lossScaleInit > 0))
    return fail("--loss-scale-init must be > 0");
  if (options.lossScaleGrowthInterval < 1)
    return fail("--loss-scale-growth-interval must be >= 1");
  if (options.lossScaleHysteresis < 1)
    return fail("--loss-scale-hysteresis must be >= 1");
  if (!(options.lossScaleMin >= 0) ||
      options.lossScaleMin > options.lossScaleInit)
    return fail("--loss-scale-min must be in [0, --loss-scale-init]");
  if (options.lora) {
    if (options.mode == StepMode::Forward)
      return fail("--lora applies to training steps only, not to --mode "
                  "forward");
    if (options.loraRank < 1)
      return fail("--lora: rank must be >= 1, got " +
                  llvm::Twine(static_cast<int64_t>(options.loraRank)));
    if (!(options.loraDropout >= 0 && options.loraDropout < 1))
      return fail("--lora: dropout must be in [0, 1), got " +
                  llvm::formatv("{0}", static_cast<double>(options.loraDropout))
                      .str());
    std::string why;
    if (!options.loraTargets.empty() &&
        !llvm::Regex(options.loraTargets).isValid(why))
      return fail("--lora: targets '" + options.loraTargets +
                  "' is not a valid regex: " + why);
  }
  if (!options.rematBoundary.empty() && options.remat != RematPolicy::Full)
    return fail("--remat-boundary applies to --remat full only");
  if (options.rematFreeBytes < 0)
    return fail("remat-free-bytes must be >= 0");
  if (options.accum < 1)
    return fail("--accum must be at least 1 (micro-batches per optimizer "
                "step), got " +
                llvm::Twine(static_cast<int64_t>(options.accum)));
  if (options.worldSize < 1)
    return fail("--world-size must be at least 1 (ranks), got " +
                llvm::Twine(static_cast<int64_t>(options.worldSize)));
  if (!options.quantizeFrozenNames.empty() &&
      options.quantizeFrozen == FrozenStorage::None)
    return fail("--quantize-frozen-names needs --quantize-frozen nf4");
  if (options.zero < 0 || options.zero > 3)
    return fail("--zero must be 0, 1, 2 or 3, got " +
                llvm::Twine(static_cast<int64_t>(options.zero)));
  if (options.zeroKeepGathered && options.zero != 3)
    return fail("--zero-keep-gathered applies to --zero 3 (sharded "
                "parameters) only");
  if (options.zeroOneRankCollectives && options.worldSize != 1)
    return fail("--zero-one-rank-collectives applies to --world-size 1 "
                "only (more ranks communicate anyway)");
  if (options.zeroMinBuckets < 1)
    return fail("--zero-min-buckets must be at least 1, got " +
                llvm::Twine(static_cast<int64_t>(options.zeroMinBuckets)));
  if (options.zeroBucketBytes < 0)
    return fail("--zero-bucket-bytes must be at least 0, got " +
                llvm::Twine(static_cast<int64_t>(options.zeroBucketBytes)));
  if (options.zeroPrefetch < 0)
    return fail("--zero-prefetch must be at least 0, got " +
                llvm::Twine(static_cast<int64_t>(options.zeroPrefetch)));
  if (options.offload != "none" && options.offload != "optimizer")
    return fail("--offload must be none or optimizer, got '" +
                options.offload + "'");
  if (options.offload == "optimizer") {
    if (!backend.supportsOptimizerOffload())
      return fail("--offload optimizer is not yet implemented for --target " +
                  options.target);
    if (options.mode == StepMode::Forward)
      return fail("--offload optimizer applies to training steps only, not "
                  "to --mode forward");
    if (options.offloadOverlap && !backend.runsHostTasks())
      return fail("--offload-overlap: target " + options.target +
                  " has no host worker for the update");
    if (options.zero != 0)
      return fail("--offload optimizer with --zero " +
                  llvm::Twine(static_cast<int64_t>(options.zero)) +
                  " is not supported: the sharded optimizer state stays on "
                  "the device (use --zero 0)");
  }
  if (options.offloadOverlap && options.offload != "optimizer")
    return fail("--offload-overlap applies to --offload optimizer");
  if (options.offloadHoist && !options.offloadOverlap &&
      !backend.offloadNeedsHostTasks())
    return fail("--offload-hoist applies to --offload-overlap");
  auto oneOf = [](StringRef value, std::initializer_list<StringRef> allowed) {
    return value.empty() || llvm::is_contained(allowed, value);
  };
  if (!oneOf(options.f32Accumulator, {"f64", "f32"}))
    return fail("f32-accumulator must be f64 or f32, got '" +
                options.f32Accumulator + "'");
  if (!oneOf(options.lowPrecisionProducts, {"widen", "native"}))
    return fail("low-precision-products must be widen or native, got '" +
                options.lowPrecisionProducts + "'");
  if (options.maxThreads < 0)
    return fail("--max-threads must be at least 0 (0: this machine's), "
                "got " +
                llvm::Twine(static_cast<int64_t>(options.maxThreads)));
  StringRef library = backend.getLibraryConvolution();
  if (!oneOf(options.convolution, {"im2col", "direct"}) &&
      (library.empty() || options.convolution != library))
    return fail("--convolution " + options.convolution + ": target " +
                options.target + " takes im2col, direct" +
                (library.empty() ? "" : " or " + library.str()));
  return llvm::Error::success();
}

/// The name an enum option gives `value` (its cl::values are the one
/// spelling of every value).
template <typename Enum>
static StringRef nameOf(TrainStepOptions::Option<Enum> TrainStepOptions::*option,
                        Enum value) {
  // Parsers are looked up, never changed: one instance serves every call.
  static TrainStepOptions names;
  std::optional<StringRef> name = (names.*option).getParser().findArgStrForValue(value);
  assert(name && "an enum value without a name");
  return *name;
}

StringRef stringifyOptimizer(OptimizerKind kind) {
  return nameOf(&TrainStepOptions::optimizer, kind);
}
StringRef stringifySchedule(LrSchedule schedule) {
  return nameOf(&TrainStepOptions::schedule, schedule);
}
StringRef stringifyRemat(RematPolicy policy) {
  return nameOf(&TrainStepOptions::remat, policy);
}
StringRef stringifyPrecision(Precision precision) {
  return nameOf(&TrainStepOptions::precision, precision);
}
StringRef stringifyLossScale(LossScaleMode mode) {
  return nameOf(&TrainStepOptions::lossScale, mode);
}
StringRef stringifyFrozenStorage(FrozenStorage storage) {
  return nameOf(&TrainStepOptions::quantizeFrozen, storage);
}

/// Whether attention runs on the target's own kernels (cuda's).
static bool targetAttentionKernels(const TrainStepOptions &options,
                                   const TargetBackend &backend) {
  return options.fuseAttention && backend.supportsFusedAttention() &&
         !backend.getAttentionKernels().empty();
}

void buildStepPipeline(OpPassManager &pm, const TrainStepOptions &options,
                       const TargetBackend &backend) {
  EffStepAbiPassOptions abi;
  abi.alignment = backend.getAlignment();
  // Attention as one op first: autocast keeps it in f32 and autodiff uses
  // its rule, which saves no Tq x Tk probabilities.
  // Only where the target has an attention kernel.
  bool ownKernels = targetAttentionKernels(options, backend);
  if (options.fuseAttention && backend.supportsFusedAttention()) {
    EffFuseAttentionPassOptions fuse;
    // A target's own kernels take less (cuda's: no mask but the causal one).
    if (ownKernels)
      fuse.kernels = backend.getAttentionKernels().str();
    pm.addPass(createEffFuseAttentionPass(fuse));
  }
  if (options.mode == StepMode::Forward) {
    // The imported @forward as it is: no autodiff, no optimizer.
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    abi.mode = "forward";
    pm.addPass(createEffStepAbiPass(abi));
    return;
  }
  // Adapters on the imported forward: autocast then treats their GEMMs like
  // the model's, and autodiff differentiates only them.
  if (options.lora) {
    EffLoraPassOptions lora;
    lora.rank = options.loraRank;
    lora.alpha = options.loraAlpha;
    lora.dropout = options.loraDropout;
    lora.targets = options.loraTargets;
    lora.seed = options.loraSeed;
    pm.addPass(createEffLoraPass(lora));
  }
  // Casts before autodiff, so the backward differentiates through them.
  if (options.precision != Precision::FP32) {
    EffAutocastPassOptions autocast;
    autocast.precision = stringifyPrecision(options.precision).str();
    // cuda's attention kernels run f16/bf16 on tensor cores (PyTorch's
    // autocast runs scaled_dot_product_attention in low precision too).
    autocast.lowPrecisionAttention = ownKernels;
    pm.addPass(createEffAutocastPass(autocast));
  }
  pm.addPass(createEffAutodiffPass());
  if (options.remat != RematPolicy::None) {
    EffRematPassOptions remat;
    remat.policy = stringifyRemat(options.remat).str();
    remat.freeBytes = options.rematFreeBytes;
    remat.boundary = options.rematBoundary;
    pm.addPass(createEffRematPass(remat));
  }
  // The micro-batch loop wraps the (rematerialized) forward/backward; loss
  // scaling and the optimizer see its averaged gradients.
  if (options.accum != 1) {
    EffGradAccumPassOptions accum;
    accum.steps = options.accum;
    // ZeRO-3: a cast of a weight hoisted out of the micro-batch loop would
    // keep a whole copy of the sharded weight live across the loop; in the
    // loop it is made from the gathered copy and freed with it.
    if (options.zero == 3 &&
        (options.worldSize > 1 || options.zeroOneRankCollectives))
      accum.hoist = false;
    pm.addPass(createEffGradAccumPass(accum));
  }
  // After accumulation (the sum of the ranks' accumulated gradients), before
  // loss scaling (an overflow on any rank then skips the step on all).
  if (options.worldSize != 1 || options.zero != 0 ||
      options.zeroOneRankCollectives) {
    EffZeroPassOptions zero;
    zero.stage = options.zero;
    zero.worldSize = options.worldSize;
    zero.oneRankCollectives = options.zeroOneRankCollectives;
    zero.keepGathered = options.zeroKeepGathered;
    zero.bucketBytes = options.zeroBucketBytes;
    zero.minBuckets = options.zeroMinBuckets;
    // Shards of what the optimizer keeps whole (8-bit blocks, Adafactor's
    // rows), with eff-optimizer's defaults for the 8-bit blocks.
    ZeroShardPolicy policy =
        ZeroShardPolicy::forOptimizer(stringifyOptimizer(options.optimizer),
                                      EffOptimizerPassOptions().quantBlockSize,
                                      EffOptimizerPassOptions().min8bitSize);
    zero.shardUnit = ZeroShardPolicy::unitName(policy.unit).str();
    zero.quantBlockSize = policy.quantBlockSize;
    zero.min8bitSize = policy.min8bitSize;
    pm.addPass(createEffZeroPass(zero));
  }
  LossScaleMode lossScale = options.effectiveLossScale();
  if (lossScale != LossScaleMode::None) {
    EffLossScalingPassOptions scaling;
    scaling.initScale = options.lossScaleInit;
    scaling.growthInterval = options.lossScaleGrowthInterval;
    scaling.hysteresis = options.lossScaleHysteresis;
    scaling.minScale = options.lossScaleMin;
    scaling.staticScale = lossScale == LossScaleMode::Static;
    pm.addPass(createEffLossScalingPass(scaling));
  }
  // After everything that shapes the backward's seed (accumulation, ZeRO,
  // loss scaling): the chunks read it from the loss gradient.
  if (options.lossChunks != 1) {
    EffChunkCrossEntropyPassOptions chunking;
    chunking.chunks = options.lossChunks;
    pm.addPass(createEffChunkCrossEntropyPass(chunking));
  }
  EffOptimizerPassOptions optimizer;
  optimizer.optimizer = stringifyOptimizer(options.optimizer).str();
  optimizer.lr = options.lr;
  optimizer.momentum = options.momentum;
  optimizer.dampening = options.dampening;
  optimizer.nesterov = options.nesterov;
  optimizer.weightDecay = options.effectiveWeightDecay();
  optimizer.beta1 = options.beta1;
  optimizer.beta2 = options.beta2;
  optimizer.eps = options.eps;
  optimizer.amsgrad = options.amsgrad;
  optimizer.beta2Decay = options.beta2Decay;
  optimizer.eps1 = options.eps1;
  optimizer.eps2 = options.eps2;
  optimizer.clipThreshold = options.clipThreshold;
  optimizer.schedule = stringifySchedule(options.schedule).str();
  optimizer.warmupSteps = options.warmupSteps;
  optimizer.totalSteps = options.totalSteps;
  optimizer.minLr = options.minLr;
  optimizer.clipGradNorm = options.clipGradNorm;
  optimizer.noWeightDecay = options.noWeightDecay;
  pm.addPass(createEffOptimizerPass(optimizer));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // On the finished step, where every read of a frozen weight (forward,
  // backward, recomputation) is known; before the layout, which then holds
  // the packed storage instead of the weight.
  if (options.quantizeFrozen != FrozenStorage::None) {
    EffQuantizeFrozenPassOptions quantize;
    quantize.format = stringifyFrozenStorage(options.quantizeFrozen).str();
    quantize.names = options.quantizeFrozenNames;
    pm.addPass(createEffQuantizeFrozenPass(quantize));
  }
  // The optimizer's state in host memory: its own region in the layout.
  // Under autocast the fp32 master weights of the low-precision GEMMs go
  // too, with a low-precision copy on the device.
  if (options.offload == "optimizer") {
    EffOffloadOptimizerPassOptions offload;
    offload.masterWeights = options.precision != Precision::FP32;
    offload.keepDeviceRead = backend.offloadNeedsHostTasks();
    pm.addPass(createEffOffloadOptimizerPass(offload));
  }
  pm.addPass(createEffStepAbiPass(abi));
  if (options.scheduleMemory)
    pm.addPass(createEffScheduleMemoryPass());
  // Last at the eff level, on the final order: each collective's start and
  // wait placed around the ops it can overlap.
  if (options.zeroOverlap &&
      (options.worldSize != 1 || options.zeroOneRankCollectives)) {
    EffOverlapCollectivesPassOptions overlap;
    overlap.prefetch = options.zeroPrefetch;
    pm.addPass(createEffOverlapCollectivesPass(overlap));
  }
}

void buildLoweringPipeline(OpPassManager &pm, const TrainStepOptions &options,
                           const TargetBackend &backend) {
  // eff-level cleanup first drops the dead forward outputs.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // eff -> linalg on tensors with the target's numerics; fuse elementwise
  // chains into one loop nest. No CSE from here on: eff.save lowers to
  // nothing, so a value that eff-remat recomputes in the backward would be
  // merged back into its forward twin and kept alive (CSE ran on eff, where
  // saves differ).
  ConvertEffToLinalgPassOptions policy = backend.getLoweringPolicy();
  if (!options.f32Accumulator.empty())
    policy.f32Accumulator = options.f32Accumulator;
  if (!options.lowPrecisionProducts.empty())
    policy.lowPrecisionProducts = options.lowPrecisionProducts;
  if (!options.convolution.empty())
    policy.convolution = options.convolution;
  if (targetAttentionKernels(options, backend))
    policy.attention = backend.getAttentionKernels().str();
  policy.threads = options.effectiveThreads();
  pm.addPass(createConvertEffToLinalgPass(policy));
  pm.addPass(createCanonicalizerPass());
  EffFuseElementwisePassOptions fusion;
  fusion.maxKernelArgumentBytes = backend.getMaxKernelArgumentBytes();
  pm.addPass(createEffFuseElementwisePass(fusion));
  pm.addPass(createCanonicalizerPass());
  // A loss gradient's row max and sum: the loss made them already.
  pm.addPass(createEffMergeEqualReductionsPass());
  backend.buildTensorPipeline(pm);
  // On cuda the pass ran already and finds nothing more.
  if (options.foldBiasIntoProducts) {
    pm.addPass(createEffGpuFoldBiasIntoProductsPass());
    pm.addPass(createCanonicalizerPass());
  }
  // Bufferize with in-place updates of the state arguments.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  // Products to the runtime's GEMM; the entry point over the three regions;
  // one arena.
  pm.addPass(createEffLinalgToBlasPass(backend.getBlasOptions()));
  pm.addPass(createEffStepEntryPass());
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createCanonicalizerPass());
  // The producers of a collective's inputs write into its buffer: a
  // bucket's gradients are not copied into it (and counted twice).
  pm.addPass(createEffFoldCollectiveCopiesPass());
  backend.buildBufferPipeline(pm);
  // The update on a host worker: first the buffers each host op reads
  // live until it is waited for, so the plan gives them slots of their
  // own; then, on the plan, the ops become tasks and the waits go where
  // their bytes are next touched.
  bool hostTasks = options.offload == "optimizer" &&
                   (options.offloadOverlap || backend.offloadNeedsHostTasks());
  if (hostTasks) {
    // On a GPU each update starts as soon as its gradient is complete.
    EffHostTaskLifetimesPassOptions lifetimes;
    lifetimes.abi = backend.getHostTaskAbi().str();
    lifetimes.hoist = backend.offloadNeedsHostTasks() || options.offloadHoist;
    pm.addPass(createEffHostTaskLifetimesPass(lifetimes));
  }
  EffMemoryPlanPassOptions plan;
  plan.attachReport = options.attachMemoryReport;
  plan.inPlace = backend.planElementwiseInPlace();
  pm.addPass(createEffMemoryPlanPass(plan));
  if (hostTasks) {
    EffHostTasksPassOptions tasks;
    tasks.abi = backend.getHostTaskAbi().str();
    pm.addPass(createEffHostTasksPass(tasks));
  }
}

llvm::Error buildTrainStepPipeline(OpPassManager &pm,
                                   const TrainStepOptions &options) {
  if (llvm::Error error = verifyTrainStepOptions(options))
    return error;
  const TargetBackend &backend = *lookupTargetBackend(options.target);
  buildStepPipeline(pm, options, backend);
  if (options.until == PipelineStage::Step)
    return llvm::Error::success();
  buildLoweringPipeline(pm, options, backend);
  if (options.until == PipelineStage::MemoryPlan)
    return llvm::Error::success();
  backend.buildCodegenPipeline(pm);
  return llvm::Error::success();
}

LogicalResult
runPipelineStage(ModuleOp module,
                 function_ref<void(OpPassManager &)> build) {
  PassManager pm(module.getContext());
  build(pm);
  return pm.run(module);
}

int64_t plannedArenaBytes(ModuleOp module) {
  int64_t arena = 0;
  module->walk([&](FunctionOpInterface func) {
    if (auto bytes =
            func->getAttrOfType<IntegerAttr>(eff::kArenaBytesAttrName))
      arena = std::max(arena, bytes.getInt());
  });
  return arena;
}

std::string printTrainStepPipeline(const TrainStepOptions &options) {
  OpPassManager pm("builtin.module");
  if (llvm::Error error = buildTrainStepPipeline(pm, options))
    return "<" + llvm::toString(std::move(error)) + ">";
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os);
  return text;
}

std::string printTrainStepOptions(const TrainStepOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  options.print(os);
  StringRef printed(text);
  // print() wraps the options in braces; the pipeline's option string has
  // none.
  if (printed.starts_with("{") && printed.ends_with("}"))
    printed = printed.drop_front().drop_back();
  return printed.str();
}

void registerTrainStepPipelines() {
  registerPassPipeline(
      "effopt-train-step",
      "The whole training pipeline effc runs after importing a model: the "
      "training step (or forward function), its lowering to one planned "
      "arena and the target's code generation",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        TrainStepOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (llvm::Error error = buildTrainStepPipeline(pm, options))
          return errorHandler(llvm::toString(std::move(error)));
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optionsHandler) {
        optionsHandler(TrainStepOptions());
      });
  for (const std::string &name : getRegisteredTargetNames()) {
    std::string argument = "effopt-" + name + "-lowering";
    std::string description =
        "Lower a laid-out step (after eff-step-abi) for target " + name +
        ", as effc --target " + name + " does";
    registerPassPipeline(
        argument, description,
        [name](OpPassManager &pm, StringRef text,
               function_ref<LogicalResult(const Twine &)> errorHandler) {
          if (!text.empty())
            return errorHandler("this pipeline takes no options");
          TrainStepOptions options;
          options.target = name;
          const TargetBackend &backend = *lookupTargetBackend(name);
          buildLoweringPipeline(pm, options, backend);
          backend.buildCodegenPipeline(pm);
          return success();
        },
        [](function_ref<void(const detail::PassOptions &)>) {});
  }
}

} // namespace effopt
