// RUN: effopt-opt %s --split-input-file -verify-diagnostics

func.func @reduce_scatter_uneven(%x: tensor<5xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'eff.reduce_scatter' op the input has 5 elements, not world_size (2) x the result's 2}}
  %y = eff.reduce_scatter %x {world_size = 2 : i64} : tensor<5xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @reduce_scatter_world_size_zero(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'eff.reduce_scatter' op world_size must be at least 1, got 0}}
  %y = eff.reduce_scatter %x {world_size = 0 : i64} : tensor<4xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @reduce_scatter_2d(%x: tensor<2x2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'eff.reduce_scatter' op operand #0 must be 1D tensor of 32-bit float values}}
  %y = eff.reduce_scatter %x {world_size = 2 : i64} : tensor<2x2xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @all_gather_short(%x: tensor<2xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'eff.all_gather' op the result has 6 elements, not world_size (2) x the input's 2}}
  %y = eff.all_gather %x {world_size = 2 : i64} : tensor<2xf32> -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

func.func @all_gather_f16(%x: tensor<2xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{'eff.all_gather' op operand #0 must be 1D tensor of 32-bit float values}}
  %y = eff.all_gather %x {world_size = 2 : i64} : tensor<2xf16> -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

func.func @shard_uneven(%x: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'eff.shard' op the input has 4 elements, not world_size (2) x the result's 3}}
  %y = eff.shard %x {world_size = 2 : i64} : tensor<4xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}
