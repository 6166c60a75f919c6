//===- Optimizer.cpp - eff-optimizer: the training step -------------------===//
//
// From @forward_backward (forward results + one gradient per trainable
// parameter) to @train_step: optimizer state and the step counter become
// persistent state (eff.parameter optimizer_state), the learning rate is
// computed from the step counter, gradients are optionally clipped by their
// global norm, and each parameter gets one fused torch.optim update (or,
// for Adafactor, whose update needs reductions, one composed of eff ops).
//
// Under ZeRO (eff.zero_stage >= 1 on the module, from eff-zero, N ranks)
// every optimizer state tensor is one rank's 1/N shard of the flattened
// state, zero-padded to a multiple of N: the fused update runs on this
// rank's shard of the parameter and of the gradient (already a shard in
// stage 2), and eff.all_gather brings every rank's updated shard back into
// the whole parameter. The updates are elementwise, so a shard updates
// exactly as it would inside the whole tensor; zero padding stays zero.
// Stage 3 leaves the parameters sharded: the update writes this rank's
// shard of the parameter back in place, and eff-zero's gathers read it.
// Block-wise 8-bit state is cut on block boundaries (each rank owns whole
// blocks: their codes and absmax), so a rank's blocks update exactly as in
// one process. Adafactor's factored state is cut by whole rows of a matrix
// (whole matrices of a stack): row statistics are per rank, the column
// statistic and the row statistic's mean come from an all-reduce of every
// rank's partial sums, as do RMS(param) and RMS(update).
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"
#include "effopt/Transforms/ZeroSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/Regex.h"

#include <cmath>

namespace effopt {
#define GEN_PASS_DEF_EFFOPTIMIZERPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt;
using namespace effopt::eff;

namespace {

struct EffOptimizerPass
    : effopt::impl::EffOptimizerPassBase<EffOptimizerPass> {
  using EffOptimizerPassBase::EffOptimizerPassBase;
  void runOnOperation() override;
  LogicalResult checkOptions(Location loc);
  /// adam8bit or adamw8bit: block-wise 8-bit moments.
  bool isEightBit() const {
    return optimizer == "adam8bit" || optimizer == "adamw8bit";
  }
};

/// A trainable parameter and its gradient in @forward_backward.
struct GradientEntry {
  ParameterOp param;
  BlockArgument value;
  Value grad;
};

/// What every Adafactor update of a step shares, from the step counter
/// (t = step + 1) and the scheduled learning rate: tensor<f32> scalars.
struct AdafactorStep {
  /// t^beta2_decay: the weight of this step's squared gradient (torch's
  /// one_minus_beta2_t); 1 on the first step.
  Value averaging;
  /// rho_t = min(lr, 1 / sqrt(t)).
  Value relativeStep;
  Value lr;
};

/// Adafactor's constants for one parameter group.
struct AdafactorOptions {
  double weightDecay;
  /// Negative: the parameter type's machine epsilon.
  double eps1;
  double eps2;
  double clipThreshold;
};

/// The new values of one parameter's Adafactor state, in the order of its
/// slots (row_var, col_var or variance).
struct AdafactorUpdate {
  Value param;
  SmallVector<Value, 2> state;
};

} // namespace

/// A rank-0 constant of `elementType`.
static Value scalarConstant(OpBuilder &builder, Location loc, double value,
                            Type elementType) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(type, builder.getFloatAttr(elementType, value)));
}

/// The mean over `axes` (kept with size 1); over all axes (rank 0) with none.
static Value mean(OpBuilder &builder, Location loc, Value value,
                  ArrayRef<int64_t> axes, bool keepDims) {
  if (axes.empty())
    return value;
  return ReduceMeanOp::create(builder, loc, value, axes, keepDims);
}

static Value meanOfAll(OpBuilder &builder, Location loc, Value value) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  return mean(builder, loc, value, all, /*keepDims=*/false);
}

/// torch.finfo(type).eps: the distance from 1 to the next larger value.
static double machineEpsilon(Type floatType) {
  unsigned precision = llvm::APFloat::semanticsPrecision(
      cast<FloatType>(floatType).getFloatSemantics());
  return std::ldexp(1.0, 1 - static_cast<int>(precision));
}

/// torch.lerp(old, target, weight) = old + weight * (target - old).
static Value lerp(OpBuilder &builder, Location loc, Value old, Value target,
                  Value weight) {
  Value delta = SubOp::create(builder, loc, target, old);
  return AddOp::create(builder, loc, old,
                       MulOp::create(builder, loc, delta, weight));
}

/// ZeRO: how a whole tensor of `elements` is split over `worldSize` ranks.
struct ShardLayout {
  int64_t worldSize;
  int64_t elements;
  /// The elements each rank holds: ceil(elements / worldSize) rounded up
  /// to whole quantization blocks or rows (ZeroShardPolicy).
  int64_t shard;
  int64_t padded() const { return shard * worldSize; }
};

/// `value` flattened and zero-padded to layout.padded() elements.
static Value flattenPadded(OpBuilder &builder, Location loc, Value value,
                           const ShardLayout &layout) {
  auto type = cast<RankedTensorType>(value.getType());
  Value flat = value;
  if (type.getRank() != 1)
    flat = ReshapeOp::create(builder, loc, type.clone({layout.elements}),
                             value);
  if (layout.padded() == layout.elements)
    return flat;
  return PadOp::create(builder, loc, flat, builder.getDenseI64ArrayAttr({0}),
                       builder.getDenseI64ArrayAttr(
                           {layout.padded() - layout.elements}),
                       builder.getF64FloatAttr(0.0));
}

