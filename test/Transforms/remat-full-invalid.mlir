// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=full --verify-diagnostics

// No repeated scopes in the node names and no single tensor that separates
// the forward (two branches side by side up to the loss): policy full has
// no blocks and asks for a boundary regex.
module {
  eff.parameter trainable @w0 : tensor<4x4xf32>
  eff.parameter trainable @w1 : tensor<4x4xf32>
  // expected-error@below {{eff-remat: policy full found no blocks: no repeated scopes in the ONNX node names (like /layers.3/...) and no single tensor that separates the forward; give boundary=REGEX}}
  func.func @forward(%w0: tensor<4x4xf32> {eff.parameter = @w0},
                     %w1: tensor<4x4xf32> {eff.parameter = @w1},
                     %x: tensor<4x8xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %a, %b = eff.split %x {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
    %la = eff.linear %a, %w0 {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("/branch_a/Gemm")
    %lb = eff.linear %b, %w1 {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("/branch_b/Gemm")
    %ra = eff.relu %la : tensor<4x4xf32>
    %rb = eff.relu %lb : tensor<4x4xf32>
    %sa = eff.reduce_sum %ra {axes = array<i64: 0, 1>} : tensor<4x4xf32> -> tensor<f32>
    %sb = eff.reduce_sum %rb {axes = array<i64: 0, 1>} : tensor<4x4xf32> -> tensor<f32>
    %loss = eff.add %sa, %sb : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
