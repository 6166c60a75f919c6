// RUN: effopt-opt %s --eff-autodiff --eff-zero="world-size=2" --verify-diagnostics

// A class-weighted mean divides by the summed weights of each rank's counted
// targets, which differ between ranks: eff-zero refuses it, as eff-grad-accum
// does (one LossWeighting classification serves both).
module {
  eff.parameter trainable @w : tensor<5x8xf32>
  eff.parameter buffer @cw : tensor<5xf32>
  func.func @forward(%w: tensor<5x8xf32> {eff.parameter = @w}, %cw: tensor<5xf32> {eff.parameter = @cw},
                     %x: tensor<2x8xf32> {eff.input = "x"}, %t: tensor<2xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %z = eff.linear %x, %w {transpose_b = true} : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
    // expected-error@below {{with per-class weights is not supported by eff-zero}}
    %loss = eff.softmax_cross_entropy mean, %z, %t weight %cw : (tensor<2x5xf32>, tensor<2xi64>, tensor<5xf32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
