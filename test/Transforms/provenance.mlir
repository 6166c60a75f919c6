// RUN: effopt-opt %s --eff-autodiff --eff-optimizer="optimizer=sgd lr=0.1" --mlir-print-debuginfo | FileCheck %s

// eff-autodiff and eff-optimizer record in each op's location why it exists
// (docs/MemoryReport.md): forward ops stay untagged unless the backward reads
// their result (saved), gradient rules are backward, the op producing a
// parameter's gradient is gradient, the optimizer's ops are optimizer. The
// ONNX node's NameLoc stays inside the tag.

// CHECK-LABEL: func.func @train_step
// CHECK: eff.linear {{.*}} loc(#[[H:loc[0-9]+]])
// CHECK: eff.relu {{.*}} loc(#[[SAVED_R:loc[0-9]+]])
// CHECK: eff.linear {{.*}} loc(#[[SAVED_Z:loc[0-9]+]])
// CHECK: eff.softmax_cross_entropy {{.*}} loc(#[[L:loc[0-9]+]])
// CHECK: eff.softmax_cross_entropy_grad {{.*}} loc(#[[BACK_L:loc[0-9]+]])
// CHECK: eff.linear {{.*}} {transpose_a = true} {{.*}} loc(#[[GRAD_W2:loc[0-9]+]])
// CHECK: eff.where {{.*}} loc(#[[BACK_R:loc[0-9]+]])
// CHECK: eff.linear {{.*}} {transpose_a = true} {{.*}} loc(#[[GRAD_W1:loc[0-9]+]])
// CHECK: eff.sgd_update {{.*}} loc(#[[OPT:loc[0-9]+]])
// CHECK-DAG: #[[H]] = loc("/fc1/Gemm")
// CHECK-DAG: #[[R:loc[0-9]+]] = loc("/act/Relu")
// CHECK-DAG: #[[Z:loc[0-9]+]] = loc("/fc2/Gemm")
// CHECK-DAG: #[[L]] = loc("/loss/SoftmaxCrossEntropyLoss")
// CHECK-DAG: #[[SAVED_R]] = loc(fused<"eff.saved">[#[[R]]])
// CHECK-DAG: #[[SAVED_Z]] = loc(fused<"eff.saved">[#[[Z]]])
// CHECK-DAG: #[[BACK_L]] = loc(fused<"eff.backward">[#[[L]]])
// CHECK-DAG: #[[BACK_R]] = loc(fused<"eff.backward">[#[[R]]])
// CHECK-DAG: #[[GRAD_W2]] = loc(fused<"eff.gradient">[#[[Z]]])
// CHECK-DAG: #[[GRAD_W1]] = loc(fused<"eff.gradient">[#[[H]]])
// CHECK-DAG: #[[OPT]] = loc(fused<"eff.optimizer">[

module {
  eff.parameter trainable @w1 : tensor<16x8xf32>
  eff.parameter trainable @w2 : tensor<5x16xf32>
  func.func @forward(%w1: tensor<16x8xf32> {eff.parameter = @w1},
                     %w2: tensor<5x16xf32> {eff.parameter = @w2},
                     %x: tensor<4x8xf32> {eff.input = "x"}, %y: tensor<4xi64> {eff.input = "y"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %h = eff.linear %x, %w1 {transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("/fc1/Gemm")
    %r = eff.relu %h : tensor<4x16xf32> loc("/act/Relu")
    %z = eff.linear %r, %w2 {transpose_b = true} : (tensor<4x16xf32>, tensor<5x16xf32>) -> tensor<4x5xf32> loc("/fc2/Gemm")
    %loss = eff.softmax_cross_entropy mean, %z, %y : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32> loc("/loss/SoftmaxCrossEntropyLoss")
    return %loss : tensor<f32>
  }
}
