// RUN: effopt-opt %s --split-input-file --eff-zero="world-size=2 stage=3" -verify-diagnostics

// Stage 3 shards the f32 master weights; a trainable parameter stored in
// bf16 is not one.
module {
  // expected-error @+1 {{eff-zero: stage 3 shards f32 parameters (the master weights); @w is 'tensor<4xbf16>'}}
  eff.parameter trainable @w : tensor<4xbf16>
  func.func @forward_backward(%w: tensor<4xbf16> {eff.parameter = @w})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.gradient = @w}) {
    %f = eff.cast %w : tensor<4xbf16> to tensor<4xf32>
    %s = eff.reduce_sum %f {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %s, %f : tensor<f32>, tensor<4xf32>
  }
}

// -----

// The step's argument must be the whole parameter: a step sharded already
// is not sharded again.
module {
  eff.parameter trainable @w : tensor<2xf32> {eff.shard_of = array<i64: 4>}
  // expected-error @+1 {{eff-zero: stage 3: argument 0 is not the whole parameter @w (was the step sharded already?)}}
  func.func @forward_backward(%w: tensor<2xf32> {eff.parameter = @w})
      -> (tensor<f32> {eff.output = "loss"}, tensor<2xf32> {eff.gradient = @w}) {
    %s = eff.reduce_sum %w {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %s, %w : tensor<f32>, tensor<2xf32>
  }
}
