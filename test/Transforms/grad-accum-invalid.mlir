// RUN: effopt-opt %s --eff-autodiff --eff-grad-accum=steps=4 --split-input-file --verify-diagnostics
// RUN: effopt-opt %S/Inputs/grad-accum-steps.mlir --eff-autodiff --eff-grad-accum=steps=0 --verify-diagnostics

// A rank-0 batch input has no batch dimension to split.
module {
  eff.parameter trainable @w : tensor<3xf32>
  // expected-error@below {{eff-grad-accum: batch input 'scale' is a scalar: it has no batch dimension to split into micro-batches}}
  func.func @forward(%w: tensor<3xf32> {eff.parameter = @w},
                     %x: tensor<2x3xf32> {eff.input = "x"}, %s: tensor<f32> {eff.input = "scale"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %y = eff.mul %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %z = eff.mul %y, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %loss = eff.reduce_mean %z {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A class-weighted mean divides by the summed weights of the counted
// targets, which this pass does not compute.
module {
  eff.parameter trainable @w : tensor<5x8xf32>
  eff.parameter buffer @cw : tensor<5xf32>
  func.func @forward(%w: tensor<5x8xf32> {eff.parameter = @w}, %cw: tensor<5xf32> {eff.parameter = @cw},
                     %x: tensor<2x8xf32> {eff.input = "x"}, %t: tensor<2xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %z = eff.linear %x, %w {transpose_b = true} : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
    // expected-error@below {{with per-class weights is not supported by eff-grad-accum}}
    %loss = eff.softmax_cross_entropy mean, %z, %t weight %cw : (tensor<2x5xf32>, tensor<2xi64>, tensor<5xf32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
