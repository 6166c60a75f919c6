// RUN: effopt-opt %s -split-input-file -test-eff-mask-like-params -verify-diagnostics

// Trainable parameters whose every use is a mask's: added (through layout
// ops) to a softmax's input with values 0 and <= -100, compared, or cast to
// integers. Anything a weight does -- a product, a normalisation's scale, an
// addition that does not end in a softmax, a gather's table -- is never
// flagged; nor are values that are not a mask's.

// A float causal mask (a register_buffer'ed triu of -inf) added to the
// attention scores: flagged, with the --freeze that keeps it.
module {
  // expected-remark@below {{initializer 'blocks.0.attn.mask' is trained but looks like a buffer: it is only added to the input of a softmax (its values are 0 and large negatives: an attention mask); if it is a buffer, keep it as it is with --freeze '^blocks\.0\.attn\.mask$'}}
  eff.parameter trainable @blocks.0.attn.mask : tensor<2x2xf32> = dense<[[0.0, 0xFF800000], [0.0, 0.0]]> : tensor<2x2xf32>
  func.func @forward(%mask: tensor<2x2xf32> {eff.parameter = @blocks.0.attn.mask},
                     %q: tensor<3x2x4xf32> {eff.input = "q"}, %k: tensor<3x4x2xf32> {eff.input = "k"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %scores = eff.matmul %q, %k : (tensor<3x2x4xf32>, tensor<3x4x2xf32>) -> tensor<3x2x2xf32>
    %m = eff.reshape %mask : tensor<2x2xf32> to tensor<1x2x2xf32>
    %masked = eff.add %scores, %m : (tensor<3x2x2xf32>, tensor<1x2x2xf32>) -> tensor<3x2x2xf32>
    %p = eff.softmax %masked {axis = 2 : i64} : tensor<3x2x2xf32>
    %loss = eff.reduce_sum %p {axes = array<i64: 0, 1, 2>} : tensor<3x2x2xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A mask scaled by a constant (-1e9 rather than -inf) and added to scores
// divided by a constant before the softmax: still a mask.
module {
  // expected-remark@below {{initializer 'mask' is trained but looks like a buffer}}
  eff.parameter trainable @mask : tensor<2x2xf32> = dense<[[0.0, -1.0e+09], [0.0, 0.0]]> : tensor<2x2xf32>
  func.func @forward(%mask: tensor<2x2xf32> {eff.parameter = @mask},
                     %s: tensor<2x2xf32> {eff.input = "s"}) -> (tensor<f32> {eff.output = "loss"}) {
    %two = eff.constant dense<2.0> : tensor<f32>
    %half = eff.mul %mask, %two : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
    %t = eff.transpose %half {permutation = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
    %masked = eff.add %s, %t : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %scaled = eff.div %masked, %two : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
    %p = eff.softmax %scaled {axis = 1 : i64} : tensor<2x2xf32>
    %loss = eff.reduce_sum %p {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Not flagged: a learned additive attention bias (values of a weight), a
// bias added to a product, a LayerNorm scale, a positional embedding added
// to the activations, a relative-position table gathered and added to the
// scores (Swin), and a mask-valued tensor also used in a product.
module {
  eff.parameter trainable @learned_bias : tensor<2x2xf32> = dense<[[0.1, -0.3], [0.0, 0.2]]> : tensor<2x2xf32>
  eff.parameter trainable @fc.bias : tensor<2xf32> = dense<[0.0, 0.0]> : tensor<2xf32>
  eff.parameter trainable @ln.weight : tensor<2xf32> = dense<[1.0, 1.0]> : tensor<2xf32>
  eff.parameter trainable @pos : tensor<2x2xf32> = dense<[[0.0, -200.0], [0.0, 0.0]]> : tensor<2x2xf32>
  eff.parameter trainable @rel_table : tensor<3xf32> = dense<[0.0, -1000.0, 0.0]> : tensor<3xf32>
  eff.parameter trainable @both : tensor<2x2xf32> = dense<[[0.0, 0xFF800000], [0.0, 0.0]]> : tensor<2x2xf32>
  func.func @forward(%learned: tensor<2x2xf32> {eff.parameter = @learned_bias},
                     %bias: tensor<2xf32> {eff.parameter = @fc.bias},
                     %gamma: tensor<2xf32> {eff.parameter = @ln.weight},
                     %pos: tensor<2x2xf32> {eff.parameter = @pos},
                     %table: tensor<3xf32> {eff.parameter = @rel_table},
                     %both: tensor<2x2xf32> {eff.parameter = @both},
                     %x: tensor<2x2xf32> {eff.input = "x"}) -> (tensor<f32> {eff.output = "loss"}) {
    %index = eff.constant dense<[[1, 0], [2, 1]]> : tensor<2x2xi64>
    %h = eff.add %x, %pos : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %y, %mean, %rstd = eff.layer_norm %h scale %gamma {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
    %z = eff.add %y, %bias : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
    %s0 = eff.add %z, %learned : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %rel = eff.gather %table, %index {axis = 0 : i64} : (tensor<3xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
    %s1 = eff.add %s0, %rel : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %s2 = eff.add %s1, %both : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %p = eff.softmax %s2 {axis = 1 : i64} : tensor<2x2xf32>
    %w = eff.mul %p, %both : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %loss = eff.reduce_sum %w {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Not flagged: a frozen mask (--freeze) and a buffer.
module {
  eff.parameter frozen @mask : tensor<2x2xf32> = dense<[[0.0, 0xFF800000], [0.0, 0.0]]> : tensor<2x2xf32>
  eff.parameter buffer @threshold : tensor<f32> = dense<0.5> : tensor<f32>
  func.func @forward(%mask: tensor<2x2xf32> {eff.parameter = @mask},
                     %threshold: tensor<f32> {eff.parameter = @threshold},
                     %s: tensor<2x2xf32> {eff.input = "s"}) -> (tensor<f32> {eff.output = "loss"}) {
    %masked = eff.add %s, %mask : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %p = eff.softmax %masked {axis = 1 : i64} : tensor<2x2xf32>
    %keep = eff.cmp gt, %p, %threshold : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xi1>
    %zero = eff.constant dense<0.0> : tensor<2x2xf32>
    %q = eff.where %keep, %p, %zero : (tensor<2x2xi1>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %loss = eff.reduce_sum %q {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Compared and cast to an integer type (a float threshold and a float
// lengths tensor): flagged. (The importer already makes such tensors
// buffers when no gradient reaches them; roles written by hand can still
// say trainable.)
module {
  // expected-remark@below {{initializer 'threshold' is trained but looks like a buffer: it is only compared; if it is a buffer, keep it as it is with --freeze '^threshold$'}}
  eff.parameter trainable @threshold : tensor<f32> = dense<0.5> : tensor<f32>
  // expected-remark@below {{initializer 'lengths' is trained but looks like a buffer: it is only cast to an integer or boolean type; if it is a buffer}}
  eff.parameter trainable @lengths : tensor<2xf32> = dense<[1.0, 2.0]> : tensor<2xf32>
  func.func @forward(%threshold: tensor<f32> {eff.parameter = @threshold},
                     %lengths: tensor<2xf32> {eff.parameter = @lengths},
                     %s: tensor<2x2xf32> {eff.input = "s"}) -> (tensor<f32> {eff.output = "loss"}) {
    %keep = eff.cmp gt, %s, %threshold : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xi1>
    %zero = eff.constant dense<0.0> : tensor<2x2xf32>
    %q = eff.where %keep, %s, %zero : (tensor<2x2xi1>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %n = eff.cast %lengths : tensor<2xf32> to tensor<2xi64>
    %rows = eff.gather %q, %n {axis = 0 : i64} : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
    %loss = eff.reduce_sum %rows {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
