//===- EffDialect.h - the eff dialect ---------------------------*- C++ -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFDIALECT_H
#define EFFOPT_DIALECT_EFF_IR_EFFDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "effopt/Dialect/Eff/IR/EffOpsDialect.h.inc"

namespace effopt::eff {
/// Function argument attribute naming the `eff.parameter` an argument binds.
inline constexpr llvm::StringLiteral kParameterAttrName = "eff.parameter";
/// Function argument attribute naming the ONNX graph input an argument binds.
inline constexpr llvm::StringLiteral kInputAttrName = "eff.input";
/// Function result attribute naming the ONNX graph output a result is.
inline constexpr llvm::StringLiteral kOutputAttrName = "eff.output";
/// Function result attribute naming the buffer a result is the new value of.
inline constexpr llvm::StringLiteral kBufferUpdateAttrName = "eff.buffer_update";
/// Name of the function holding the model's forward pass and loss.
inline constexpr llvm::StringLiteral kForwardFuncName = "forward";
/// Name of the joint forward/backward function `eff-autodiff` builds.
inline constexpr llvm::StringLiteral kForwardBackwardFuncName =
    "forward_backward";
/// Function result attribute naming the persistent state (parameter, buffer
/// or optimizer state) a `train_step` result is the new value of.
inline constexpr llvm::StringLiteral kUpdateAttrName = "eff.update";
/// Name of the training step `eff-optimizer` builds.
inline constexpr llvm::StringLiteral kTrainStepFuncName = "train_step";
/// Function result attribute naming the parameter a result is the gradient of.
inline constexpr llvm::StringLiteral kGradientAttrName = "eff.gradient";
/// Unit attribute on the constant `eff-autodiff` seeds the backward with
/// (d loss / d loss = 1); `eff-loss-scaling` replaces it by the loss scale.
inline constexpr llvm::StringLiteral kLossSeedAttrName = "eff.loss_seed";
/// Result attribute of @forward_backward marking the boolean "skip this
/// optimizer step" (gradients not finite under loss scaling); eff-optimizer
/// then leaves parameters, optimizer state and the step counter unchanged.
inline constexpr llvm::StringLiteral kSkipStepAttrName = "eff.skip_step";
/// Unit attribute of the scf.for `eff-grad-accum` builds: one iteration per
/// micro-batch (dropout mixes the iteration into its mask; the CPU lowering
/// treats the loop's body like the step's own body).
inline constexpr llvm::StringLiteral kAccumulationLoopAttrName =
    "eff.accumulation";
/// Unit attribute of an op eff-remat cloned into the backward (a
/// recomputation); the budget search counts its FLOPs.
inline constexpr llvm::StringLiteral kRecomputedAttrName = "eff.recomputed";

// The step ABI (declared in EffBase.td as the dialect's discardable
// attributes, verified by the dialect).
/// Module: "forward" for an inference function (absent: a training step).
inline constexpr llvm::StringLiteral kStepKindAttrName =
    EffDialect::StepKindAttrHelper::getNameStr();
/// The value of `eff.step_kind` for an inference function.
inline constexpr llvm::StringLiteral kForwardStepKind = "forward";
/// Module: bytes of the state region.
inline constexpr llvm::StringLiteral kStateBytesAttrName =
    EffDialect::StateBytesAttrHelper::getNameStr();
/// Module: bytes of the io region.
inline constexpr llvm::StringLiteral kIoBytesAttrName =
    EffDialect::IoBytesAttrHelper::getNameStr();
/// Module: offset of the loss in the io region (training steps).
inline constexpr llvm::StringLiteral kLossOffsetAttrName =
    EffDialect::LossOffsetAttrHelper::getNameStr();
/// Module: the target's alignment of every offset and region size.
inline constexpr llvm::StringLiteral kAlignmentAttrName =
    EffDialect::AlignmentAttrHelper::getNameStr();
/// Argument or result of the step: the region it lives in.
inline constexpr llvm::StringLiteral kRegionAttrName =
    EffDialect::RegionAttrHelper::getNameStr();
/// The two regions of the step ABI besides the arena.
inline constexpr llvm::StringLiteral kStateRegion = "state";
inline constexpr llvm::StringLiteral kIoRegion = "io";
/// Argument or result of the step: its byte offset in its region.
inline constexpr llvm::StringLiteral kOffsetAttrName =
    EffDialect::OffsetAttrHelper::getNameStr();
/// Result of the step: the argument it is the new value of.
inline constexpr llvm::StringLiteral kUpdatesArgAttrName =
    EffDialect::UpdatesArgAttrHelper::getNameStr();
/// Entry function: the index of its arena argument.
inline constexpr llvm::StringLiteral kArenaArgAttrName =
    EffDialect::ArenaArgAttrHelper::getNameStr();
/// Entry function: the arena bytes the memory plan needs.
inline constexpr llvm::StringLiteral kArenaBytesAttrName =
    EffDialect::ArenaBytesAttrHelper::getNameStr();
/// Module: the ZeRO stage eff-zero compiled for (1: optimizer state
/// sharded, 2: gradients too); absent for stage 0.
inline constexpr llvm::StringLiteral kZeroStageAttrName = "eff.zero_stage";
/// Module: the ranks of the run (eff-zero).
inline constexpr llvm::StringLiteral kWorldSizeAttrName = "eff.world_size";
/// Module: eff-zero kept the collectives of a run of one rank
/// (one-rank-collectives), so the passes after it communicate (and shard,
/// into one shard) as at N > 1.
inline constexpr llvm::StringLiteral kOneRankCollectivesAttrName =
    "eff.one_rank_collectives";
/// Whether the step of `module` (after eff-zero) communicates: more than one
/// rank, or one rank with its collectives kept.
inline bool stepCommunicates(mlir::Operation *module) {
  auto world = module->getAttrOfType<mlir::IntegerAttr>(kWorldSizeAttrName);
  return (world && world.getInt() > 1) ||
         module->hasAttr(kOneRankCollectivesAttrName);
}
/// Optimizer state parameter: the shape of the whole tensor this rank holds
/// one 1/N shard of (flattened, zero-padded to a multiple of N), as a
/// DenseI64ArrayAttr.
inline constexpr llvm::StringLiteral kShardOfAttrName = "eff.shard_of";
} // namespace effopt::eff

#endif // EFFOPT_DIALECT_EFF_IR_EFFDIALECT_H
