// RUN: effopt-opt %s --eff-autodiff --eff-chunk-cross-entropy="chunks=3" --split-input-file | FileCheck %s
// RUN: effopt-opt %s --eff-autodiff --eff-chunk-cross-entropy="chunks=1" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: effopt-opt %s --eff-autodiff --eff-chunk-cross-entropy --split-input-file | FileCheck %s --check-prefix=AUTO

// A classifier with a bias over 10 rows (2 x 5, reshaped), mean loss with
// ignore_index, in 3 chunks of 4, 4 and 2 rows, where the backward
// starts. Each chunk computes its logits from its rows of the (saved)
// input, its summed loss and its gradient seeded with 1 / (count of
// non-ignored targets); dA is the concatenation of the chunks' dA, dW and
// the bias gradient are sums over the chunks (dW accumulated in the GEMM's
// C), the loss the chunks' sum over the count. The forward's logits and
// loss are gone.
// OFF: eff.softmax_cross_entropy mean
// OFF: eff.softmax_cross_entropy_grad mean
// OFF-NOT: eff.slice
// AUTO-NOT: eff.slice
module {
  eff.parameter trainable @w1 : tensor<16x8xf32>
  eff.parameter trainable @head : tensor<32x16xf32>
  eff.parameter trainable @head_bias : tensor<32xf32>
  // CHECK-LABEL: func.func @forward_backward(
  // CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<16x8xf32> {eff.parameter = @w1}, %[[HEAD:[a-z0-9]+]]: tensor<32x16xf32> {eff.parameter = @head}, %[[HB:[a-z0-9]+]]: tensor<32xf32> {eff.parameter = @head_bias}
  // CHECK-SAME: %[[Y:[a-z0-9]+]]: tensor<2x5xi64> {eff.input = "y"}
  func.func @forward(%w1: tensor<16x8xf32> {eff.parameter = @w1},
                     %head: tensor<32x16xf32> {eff.parameter = @head},
                     %hb: tensor<32xf32> {eff.parameter = @head_bias},
                     %x: tensor<2x5x8xf32> {eff.input = "x"}, %y: tensor<2x5xi64> {eff.input = "y"})
      -> (tensor<f32> {eff.output = "loss"}) {
    // CHECK-NOT: eff.softmax_cross_entropy mean
    // CHECK: %[[A:.*]] = eff.reshape %{{.*}} : tensor<2x5x16xf32> to tensor<10x16xf32>
    // CHECK: %[[LABELS:.*]] = eff.reshape %[[Y]] : tensor<2x5xi64> to tensor<10xi64>
    // CHECK: %[[SL:.*]] = eff.save %[[LABELS]]
    // CHECK: %[[SA:.*]] = eff.save %[[A]] : tensor<10x16xf32>
    // CHECK: %[[SEED:.*]] = eff.constant {eff.loss_seed}
    // CHECK: %[[IGNORE:.*]] = eff.constant dense<-100> : tensor<i64>
    // CHECK: %[[COUNTED:.*]] = eff.cmp ne, %[[SL]], %[[IGNORE]]
    // CHECK: %[[ONES:.*]] = eff.cast %[[COUNTED]] : tensor<10xi1> to tensor<10xf32>
    // CHECK: %[[COUNT:.*]] = eff.reduce_sum %[[ONES]] {axes = array<i64: 0>} : tensor<10xf32> -> tensor<f32>
    // CHECK: %[[DSEED:.*]] = eff.div %[[SEED]], %[[COUNT]]
    // Chunk 1: rows 0..4.
    // CHECK: %[[A1:.*]] = eff.slice %[[SA]] {limits = array<i64: 4, 16>, starts = array<i64: 0, 0>
    // CHECK: %[[Z1:.*]] = eff.linear %[[A1]], %[[HEAD]], %[[HB]] {transpose_b = true} : (tensor<4x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<4x32xf32>
    // CHECK: %[[L1:.*]] = eff.slice %[[SL]] {limits = array<i64: 4>, starts = array<i64: 0>
    // CHECK: %[[LOSS1:.*]] = eff.softmax_cross_entropy sum, %[[Z1]], %[[L1]] {ignore_index = -100 : i64}
    // CHECK: %[[G1:.*]] = eff.softmax_cross_entropy_grad sum, %[[Z1]], %[[L1]], %[[DSEED]] {ignore_index = -100 : i64}
    // CHECK: %[[DA1:.*]] = eff.linear %[[G1]], %[[HEAD]] : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
    // CHECK: %[[ZERO:.*]] = eff.constant dense<0.000000e+00> : tensor<f32>
    // CHECK: %[[DW1:.*]] = eff.linear %[[G1]], %{{.*}}, %[[ZERO]] {transpose_a = true} : (tensor<4x32xf32>, tensor<4x16xf32>, tensor<f32>) -> tensor<32x16xf32>
    // CHECK: %[[DB1:.*]] = eff.reduce_sum %[[G1]] {axes = array<i64: 0>} : tensor<4x32xf32> -> tensor<32xf32>
    // Chunk 2: rows 4..8, accumulating.
    // CHECK: eff.slice %[[SA]] {limits = array<i64: 8, 16>, starts = array<i64: 4, 0>
    // CHECK: %[[LOSS2:.*]] = eff.softmax_cross_entropy sum
    // CHECK: %[[LOSS12:.*]] = eff.add %[[LOSS1]], %[[LOSS2]]
    // CHECK: %[[G2:.*]] = eff.softmax_cross_entropy_grad sum
    // CHECK: %[[DA2:.*]] = eff.linear %[[G2]], %[[HEAD]]
    // CHECK: %[[DW2:.*]] = eff.linear %[[G2]], %{{.*}}, %[[DW1]] {transpose_a = true} : (tensor<4x32xf32>, tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32>
    // CHECK: %[[DB2P:.*]] = eff.reduce_sum %[[G2]]
    // CHECK: %[[DB2:.*]] = eff.add %[[DB1]], %[[DB2P]]
    // Chunk 3: the last 2 rows.
    // CHECK: eff.slice %[[SA]] {limits = array<i64: 10, 16>, starts = array<i64: 8, 0>
    // CHECK: %[[LOSS3:.*]] = eff.softmax_cross_entropy sum, %{{.*}}, %{{.*}} {ignore_index = -100 : i64} : (tensor<2x32xf32>, tensor<2xi64>) -> tensor<f32>
    // CHECK: %[[LOSS123:.*]] = eff.add %[[LOSS12]], %[[LOSS3]]
    // CHECK: %[[G3:.*]] = eff.softmax_cross_entropy_grad sum
    // CHECK: %[[DA3:.*]] = eff.linear %[[G3]], %[[HEAD]]
    // CHECK: %[[DW:.*]] = eff.linear %[[G3]], %{{.*}}, %[[DW2]] {transpose_a = true}
    // CHECK: %[[DB3P:.*]] = eff.reduce_sum %[[G3]]
    // CHECK: %[[DB:.*]] = eff.add %[[DB2]], %[[DB3P]]
    // CHECK: %[[LOSS:.*]] = eff.div %[[LOSS123]], %[[COUNT]]
    // CHECK: %[[DA:.*]] = eff.concat %[[DA1]], %[[DA2]], %[[DA3]] {axis = 0 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x16xf32>) -> tensor<10x16xf32>
    // CHECK: eff.reshape %[[DA]] : tensor<10x16xf32> to tensor<2x5x16xf32>
    // CHECK-NOT: eff.softmax_cross_entropy
    // CHECK: return %[[LOSS]], %{{.*}}, %[[DW]], %[[DB]]
    %ht = eff.transpose %w1 {permutation = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
    %h = eff.matmul %x, %ht : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
    %r = eff.tanh %h : tensor<2x5x16xf32>
    %r2 = eff.reshape %r : tensor<2x5x16xf32> to tensor<10x16xf32>
    %z = eff.linear %r2, %head, %hb {transpose_b = true} : (tensor<10x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<10x32xf32>
    %y2 = eff.reshape %y : tensor<2x5xi64> to tensor<10xi64>
    %loss = eff.softmax_cross_entropy mean, %z, %y2 {ignore_index = -100 : i64} : (tensor<10x32xf32>, tensor<10xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Autocast's form of a tied LM head: bf16 activations times the transposed
// bf16 copy of the embedding, logits widened to f32 for the loss. The
// weight gradient's partial products accumulate in f32 (bf16 operands, f32
// C) and are rounded to bf16 once; the embedding's copy is made again in
// the backward rather than held. Without ignore_index the mean divides by
// the row count.
// AUTO-LABEL: func.func @forward_backward
// AUTO: eff.softmax_cross_entropy mean
module {
  eff.parameter trainable @wte : tensor<64x16xf32>
  // CHECK-LABEL: func.func @forward_backward(
  func.func @forward(%wte: tensor<64x16xf32> {eff.parameter = @wte},
                     %h: tensor<12x16xbf16> {eff.input = "h"}, %y: tensor<12xi64> {eff.input = "y"})
      -> (tensor<f32> {eff.output = "loss"}) {
    // CHECK: %[[COPY:.*]] = eff.cast %{{.*}} {eff.recomputed} : tensor<64x16xf32> to tensor<64x16xbf16>
    // CHECK: %[[WT:.*]] = eff.transpose %[[COPY]] {eff.recomputed
    // CHECK: %[[ROWS:.*]] = eff.constant dense<1.200000e+01> : tensor<f32>
    // CHECK: %[[DSEED:.*]] = eff.div %{{.*}}, %[[ROWS]]
    // CHECK: %[[Z1:.*]] = eff.matmul %{{.*}}, %[[WT]] : (tensor<4x16xbf16>, tensor<16x64xbf16>) -> tensor<4x64xbf16>
    // CHECK: %[[X1:.*]] = eff.cast %[[Z1]] : tensor<4x64xbf16> to tensor<4x64xf32>
    // CHECK: eff.softmax_cross_entropy sum, %[[X1]], %{{.*}} :
    // CHECK: %[[G1:.*]] = eff.softmax_cross_entropy_grad sum, %[[X1]], %{{.*}}, %[[DSEED]] :
    // CHECK: %[[G1L:.*]] = eff.cast %[[G1]] : tensor<4x64xf32> to tensor<4x64xbf16>
    // CHECK: %[[DW1:.*]] = eff.linear %{{.*}}, %[[G1L]], %{{.*}} {transpose_a = true} : (tensor<4x16xbf16>, tensor<4x64xbf16>, tensor<f32>) -> tensor<16x64xf32>
    // CHECK: eff.linear %{{.*}}, %{{.*}}, %[[DW1]] {transpose_a = true} : (tensor<4x16xbf16>, tensor<4x64xbf16>, tensor<16x64xf32>) -> tensor<16x64xf32>
    // CHECK: %[[DW:.*]] = eff.linear %{{.*}}, %{{.*}}, %{{.*}} {transpose_a = true} : (tensor<4x16xbf16>, tensor<4x64xbf16>, tensor<16x64xf32>) -> tensor<16x64xf32>
    // CHECK: eff.cast %[[DW]] : tensor<16x64xf32> to tensor<16x64xbf16>
    %c = eff.cast %wte : tensor<64x16xf32> to tensor<64x16xbf16>
    %wt = eff.transpose %c {permutation = array<i64: 1, 0>} : tensor<64x16xbf16> -> tensor<16x64xbf16>
    %z = eff.matmul %h, %wt : (tensor<12x16xbf16>, tensor<16x64xbf16>) -> tensor<12x64xbf16>
    %zf = eff.cast %z : tensor<12x64xbf16> to tensor<12x64xf32>
    %loss = eff.softmax_cross_entropy mean, %zf, %y : (tensor<12x64xf32>, tensor<12xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Left as they are: per-class weights (the mean's denominator is their sum
// over the counted targets) and per-sample losses.
// CHECK-LABEL: func.func @forward_backward(
// CHECK: eff.softmax_cross_entropy mean, %{{.*}}, %{{.*}} weight
// CHECK: eff.softmax_cross_entropy_grad mean
// CHECK-NOT: eff.slice
module {
  eff.parameter trainable @head : tensor<32x16xf32>
  eff.parameter frozen @class_weight : tensor<32xf32>
  func.func @forward(%head: tensor<32x16xf32> {eff.parameter = @head},
                     %cw: tensor<32xf32> {eff.parameter = @class_weight},
                     %a: tensor<10x16xf32> {eff.input = "a"}, %y: tensor<10xi64> {eff.input = "y"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %z = eff.linear %a, %head {transpose_b = true} : (tensor<10x16xf32>, tensor<32x16xf32>) -> tensor<10x32xf32>
    %loss = eff.softmax_cross_entropy mean, %z, %y weight %cw : (tensor<10x32xf32>, tensor<10xi64>, tensor<32xf32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A model cast to bf16 as a whole: the loss itself is bf16. Each chunk's
// logits are widened to f32 (exactly) for its loss and gradient, the
// gradient is rounded back to bf16 as the whole one was, and the chunks'
// losses add up in f32 and round to bf16 once.
module {
  eff.parameter trainable @head : tensor<64x16xbf16>
  // CHECK-LABEL: func.func @forward_backward(
  func.func @forward(%head: tensor<64x16xbf16> {eff.parameter = @head},
                     %a: tensor<12x16xbf16> {eff.input = "a"}, %y: tensor<12xi64> {eff.input = "y"})
      -> (tensor<bf16> {eff.output = "loss"}) {
    // CHECK: %[[SEED:.*]] = eff.cast %{{.*}} : tensor<bf16> to tensor<f32>
    // CHECK: %[[DSEED:.*]] = eff.div %[[SEED]], %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
    // CHECK: %[[Z1:.*]] = eff.linear %{{.*}}, %{{.*}} {transpose_b = true} : (tensor<4x16xbf16>, tensor<64x16xbf16>) -> tensor<4x64xbf16>
    // CHECK: %[[X1:.*]] = eff.cast %[[Z1]] : tensor<4x64xbf16> to tensor<4x64xf32>
    // CHECK: %[[L1:.*]] = eff.softmax_cross_entropy sum, %[[X1]], %{{.*}} : (tensor<4x64xf32>, tensor<4xi64>) -> tensor<f32>
    // CHECK: %[[G1:.*]] = eff.softmax_cross_entropy_grad sum, %[[X1]], %{{.*}}, %[[DSEED]] : (tensor<4x64xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x64xf32>
    // CHECK: eff.cast %[[G1]] : tensor<4x64xf32> to tensor<4x64xbf16>
    // CHECK: %[[TOTAL:.*]] = eff.div %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
    // CHECK: %[[LOSS:.*]] = eff.cast %[[TOTAL]] : tensor<f32> to tensor<bf16>
    // CHECK: return %[[LOSS]]
    %z = eff.linear %a, %head {transpose_b = true} : (tensor<12x16xbf16>, tensor<64x16xbf16>) -> tensor<12x64xbf16>
    %loss = eff.softmax_cross_entropy mean, %z, %y : (tensor<12x64xbf16>, tensor<12xi64>) -> tensor<bf16>
    return %loss : tensor<bf16>
  }
}
