// RUN: effopt-opt %s --eff-autodiff --split-input-file | FileCheck %s
// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=selective --split-input-file | FileCheck %s --check-prefix=SEL

// Copies of parameters (data movement and casts of weights only) are never
// saved for the backward: each is recomputed right before its backward
// reader, under every remat policy, so no weight-sized copy lives from the
// forward into the backward.

// nn.Linear on 3-D input as ONNX exports it, MatMul(x, Transpose(W)): the
// backward's dx GEMM reads a transpose of W cloned in front of it, not a
// saved one.
module {
  eff.parameter trainable @w1 : tensor<16x8xf32>
  eff.parameter trainable @w2 : tensor<5x16xf32>
  // CHECK-LABEL: func.func @forward_backward(
  // CHECK-SAME: %[[W1:[^:]*]]: tensor<16x8xf32> {eff.parameter = @w1}, %[[W2:[^:]*]]: tensor<5x16xf32> {eff.parameter = @w2}
  func.func @forward(%w1: tensor<16x8xf32> {eff.parameter = @w1},
                     %w2: tensor<5x16xf32> {eff.parameter = @w2},
                     %x: tensor<2x4x8xf32> {eff.input = "x"}) -> tensor<f32> {
    // CHECK: %[[T1:.*]] = eff.transpose %[[W1]]
    %w1t = eff.transpose %w1 {permutation = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
    // CHECK: %[[H:.*]] = eff.matmul %{{.*}}, %[[T1]]
    %h = eff.matmul %x, %w1t : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    %r = eff.relu %h : tensor<2x4x16xf32>
    // CHECK: %[[T2:.*]] = eff.transpose %[[W2]]
    %w2t = eff.transpose %w2 {permutation = array<i64: 1, 0>} : tensor<5x16xf32> -> tensor<16x5xf32>
    // CHECK: %[[Z:.*]] = eff.matmul %{{.*}}, %[[T2]]
    %z = eff.matmul %r, %w2t : (tensor<2x4x16xf32>, tensor<16x5xf32>) -> tensor<2x4x5xf32>
    %sq = eff.mul %z, %z : (tensor<2x4x5xf32>, tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
    %loss = eff.reduce_sum %sq {axes = array<i64: 0, 1, 2>} : tensor<2x4x5xf32> -> tensor<f32>
    // CHECK-NOT: eff.save %[[T1]]
    // CHECK-NOT: eff.save %[[T2]]
    // CHECK: %[[RT2:.*]] = eff.transpose %[[W2]] {eff.recomputed, permutation = array<i64: 1, 0>} : tensor<5x16xf32> -> tensor<16x5xf32>
    // CHECK-NEXT: eff.transpose %[[RT2]]
    // CHECK-NOT: %[[T2]]
    // CHECK: return
    return %loss : tensor<f32>
  }
}

// -----

// Under autocast: the bf16 cast of a weight and its transpose are both
// recomputed before the backward GEMM.
module {
  eff.parameter trainable @w1 : tensor<16x8xf32>
  eff.parameter trainable @w2 : tensor<5x16xf32>
  // CHECK-LABEL: func.func @forward_backward(
  // CHECK-SAME: %[[W1:[^:]*]]: tensor<16x8xf32> {eff.parameter = @w1}, %[[W2:[^:]*]]: tensor<5x16xf32> {eff.parameter = @w2}
  // SEL-LABEL: func.func @forward_backward(
  func.func @forward(%w1: tensor<16x8xf32> {eff.parameter = @w1},
                     %w2: tensor<5x16xf32> {eff.parameter = @w2},
                     %x: tensor<2x4x8xf32> {eff.input = "x"}) -> tensor<f32> {
    %w1t = eff.transpose %w1 {permutation = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
    %h = eff.matmul %x, %w1t : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    %r = eff.relu %h : tensor<2x4x16xf32>
    %rb = eff.cast %r : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
    // CHECK: %[[C2:.*]] = eff.cast %[[W2]] : tensor<5x16xf32> to tensor<5x16xbf16>
    %w2b = eff.cast %w2 : tensor<5x16xf32> to tensor<5x16xbf16>
    // CHECK: %[[T2:.*]] = eff.transpose %[[C2]]
    %w2t = eff.transpose %w2b {permutation = array<i64: 1, 0>} : tensor<5x16xbf16> -> tensor<16x5xbf16>
    %zb = eff.matmul %rb, %w2t : (tensor<2x4x16xbf16>, tensor<16x5xbf16>) -> tensor<2x4x5xbf16>
    %z = eff.cast %zb : tensor<2x4x5xbf16> to tensor<2x4x5xf32>
    %sq = eff.mul %z, %z : (tensor<2x4x5xf32>, tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
    %loss = eff.reduce_sum %sq {axes = array<i64: 0, 1, 2>} : tensor<2x4x5xf32> -> tensor<f32>
    // CHECK-NOT: eff.save %[[C2]]
    // CHECK-NOT: eff.save %[[T2]]
    // CHECK: %[[RC2:.*]] = eff.cast %[[W2]] {eff.recomputed} : tensor<5x16xf32> to tensor<5x16xbf16>
    // CHECK-NEXT: %[[RT2:.*]] = eff.transpose %[[RC2]] {eff.recomputed, permutation = array<i64: 1, 0>}
    // CHECK-NEXT: eff.transpose %[[RT2]]
    // CHECK-NOT: %[[C2]]
    // CHECK-NOT: %[[T2]]
    // CHECK: return
    // selective keeps what it chooses, but no copy of a weight either.
    // SEL-NOT: eff.save {{.*}} : tensor<5x16xbf16>
    // SEL-NOT: eff.save {{.*}} : tensor<16x5xbf16>
    // SEL: eff.cast %{{.*}} {eff.recomputed} : tensor<5x16xf32> to tensor<5x16xbf16>
    // SEL: return
    return %loss : tensor<f32>
  }
}
