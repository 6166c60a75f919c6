// RUN: effopt-opt %s -split-input-file -test-eff-forward-blocks -verify-diagnostics

// Separators of the forward's dataflow: gaps after a forward op that exactly
// one float activation crosses (arguments, parameters and constants aside).
// Blocks: about sqrt(activation bytes / separator bytes) of them, balanced
// by the bytes the ops write.

// A chain: every gap is a separator. 596 B written, separators 118.4 B on
// average: blocks of about sqrt(596 * 118.4) = 266 B, so one boundary after
// 384 B.
module {
  eff.parameter trainable @w0 : tensor<8x8xf32>
  eff.parameter trainable @w1 : tensor<8x8xf32>
  eff.parameter trainable @wh : tensor<5x8xf32>
  // expected-remark@below {{forward: 6 ops, 5 separators, 2 blocks, 596 B of activations}}
  func.func @chain(%w0: tensor<8x8xf32> {eff.parameter = @w0},
                   %w1: tensor<8x8xf32> {eff.parameter = @w1},
                   %wh: tensor<5x8xf32> {eff.parameter = @wh},
                   %x: tensor<4x8xf32> {eff.input = "x"}, %t: tensor<4xi64> {eff.input = "t"})
      -> tensor<f32> {
    // expected-remark@below {{separator: 128 B cross, 128 B written up to here}}
    %h0 = eff.linear %x, %w0 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    // expected-remark@below {{separator: 128 B cross, 256 B written up to here}}
    %r0 = eff.relu %h0 : tensor<4x8xf32>
    // expected-remark@below {{separator: 128 B cross, 384 B written up to here, ends block 0}}
    %h1 = eff.linear %r0, %w1 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    // expected-remark@below {{separator: 128 B cross, 512 B written up to here}}
    %r1 = eff.relu %h1 : tensor<4x8xf32>
    // expected-remark@below {{separator: 80 B cross, 592 B written up to here}}
    %z = eff.linear %r1, %wh {transpose_b = true} : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x5xf32>
    %loss = eff.softmax_cross_entropy mean, %z, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Residual blocks: the stream a skip connection carries crosses every gap
// inside its block, so separators are the block outputs (and the stem and
// head), never inside a block. 980 B written, blocks of about 341 B: a
// boundary after each residual block. The weight transpose reads no
// activation: the sum before it still separates.
module {
  eff.parameter trainable @w0 : tensor<8x8xf32>
  eff.parameter trainable @w1 : tensor<8x8xf32>
  eff.parameter trainable @w2 : tensor<8x8xf32>
  eff.parameter trainable @wh : tensor<5x8xf32>
  // expected-remark@below {{forward: 10 ops, 5 separators, 3 blocks, 980 B of activations}}
  func.func @residual(%w0: tensor<8x8xf32> {eff.parameter = @w0},
                      %w1: tensor<8x8xf32> {eff.parameter = @w1},
                      %w2: tensor<8x8xf32> {eff.parameter = @w2},
                      %wh: tensor<5x8xf32> {eff.parameter = @wh},
                      %x: tensor<4x8xf32> {eff.input = "x"}, %t: tensor<4xi64> {eff.input = "t"})
      -> tensor<f32> {
    // expected-remark@below {{separator: 128 B cross, 128 B written up to here}}
    %s = eff.linear %x, %w0 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %h1 = eff.linear %s, %w1 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %g1 = eff.relu %h1 : tensor<4x8xf32>
    // expected-remark@below {{separator: 128 B cross, 512 B written up to here, ends block 0}}
    %y1 = eff.add %g1, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    // expected-remark@below {{separator: 128 B cross, 512 B written up to here, crossing: result #0 of op #3}}
    %w2t = eff.transpose %w2 {permutation = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %h2 = eff.matmul %y1, %w2t : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %g2 = eff.relu %h2 : tensor<4x8xf32>
    // expected-remark@below {{separator: 128 B cross, 896 B written up to here, ends block 1}}
    %y2 = eff.add %g2, %y1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    // expected-remark@below {{separator: 80 B cross, 976 B written up to here}}
    %z = eff.linear %y2, %wh {transpose_b = true} : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x5xf32>
    %loss = eff.softmax_cross_entropy mean, %z, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A dense block (DenseNet): every layer reads the concatenation of all the
// features before it, so nothing inside the block separates; the transition
// after it does. The labels, reshaped first, cross every gap: integer
// activations do not count. The block (1152 B) is worth more than two
// blocks (about 2 * 404 B), so it is cut further where at most one tensor
// crosses besides those every cut inside keeps anyway (the stem's output
// and the layers' outputs, read by the last concatenation): the least new
// bytes among such gaps 404 to 808 B after the last boundary, after layer
// 2's bottleneck (keeps %s, %a and %lb).
module {
  eff.parameter trainable @w0 : tensor<8x8xf32>
  eff.parameter trainable @w1 : tensor<8x8xf32>
  eff.parameter trainable @w2 : tensor<8x16xf32>
  eff.parameter trainable @w3 : tensor<8x24xf32>
  eff.parameter trainable @wh : tensor<5x8xf32>
  // expected-remark@below {{forward: 11 ops, 4 separators, 3 blocks, 1524 B of activations}}
  func.func @dense(%w0: tensor<8x8xf32> {eff.parameter = @w0},
                   %w1: tensor<8x8xf32> {eff.parameter = @w1},
                   %w2: tensor<8x16xf32> {eff.parameter = @w2},
                   %w3: tensor<8x24xf32> {eff.parameter = @w3},
                   %wh: tensor<5x8xf32> {eff.parameter = @wh},
                   %x: tensor<4x8xf32> {eff.input = "x"}, %t: tensor<2x2xi64> {eff.input = "t"})
      -> tensor<f32> {
    %labels = eff.reshape %t : tensor<2x2xi64> to tensor<4xi64>
    // expected-remark@below {{separator: 128 B cross, 160 B written up to here}}
    %s = eff.linear %x, %w0 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %la = eff.linear %s, %w1 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a = eff.relu %la : tensor<4x8xf32>
    %c1 = eff.concat %s, %a {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
    // expected-remark@below {{boundary: 384 B kept besides earlier boundaries', 800 B written up to here, ends block 0}}
    %lb = eff.linear %c1, %w2 {transpose_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %b = eff.relu %lb : tensor<4x8xf32>
    // expected-remark@below {{separator: 384 B cross, 1312 B written up to here, ends block 1}}
    %c2 = eff.concat %s, %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x24xf32>
    // expected-remark@below {{separator: 128 B cross, 1440 B written up to here}}
    %t1 = eff.linear %c2, %w3 {transpose_b = true} : (tensor<4x24xf32>, tensor<8x24xf32>) -> tensor<4x8xf32>
    // expected-remark@below {{separator: 80 B cross, 1520 B written up to here}}
    %z = eff.linear %t1, %wh {transpose_b = true} : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x5xf32>
    %loss = eff.softmax_cross_entropy mean, %z, %labels : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Two branches side by side up to the loss: two tensors cross every gap,
// nothing separates, one block.
module {
  eff.parameter trainable @w0 : tensor<4x4xf32>
  eff.parameter trainable @w1 : tensor<4x4xf32>
  // expected-remark@below {{forward: 6 ops, 0 separators, 1 blocks, 268 B of activations}}
  func.func @branches(%w0: tensor<4x4xf32> {eff.parameter = @w0},
                      %w1: tensor<4x4xf32> {eff.parameter = @w1},
                      %x: tensor<4x8xf32> {eff.input = "x"}) -> tensor<f32> {
    %a, %b = eff.split %x {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
    %la = eff.linear %a, %w0 {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %lb = eff.linear %b, %w1 {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %sa = eff.reduce_sum %la {axes = array<i64: 0, 1>} : tensor<4x4xf32> -> tensor<f32>
    %sb = eff.reduce_sum %lb {axes = array<i64: 0, 1>} : tensor<4x4xf32> -> tensor<f32>
    %loss = eff.add %sa, %sb : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
