// RUN: effopt-opt %s --eff-autodiff --eff-zero="world-size=2 stage=1" --eff-chunk-cross-entropy="chunks=2" | FileCheck %s --check-prefix=STAGE1
// RUN: effopt-opt %s --eff-autodiff --eff-zero="world-size=2 stage=3" --eff-chunk-cross-entropy="chunks=2" | FileCheck %s --check-prefix=STAGE3

// With data parallelism. eff-zero sums the loss over the ranks (with the
// count of targets) in the forward, right after the loss; the chunks move
// that all-reduce after them, where the loss is now defined.
// STAGE1-LABEL: func.func @forward_backward
// STAGE1-NOT: eff.all_reduce
// STAGE1: %[[LOSS1:.*]] = eff.softmax_cross_entropy sum, %{{.*}} : (tensor<5x32xf32>, tensor<5xi64>) -> tensor<f32>
// STAGE1: eff.softmax_cross_entropy_grad sum
// STAGE1: %[[LOSS2:.*]] = eff.softmax_cross_entropy sum, %{{.*}} : (tensor<5x32xf32>, tensor<5xi64>) -> tensor<f32>
// STAGE1: eff.add %[[LOSS1]], %[[LOSS2]]
// STAGE1: eff.softmax_cross_entropy_grad sum
// STAGE1: eff.all_reduce %{{.*}}, %{{.*}} {world_size = 2 : i64} : tensor<f32>, tensor<f32>
// STAGE1-NOT: softmax_cross_entropy

// Stage 3 gathers the head for the forward and again for the backward; the
// chunks compute both the logits and dA with the forward's gathered copy,
// and the backward's gather, which nothing reads any more, is gone.
// STAGE3-LABEL: func.func @forward_backward
// STAGE3: eff.all_gather %arg0
// STAGE3: %[[HEAD:.*]] = eff.all_gather %arg1
// STAGE3-NOT: eff.all_gather
// STAGE3: eff.softmax_cross_entropy sum
// STAGE3-NOT: eff.all_gather
// STAGE3: eff.softmax_cross_entropy sum
// STAGE3-NOT: eff.all_gather
// STAGE3: eff.all_reduce %{{.*}}, %{{.*}} {world_size = 2 : i64} : tensor<f32>, tensor<f32>
// STAGE3-NOT: eff.all_gather %arg1
// STAGE3: eff.reduce_scatter

module {
  eff.parameter trainable @w1 : tensor<16x8xf32>
  eff.parameter trainable @head : tensor<32x16xf32>
  func.func @forward(%w1: tensor<16x8xf32> {eff.parameter = @w1},
                     %head: tensor<32x16xf32> {eff.parameter = @head},
                     %x: tensor<2x5x8xf32> {eff.input = "x"}, %y: tensor<2x5xi64> {eff.input = "y"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %ht = eff.transpose %w1 {permutation = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
    %h = eff.matmul %x, %ht : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
    %r = eff.tanh %h : tensor<2x5x16xf32>
    %r2 = eff.reshape %r : tensor<2x5x16xf32> to tensor<10x16xf32>
    %z = eff.linear %r2, %head {transpose_b = true} : (tensor<10x16xf32>, tensor<32x16xf32>) -> tensor<10x32xf32>
    %y2 = eff.reshape %y : tensor<2x5xi64> to tensor<10xi64>
    %loss = eff.softmax_cross_entropy mean, %z, %y2 {ignore_index = -100 : i64} : (tensor<10x32xf32>, tensor<10xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
