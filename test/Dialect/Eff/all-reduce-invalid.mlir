// RUN: effopt-opt %s --split-input-file -verify-diagnostics

func.func @world_size_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'eff.all_reduce' op world_size must be at least 1, got 0}}
  %y = eff.all_reduce %x {world_size = 0 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @not_f32(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{'eff.all_reduce' op operand #0 must be variadic of tensor of 32-bit float values}}
  %y = eff.all_reduce %x {world_size = 2 : i64} : tensor<4xf16>
  return %y : tensor<4xf16>
}
