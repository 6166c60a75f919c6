// RUN: effopt-opt %s --eff-fuse-attention --split-input-file | FileCheck %s

// Hand-written causal attention as PyTorch 1.13 exports it: q @ k^T / sqrt(d),
// masked_fill(~tril, -inf) (a constant Where), softmax, dropout, @ v.
// CHECK-LABEL: func.func @causal_dropout
// CHECK-SAME: (%[[Q:.*]]: tensor<2x2x5x8xf32>{{.*}}, %[[K:.*]]: tensor<2x2x5x8xf32>{{.*}}, %[[V:.*]]: tensor<2x2x5x8xf32>
// CHECK: %[[O:.*]], %{{.*}} = eff.attention %[[Q]], %[[K]], %[[V]] {causal = true, dropout = 1.000000e-01 : f64, scale = 0.35355339{{[0-9]*}} : f64, seed = 7 : i64}
// CHECK-SAME: -> (tensor<2x2x5x8xf32>, tensor<2x2x5xf32>)
// CHECK-NOT: eff.softmax
// CHECK: eff.reduce_sum %[[O]]
func.func @causal_dropout(%q: tensor<2x2x5x8xf32> {eff.input = "q"}, %k: tensor<2x2x5x8xf32> {eff.input = "k"}, %v: tensor<2x2x5x8xf32> {eff.input = "v"}) -> tensor<f32> {
  %ninf = eff.constant dense<0xFF800000> : tensor<f32>
  %m = eff.constant dense<[[false, true, true, true, true], [false, false, true, true, true], [false, false, false, true, true], [false, false, false, false, true], [false, false, false, false, false]]> : tensor<5x5xi1>
  %c = eff.constant dense<2.82842708> : tensor<f32>
  %kt = eff.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<2x2x5x8xf32> -> tensor<2x2x8x5xf32>
  %s = eff.matmul %q, %kt : (tensor<2x2x5x8xf32>, tensor<2x2x8x5xf32>) -> tensor<2x2x5x5xf32>
  %d = eff.div %s, %c : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5x5xf32>
  %w = eff.where %m, %ninf, %d : (tensor<5x5xi1>, tensor<f32>, tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
  %p = eff.softmax %w {axis = 3 : i64} : tensor<2x2x5x5xf32>
  %pd, %keep = eff.dropout %p {ratio = 1.000000e-01 : f64, seed = 7 : i64} : tensor<2x2x5x5xf32> -> (tensor<2x2x5x5xf32>, tensor<2x2x5x5xi1>)
  %o = eff.matmul %pd, %v : (tensor<2x2x5x5xf32>, tensor<2x2x5x8xf32>) -> tensor<2x2x5x8xf32>
  %r = eff.reduce_sum %o {axes = array<i64: 0, 1, 2, 3>} : tensor<2x2x5x8xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// nn.MultiheadAttention (batch_first, key_padding_mask): [B*H, T, D]
// operands, q scaled before the product, k^T taken from the [T, B*H, D]
// projection by one transpose, the padding mask added as a float tensor.
// CHECK-LABEL: func.func @mha_padding
// CHECK: %[[QS:.*]] = eff.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>}
// CHECK: %[[MASK:.*]] = eff.where %{{.*}} : (tensor<4x1x5xi1>, tensor<f32>, tensor<4x1x5xf32>)
// CHECK: %[[K:.*]] = eff.transpose %[[KSRC:.*]] {permutation = array<i64: 1, 0, 2>} : tensor<5x4x8xf32> -> tensor<4x5x8xf32>
// CHECK: eff.attention %[[QS]], %[[K]], %{{.*}} mask %[[MASK]] {scale = 0.35355339{{[0-9]*}} : f64}
// CHECK-NOT: eff.matmul
func.func @mha_padding(%qp: tensor<5x4x8xf32>, %kp: tensor<5x4x8xf32>, %vp: tensor<4x5x8xf32>, %pad: tensor<4x1x5xi1>) -> tensor<4x5x8xf32> {
  %c = eff.constant dense<2.82842708> : tensor<f32>
  %ninf = eff.constant dense<0xFF800000> : tensor<f32>
  %zero = eff.constant dense<0.0> : tensor<4x1x5xf32>
  %q = eff.transpose %qp {permutation = array<i64: 1, 0, 2>} : tensor<5x4x8xf32> -> tensor<4x5x8xf32>
  %mask = eff.where %pad, %ninf, %zero : (tensor<4x1x5xi1>, tensor<f32>, tensor<4x1x5xf32>) -> tensor<4x1x5xf32>
  %qs = eff.div %q, %c : (tensor<4x5x8xf32>, tensor<f32>) -> tensor<4x5x8xf32>
  %kt = eff.transpose %kp {permutation = array<i64: 1, 2, 0>} : tensor<5x4x8xf32> -> tensor<4x8x5xf32>
  %s = eff.matmul %qs, %kt : (tensor<4x5x8xf32>, tensor<4x8x5xf32>) -> tensor<4x5x5xf32>
  %sm = eff.add %s, %mask : (tensor<4x5x5xf32>, tensor<4x1x5xf32>) -> tensor<4x5x5xf32>
  %p = eff.softmax %sm {axis = 2 : i64} : tensor<4x5x5xf32>
  %o = eff.matmul %p, %vp : (tensor<4x5x5xf32>, tensor<4x5x8xf32>) -> tensor<4x5x8xf32>
  return %o : tensor<4x5x8xf32>
}

// -----

// A constant additive causal mask (0 / -inf) and a Mul scale; k given as
// k^T without a transpose: the pass transposes it back.
// CHECK-LABEL: func.func @additive_causal_mul_scale
// CHECK: %[[K:.*]] = eff.transpose %arg1 {permutation = array<i64: 0, 2, 1>} : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
// CHECK: eff.attention %arg0, %[[K]], %arg2 {causal = true, scale = 5.000000e-01 : f64}
func.func @additive_causal_mul_scale(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %c = eff.constant dense<0.5> : tensor<f32>
  %m = eff.constant dense<[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %d = eff.mul %c, %s : (tensor<f32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %a = eff.add %m, %d : (tensor<3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p = eff.softmax %a {axis = -1 : i64} : tensor<2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// A causal constant Where and a key-padding Where together: causal plus a
// boolean mask. No scale at all: scale 1.
// CHECK-LABEL: func.func @causal_and_padding
// CHECK: eff.attention %arg0, %{{.*}}, %arg2 mask %arg3 {causal = true, scale = 1.000000e+00 : f64}
func.func @causal_and_padding(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %pad: tensor<1x1x1x3xi1>) -> tensor<1x2x3x4xf32> {
  %ninf = eff.constant dense<0xFF800000> : tensor<f32>
  %m = eff.constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %kt = eff.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
  %s = eff.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %w = eff.where %m, %ninf, %s : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %w2 = eff.where %pad, %ninf, %w : (tensor<1x1x1x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = eff.softmax %w2 {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Both q and k^T scaled by d^-1/4 (scale = 0.5 * 0.5), k^T from a transpose.
// CHECK-LABEL: func.func @scaled_q_and_k
// CHECK: eff.attention %arg0, %arg1, %arg2 {scale = 2.500000e-01 : f64}
func.func @scaled_q_and_k(%q: tensor<2x3x4xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %c = eff.constant dense<0.5> : tensor<f32>
  %qs = eff.mul %q, %c : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %kt = eff.transpose %k {permutation = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %kts = eff.mul %kt, %c : (tensor<2x4x3xf32>, tensor<f32>) -> tensor<2x4x3xf32>
  %s = eff.matmul %qs, %kts : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %p = eff.softmax %s {axis = 2 : i64} : tensor<2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// nanoGPT's `masked_fill(mask[:, :, :T, :T] == 0, -inf)` at a size the
// importer does not fold: Equal(Cast(tril), 0) of a constant is evaluated
// and recognised as causal.
// CHECK-LABEL: func.func @causal_from_comparison
// CHECK: eff.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 1.000000e+00 : f64}
// CHECK-NOT: eff.cmp
func.func @causal_from_comparison(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %ninf = eff.constant dense<0xFF800000> : tensor<f32>
  %zero = eff.constant dense<0> : tensor<i64>
  %tril = eff.constant dense<[[true, false, false], [true, true, false], [true, true, true]]> : tensor<3x3xi1>
  %wide = eff.cast %tril : tensor<3x3xi1> to tensor<3x3xi64>
  %masked = eff.cmp eq, %wide, %zero : (tensor<3x3xi64>, tensor<i64>) -> tensor<3x3xi1>
  %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %w = eff.where %masked, %ninf, %s : (tensor<3x3xi1>, tensor<f32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p = eff.softmax %w {axis = 2 : i64} : tensor<2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// An anti-causal constant (j < i masked) is a mask, not `causal`.
// CHECK-LABEL: func.func @not_causal_constant
// CHECK: eff.attention %arg0, %{{.*}}, %arg2 mask %{{.*}} {scale = 1.000000e+00 : f64}
func.func @not_causal_constant(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %ninf = eff.constant dense<0xFF800000> : tensor<f32>
  %m = eff.constant dense<[[false, false, false], [true, false, false], [true, true, false]]> : tensor<3x3xi1>
  %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %w = eff.where %m, %ninf, %s : (tensor<3x3xi1>, tensor<f32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p = eff.softmax %w {axis = 2 : i64} : tensor<2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Not fused: the probabilities are also returned (need_weights=True).
// CHECK-LABEL: func.func @weights_returned
// CHECK-NOT: eff.attention
// CHECK: eff.softmax
func.func @weights_returned(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x3xf32>) {
  %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %p = eff.softmax %s {axis = 2 : i64} : tensor<2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o, %p : tensor<2x3x4xf32>, tensor<2x3x3xf32>
}

// -----

// Not fused: the scores are read by something else too.
// CHECK-LABEL: func.func @scores_read_elsewhere
// CHECK-NOT: eff.attention
func.func @scores_read_elsewhere(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x3xf32>) {
  %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %p = eff.softmax %s {axis = 2 : i64} : tensor<2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o, %s : tensor<2x3x4xf32>, tensor<2x3x3xf32>
}

// -----

// Not fused: softmax over the queries (axis 1), not the keys.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT: eff.attention
func.func @softmax_over_queries(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %p = eff.softmax %s {axis = 1 : i64} : tensor<2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Not fused: masked_fill with a finite value (-1e9) replaces the scores;
// an additive mask would differ on rows that are masked entirely.
// CHECK-LABEL: func.func @finite_fill
// CHECK-NOT: eff.attention
func.func @finite_fill(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>, %m: tensor<2x1x3xi1>) -> tensor<2x3x4xf32> {
  %fill = eff.constant dense<-1.0e9> : tensor<f32>
  %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %w = eff.where %m, %fill, %s : (tensor<2x1x3xi1>, tensor<f32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p = eff.softmax %w {axis = 2 : i64} : tensor<2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// Not fused: the added bias is computed from a trainable parameter (Swin's
// relative position bias): it needs a Tq x Tk gradient.
// CHECK-LABEL: func.func @learned_bias
// CHECK-NOT: eff.attention
module {
  eff.parameter trainable @bias : tensor<3x3xf32>
  func.func @learned_bias(%bias: tensor<3x3xf32> {eff.parameter = @bias}, %q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
    %b2 = eff.mul %bias, %bias : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %a = eff.add %s, %b2 : (tensor<2x3x3xf32>, tensor<3x3xf32>) -> tensor<2x3x3xf32>
    %p = eff.softmax %a {axis = 2 : i64} : tensor<2x3x3xf32>
    %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %o : tensor<2x3x4xf32>
  }
}

// -----

// A frozen parameter is a constant of the step: that mask fuses.
// CHECK-LABEL: func.func @frozen_bias
// CHECK: eff.attention %arg1, %{{.*}}, %arg3 mask %arg0
module {
  eff.parameter frozen @bias : tensor<3x3xf32>
  func.func @frozen_bias(%bias: tensor<3x3xf32> {eff.parameter = @bias}, %q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
    %a = eff.add %s, %bias : (tensor<2x3x3xf32>, tensor<3x3xf32>) -> tensor<2x3x3xf32>
    %p = eff.softmax %a {axis = 2 : i64} : tensor<2x3x3xf32>
    %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %o : tensor<2x3x4xf32>
  }
}

// -----

// Not fused: the product broadcasts k over the heads.
// CHECK-LABEL: func.func @broadcast_key
// CHECK-NOT: eff.attention
func.func @broadcast_key(%q: tensor<2x3x4xf32>, %kt: tensor<1x4x3xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %s = eff.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<1x4x3xf32>) -> tensor<2x3x3xf32>
  %p = eff.softmax %s {axis = 2 : i64} : tensor<2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// torch.where(tril, s, -inf): the condition marks what is kept. A constant
// causal one becomes causal = true; another constant becomes the inverted
// (masked-out) boolean mask.
// CHECK-LABEL: func.func @where_keep_causal
// CHECK: eff.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true
// CHECK-NOT: eff.softmax
func.func @where_keep_causal(%q: tensor<1x2x3x4xf32> {eff.input = "q"}, %k: tensor<1x2x3x4xf32> {eff.input = "k"}, %v: tensor<1x2x3x4xf32> {eff.input = "v"}) -> tensor<1x2x3x4xf32> {
  %ninf = eff.constant dense<0xFF800000> : tensor<f32>
  %keep = eff.constant dense<[[true, false, false], [true, true, false], [true, true, true]]> : tensor<3x3xi1>
  %kt = eff.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
  %s = eff.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %w = eff.where %keep, %s, %ninf : (tensor<3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = eff.softmax %w {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @where_keep_constant
// CHECK: %[[M:.*]] = eff.constant dense<{{\[}}[false, true, false], [false, false, true], [true, false, false]]> : tensor<3x3xi1>
// CHECK: eff.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[M]]
// CHECK-NOT: eff.softmax
func.func @where_keep_constant(%q: tensor<1x2x3x4xf32> {eff.input = "q"}, %k: tensor<1x2x3x4xf32> {eff.input = "k"}, %v: tensor<1x2x3x4xf32> {eff.input = "v"}) -> tensor<1x2x3x4xf32> {
  %ninf = eff.constant dense<0xFF800000> : tensor<f32>
  %keep = eff.constant dense<[[true, false, true], [true, true, false], [false, true, true]]> : tensor<3x3xi1>
  %kt = eff.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
  %s = eff.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %w = eff.where %keep, %s, %ninf : (tensor<3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = eff.softmax %w {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = eff.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