/// Every rank's updated shard gathered, the padding dropped, in `type`.
static Value gatherWhole(OpBuilder &builder, Location loc, Value shard,
                         RankedTensorType type, const ShardLayout &layout) {
  Value whole = AllGatherOp::create(
      builder, loc, type.clone({layout.padded()}), shard,
      builder.getI64IntegerAttr(layout.worldSize));
  if (layout.padded() != layout.elements)
    whole = SliceOp::create(builder, loc, whole,
                            builder.getDenseI64ArrayAttr({0}),
                            builder.getDenseI64ArrayAttr({layout.elements}),
                            builder.getDenseI64ArrayAttr({1}));
  if (type.getRank() != 1)
    whole = ReshapeOp::create(builder, loc, type, whole);
  return whole;
}

/// The step-wide scalars of Adafactor.
static AdafactorStep buildAdafactorStep(OpBuilder &builder, Location loc,
                                        Value stepCounter, Value lr,
                                        double beta2Decay) {
  Type f32 = builder.getF32Type();
  auto f32Scalar = RankedTensorType::get({}, f32);
  Value t = AddOp::create(builder, loc,
                          CastOp::create(builder, loc, f32Scalar, stepCounter),
                          scalarConstant(builder, loc, 1.0, f32));
  AdafactorStep step;
  step.averaging = PowOp::create(builder, loc, t,
                                 scalarConstant(builder, loc, beta2Decay, f32));
  step.relativeStep =
      MinOp::create(builder, loc, lr, RsqrtOp::create(builder, loc, t));
  step.lr = lr;
  return step;
}

/// One torch.optim.Adafactor update of `param` (single-tensor, in its
/// order): alpha from the parameter before weight decay, decoupled decay
/// `param *= 1 - lr * wd`, the second moment (factored over the last two
/// dimensions from rank 2 on, full otherwise), the update
/// `grad / sqrt(max(V, eps1^2))` clipped to RMS `clip-threshold`.
static AdafactorUpdate buildAdafactorUpdate(OpBuilder &builder, Location loc,
                                            Value param, Value grad,
                                            ArrayRef<Value> state,
                                            const AdafactorStep &step,
                                            const AdafactorOptions &options) {
  auto type = cast<RankedTensorType>(param.getType());
  Type elementType = type.getElementType();
  int64_t rank = type.getRank();
  // The step's f32 scalars in the parameter's type (as torch's Python
  // floats meet a tensor of that type).
  auto inType = [&](Value scalar) -> Value {
    if (elementType == builder.getF32Type())
      return scalar;
    return CastOp::create(builder, loc, RankedTensorType::get({}, elementType),
                          scalar);
  };
  auto constant = [&](double value) {
    return scalarConstant(builder, loc, value, elementType);
  };
  // A negative eps1 is torch's None.
  double eps1 = options.eps1 < 0 ? machineEpsilon(elementType) : options.eps1;
  Value averaging = inType(step.averaging);

  // alpha = max(eps2, RMS(param)) * rho_t, before the weight decay.
  Value paramRms = SqrtOp::create(
      builder, loc,
      meanOfAll(builder, loc, MulOp::create(builder, loc, param, param)));
  Value alpha = MulOp::create(
      builder, loc,
      MaxOp::create(builder, loc, paramRms, constant(options.eps2)),
      inType(step.relativeStep));

  Value decayed = param;
  if (options.weightDecay != 0) {
    Type f32 = builder.getF32Type();
    Value keep = SubOp::create(
        builder, loc, scalarConstant(builder, loc, 1.0, f32),
        MulOp::create(builder, loc, step.lr,
                      scalarConstant(builder, loc, options.weightDecay, f32)));
    decayed = MulOp::create(builder, loc, param, inType(keep));
  }

  AdafactorUpdate result;
  Value squared = MulOp::create(builder, loc, grad, grad);
  Value variance;
  if (rank >= 2) {
    // Row factor: the mean over the last dimension; column factor: over the
    // one before. V = row * col / max(mean of row over its rows, eps1).
    Value row = lerp(builder, loc, state[0],
                     mean(builder, loc, squared, {rank - 1}, true), averaging);
    Value col = lerp(builder, loc, state[1],
                     mean(builder, loc, squared, {rank - 2}, true), averaging);
    Value rowMean = MaxOp::create(builder, loc,
                                  mean(builder, loc, row, {rank - 2}, true),
                                  constant(eps1));
    variance = DivOp::create(
        builder, loc, MulOp::create(builder, loc, row, col), rowMean);
    result.state = {row, col};
  } else {
    variance = lerp(builder, loc, state[0], squared, averaging);
    result.state = {variance};
  }
  Value update = MulOp::create(
      builder, loc,
      RsqrtOp::create(builder, loc,
                      MaxOp::create(builder, loc, variance,
                                    constant(eps1 * eps1))),
      grad);
  // Update clipping: divide by max(1, RMS(update) / d).
  Value updateRms = SqrtOp::create(
      builder, loc,
      meanOfAll(builder, loc, MulOp::create(builder, loc, update, update)));
  if (options.clipThreshold != 1.0)
    updateRms = DivOp::create(builder, loc, updateRms,
                              constant(options.clipThreshold));
  Value denominator = MaxOp::create(builder, loc, updateRms, constant(1.0));
  Value scale = DivOp::create(builder, loc, alpha, denominator);
  result.param = SubOp::create(builder, loc, decayed,
                               MulOp::create(builder, loc, update, scale));
  return result;
}

