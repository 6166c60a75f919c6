// RUN: effopt-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of eff.attention and eff.attention_grad.

func.func @rank(%q: tensor<3x4xf32>) {
  // expected-error @+1 {{query must have rank 3 or 4 ([.., T, D]), got 'tensor<3x4xf32>'}}
  %o, %l = eff.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch(%q: tensor<2x3x4xf32>, %k: tensor<1x3x4xf32>) {
  // expected-error @+1 {{must have the query's leading (batch, head) dimensions}}
  %o, %l = eff.attention %q, %k, %k {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @head_size(%q: tensor<2x3x4xf32>, %k: tensor<2x3x8xf32>) {
  // expected-error @+1 {{key's head size 8 differs from the query's 4}}
  %o, %l = eff.attention %q, %k, %k {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @value_rows(%q: tensor<2x3x4xf32>, %v: tensor<2x5x4xf32>) {
  // expected-error @+1 {{value has 5 rows but key has 3}}
  %o, %l = eff.attention %q, %q, %v {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @mask_broadcast(%q: tensor<2x3x4xf32>, %m: tensor<2x3x4xi1>) {
  // expected-error @+1 {{mask 'tensor<2x3x4xi1>' does not broadcast to the scores [2x3x3]}}
  %o, %l = eff.attention %q, %q, %q mask %m {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xi1>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @mask_type(%q: tensor<2x3x4xf32>, %m: tensor<3x3xi32>) {
  // expected-error @+1 {{mask must be i1 or the query's element type, got 'i32'}}
  %o, %l = eff.attention %q, %q, %q mask %m {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x3xi32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @dropout(%q: tensor<2x3x4xf32>) {
  // expected-error @+1 {{dropout probability 1.000000e+00 is outside [0, 1)}}
  %o, %l = eff.attention %q, %q, %q {scale = 1.0 : f64, dropout = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @output(%q: tensor<2x3x4xf32>) {
  // expected-error @+1 {{output must be 'tensor<2x3x4xf32>', got 'tensor<2x3x3xf32>'}}
  %o, %l = eff.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x3xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @lse(%q: tensor<2x3x4xf32>) {
  // expected-error @+1 {{lse must be f32 [2x3], got 'tensor<2x3xf16>'}}
  %o, %l = eff.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf16>)
  return
}

// -----

func.func @grad_types(%q: tensor<2x3x4xf32>, %l: tensor<2x3xf32>) {
  // expected-error @+1 {{the gradients must have the types of query, key and value}}
  %a, %b, %c = eff.attention_grad %q, %q, %q, %q, %l, %q {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x3xf32>)
  return
}
