// RUN: effopt-opt %s --eff-zero="world-size=2 stage=1" --eff-optimizer="optimizer=adamw8bit quant-block-size=4 min-8bit-size=0" | FileCheck %s --check-prefix=Q1
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=2 shard-unit=quant-block quant-block-size=4 min-8bit-size=0" --eff-optimizer="optimizer=adamw8bit quant-block-size=4 min-8bit-size=0" | FileCheck %s --check-prefix=Q2
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=3 shard-unit=quant-block quant-block-size=4 min-8bit-size=0" --eff-optimizer="optimizer=adamw8bit quant-block-size=4 min-8bit-size=0" | FileCheck %s --check-prefix=Q3
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=2 shard-unit=quant-block quant-block-size=4 min-8bit-size=8" --eff-optimizer="optimizer=adamw8bit quant-block-size=4 min-8bit-size=8" | FileCheck %s --check-prefix=SMALL

// Block-wise 8-bit state under ZeRO: a parameter of 6 elements in blocks of
// 4 (2 blocks, the second shorter) is cut into one whole block per rank:
// S = 4, the flattened tensor padded to 8. Each rank keeps the codes of its
// block and its one absmax.
module {
  eff.parameter trainable @w : tensor<6xf32>
  func.func @forward_backward(%w: tensor<6xf32> {eff.parameter = @w},
                              %x: tensor<6xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<6xf32> {eff.gradient = @w}) {
    %p = eff.mul %w, %x : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
    %loss = eff.reduce_sum %p {axes = array<i64: 0>} : tensor<6xf32> -> tensor<f32>
    return %loss, %x : tensor<f32>, tensor<6xf32>
  }
}

// Stage 1: the update runs on this rank's block of the parameter and of the
// summed gradient; the updated blocks are gathered into the whole.
// Q1-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_codes : tensor<4xi8> = dense<0> : tensor<4xi8> {eff.shard_of = array<i64: 6>}
// Q1-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_absmax : tensor<1xf32> = dense<0.000000e+00> : tensor<1xf32> {eff.shard_of = array<i64: 2>}
// Q1-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_sq_codes : tensor<4xi8> {{.*}} {eff.shard_of = array<i64: 6>}
// Q1-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_sq_absmax : tensor<1xf32> {{.*}} {eff.shard_of = array<i64: 2>}
// Q1-LABEL: func.func @train_step(
// Q1: %[[WPAD:.*]] = eff.pad %arg0 {high = array<i64: 2>, low = array<i64: 0>} : tensor<6xf32> -> tensor<8xf32>
// Q1: %[[W:.*]] = eff.shard %[[WPAD]] {world_size = 2 : i64} : tensor<8xf32> -> tensor<4xf32>
// Q1: %[[GPAD:.*]] = eff.pad
// Q1: %[[G:.*]] = eff.shard %[[GPAD]] {world_size = 2 : i64} : tensor<8xf32> -> tensor<4xf32>
// Q1: %[[NEW:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = eff.adam8bit_update %[[W]], %[[G]], {{.*}} {block_size = 4 : i64, decoupled} : (tensor<4xf32>, tensor<4xf32>, tensor<4xi8>, tensor<1xf32>, tensor<4xi8>, tensor<1xf32>, tensor<f32>, tensor<i64>)
// Q1: %[[ALL:.*]] = eff.all_gather %[[NEW]] {world_size = 2 : i64} : tensor<4xf32> -> tensor<8xf32>
// Q1: eff.slice %[[ALL]] {limits = array<i64: 6>, {{.*}}} : tensor<8xf32> -> tensor<6xf32>

// Stage 2: eff-zero (shard-unit=quant-block) reduce-scatters the gradient
// into the same whole blocks.
// Q2-LABEL: func.func @train_step(
// Q2: %[[RS:.*]] = eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<8xf32> -> tensor<4xf32>
// Q2: %[[G:.*]] = eff.div %[[RS]]
// Q2: eff.adam8bit_update %{{.*}}, %[[G]], {{.*}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xi8>, tensor<1xf32>,

// Stage 3: the parameter itself is this rank's block, updated in place.
// Q3: eff.parameter trainable @w : tensor<4xf32> {eff.shard_of = array<i64: 6>}
// Q3-LABEL: func.func @train_step(
// Q3: eff.all_gather %arg0 {world_size = 2 : i64} : tensor<4xf32> -> tensor<8xf32>
// Q3: %[[NEW:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = eff.adam8bit_update %arg0,
// Q3-NOT: eff.all_gather
// Q3: return %{{.*}}, %[[NEW]],

// A tensor under min-8bit-size keeps fp32 moments and is cut by element:
// S = 3, no padding.
// SMALL-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg : tensor<3xf32> {{.*}} {eff.shard_of = array<i64: 6>}
// SMALL-LABEL: func.func @train_step(
// SMALL: eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
// SMALL: eff.adam_update