/// The sum of every element of `value` (a tensor<f32>).
static Value sumOfAll(OpBuilder &builder, Location loc, Value value) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  if (rank == 0)
    return value;
  SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  return ReduceSumOp::create(builder, loc, value, all, /*keepDims=*/false);
}

/// ZeRO: how this rank's shard of one Adafactor parameter is laid out.
struct AdafactorShard {
  /// The whole parameter's shape and elements.
  ArrayRef<int64_t> wholeShape;
  int64_t wholeElements;
  int64_t worldSize;
  /// S: the elements of the shard (1-D).
  int64_t shard;
};

/// One torch.optim.Adafactor update of this rank's shard of a parameter
/// (f32), with the same semantics as buildAdafactorUpdate on the whole one:
/// what needs the whole tensor is summed over the ranks. A matrix (the last
/// two dimensions; one in all) is sharded by whole rows: the row statistic
/// is this rank's rows (state[0], 1-D), the column statistic (state[1],
/// whole, the same on every rank) and the mean of the row statistic come
/// from all-reduced partial sums. A stack of matrices is sharded by whole
/// matrices, whose statistics are all local (both states 1-D shards). A
/// vector's full second moment is elementwise. RMS(param) and RMS(update)
/// sum every rank's squares. The zero padding (rows, matrices, elements of
/// zero gradient) updates to zero and adds nothing to any sum.
static AdafactorUpdate buildShardedAdafactorUpdate(
    OpBuilder &builder, Location loc, Value param, Value grad,
    ArrayRef<Value> state, const AdafactorStep &step,
    const AdafactorOptions &options, const AdafactorShard &layout) {
  Type f32 = builder.getF32Type();
  auto constant = [&](double value) {
    return scalarConstant(builder, loc, value, f32);
  };
  auto allReduce = [&](ValueRange values) {
    return AllReduceOp::create(builder, loc, values,
                               builder.getI64IntegerAttr(layout.worldSize))
        .getResults();
  };
  auto reshape = [&](Value value, ArrayRef<int64_t> shape) -> Value {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getShape() == shape)
      return value;
    return ReshapeOp::create(builder, loc, type.clone(shape), value);
  };
  double eps1 = options.eps1 < 0 ? machineEpsilon(f32) : options.eps1;
  double elements = static_cast<double>(layout.wholeElements);
  Value averaging = step.averaging;
  Value squared = MulOp::create(builder, loc, grad, grad);
  Value paramSquares =
      sumOfAll(builder, loc, MulOp::create(builder, loc, param, param));

  AdafactorUpdate result;
  Value variance; // in `viewShape`
  SmallVector<int64_t> viewShape = {layout.shard};
  if (layout.wholeShape.size() >= 2) {
    FactoredShape matrix = FactoredShape::of(layout.wholeShape);
    Value row, col;
    if (matrix.byRows()) {
      // This rank's k whole rows of the one matrix.
      int64_t k = layout.shard / matrix.cols;
      viewShape = {k, matrix.cols};
      Value sq = reshape(squared, viewShape);
      row = lerp(builder, loc, reshape(state[0], {k, 1}),
                 mean(builder, loc, sq, {1}, true), averaging);
      Value colPartial = ReduceSumOp::create(builder, loc, sq, {0}, true);
      Value rowPartial = sumOfAll(builder, loc, row);
      ValueRange sums = allReduce({paramSquares, colPartial, rowPartial});
      paramSquares = sums[0];
      Value rows = constant(static_cast<double>(matrix.rows));
      Value colState = reshape(state[1], {1, matrix.cols});
      col = lerp(builder, loc, colState,
                 DivOp::create(builder, loc, sums[1], rows), averaging);
      Value rowMean = MaxOp::create(builder, loc,
                                    DivOp::create(builder, loc, sums[2], rows),
                                    constant(eps1));
      variance = DivOp::create(builder, loc,
                               MulOp::create(builder, loc, row, col), rowMean);
      result.state = {
          reshape(row, {k}),
          reshape(col, cast<RankedTensorType>(state[1].getType()).getShape())};
    } else {
      // This rank's k whole matrices.
      int64_t k = layout.shard / (matrix.rows * matrix.cols);
      viewShape = {k, matrix.rows, matrix.cols};
      Value sq = reshape(squared, viewShape);
      row = lerp(builder, loc, reshape(state[0], {k, matrix.rows, 1}),
                 mean(builder, loc, sq, {2}, true), averaging);
      col = lerp(builder, loc, reshape(state[1], {k, 1, matrix.cols}),
                 mean(builder, loc, sq, {1}, true), averaging);
      Value rowMean = MaxOp::create(
          builder, loc, mean(builder, loc, row, {1}, true), constant(eps1));
      variance = DivOp::create(builder, loc,
                               MulOp::create(builder, loc, row, col), rowMean);
      paramSquares = allReduce({paramSquares})[0];
      result.state = {reshape(row, {k * matrix.rows}),
                      reshape(col, {k * matrix.cols})};
    }
  } else {
    variance = lerp(builder, loc, state[0], squared, averaging);
    paramSquares = allReduce({paramSquares})[0];
    result.state = {variance};
  }

  // alpha = max(eps2, RMS(param)) * rho_t, before the weight decay.
  Value paramRms = SqrtOp::create(
      builder, loc,
      DivOp::create(builder, loc, paramSquares, constant(elements)));
  Value alpha = MulOp::create(
      builder, loc,
      MaxOp::create(builder, loc, paramRms, constant(options.eps2)),
      step.relativeStep);
  Value decayed = param;
  if (options.weightDecay != 0) {
    Value keep = SubOp::create(
        builder, loc, constant(1.0),
        MulOp::create(builder, loc, step.lr, constant(options.weightDecay)));
    decayed = MulOp::create(builder, loc, param, keep);
  }
  Value update =
      MulOp::create(builder, loc,
                    RsqrtOp::create(builder, loc,
                                    MaxOp::create(builder, loc, variance,
                                                  constant(eps1 * eps1))),
                    reshape(grad, viewShape));
  update = reshape(update, {layout.shard});
  // Update clipping: divide by max(1, RMS(update) / d), RMS over the whole.
  Value updateSquares = allReduce(
      {sumOfAll(builder, loc, MulOp::create(builder, loc, update, update))})[0];
  Value updateRms = SqrtOp::create(
      builder, loc,
      DivOp::create(builder, loc, updateSquares, constant(elements)));
  if (options.clipThreshold != 1.0)
    updateRms =
        DivOp::create(builder, loc, updateRms, constant(options.clipThreshold));
  Value denominator = MaxOp::create(builder, loc, updateRms, constant(1.0));
  Value scale = DivOp::create(builder, loc, alpha, denominator);
  result.param = SubOp::create(builder, loc, decayed,
                               MulOp::create(builder, loc, update, scale));
  return result;
}

