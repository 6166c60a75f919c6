// RUN: effopt-opt %s --convert-eff-to-linalg --split-input-file -verify-diagnostics

// The forward ops reject negative padding; a gradient op carrying one is
// not lowered, and the error names the op.
func.func @negative_padding(%dy: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+2 {{'eff.conv2d_input_grad' op with negative padding is not lowered}}
  // expected-error @+1 {{failed to legalize operation 'eff.conv2d_input_grad'}}
  %0 = eff.conv2d_input_grad %dy, %w {strides = array<i64: 1, 1>, padding = array<i64: -1, -1, -1, -1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %0 : tensor<2x3x8x8xf32>
}
