// RUN: effopt-opt %s --eff-lora="targets=nomatch" --split-input-file -verify-diagnostics
// RUN: not effopt-opt %s --eff-lora="targets=(fc" --split-input-file 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not effopt-opt %s --eff-lora="rank=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=RANK

// REGEX: error: eff-lora: targets '(fc' is not a valid regex: parentheses not balanced
// RANK: error: eff-lora: rank must be >= 1, got 0

// A regex that matches no GEMM weight is one error naming the GEMM weights.
// expected-error @below {{eff-lora: targets 'nomatch' matches no GEMM weight (the GEMM weights are fc.weight)}}
module {
  eff.parameter trainable @fc.weight : tensor<6x4xf32> = dense<1.0> : tensor<6x4xf32>
  eff.parameter trainable @fc.bias : tensor<6xf32> = dense<0.0> : tensor<6xf32>
  func.func @forward(%w: tensor<6x4xf32> {eff.parameter = @fc.weight},
                     %b: tensor<6xf32> {eff.parameter = @fc.bias},
                     %x: tensor<3x4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %y = eff.linear %x, %w, %b {transpose_b = true} : (tensor<3x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<3x6xf32>
    %loss = eff.reduce_mean %y {axes = array<i64: 0, 1>} : tensor<3x6xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A model without GEMM weights.
// expected-error @below {{eff-lora: targets 'nomatch' matches no GEMM weight (the model has none)}}
module {
  eff.parameter trainable @scale : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  func.func @forward(%s: tensor<4xf32> {eff.parameter = @scale},
                     %x: tensor<3x4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %y = eff.mul %x, %s : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %loss = eff.reduce_mean %y {axes = array<i64: 0, 1>} : tensor<3x4xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A targeted weight that is also read by a gather (tied embedding) gets a
// warning and no adapter; with no other target that is the error.
// expected-error @below {{eff-lora: targets 'nomatch' matches no GEMM weight}}
module {
  // expected-warning @below {{eff-lora: 'nomatch.weight' gets no adapter: it is also read by eff.gather (tied weights)}}
  eff.parameter trainable @nomatch.weight : tensor<8x4xf32> = dense<1.0> : tensor<8x4xf32>
  func.func @forward(%e: tensor<8x4xf32> {eff.parameter = @nomatch.weight},
                     %idx: tensor<3xi64> {eff.input = "idx"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %h = eff.gather %e, %idx {axis = 0 : i64} : (tensor<8x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
    %logits = eff.linear %h, %e {transpose_b = true} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
    %loss = eff.reduce_mean %logits {axes = array<i64: 0, 1>} : tensor<3x8xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// After autodiff there is no @forward.
// expected-error @below {{eff-lora: no func.func @forward (run it on the imported model, before eff-autodiff)}}
module {
  func.func @forward_backward() {
    return
  }
}

// -----

// Adapters are added once.
// expected-error @below {{eff-lora: the model already has LoRA adapters}}
module attributes {eff.lora = {adapters = [], alpha = 8.0 : f64, rank = 8 : i64}} {
  func.func @forward() {
    return
  }
}