LogicalResult EffOptimizerPass::checkOptions(Location loc) {
  if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw" &&
      optimizer != "adafactor" && !isEightBit())
    return emitError(loc) << "optimizer must be sgd, adam, adamw, adam8bit, "
                             "adamw8bit or adafactor, got '"
                          << optimizer << "'";
  if (isEightBit() && amsgrad)
    return emitError(loc) << optimizer
                          << " has no amsgrad (8-bit moments only)";
  if (isEightBit() && quantBlockSize <= 0)
    return emitError(loc) << "quant-block-size must be > 0, got "
                          << static_cast<int64_t>(quantBlockSize);
  if (isEightBit() && min8bitSize < 0)
    return emitError(loc) << "min-8bit-size must be >= 0, got "
                          << static_cast<int64_t>(min8bitSize);
  if (schedule != "constant" && schedule != "linear_warmup" &&
      schedule != "cosine")
    return emitError(loc) << "schedule must be constant, linear_warmup or "
                             "cosine, got '"
                          << schedule << "'";
  if (schedule == "cosine" && totalSteps <= warmupSteps)
    return emitError(loc) << "the cosine schedule needs total-steps ("
                          << static_cast<int64_t>(totalSteps) << ") > warmup-steps ("
                          << static_cast<int64_t>(warmupSteps)
                          << ")";
  if (schedule == "linear_warmup" && warmupSteps <= 0)
    return emitError(loc) << "the linear_warmup schedule needs warmup-steps > 0";
  if (lr < 0 || weightDecay < 0 || momentum < 0 || eps < 0 ||
      clipGradNorm < 0)
    return emitError(loc) << "lr, weight-decay, momentum, eps and "
                             "clip-grad-norm must be >= 0";
  // torch.optim.Adafactor's own checks.
  if (!(beta2Decay <= 0))
    return emitError(loc) << "beta2-decay must be <= 0, got "
                          << formatExactDouble(beta2Decay);
  if (!(eps2 >= 0))
    return emitError(loc) << "eps2 must be >= 0, got "
                          << formatExactDouble(eps2);
  if (!(clipThreshold >= 1))
    return emitError(loc) << "clip-threshold must be >= 1, got "
                          << formatExactDouble(clipThreshold);
  if (nesterov && (momentum <= 0 || dampening != 0))
    return emitError(loc) << "nesterov needs momentum > 0 and dampening 0 "
                             "(as torch.optim.SGD)";
  return success();
}

void EffOptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(checkOptions(module.getLoc())))
    return signalPassFailure();
  auto step = module.lookupSymbol<func::FuncOp>(kForwardBackwardFuncName);
  if (!step) {
    module.emitError("eff-optimizer expects func.func @forward_backward; run "
                     "eff-autodiff first");
    return signalPassFailure();
  }
  std::optional<llvm::Regex> noDecay;
  if (!noWeightDecay.empty()) {
    noDecay.emplace(noWeightDecay);
    std::string regexError;
    if (!noDecay->isValid(regexError)) {
      step.emitError("no-weight-decay '")
          << noWeightDecay << "' is not a valid regular expression: "
          << regexError;
      return signalPassFailure();
    }
  }

  // ZeRO (eff-zero stage >= 1 across more than one rank): sharded state.
  int64_t worldSize = 1, zeroStage = 0;
  if (auto stage = module->getAttrOfType<IntegerAttr>(kZeroStageAttrName))
    zeroStage = stage.getInt();
  if (auto world = module->getAttrOfType<IntegerAttr>(kWorldSizeAttrName))
    worldSize = world.getInt();
  bool sharded = zeroStage >= 1 && stepCommunicates(module);
  // Stage 2: the gradients arrive as this rank's shards (eff-zero).
  bool shardedGradients = sharded && zeroStage >= 2;
  // Stage 3: the parameter arguments are this rank's shards already
  // (eff-zero), updated in place; nothing is gathered here.
  bool shardedParameters = sharded && zeroStage >= 3;
  // What a rank's shard holds whole: eff-zero (stages 2-3) must have cut
  // the gradients and parameters the same way (its shard-unit).
  ZeroShardPolicy shardPolicy =
      ZeroShardPolicy::forOptimizer(optimizer, quantBlockSize, min8bitSize);

  Block &body = step.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  MLIRContext *context = &getContext();
  OpBuilder builder(context);

  // Split the results: forward outputs, buffer updates, gradients.
  SmallVector<std::pair<Value, DictionaryAttr>> outputs;
  SmallVector<std::pair<Value, FlatSymbolRefAttr>> updates;
  // ZeRO stage 1: the shards of the summed gradients (eff.shard).
  SmallVector<Operation *> gradientShards;
  SmallVector<GradientEntry> gradients;
  Value skipStep; // eff-loss-scaling: true when the gradients overflowed
  llvm::DenseMap<Attribute, BlockArgument> argumentOf;
  for (BlockArgument arg : body.getArguments())
    if (auto symbol = step.getArgAttrOfType<FlatSymbolRefAttr>(
            arg.getArgNumber(), kParameterAttrName))
      argumentOf[symbol] = arg;
  for (auto [i, value] : llvm::enumerate(returnOp.getOperands())) {
    if (auto param =
            step.getResultAttrOfType<FlatSymbolRefAttr>(i, kGradientAttrName)) {
      auto op = module.lookupSymbol<ParameterOp>(param);
      if (!op || !argumentOf.count(param)) {
        step.emitError("result ") << i << " is the gradient of " << param
                                  << ", which is not a parameter argument";
        return signalPassFailure();
      }
      auto paramType = op.getTensorType();
      if (sharded && !paramType.getElementType().isF32()) {
        step.emitError("eff-optimizer: ZeRO shards f32 parameters; ")
            << param << " is " << paramType;
        return signalPassFailure();
      }
      gradients.push_back({op, argumentOf[param], value});
    } else if (step.getResultAttr(i, kSkipStepAttrName)) {
      skipStep = value;
    } else if (auto buffer = step.getResultAttrOfType<FlatSymbolRefAttr>(
                   i, kBufferUpdateAttrName)) {
      updates.push_back({value, buffer});
    } else {
      outputs.push_back({value, step.getResultAttrDict(i)});
    }
  }

  // Persistent optimizer state: declared next to the parameters, appended
  // to the arguments.
  // Set while the state of a sharded parameter is declared: the shape of
  // the whole tensor each state shard belongs to.
  std::optional<SmallVector<int64_t>> wholeShape;
  auto addState = [&](StringRef name, RankedTensorType type) -> Value {
    builder.setInsertionPoint(step);
    Attribute zero = isa<FloatType>(type.getElementType())
                         ? Attribute(builder.getFloatAttr(type.getElementType(), 0.0))
                         : Attribute(builder.getIntegerAttr(type.getElementType(), 0));
    auto op = ParameterOp::create(builder, step.getLoc(), name,
                                  ParamRole::OptimizerState, type,
                                  DenseElementsAttr::get(type, zero));
    if (wholeShape)
      op->setAttr(kShardOfAttrName, builder.getDenseI64ArrayAttr(*wholeShape));
    unsigned index = step.getNumArguments();
    if (failed(step.insertArgument(
            index, type,
            builder.getDictionaryAttr(builder.getNamedAttr(
                kParameterAttrName,
                FlatSymbolRefAttr::get(op.getSymNameAttr()))),
            step.getLoc())))
      return Value();
    return body.getArgument(index);
  };
  auto stateName = [](StringRef param, StringRef slot) {
    return ("optimizer." + param + "." + slot).str();
  };

  auto stepType = RankedTensorType::get({}, builder.getI64Type());
  Value stepCounter = addState("optimizer.step", stepType);
  if (!stepCounter)
    return signalPassFailure();

  builder.setInsertionPoint(returnOp);
  // Everything built from here to the return is optimizer math.
  Operation *lastBackwardOp = returnOp->getPrevNode();
  Location loc = step.getLoc();
  auto f32Scalar = RankedTensorType::get({}, builder.getF32Type());
  Value learningRate = LrScheduleOp::create(
      builder, loc, f32Scalar, stepCounter, builder.getStringAttr(schedule),
      builder.getF64FloatAttr(lr), builder.getI64IntegerAttr(warmupSteps),
      builder.getI64IntegerAttr(totalSteps), builder.getF64FloatAttr(minLr));

  // Global-norm clipping (torch.nn.utils.clip_grad_norm_, 2-norm):
  // g *= min(1, max_norm / (total_norm + 1e-6)).
  if (clipGradNorm > 0 && !gradients.empty()) {
    auto scalarOf = [&](double v, Type elementType) -> Value {
      auto type = RankedTensorType::get({}, elementType);
      return ConstantOp::create(builder, loc,
                                DenseElementsAttr::get(
                                    type, builder.getFloatAttr(elementType, v)));
    };
    Value sumSquares;
    for (GradientEntry &entry : gradients) {
      auto type = cast<RankedTensorType>(entry.grad.getType());
      Value g = entry.grad;
      if (type.getElementType() != builder.getF32Type())
        g = CastOp::create(builder, loc, type.clone(builder.getF32Type()), g);
      Value square = MulOp::create(builder, loc, g, g);
      SmallVector<int64_t> all;
      for (int64_t d = 0; d < type.getRank(); ++d)
        all.push_back(d);
      Value partial = all.empty() ? square
                                  : Value(ReduceSumOp::create(builder, loc,
                                                              square, all,
                                                              false));
      sumSquares = sumSquares ? Value(AddOp::create(builder, loc, sumSquares,
                                                    partial))
                              : partial;
    }
    Type f32 = builder.getF32Type();
    // Stage 2: each rank holds a shard of every gradient (padding adds
    // zeros); the global norm sums every rank's squares.
    if (shardedGradients)
      sumSquares = AllReduceOp::create(builder, loc, ValueRange{sumSquares},
                                       builder.getI64IntegerAttr(worldSize))
                       .getResult(0);
    Value norm = SqrtOp::create(builder, loc, sumSquares);
    Value coefficient = DivOp::create(
        builder, loc, scalarOf(clipGradNorm, f32),
        AddOp::create(builder, loc, norm, scalarOf(1e-6, f32)));
    coefficient = MinOp::create(builder, loc, coefficient, scalarOf(1.0, f32));
    for (GradientEntry &entry : gradients) {
      auto type = cast<RankedTensorType>(entry.grad.getType());
      Value c = coefficient;
      if (type.getElementType() != f32)
        c = CastOp::create(builder, loc, f32Scalar.clone(type.getElementType()),
                           c);
      entry.grad = MulOp::create(builder, loc, entry.grad, c);
    }
  }

  std::optional<AdafactorStep> adafactorStep;
  if (optimizer == "adafactor" && !gradients.empty())
    adafactorStep =
        buildAdafactorStep(builder, loc, stepCounter, learningRate, beta2Decay);

  // One fused update per parameter (Adafactor: composed of eff ops).
  size_t firstOptimizerUpdate = updates.size();
  for (GradientEntry &entry : gradients) {
    StringRef name = entry.param.getSymName();
    auto type = entry.param.getTensorType();
    double decay = noDecay && noDecay->match(name) ? 0.0 : weightDecay;
    // ZeRO: the update runs on this rank's shards, in their 1-D type.
    Value paramIn = entry.value, gradIn = entry.grad;
    // Stages 1-2: how the whole parameter is cut (its shards are gathered
    // after the update).
    std::optional<ShardLayout> layout;
    auto fullType = type;
    // The whole parameter's shape (under ZeRO also the one of its shards).
    SmallVector<int64_t> paramShape(type.getShape());
    if (shardedParameters) {
      auto whole =
          entry.param->getAttrOfType<DenseI64ArrayAttr>(kShardOfAttrName);
      if (!whole || type.getRank() != 1 || gradIn.getType() != type) {
        step.emitError("eff-optimizer: ZeRO stage 3 expects ")
            << name << " and its gradient as this rank's 1-D shard (eff-zero "
            << "stage=3), got " << type << " and " << gradIn.getType();
        return signalPassFailure();
      }
      paramShape.assign(whole.asArrayRef().begin(), whole.asArrayRef().end());
      int64_t expected = shardPolicy.shardElements(paramShape, worldSize);
      if (type.getDimSize(0) != expected) {
        step.emitError("eff-optimizer: ")
            << optimizer.getValue() << " needs shards of " << expected
            << " elements of " << name << " (eff-zero shard-unit="
            << ZeroShardPolicy::unitName(shardPolicy.unit) << "), got "
            << type.getDimSize(0);
        return signalPassFailure();
      }
    } else if (sharded) {
      layout = ShardLayout{worldSize, type.getNumElements(),
                           shardPolicy.shardElements(paramShape, worldSize)};
      type = RankedTensorType::get({layout->shard}, type.getElementType());
      builder.setInsertionPoint(returnOp);
      Location paramLoc = entry.param.getLoc();
      auto shardOf = [&](Value whole) -> Value {
        return ShardOp::create(builder, paramLoc, type,
                               flattenPadded(builder, paramLoc, whole, *layout),
                               builder.getI64IntegerAttr(worldSize));
      };
      paramIn = shardOf(entry.value);
      if (!shardedGradients) {
        gradIn = shardOf(entry.grad);
        gradientShards.push_back(gradIn.getDefiningOp());
      } else if (gradIn.getType() != type) {
        step.emitError("eff-optimizer: the gradient of ")
            << name << " is " << gradIn.getType() << ", not its ZeRO shard "
            << type << " (eff-zero shard-unit="
            << ZeroShardPolicy::unitName(shardPolicy.unit) << ")";
        return signalPassFailure();
      }
    }
    int64_t wholeElements = ShapedType::getNumElements(paramShape);
    // The shape each state shard of this parameter belongs to (set around
    // addState; none when nothing is sharded).
    auto shardedState = [&](ArrayRef<int64_t> shape) {
      if (sharded)
        wholeShape = SmallVector<int64_t>(shape);
      else
        wholeShape.reset();
    };
    // The whole new parameter from the updated one (ZeRO: its shard).
    auto wholeParam = [&](Value updated) -> Value {
      if (!layout)
        return updated;
      return gatherWhole(builder, entry.param.getLoc(), updated, fullType,
                         *layout);
    };
    if (adafactorStep) {
      // torch's state shapes: the row factor keeps the last dimension as 1,
      // the column factor the one before. Under ZeRO each is a 1-D shard,
      // but for the column factor of a matrix cut by rows, which every
      // rank keeps whole.
      struct Slot {
        std::string name;
        SmallVector<int64_t> shape;
        /// Under ZeRO, the elements of its 1-D shard; 0: kept whole.
        int64_t shard;
      };
      SmallVector<Slot, 2> slots;
      int64_t rank = static_cast<int64_t>(paramShape.size());
      // Under ZeRO, this rank's S elements are k whole rows of the matrix
      // (k x C; the row factor's shard is its k rows, the column factor is
      // whole) or k whole matrices (k x R x C: k x R rows, k x C columns).
      int64_t shard = sharded ? type.getDimSize(0) : 0;
      if (rank >= 2) {
        SmallVector<int64_t> rowShape(paramShape), colShape(paramShape);
        rowShape.back() = 1;
        colShape[rank - 2] = 1;
        FactoredShape matrix = FactoredShape::of(paramShape);
        slots.push_back(
            {stateName(name, "row_var"), rowShape, shard / matrix.cols});
        slots.push_back({stateName(name, "col_var"), colShape,
                         matrix.byRows() ? 0 : shard / matrix.rows});
      } else {
        slots.push_back({stateName(name, "variance"), paramShape, shard});
      }
      SmallVector<Value, 2> state;
      for (Slot &slot : slots) {
        RankedTensorType slotType = type.clone(slot.shape);
        if (sharded && slot.shard) {
          slotType = RankedTensorType::get({slot.shard}, type.getElementType());
          shardedState(slot.shape);
        }
        state.push_back(addState(slot.name, slotType));
        wholeShape.reset();
        if (!state.back())
          return signalPassFailure();
      }
      builder.setInsertionPoint(returnOp);
      AdafactorOptions adafactorOptions{decay, eps1, eps2, clipThreshold};
      AdafactorUpdate update =
          sharded
              ? buildShardedAdafactorUpdate(
                    builder, entry.param.getLoc(), paramIn, gradIn, state,
                    *adafactorStep, adafactorOptions,
                    AdafactorShard{paramShape, wholeElements, worldSize, shard})
              : buildAdafactorUpdate(builder, entry.param.getLoc(), paramIn,
                                     gradIn, state, *adafactorStep,
                                     adafactorOptions);
      updates.push_back({wholeParam(update.param),
                         FlatSymbolRefAttr::get(entry.param.getSymNameAttr())});
      for (auto [slot, value] : llvm::zip_equal(slots, update.state))
        updates.push_back({value, FlatSymbolRefAttr::get(context, slot.name)});
      continue;
    }
    if (optimizer == "sgd") {
      Value buffer;
      if (momentum != 0.0) {
        shardedState(paramShape);
        buffer = addState(stateName(name, "momentum_buffer"), type);
        builder.setInsertionPoint(returnOp);
      }
      wholeShape.reset();
      auto update = SgdUpdateOp::create(
          builder, entry.param.getLoc(), type,
          buffer ? Type(type) : Type(), paramIn, gradIn,
          learningRate, stepCounter, buffer, builder.getF64FloatAttr(momentum),
          builder.getF64FloatAttr(dampening), builder.getBoolAttr(nesterov),
          builder.getF64FloatAttr(decay));
      updates.push_back({wholeParam(update.getNewParam()),
                         FlatSymbolRefAttr::get(entry.param.getSymNameAttr())});
      if (buffer)
        updates.push_back(
            {update.getNewMomentumBuffer(),
             FlatSymbolRefAttr::get(context, stateName(name, "momentum_buffer"))});
      continue;
    }
    bool decoupled = optimizer == "adamw" || optimizer == "adamw8bit";
    if (isEightBit() && wholeElements >= min8bitSize) {
      // Block-wise 8-bit moments: codes with the parameter's shape, one f32
      // absmax per block. Under ZeRO a shard is whole blocks (eff-zero and
      // the layout above cut on block boundaries): its codes and the absmax
      // of its blocks, which update as in one process.
      auto codesType = type.clone(builder.getI8Type());
      auto absmaxType = RankedTensorType::get(
          {Adam8bitUpdateOp::getNumBlocks(type.getNumElements(),
                                          quantBlockSize)},
          builder.getF32Type());
      SmallVector<int64_t> wholeBlocks = {
          Adam8bitUpdateOp::getNumBlocks(wholeElements, quantBlockSize)};
      auto addCodes = [&](StringRef slot) {
        shardedState(paramShape);
        Value value = addState(stateName(name, slot), codesType);
        wholeShape.reset();
        return value;
      };
      auto addAbsmax = [&](StringRef slot) {
        shardedState(wholeBlocks);
        Value value = addState(stateName(name, slot), absmaxType);
        wholeShape.reset();
        return value;
      };
      Value expAvgCodes = addCodes("exp_avg_codes");
      Value expAvgAbsmax = addAbsmax("exp_avg_absmax");
      Value expAvgSqCodes = addCodes("exp_avg_sq_codes");
      Value expAvgSqAbsmax = addAbsmax("exp_avg_sq_absmax");
      if (!expAvgCodes || !expAvgAbsmax || !expAvgSqCodes || !expAvgSqAbsmax)
        return signalPassFailure();
      builder.setInsertionPoint(returnOp);
      auto update = Adam8bitUpdateOp::create(
          builder, entry.param.getLoc(), type, codesType, absmaxType, codesType,
          absmaxType, paramIn, gradIn, expAvgCodes, expAvgAbsmax, expAvgSqCodes,
          expAvgSqAbsmax, learningRate, stepCounter,
          builder.getF64FloatAttr(beta1), builder.getF64FloatAttr(beta2),
          builder.getF64FloatAttr(eps), builder.getF64FloatAttr(decay),
          decoupled ? builder.getUnitAttr() : UnitAttr(),
          builder.getI64IntegerAttr(quantBlockSize));
      auto symbol = [&](StringRef slot) {
        return FlatSymbolRefAttr::get(context, stateName(name, slot));
      };
      updates.push_back({wholeParam(update.getNewParam()),
                         FlatSymbolRefAttr::get(entry.param.getSymNameAttr())});
      updates.push_back({update.getNewExpAvgCodes(), symbol("exp_avg_codes")});
      updates.push_back({update.getNewExpAvgAbsmax(), symbol("exp_avg_absmax")});
      updates.push_back(
          {update.getNewExpAvgSqCodes(), symbol("exp_avg_sq_codes")});
      updates.push_back(
          {update.getNewExpAvgSqAbsmax(), symbol("exp_avg_sq_absmax")});
      continue;
    }
    shardedState(paramShape);
    Value expAvg = addState(stateName(name, "exp_avg"), type);
    Value expAvgSq = addState(stateName(name, "exp_avg_sq"), type);
    Value maxExpAvgSq =
        amsgrad ? addState(stateName(name, "max_exp_avg_sq"), type) : Value();
    wholeShape.reset();
    builder.setInsertionPoint(returnOp);
    auto update = AdamUpdateOp::create(
        builder, entry.param.getLoc(), type, type, type,
        amsgrad ? Type(type) : Type(), paramIn, gradIn, expAvg,
        expAvgSq, learningRate, stepCounter, maxExpAvgSq, builder.getF64FloatAttr(beta1),
        builder.getF64FloatAttr(beta2), builder.getF64FloatAttr(eps),
        builder.getF64FloatAttr(decay),
        decoupled ? builder.getUnitAttr() : UnitAttr());
    auto symbol = [&](StringRef slot) {
      return FlatSymbolRefAttr::get(context, stateName(name, slot));
    };
    updates.push_back({wholeParam(update.getNewParam()),
                       FlatSymbolRefAttr::get(entry.param.getSymNameAttr())});
    updates.push_back({update.getNewExpAvg(), symbol("exp_avg")});
    updates.push_back({update.getNewExpAvgSq(), symbol("exp_avg_sq")});
    if (amsgrad)
      updates.push_back({update.getNewMaxExpAvgSq(), symbol("max_exp_avg_sq")});
  }

  // The step counter advances by one.
  Value one = ConstantOp::create(
      builder, loc, DenseElementsAttr::get(stepType, builder.getI64IntegerAttr(1)));
  updates.push_back({AddOp::create(builder, loc, stepCounter, one),
                     FlatSymbolRefAttr::get(context, "optimizer.step")});

  // A skipped step (gradients not finite under loss scaling) leaves every
  // optimizer update -- parameters, optimizer state, the step counter and so
  // the schedule -- at its old value. Buffers (BatchNorm statistics, the
  // loss scale itself) are updated by the forward either way.
  if (skipStep) {
    for (BlockArgument arg : body.getArguments())
      if (auto symbol = step.getArgAttrOfType<FlatSymbolRefAttr>(
              arg.getArgNumber(), kParameterAttrName))
        argumentOf[symbol] = arg;
    for (auto &[value, symbol] :
         llvm::drop_begin(updates, firstOptimizerUpdate)) {
      Value old = argumentOf.lookup(symbol);
      value = WhereOp::create(builder, loc, value.getType(), skipStep, old,
                              value);
    }
  }

  // New results: outputs (the loss first), then every update.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto &[value, attrs] : outputs) {
    results.push_back(value);
    resultAttrs.push_back(attrs);
  }
  for (auto &[value, symbol] : updates) {
    results.push_back(value);
    resultAttrs.push_back(
        builder.getDictionaryAttr(builder.getNamedAttr(kUpdateAttrName, symbol)));
  }
  Operation *newReturn =
      func::ReturnOp::create(builder, returnOp.getLoc(), results);
  returnOp.erase();
  for (Operation *op = lastBackwardOp ? lastBackwardOp->getNextNode()
                                      : &body.front();
       op != newReturn; op = op->getNextNode())
    op->setLoc(eff::withProvenance(op->getLoc(), eff::Provenance::Optimizer));
  // A rank's block of a summed gradient (stage 1) is gradient memory, as
  // the reduce-scattered block of stage 2 is (the memory report counts it
  // so): the shard and the flattening that feeds it.
  auto asGradient = [](Operation *op) {
    op->setLoc(eff::withProvenance(op->getLoc(), eff::Provenance::Gradient));
  };
  for (Operation *shard : gradientShards) {
    asGradient(shard);
    for (Operation *op = shard->getOperand(0).getDefiningOp();
         isa_and_nonnull<ReshapeOp, PadOp>(op);
         op = op->getOperand(0).getDefiningOp())
      asGradient(op);
  }
  step.setType(builder.getFunctionType(step.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    step.setResultAttrs(i, attrs);
  step.setName(kTrainStepFuncName);
}
