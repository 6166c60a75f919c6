// Input of grad-accum-invalid.mlir: eff-grad-accum with steps=0.
// expected-error@below {{eff-grad-accum: steps must be at least 1, got 0}}
module {
  eff.parameter trainable @w : tensor<3xf32>
  func.func @forward(%w: tensor<3xf32> {eff.parameter = @w}, %x: tensor<2x3xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %y = eff.mul %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %loss = eff.reduce_mean %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
