// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=selective | FileCheck %s

// Attention-like: selective keeps the product with a weight (%q, read by
// three forward ops as well) and the product that is smaller than its
// inputs (%o), and recomputes the scores (two activations, 16x16 from two
// 16x4), the transpose that feeds them and their softmax in the backward.
// CHECK-LABEL: func.func @forward_backward
// CHECK:      %[[Q:.*]] = eff.matmul %arg1, %arg0
// CHECK:      %[[O:.*]] = eff.matmul %{{.*}}, %[[Q]] :
// CHECK-DAG:  eff.save %[[O]]
// CHECK-DAG:  %[[SQ:.*]] = eff.save %[[Q]]
// CHECK-NOT:  eff.save
// CHECK:      %[[QT:.*]] = eff.transpose %[[SQ]] {eff.recomputed
// CHECK-NEXT: %[[S:.*]] = eff.matmul %[[SQ]], %[[QT]] {eff.recomputed}
// CHECK-NEXT: %[[P:.*]] = eff.softmax %[[S]] {axis = 1 : i64, eff.recomputed}
// CHECK:      eff.softmax_grad %[[P]]
module {
  eff.parameter trainable @wq : tensor<8x4xf32>
  func.func @forward(%wq: tensor<8x4xf32> {eff.parameter = @wq},
                     %x: tensor<16x8xf32> {eff.input = "x"}, %t: tensor<16xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %q = eff.matmul %x, %wq : (tensor<16x8xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
    %qt = eff.transpose %q {permutation = array<i64: 1, 0>} : tensor<16x4xf32> -> tensor<4x16xf32>
    %s = eff.matmul %q, %qt : (tensor<16x4xf32>, tensor<4x16xf32>) -> tensor<16x16xf32>
    %p = eff.softmax %s {axis = 1 : i64} : tensor<16x16xf32>
    %o = eff.matmul %p, %q : (tensor<16x16xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
    %loss = eff.softmax_cross_entropy mean, %o, %t : (tensor<16x4xf32>, tensor<16xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
