// RUN: effopt-opt %s --eff-zero="world-size=2 stage=1" | FileCheck %s --check-prefix=MARK
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=1" --eff-optimizer="optimizer=adamw" | FileCheck %s --check-prefix=STAGE1
// RUN: effopt-opt %s --eff-zero="world-size=1 stage=1 one-rank-collectives=true" --eff-optimizer="optimizer=adamw" | FileCheck %s --check-prefix=KEPT
// RUN: effopt-opt %s --eff-zero="world-size=1 stage=1" --eff-optimizer="optimizer=adamw" | FileCheck %s --check-prefix=NOSHARD
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=2" | FileCheck %s --check-prefix=SCATTER
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=2" --eff-optimizer="optimizer=sgd momentum=0.9 clip-grad-norm=1.0" | FileCheck %s --check-prefix=STAGE2
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=2" --eff-loss-scaling --eff-optimizer="optimizer=sgd" | FileCheck %s --check-prefix=SCALED
// RUN: effopt-opt %s --eff-zero="world-size=1 stage=2" --eff-optimizer="optimizer=adamw" | FileCheck %s --check-prefix=ONE
// RUN: effopt-opt %s --eff-zero="world-size=1 stage=2 one-rank-collectives=true" --eff-loss-scaling --eff-optimizer="optimizer=sgd" | FileCheck %s --check-prefix=KEPTSCALED

