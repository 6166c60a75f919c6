// RUN: effopt-opt %s --split-input-file --verify-diagnostics

func.func @absmax_one_per_block(%p: tensor<64x80xf32>, %q: tensor<64x80xi8>, %a: tensor<20xf32>, %bad: tensor<19xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @below {{absmax must be 'tensor<20xf32>' (one per block of 256 elements), got 'tensor<19xf32>'}}
  %0:5 = eff.adam8bit_update %p, %p, %q, %bad, %q, %a, %lr, %s
    : (tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xi8>, tensor<19xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<f32>, tensor<i64>)
    -> (tensor<64x80xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<64x80xi8>, tensor<20xf32>)
  return
}

// -----

func.func @codes_have_the_parameter_shape(%p: tensor<64x80xf32>, %q: tensor<64x80xi8>, %bad: tensor<80x64xi8>, %a: tensor<20xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @below {{codes must be 'tensor<64x80xi8>' (one per element of the parameter), got 'tensor<80x64xi8>'}}
  %0:5 = eff.adam8bit_update %p, %p, %q, %a, %bad, %a, %lr, %s
    : (tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<80x64xi8>, tensor<20xf32>, tensor<f32>, tensor<i64>)
    -> (tensor<64x80xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<64x80xi8>, tensor<20xf32>)
  return
}

// -----

func.func @block_size_positive(%p: tensor<64x80xf32>, %q: tensor<64x80xi8>, %a: tensor<20xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @below {{block_size must be > 0, got 0}}
  %0:5 = eff.adam8bit_update %p, %p, %q, %a, %q, %a, %lr, %s {block_size = 0 : i64}
    : (tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<f32>, tensor<i64>)
    -> (tensor<64x80xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<64x80xi8>, tensor<20xf32>)
  return
}

// -----

func.func @betas_in_range(%p: tensor<64x80xf32>, %q: tensor<64x80xi8>, %a: tensor<20xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @below {{betas must be in [0, 1), got 1}}
  %0:5 = eff.adam8bit_update %p, %p, %q, %a, %q, %a, %lr, %s {beta2 = 1.0 : f64}
    : (tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<f32>, tensor<i64>)
    -> (tensor<64x80xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<64x80xi8>, tensor<20xf32>)
  return
}

// -----

func.func @codes_are_i8(%p: tensor<64x80xf32>, %q: tensor<64x80xi8>, %bad: tensor<64x80xf32>, %a: tensor<20xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @below {{operand #2 must be statically shaped tensor of 8-bit signless integer values}}
  %0:5 = eff.adam8bit_update %p, %p, %bad, %a, %q, %a, %lr, %s
    : (tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xf32>, tensor<20xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<f32>, tensor<i64>)
    -> (tensor<64x80xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<64x80xi8>, tensor<20xf32>)
  return
}
