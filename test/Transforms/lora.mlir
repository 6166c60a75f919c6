// RUN: effopt-opt %s --eff-lora="rank=2 alpha=8 targets=fc" --split-input-file | FileCheck %s
// RUN: effopt-opt %s --eff-lora="rank=2 alpha=8 targets=fc dropout=0.1 seed=3" --split-input-file | FileCheck %s --check-prefix=DROP
// RUN: effopt-opt %s --eff-lora="rank=2" --split-input-file | FileCheck %s --check-prefix=ALL

// nn.Linear on a 3-D input as PyTorch 1.13 exports it: MatMul(x, W^T) + b.
// Every parameter is frozen; fc.weight (out 6 x in 4) gets A (2x4, from
// the seeded Kaiming-uniform) and B (6x2, zeros) named as peft names them,
// right after it; the base GEMM stays and the adapter path, scaled by
// alpha/rank = 4, is added to its result.
module {
  eff.parameter trainable @fc.weight : tensor<6x4xf32> = dense<1.0> : tensor<6x4xf32>
  eff.parameter trainable @fc.bias : tensor<6xf32> = dense<0.0> : tensor<6xf32>
  eff.parameter trainable @other.weight : tensor<6x6xf32> = dense<1.0> : tensor<6x6xf32>
  func.func @forward(%w: tensor<6x4xf32> {eff.parameter = @fc.weight},
                     %b: tensor<6xf32> {eff.parameter = @fc.bias},
                     %w2: tensor<6x6xf32> {eff.parameter = @other.weight},
                     %x: tensor<2x3x4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %wt = eff.transpose %w {permutation = array<i64: 1, 0>} : tensor<6x4xf32> -> tensor<4x6xf32>
    %mm = eff.matmul %x, %wt : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
    %y = eff.add %b, %mm : (tensor<6xf32>, tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
    %w2t = eff.transpose %w2 {permutation = array<i64: 1, 0>} : tensor<6x6xf32> -> tensor<6x6xf32>
    %z = eff.matmul %y, %w2t : (tensor<2x3x6xf32>, tensor<6x6xf32>) -> tensor<2x3x6xf32>
    %loss = eff.reduce_mean %z {axes = array<i64: 0, 1, 2>} : tensor<2x3x6xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK: module attributes {eff.lora = {adapters = [{lora_a = "fc.lora_A.weight", lora_b = "fc.lora_B.weight", scaling = 4.000000e+00 : f64, transposed = false, weight = "fc.weight"}], alpha = 8.000000e+00 : f64, rank = 2 : i64}}
// CHECK: eff.parameter frozen @fc.weight : tensor<6x4xf32>
// CHECK-NEXT: eff.parameter trainable @fc.lora_A.weight : tensor<2x4xf32> = dense<{{\[\[}}
// CHECK-NEXT: eff.parameter trainable @fc.lora_B.weight : tensor<6x2xf32> = dense<0.000000e+00> : tensor<6x2xf32>
// CHECK-NEXT: eff.parameter frozen @fc.bias
// CHECK-NEXT: eff.parameter frozen @other.weight
// CHECK-NOT: other.lora
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<6x4xf32> {eff.parameter = @fc.weight}
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x4xf32> {eff.parameter = @fc.lora_A.weight}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<6x2xf32> {eff.parameter = @fc.lora_B.weight}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<6xf32> {eff.parameter = @fc.bias}
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3x4xf32> {eff.input = "x"}
// CHECK: %[[WT:.*]] = eff.transpose %[[W]]
// CHECK: %[[MM:.*]] = eff.matmul %[[X]], %[[WT]]
// CHECK: %[[AT:.*]] = eff.transpose %[[A]] {permutation = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
// CHECK: %[[XA:.*]] = eff.matmul %[[X]], %[[AT]] : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
// CHECK: %[[BT:.*]] = eff.transpose %[[B]] {permutation = array<i64: 1, 0>} : tensor<6x2xf32> -> tensor<2x6xf32>
// CHECK: %[[XAB:.*]] = eff.matmul %[[XA]], %[[BT]] : (tensor<2x3x2xf32>, tensor<2x6xf32>) -> tensor<2x3x6xf32>
// CHECK: %[[S:.*]] = eff.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[SCALED:.*]] = eff.mul %[[XAB]], %[[S]]
// CHECK: %[[SUM:.*]] = eff.add %[[MM]], %[[SCALED]]
// CHECK: eff.add %{{.*}}, %[[SUM]]
// CHECK-NOT: eff.matmul %{{.*}}, %{{.*}} : (tensor<2x3x6xf32>, tensor<6x2xf32>)

// dropout > 0: the adapter reads eff.dropout of x; the base GEMM reads x.
// DROP-LABEL: func.func @forward(
// DROP: %[[MM:.*]] = eff.matmul %[[X:arg[0-9]+]], %{{.*}} : (tensor<2x3x4xf32>, tensor<4x6xf32>)
// DROP: %[[D:.*]], %{{.*}} = eff.dropout %[[X]] {ratio = 1.000000e-01 : f64, seed = {{[0-9]+}} : i64}
// DROP: eff.matmul %[[D]], %{{.*}} : (tensor<2x3x4xf32>, tensor<4x2xf32>)

// No targets: every GEMM weight.
// ALL: eff.parameter trainable @fc.lora_A.weight : tensor<2x4xf32>
// ALL: eff.parameter trainable @other.lora_A.weight : tensor<2x6xf32>

// -----

// ONNX Gemm (nn.Linear on a 2-D input, transB = 1): two eff.linear with
// transpose_b, the second scaled by Gemm's alpha times alpha/rank.
module {
  eff.parameter trainable @fc.weight : tensor<6x4xf32> = dense<1.0> : tensor<6x4xf32>
  eff.parameter trainable @fc.bias : tensor<6xf32> = dense<0.0> : tensor<6xf32>
  func.func @forward(%w: tensor<6x4xf32> {eff.parameter = @fc.weight},
                     %b: tensor<6xf32> {eff.parameter = @fc.bias},
                     %x: tensor<3x4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %y = eff.linear %x, %w, %b {transpose_b = true, alpha = 0.5 : f64} : (tensor<3x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<3x6xf32>
    %loss = eff.reduce_mean %y {axes = array<i64: 0, 1>} : tensor<3x6xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<6x4xf32> {eff.parameter = @fc.weight}
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x4xf32> {eff.parameter = @fc.lora_A.weight}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<6x2xf32> {eff.parameter = @fc.lora_B.weight}
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3x4xf32> {eff.input = "x"}
// CHECK: %[[Y:.*]] = eff.linear %[[X]], %[[W]], %{{.*}} {alpha = 5.000000e-01 : f64, transpose_b = true}
// CHECK: %[[XA:.*]] = eff.linear %[[X]], %[[A]] {transpose_b = true} : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
// CHECK: %[[XAB:.*]] = eff.linear %[[XA]], %[[B]] {alpha = 2.000000e+00 : f64, transpose_b = true} : (tensor<3x2xf32>, tensor<6x2xf32>) -> tensor<3x6xf32>
// CHECK: %[[SUM:.*]] = eff.add %[[Y]], %[[XAB]]
// CHECK: eff.reduce_mean %[[SUM]]

// -----

// A hand-written linear, x @ W with W in x out (4 x 6), and
// nn.MultiheadAttention's in_proj_weight (module "attn.in_proj"); the
// merge record says the weight is stored transposed.
module {
  eff.parameter trainable @fc.w : tensor<4x6xf32> = dense<1.0> : tensor<4x6xf32>
  eff.parameter trainable @attn.in_proj_weight : tensor<6x6xf32> = dense<1.0> : tensor<6x6xf32>
  func.func @forward(%w: tensor<4x6xf32> {eff.parameter = @fc.w},
                     %p: tensor<6x6xf32> {eff.parameter = @attn.in_proj_weight},
                     %x: tensor<3x4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %y = eff.matmul %x, %w : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
    %pt = eff.transpose %p {permutation = array<i64: 1, 0>} : tensor<6x6xf32> -> tensor<6x6xf32>
    %z = eff.matmul %y, %pt : (tensor<3x6xf32>, tensor<6x6xf32>) -> tensor<3x6xf32>
    %loss = eff.reduce_mean %z {axes = array<i64: 0, 1>} : tensor<3x6xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// ALL-LABEL: module attributes {eff.lora = {adapters = [{lora_a = "fc.w.lora_A.weight", lora_b = "fc.w.lora_B.weight", scaling = 4.000000e+00 : f64, transposed = true, weight = "fc.w"}, {lora_a = "attn.in_proj.lora_A.weight", lora_b = "attn.in_proj.lora_B.weight", scaling = 4.000000e+00 : f64, transposed = false, weight = "attn.in_proj_weight"}]
// ALL: eff.parameter trainable @fc.w.lora_A.weight : tensor<2x4xf32>
// ALL: eff.parameter trainable @fc.w.lora_B.weight : tensor<6x2xf32>
// ALL: eff.parameter trainable @attn.in_proj.lora_A.weight : tensor<2x6xf32>
// ALL: eff.parameter trainable @attn.in_proj.lora_B.weight : tensor<6x2xf32>
// ALL: %[[Y:.*]] = eff.matmul %[[X:arg[0-9]+]], %arg0 : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
// ALL: eff.matmul %[[X]], %{{.*}} : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>

// -----

// A tied weight read by a GEMM and by a gather gets no adapter when no
// targets are given (a merge would change the embedding too).
module {
  eff.parameter trainable @tok.weight : tensor<8x4xf32> = dense<1.0> : tensor<8x4xf32>
  eff.parameter trainable @fc.weight : tensor<4x4xf32> = dense<1.0> : tensor<4x4xf32>
  func.func @forward(%e: tensor<8x4xf32> {eff.parameter = @tok.weight},
                     %w: tensor<4x4xf32> {eff.parameter = @fc.weight},
                     %idx: tensor<3xi64> {eff.input = "idx"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %h = eff.gather %e, %idx {axis = 0 : i64} : (tensor<8x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
    %h2 = eff.linear %h, %w {transpose_b = true} : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %logits = eff.linear %h2, %e {transpose_b = true} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
    %loss = eff.reduce_mean %logits {axes = array<i64: 0, 1>} : tensor<3x8xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// ALL-LABEL: module attributes {eff.lora = {adapters = [{lora_a = "fc.lora_A.weight"
// ALL-NOT: tok.lora
// ALL: eff.parameter frozen @tok.weight
// ALL-NOT: tok.lora
