// RUN: effopt-opt %s --eff-autodiff --split-input-file --verify-diagnostics

// expected-error @below {{eff-autodiff expects a func.func @forward}}
module {
  func.func @main() { return }
}

// -----

module {
  eff.parameter trainable @w : tensor<4xf32>
  // expected-error @below {{the loss (result 0 of @forward) must be a floating-point scalar, got 'tensor<4xf32>'}}
  func.func @forward(%w: tensor<4xf32> {eff.parameter = @w}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}

// -----

module {
  eff.parameter frozen @w : tensor<4xf32>
  // expected-error @below {{the loss does not depend on any trainable parameter}}
  func.func @forward(%w: tensor<4xf32> {eff.parameter = @w}) -> tensor<f32> {
    %l = eff.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @w : tensor<2x4xf32>
  func.func @forward(%w: tensor<2x4xf32> {eff.parameter = @w}, %dy: tensor<2x4xf32>) -> tensor<f32> {
    // expected-error @below {{'eff.softmax_grad' op has no gradient rule, but lies on a path from a trainable parameter to the loss}}
    %g = eff.softmax_grad %w, %dy {axis = 1 : i64} : tensor<2x4xf32>
    %l = eff.reduce_sum %g {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @w : tensor<2x4xf32>
  func.func @forward(%w: tensor<2x4xf32> {eff.parameter = @w}) -> tensor<f32> {
    %y, %mean, %rstd = eff.layer_norm %w {axis = 1 : i64} : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
    // expected-error @above {{gradients through the returned mean / rstd are not supported}}
    %l = eff.reduce_sum %mean {axes = array<i64: 0, 1>} : tensor<2x1xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
