// RUN: effopt-opt %s --eff-autodiff --eff-zero="world-size=2 bucket-bytes=2048" | FileCheck %s
// RUN: effopt-opt %s --eff-autodiff --eff-zero="world-size=2 bucket-bytes=2048" --eff-overlap-collectives | FileCheck %s --check-prefix=OVERLAP
// RUN: effopt-opt %s --eff-autodiff --eff-zero="world-size=2 min-buckets=5" | FileCheck %s --check-prefix=MIN
// RUN: effopt-opt %s --eff-autodiff --eff-zero="world-size=2 stage=2" | FileCheck %s --check-prefix=SCATTER

// A token mean with ignore_index (a GPT's loss) over a 2-layer MLP. The
// count of targets depends only on the labels: eff-zero computes it first,
// sums it with the weighted loss in a bucket of their own right after the
// forward, and weighs each gradient by this rank's count as soon as the
// backward produces it, so each gradient bucket's all-reduce sits in the
// backward, right after its last gradient; the sums are divided by the
// global count after them (as eff-grad-accum divides its micro-batches').
module {
  eff.parameter trainable @w1 : tensor<16x8xf32>
  eff.parameter trainable @b1 : tensor<16xf32>
  eff.parameter trainable @w2 : tensor<32x16xf32>
  func.func @forward(%w1: tensor<16x8xf32> {eff.parameter = @w1}, %b1: tensor<16xf32> {eff.parameter = @b1},
                     %w2: tensor<32x16xf32> {eff.parameter = @w2},
                     %x: tensor<4x8xf32> {eff.input = "x"}, %y: tensor<4xi64> {eff.input = "y"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %h = eff.linear %x, %w1, %b1 {transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %r = eff.relu %h : tensor<4x16xf32>
    %z = eff.linear %r, %w2 {transpose_b = true} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
    %loss = eff.softmax_cross_entropy mean, %z, %y {ignore_index = -100 : i64} : (tensor<4x32xf32>, tensor<4xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[Y:[a-z0-9]+]]: tensor<4xi64> {eff.input = "y"}
// The count first, before the forward.
// CHECK: %[[COUNTED:.*]] = eff.cmp ne, %[[Y]]
// CHECK-NEXT: %[[ONES:.*]] = eff.cast %[[COUNTED]]
// CHECK-NEXT: %[[COUNT:.*]] = eff.reduce_sum %[[ONES]]
// CHECK-NEXT: %[[HAS:.*]] = eff.cmp gt, %[[COUNT]]
// CHECK-NEXT: eff.linear
// The loss bucket (count, weighted loss) right after the loss.
// CHECK: %[[LOSS:.*]] = eff.softmax_cross_entropy
// CHECK-NEXT: %[[LW:.*]] = eff.mul %[[LOSS]], %[[COUNT]]
// CHECK-NEXT: %[[LW0:.*]] = eff.where %[[HAS]], %[[LW]]
// CHECK-NEXT: %[[LSUM:.*]]:2 = eff.all_reduce %[[COUNT]], %[[LW0]] {world_size = 2 : i64} : tensor<f32>, tensor<f32>
// The backward; w2's gradient (2 KiB, a bucket) weighed, summed and
// divided as soon as it is final, before the rest of the backward.
// CHECK: eff.softmax_cross_entropy_grad
// CHECK: %[[DW2:.*]] = eff.linear {{.*}} {transpose_a = true} : (tensor<4x32xf32>, tensor<4x16xf32>) -> tensor<32x16xf32>
// CHECK-NEXT: %[[W2W:.*]] = eff.mul %[[DW2]], %[[COUNT]]
// CHECK-NEXT: %[[W2W0:.*]] = eff.where %[[HAS]], %[[W2W]]
// CHECK-NEXT: %[[W2SUM:.*]] = eff.all_reduce %[[W2W0]] {world_size = 2 : i64} : tensor<32x16xf32>
// CHECK-NEXT: %[[W2MEAN:.*]] = eff.div %[[W2SUM]], %[[LSUM]]#0
// CHECK-NEXT: eff.constant
// CHECK-NEXT: eff.cmp gt
// CHECK: %[[DW1:.*]] = eff.linear {{.*}} -> tensor<16x8xf32>
// CHECK: %[[DB1:.*]] = eff.reduce_sum {{.*}} -> tensor<16xf32>
// CHECK: %[[W1SUM:.*]]:2 = eff.all_reduce %{{.*}}, %{{.*}} {world_size = 2 : i64} : tensor<16x8xf32>, tensor<16xf32>
// CHECK-NEXT: %[[W1MEAN:.*]] = eff.div %[[W1SUM]]#0, %[[LSUM]]#0
// CHECK-NEXT: %[[B1MEAN:.*]] = eff.div %[[W1SUM]]#1, %[[LSUM]]#0
// CHECK-NEXT: %[[LMEAN:.*]] = eff.div %[[LSUM]]#1, %[[LSUM]]#0
// CHECK-NEXT: return %[[LMEAN]], %[[W1MEAN]], %[[B1MEAN]], %[[W2MEAN]]

// Overlapped: the loss bucket moves while the backward of the loss runs and
// is waited for after w2's bucket starts; w2's moves while w1's gradients
// are computed and is waited for (and divided) after w1's starts.
// OVERLAP: %[[LSTART:.*]]:2 = eff.all_reduce_start %{{.*}}, %{{.*}} {world_size = 2 : i64} : tensor<f32>, tensor<f32>
// OVERLAP: eff.softmax_cross_entropy_grad
// OVERLAP: %[[W2START:.*]] = eff.all_reduce_start %{{.*}} {world_size = 2 : i64} : tensor<32x16xf32>
// OVERLAP-NEXT: %[[LSUM:.*]]:2 = eff.wait %[[LSTART]]#0, %[[LSTART]]#1
// OVERLAP: eff.linear {{.*}} -> tensor<16x8xf32>
// OVERLAP: %[[W1START:.*]]:2 = eff.all_reduce_start %{{.*}}, %{{.*}} {world_size = 2 : i64} : tensor<16x8xf32>, tensor<16xf32>
// OVERLAP-NEXT: %[[W2SUM:.*]] = eff.wait %[[W2START]] : tensor<32x16xf32>
// OVERLAP-NEXT: eff.div %[[W2SUM]], %[[LSUM]]#0
// OVERLAP-NEXT: eff.wait %[[W1START]]#0, %[[W1START]]#1
// OVERLAP: return

// min-buckets=5: 2048 + 512 + 64 bytes of gradients in buckets of at most
// ceil(2624 / 5) = 525 bytes (the 25 MiB default alone would make one):
// w2's (larger, a bucket of its own), then w1's, then b1's.
// MIN: eff.all_reduce %{{.*}}, %{{.*}} {world_size = 2 : i64} : tensor<f32>, tensor<f32>
// MIN: eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<32x16xf32>
// MIN: eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<16x8xf32>
// MIN: eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<16xf32>
// MIN-NOT: eff.all_reduce

// Stage 2: the weighted gradients are reduce-scattered, each right after
// it is final; the shards are divided by the global count.
// SCATTER: %[[LSUM:.*]]:2 = eff.all_reduce
// SCATTER: eff.mul %{{.*}}, %{{.*}} : (tensor<32x16xf32>, tensor<f32>)
// SCATTER: %[[R2:.*]] = eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<512xf32> -> tensor<256xf32>
// SCATTER-NEXT: %[[S2:.*]] = eff.div %[[R2]], %[[LSUM]]#0
// SCATTER: eff.cmp gt
// SCATTER: %[[R0:.*]] = eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<128xf32> -> tensor<64xf32>
// SCATTER-NEXT: %[[S0:.*]] = eff.div %[[R0]], %[[LSUM]]#0
// SCATTER: %[[R1:.*]] = eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// SCATTER-NEXT: %[[S1:.*]] = eff.div %[[R1]], %[[LSUM]]#0
// SCATTER-NEXT: %[[LMEAN:.*]] = eff.div %[[LSUM]]#1, %[[LSUM]]#0
// SCATTER-NEXT: return %[[LMEAN]], %[[S0]], %[[S1]], %[[S2]] : tensor<f32>, tensor<64xf32>, tensor<8xf32>, tensor<256xf32>
