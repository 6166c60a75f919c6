// RUN: effopt-opt %s -split-input-file | effopt-opt -split-input-file | FileCheck %s
// RUN: effopt-opt %s -split-input-file -test-eff-cost -verify-diagnostics -o /dev/null

// eff.attention and eff.attention_grad round-trip; their costs
// (CostOpInterface): scores = B*H*Tq*Tk = 2*4*77*77 = 47432.
// Forward: 2D (q k^T) + 5 (softmax) + 2Dv (p v) = 261 per score.
// Backward: 2D + 3 (recomputed p) + 2Dv (dV) + 2Dv (dP) + 3 (dS) + 4D (dQ,
// dK) = 646 per score, plus 2 per output element (D = rowsum(dO * O)).

// CHECK-LABEL: func.func @attention
// CHECK: eff.attention %arg0, %arg1, %arg2 mask %arg3 {causal = true, dropout = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 3 : i64} : (tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x1x1x77xi1>) -> (tensor<2x4x77x64xf32>, tensor<2x4x77xf32>)
// CHECK: eff.attention_grad %arg0, %arg1, %arg2, %{{.*}}, %{{.*}}, %arg4 mask %arg3 {causal = true, dropout = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 3 : i64}
func.func @attention(%q: tensor<2x4x77x64xf32>, %k: tensor<2x4x77x64xf32>, %v: tensor<2x4x77x64xf32>, %m: tensor<2x1x1x77xi1>, %do: tensor<2x4x77x64xf32>) -> (tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>) {
  // expected-remark @+1 {{flops = 12379752, read = 473242, written = 160160}}
  %o, %lse = eff.attention %q, %k, %v mask %m {scale = 0.125 : f64, causal = true, dropout = 0.1 : f64, seed = 3 : i64} : (tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x1x1x77xi1>) -> (tensor<2x4x77x64xf32>, tensor<2x4x77xf32>)
  // expected-remark @+1 {{flops = 30719920, read = 791098, written = 473088}}
  %dq, %dk, %dv = eff.attention_grad %q, %k, %v, %o, %lse, %do mask %m {scale = 0.125 : f64, causal = true, dropout = 0.1 : f64, seed = 3 : i64} : (tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77xf32>, tensor<2x4x77x64xf32>, tensor<2x1x1x77xi1>) -> (tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>)
  return %dq, %dk, %dv : tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>
}

// -----

// Rank 3 ([B*H, T, D], nn.MultiheadAttention's layout), Tq != Tk, Dv != D,
// a float mask, no dropout (defaults elided).
// CHECK-LABEL: func.func @rank3
// CHECK: eff.attention %arg0, %arg1, %arg2 mask %arg3 {scale = 5.000000e-01 : f64} : (tensor<6x3x4xf32>, tensor<6x5x4xf32>, tensor<6x5x2xf32>, tensor<6x1x5xf32>) -> (tensor<6x3x2xf32>, tensor<6x3xf32>)
func.func @rank3(%q: tensor<6x3x4xf32>, %k: tensor<6x5x4xf32>, %v: tensor<6x5x2xf32>, %m: tensor<6x1x5xf32>) -> tensor<6x3x2xf32> {
  // expected-remark @+1 {{flops = 1530, read = 1128, written = 216}}
  %o, %lse = eff.attention %q, %k, %v mask %m {scale = 0.5 : f64} : (tensor<6x3x4xf32>, tensor<6x5x4xf32>, tensor<6x5x2xf32>, tensor<6x1x5xf32>) -> (tensor<6x3x2xf32>, tensor<6x3xf32>)
  return %o : tensor<6x3x2xf32>
}