// The joint step as eff-autodiff leaves it: loss = sum(w * x), with a
// parameter of 3 elements (not a multiple of 2 ranks).
module {
  eff.parameter trainable @w : tensor<3xf32>
  func.func @forward_backward(%w: tensor<3xf32> {eff.parameter = @w},
                              %x: tensor<3xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<3xf32> {eff.gradient = @w}) {
    %p = eff.mul %w, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %loss = eff.reduce_sum %p {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    %seed = eff.constant {eff.loss_seed} dense<1.0> : tensor<f32>
    %gb = eff.broadcast_to %seed : tensor<f32> to tensor<3xf32>
    %gw = eff.mul %gb, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    return %loss, %gw : tensor<f32>, tensor<3xf32>
  }
}

// Stage 1 sums the gradients as stage 0 and marks the module for the
// optimizer.
// MARK: module attributes {eff.world_size = 2 : i64, eff.zero_stage = 1 : i64}
// MARK: eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<f32>
// MARK: eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<3xf32>
// MARK-NOT: eff.reduce_scatter

// Stage 1 with AdamW: each state tensor is one rank's shard of the padded
// 4 elements (2 of them, recording the whole shape); the update runs on the
// shards of the parameter and of the summed gradient, and the updated
// shards are gathered, unpadded and reshaped into the whole parameter.
// STAGE1-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg : tensor<2xf32> = dense<0.000000e+00> : tensor<2xf32> {eff.shard_of = array<i64: 3>}
// STAGE1-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_sq : tensor<2xf32> = dense<0.000000e+00> : tensor<2xf32> {eff.shard_of = array<i64: 3>}
// STAGE1-DAG: eff.parameter optimizer_state @optimizer.step : tensor<i64>
// STAGE1-LABEL: func.func @train_step(
// STAGE1-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {eff.parameter = @w}
// STAGE1: eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<f32>
// STAGE1: %[[SUM:.*]] = eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<3xf32>
// STAGE1: %[[G:.*]] = eff.div %[[SUM]]
// STAGE1: %[[WPAD:.*]] = eff.pad %[[W]] {high = array<i64: 1>, low = array<i64: 0>{{.*}}} : tensor<3xf32> -> tensor<4xf32>
// STAGE1: %[[WSHARD:.*]] = eff.shard %[[WPAD]] {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
// STAGE1: %[[GPAD:.*]] = eff.pad %[[G]]
// STAGE1: %[[GSHARD:.*]] = eff.shard %[[GPAD]] {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
// STAGE1: %[[NEW:.*]], %{{.*}}, %{{.*}} = eff.adam_update %[[WSHARD]], %[[GSHARD]]
// STAGE1: %[[ALL:.*]] = eff.all_gather %[[NEW]] {world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
// STAGE1: %[[WHOLE:.*]] = eff.slice %[[ALL]] {limits = array<i64: 3>, starts = array<i64: 0>, strides = array<i64: 1>} : tensor<4xf32> -> tensor<3xf32>
// STAGE1: return %{{.*}}, %[[WHOLE]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<i64>

// Stage 2: the loss is all-reduced alone; the gradient is flattened, padded
// and reduce-scattered, and the step returns this rank's shard of it.
// SCATTER: module attributes {eff.world_size = 2 : i64, eff.zero_stage = 2 : i64}
// SCATTER-LABEL: func.func @forward_backward(
// SCATTER-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<2xf32> {eff.gradient = @w})
// SCATTER: %[[N:.*]] = eff.constant dense<2.000000e+00>
// SCATTER: %[[LSUM:.*]] = eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<f32>
// SCATTER: %[[PAD:.*]] = eff.pad %{{.*}} {high = array<i64: 1>, low = array<i64: 0>{{.*}}} : tensor<3xf32> -> tensor<4xf32>
// SCATTER: %[[MINE:.*]] = eff.reduce_scatter %[[PAD]] {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
// SCATTER: %[[G:.*]] = eff.div %[[MINE]], %[[N]]
// SCATTER: %[[LOSS:.*]] = eff.div %[[LSUM]], %[[N]]
// SCATTER: return %[[LOSS]], %[[G]] : tensor<f32>, tensor<2xf32>

// Stage 2 with clipping: the squares of this rank's gradient shard are
// summed over the ranks for the global norm; the update takes the clipped
// shard directly (no eff.shard of the gradient), the momentum buffer is a
// shard too.
// STAGE2: eff.parameter optimizer_state @optimizer.w.momentum_buffer : tensor<2xf32> {{.*}}{eff.shard_of = array<i64: 3>}
// STAGE2-LABEL: func.func @train_step(
// STAGE2: %[[G:.*]] = eff.reduce_scatter
// STAGE2: %[[SQ:.*]] = eff.reduce_sum
// STAGE2: %[[TOTAL:.*]] = eff.all_reduce %[[SQ]] {world_size = 2 : i64} : tensor<f32>
// STAGE2: eff.sqrt %[[TOTAL]]
// STAGE2: %[[CLIPPED:.*]] = eff.mul %{{.*}}, %{{.*}} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// STAGE2: %[[WSHARD:.*]] = eff.shard
// STAGE2: eff.sgd_update %[[WSHARD]], %[[CLIPPED]]
// STAGE2: eff.all_gather
// STAGE2-NOT: eff.shard

// Stage 2 under loss scaling: each rank unscales its shards; the overflow
// flag is summed over the ranks so every rank skips (and backs off) alike.
// SCALED: %[[FOUND:.*]], %{{.*}} = eff.unscale_gradients
// SCALED: %[[F:.*]] = eff.cast %[[FOUND]] : tensor<i1> to tensor<f32>
// SCALED: %[[ANY:.*]] = eff.all_reduce %[[F]] {world_size = 2 : i64} : tensor<f32>
// SCALED: %[[SKIP:.*]] = eff.cmp gt, %[[ANY]]
// SCALED: eff.update_loss_scale {{.*}}%[[SKIP]]
// The same at one rank with the collectives kept.
// KEPTSCALED: %[[FOUND:.*]], %{{.*}} = eff.unscale_gradients
// KEPTSCALED: %[[F:.*]] = eff.cast %[[FOUND]] : tensor<i1> to tensor<f32>
// KEPTSCALED: eff.all_reduce %[[F]] {world_size = 1 : i64} : tensor<f32>

// One rank: nothing is sharded.
// ONE: eff.parameter optimizer_state @optimizer.w.exp_avg : tensor<3xf32>
// ONE-NOT: eff.shard
// ONE-NOT: eff.all_gather

// One rank with its collectives kept: eff-optimizer shards into one shard
// (the whole flattened tensor) and gathers it back, as at N ranks.
// KEPT-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg : tensor<3xf32> = dense<0.000000e+00> : tensor<3xf32> {eff.shard_of = array<i64: 3>}
// KEPT-LABEL: func.func @train_step(
// KEPT: eff.all_reduce
// KEPT: %[[WSHARD:.*]] = eff.shard %{{.*}} {world_size = 1 : i64} : tensor<3xf32> -> tensor<3xf32>
// KEPT: %[[NEW:.*]], %{{.*}}, %{{.*}} = eff.adam_update %[[WSHARD]]
// KEPT: eff.all_gather %[[NEW]] {world_size = 1 : i64} : tensor<3xf32> -> tensor<3xf32>

// Without it one rank has neither sums nor shards.
// NOSHARD-LABEL: func.func @train_step(
// NOSHARD-NOT: eff.all_reduce
// NOSHARD-NOT: eff.shard
// NOSHARD-NOT: eff.all_gather
