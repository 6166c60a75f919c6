// RUN: effopt-opt %s --convert-eff-to-linalg --split-input-file -verify-diagnostics

// The gradient of a reversing slice has no lowering yet: the error names
// the op at its location.
func.func @reverse_slice_grad(%dy: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'eff.slice_grad' op with a negative stride is not lowered yet}}
  // expected-error @+1 {{failed to legalize operation 'eff.slice_grad'}}
  %0 = eff.slice_grad %dy {starts = array<i64: 3>, limits = array<i64: -1>, strides = array<i64: -1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
