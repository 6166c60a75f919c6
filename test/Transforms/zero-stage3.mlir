// RUN: effopt-opt %s --eff-zero="world-size=2 stage=3" | FileCheck %s
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=3 keep-gathered=true" | FileCheck %s --check-prefix=KEEP
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=3" --eff-optimizer="optimizer=adamw" --canonicalize --cse | FileCheck %s --check-prefix=OPT
// RUN: effopt-opt %s --eff-zero="world-size=1 stage=3" | FileCheck %s --check-prefix=ONE

// The joint step as eff-autodiff leaves it: loss = sum((x @ W^T) * b), W of
// 3x2 (6 elements, 3 per rank), b of 3 (2 per rank: padded to 4), a frozen
// scale f. The backward reads W (a backward op) and b (a recomputed forward
// op, tagged as eff-remat tags its clones).
module {
  eff.parameter trainable @W : tensor<3x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  eff.parameter trainable @b : tensor<3xf32> = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  eff.parameter frozen @f : tensor<3xf32> = dense<2.0> : tensor<3xf32>
  func.func @forward_backward(%W: tensor<3x2xf32> {eff.parameter = @W},
                              %b: tensor<3xf32> {eff.parameter = @b},
                              %f: tensor<3xf32> {eff.parameter = @f},
                              %x: tensor<4x2xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<3x2xf32> {eff.gradient = @W},
          tensor<3xf32> {eff.gradient = @b}) {
    %y = eff.linear %x, %W {transpose_b = true} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32> loc("/fc/Gemm")
    %yb = eff.mul %y, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> loc("/Mul")
    %yf = eff.mul %yb, %f : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> loc("/Mul_1")
    %loss = eff.reduce_sum %yf {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
    %seed = eff.constant {eff.loss_seed} dense<1.0> : tensor<f32>
    %gyf = eff.broadcast_to %seed : tensor<f32> to tensor<4x3xf32> loc(fused<"eff.backward">["/ReduceSum"])
    %gyb = eff.mul %gyf, %f : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> loc(fused<"eff.backward">["/Mul_1"])
    %y2 = eff.linear %x, %W {transpose_b = true} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32> loc(fused<"eff.recomputed">["/fc/Gemm"])
    %gy = eff.mul %gyb, %b {eff.recomputed} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> loc("/Mul")
    %gbfull = eff.mul %gyb, %y2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc(fused<"eff.backward">["/Mul"])
    %gb = eff.reduce_sum %gbfull {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32> loc(fused<"eff.gradient">["/Mul"])
    %gW = eff.linear %gy, %x {transpose_a = true} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc(fused<"eff.gradient">["/fc/Gemm"])
    return %loss, %gW, %gb : tensor<f32>, tensor<3x2xf32>, tensor<3xf32>
  }
}

// Every trainable parameter becomes this rank's 1-D shard, declared with
// its whole shape and whole initial value; the frozen one stays whole.
// CHECK: module attributes {eff.world_size = 2 : i64, eff.zero_stage = 3 : i64}
// CHECK: eff.parameter trainable @W : tensor<3xf32> = dense<{{.*}}> : tensor<3x2xf32> {eff.shard_of = array<i64: 3, 2>}
// CHECK: eff.parameter trainable @b : tensor<2xf32> = dense<{{.*}}> : tensor<3xf32> {eff.shard_of = array<i64: 3>}
// CHECK: eff.parameter frozen @f : tensor<3xf32> = dense<2.000000e+00> : tensor<3xf32>{{$}}
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {eff.parameter = @W}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2xf32> {eff.parameter = @b}
// CHECK-SAME: %[[F:[a-z0-9]+]]: tensor<3xf32> {eff.parameter = @f}
// CHECK-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<3xf32> {eff.gradient = @W}, tensor<2xf32> {eff.gradient = @b})
// The forward: each parameter gathered right before its first reader,
// unpadded and reshaped; the frozen one read as it is.
// CHECK: %[[WALL:.*]] = eff.all_gather %[[W]] {world_size = 2 : i64} : tensor<3xf32> -> tensor<6xf32>
// CHECK-NEXT: %[[WF:.*]] = eff.reshape %[[WALL]] : tensor<6xf32> to tensor<3x2xf32>
// CHECK-NEXT: eff.linear %{{.*}}, %[[WF]]
// CHECK-NEXT: %[[BALL:.*]] = eff.all_gather %[[B]] {world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[BF:.*]] = eff.slice %[[BALL]] {limits = array<i64: 3>, starts = array<i64: 0>, strides = array<i64: 1>} : tensor<4xf32> -> tensor<3xf32>
// CHECK-NEXT: eff.mul %{{.*}}, %[[BF]]
// CHECK-NEXT: eff.mul %{{.*}}, %[[F]]
// The backward: gathered again before its first backward (or recomputed)
// reader, tagged eff.recomputed (CSE keeps the copies apart).
// CHECK: eff.mul %{{.*}}, %[[F]]
// CHECK-NEXT: %[[WALL2:.*]] = eff.all_gather %[[W]] {eff.recomputed, world_size = 2 : i64}
// CHECK-NEXT: %[[WB:.*]] = eff.reshape %[[WALL2]] {eff.recomputed}
// CHECK-NEXT: eff.linear %{{.*}}, %[[WB]]
// CHECK-NEXT: %[[BALL2:.*]] = eff.all_gather %[[B]] {eff.recomputed, world_size = 2 : i64}
// CHECK-NEXT: %[[BB:.*]] = eff.slice %[[BALL2]]
// CHECK-NEXT: eff.mul %{{.*}}, %[[BB]] {eff.recomputed}
// The gradients are reduce-scattered as in stage 2, each as soon as it is
// final (b's first, in the middle of the backward).
// CHECK: %[[GB:.*]] = eff.reduce_sum
// CHECK: eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
// CHECK: eff.linear %{{.*}}, %{{.*}} {transpose_a = true}
// CHECK: eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>

// keep-gathered: one gather per parameter, read by the forward and the
// backward.
// KEEP-LABEL: func.func @forward_backward(
// KEEP-COUNT-2: eff.all_gather
// KEEP-NOT: eff.all_gather
// KEEP: return

// The optimizer updates the shards in place: its state is sharded like the
// parameter, and nothing is gathered after the update.
// OPT-DAG: eff.parameter optimizer_state @optimizer.W.exp_avg : tensor<3xf32> = dense<0.000000e+00> : tensor<3xf32> {eff.shard_of = array<i64: 3, 2>}
// OPT-DAG: eff.parameter optimizer_state @optimizer.b.exp_avg_sq : tensor<2xf32> = dense<0.000000e+00> : tensor<2xf32> {eff.shard_of = array<i64: 3>}
// OPT-LABEL: func.func @train_step(
// OPT-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {eff.parameter = @W}
// OPT-COUNT-4: eff.all_gather
// OPT-NOT: eff.all_gather
// OPT: %[[NEW:[a-z_0-9]+]], %{{.*}}, %{{.*}} = eff.adam_update %[[W]], %{{.*}} : (tensor<3xf32>, tensor<3xf32>,
// OPT-NOT: eff.all_gather
// OPT: return %{{.*}}, %[[NEW]], %{{.*}} : tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xf32>

// One rank: nothing to shard.
// ONE-NOT: eff.all_gather
// ONE: eff.parameter trainable @W : tensor<3x2xf32>
