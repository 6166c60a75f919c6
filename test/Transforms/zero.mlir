// RUN: effopt-opt %s --eff-zero="world-size=2" | FileCheck %s
// RUN: effopt-opt %s --eff-zero="world-size=1" | FileCheck %s --check-prefix=ONE
// RUN: effopt-opt %s --eff-zero="world-size=1 one-rank-collectives=true" | FileCheck %s --check-prefix=KEPT
// RUN: effopt-opt %s --eff-zero="world-size=4" --eff-loss-scaling | FileCheck %s --check-prefix=SCALED
// RUN: effopt-opt %s --eff-zero="world-size=2 bucket-bytes=4" | FileCheck %s --check-prefix=BUCKETS
// RUN: effopt-opt %s --eff-zero="world-size=2" --convert-eff-to-linalg | FileCheck %s --check-prefix=LOWER

// The joint step as eff-autodiff leaves it: loss = sum(w * x).
module {
  eff.parameter trainable @w : tensor<4xf32>
  eff.parameter buffer @running : tensor<4xf32>
  func.func @forward_backward(%w: tensor<4xf32> {eff.parameter = @w},
                              %running: tensor<4xf32> {eff.parameter = @running},
                              %x: tensor<4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.buffer_update = @running},
          tensor<4xf32> {eff.gradient = @w}) {
    %p = eff.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %loss = eff.reduce_sum %p {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    %seed = eff.constant {eff.loss_seed} dense<1.0> : tensor<f32>
    %gb = eff.broadcast_to %seed : tensor<f32> to tensor<4xf32>
    %gw = eff.mul %gb, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %loss, %x, %gw : tensor<f32>, tensor<4xf32>, tensor<4xf32>
  }
}

// The loss is summed over the ranks in a bucket of its own as soon as the
// forward has it, the gradient in the next as soon as the gradient is
// final; both divided by N; the buffer update stays per rank.
// CHECK: module attributes {eff.world_size = 2 : i64}
// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[N:.*]] = eff.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[LOSS:.*]] = eff.reduce_sum
// CHECK-NEXT: %[[LSUM:.*]] = eff.all_reduce %[[LOSS]] {world_size = 2 : i64} : tensor<f32>
// CHECK-NEXT: eff.constant {eff.loss_seed}
// CHECK: %[[GW:.*]] = eff.mul %{{.*}}, %[[X:[a-z0-9]+]]
// CHECK-NEXT: %[[GSUM:.*]] = eff.all_reduce %[[GW]] {world_size = 2 : i64} : tensor<4xf32>
// CHECK-NEXT: %[[GMEAN:.*]] = eff.div %[[GSUM]], %[[N]]
// CHECK-NEXT: %[[LMEAN:.*]] = eff.div %[[LSUM]], %[[N]]
// CHECK-NEXT: return %[[LMEAN]], %[[X]], %[[GMEAN]]
// CHECK-NOT: eff.all_reduce

// A bucket closes before the tensor that would take it past bucket-bytes
// (here every gradient is a bucket of its own; the loss always is).
// BUCKETS: %[[LOSS:.*]] = eff.reduce_sum
// BUCKETS-NEXT: %[[LSUM:.*]] = eff.all_reduce %[[LOSS]] {world_size = 2 : i64} : tensor<f32>
// BUCKETS-NEXT: eff.constant {eff.loss_seed}
// BUCKETS: %[[GW:.*]] = eff.mul
// BUCKETS-NEXT: eff.all_reduce %[[GW]] {world_size = 2 : i64} : tensor<4xf32>

// One rank: nothing to sum; the world size is still recorded.
// ONE: module attributes {eff.world_size = 1 : i64}
// ONE-NOT: eff.all_reduce

// One rank with its collectives kept (one-rank-collectives): the sums of N
// ranks, over one, divided by 1; the module says so for the passes after.
// KEPT: module attributes {eff.one_rank_collectives, eff.world_size = 1 : i64}
// KEPT: %[[DIVISOR:.*]] = eff.constant dense<1.000000e+00> : tensor<f32>
// KEPT: %[[LSUM:.*]] = eff.all_reduce %{{.*}} {world_size = 1 : i64} : tensor<f32>
// KEPT: %[[GSUM:.*]] = eff.all_reduce %{{.*}} {world_size = 1 : i64} : tensor<4xf32>
// KEPT-NEXT: eff.div %[[GSUM]], %[[DIVISOR]]
// KEPT-NEXT: eff.div %[[LSUM]], %[[DIVISOR]]

// Loss scaling unscales the summed (scaled) gradients: an overflow on any
// rank reaches every rank.
// SCALED: eff.all_reduce %{{.*}} {world_size = 4 : i64} : tensor<f32>
// SCALED: %[[SUM:.*]] = eff.all_reduce %{{.*}} {world_size = 4 : i64} : tensor<4xf32>
// SCALED: %[[MEAN:.*]] = eff.div %[[SUM]]
// SCALED: eff.unscale_gradients %{{.*}}, %[[MEAN]]

// The CPU lowering: each bucket in one buffer of its own, each tensor a
// contiguous view of it (the one of a rank-0 tensor collapsed to a
// scalar), summed in place by one call of the runtime
// (zero-counted-mean.mlir: a bucket of two tensors).
// LOWER: func.func private @effrt_allreduce_sum_f32(!llvm.ptr, i64)
// LOWER: %[[BUF:.*]] = memref.alloc() {eff.collective_buffer} : memref<1xf32>
// LOWER: %[[V0:.*]] = memref.subview %[[BUF]][0] [1] [1]
// LOWER: %[[S0:.*]] = memref.collapse_shape %[[V0]] []
// LOWER: bufferization.materialize_in_destination %{{.*}} in writable %[[S0]]
// LOWER: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// LOWER: %[[PTR:.*]] = llvm.inttoptr
// LOWER: %[[COUNT:.*]] = arith.constant 1 : i64
// LOWER: call @effrt_allreduce_sum_f32(%[[PTR]], %[[COUNT]])
// LOWER: bufferization.to_tensor %[[S0]] restrict writable
// LOWER: %[[GBUF:.*]] = memref.alloc() {eff.collective_buffer} : memref<4xf32>
// LOWER: bufferization.materialize_in_destination %{{.*}} in writable %[[GBUF]]
// LOWER: %[[GCOUNT:.*]] = arith.constant 4 : i64
// LOWER: call @effrt_allreduce_sum_f32(%{{.*}}, %[[GCOUNT]])
// LOWER: bufferization.to_tensor %[[GBUF]] restrict writable
