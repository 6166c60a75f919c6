// RUN: effopt-opt %s --eff-quantize-frozen --split-input-file --verify-diagnostics | FileCheck %s

// A frozen weight read by the forward product (transposed, as nn.Linear) and
// the backward one (dx = dy W): its parameter becomes the four packed storage
// parameters (64 weights: one block, one nested block), one eff.nf4_pack
// views them, and both products read that with their own transpose flag.
// CHECK-LABEL: module
// CHECK-NOT: @fc.weight :
// CHECK: eff.parameter frozen @fc.weight.nf4 : tensor<32xi8> = dense_resource<fc.weight.nf4>
// CHECK-NEXT: eff.parameter frozen @fc.weight.absmax : tensor<1xi8> = dense_resource<fc.weight.absmax>
// CHECK-NEXT: eff.parameter frozen @fc.weight.nested_absmax : tensor<1xf32> = dense_resource<fc.weight.nested_absmax>
// CHECK-NEXT: eff.parameter frozen @fc.weight.nested_offset : tensor<f32> = dense_resource<fc.weight.nested_offset>
// CHECK-NEXT: eff.parameter trainable @fc.bias
// CHECK: func.func @train_step(%[[CODES:.*]]: tensor<32xi8> {eff.parameter = @fc.weight.nf4}, %[[ABSMAX:.*]]: tensor<1xi8> {eff.parameter = @fc.weight.absmax}, %[[NESTED:.*]]: tensor<1xf32> {eff.parameter = @fc.weight.nested_absmax}, %[[OFFSET:.*]]: tensor<f32> {eff.parameter = @fc.weight.nested_offset}, %[[BIAS:.*]]: tensor<8xf32>
// CHECK: %[[W:.*]] = eff.nf4_pack %[[CODES]], %[[ABSMAX]], %[[NESTED]], %[[OFFSET]] : tensor<32xi8>, tensor<1xi8>, tensor<1xf32>, tensor<f32> -> tensor<8x8xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
// CHECK: eff.linear %{{.*}}, %[[W]], %[[BIAS]] {transpose_b = true}
// CHECK: eff.linear %{{.*}}, %[[W]] :
module {
  eff.parameter frozen @fc.weight : tensor<8x8xf32> = dense<[[0.5, -0.25, 0.125, 1.0, -1.0, 0.75, 0.0, 0.3], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], [-0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8], [0.5, -0.25, 0.125, 1.0, -1.0, 0.75, 0.0, 0.3], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], [-0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8], [0.5, -0.25, 0.125, 1.0, -1.0, 0.75, 0.0, 0.3], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]]> : tensor<8x8xf32>
  eff.parameter trainable @fc.bias : tensor<8xf32> = dense<0.0> : tensor<8xf32>
  func.func @train_step(%w: tensor<8x8xf32> {eff.parameter = @fc.weight}, %b: tensor<8xf32> {eff.parameter = @fc.bias},
                        %x: tensor<4x8xf32> {eff.input = "x"}, %dy: tensor<4x8xf32> {eff.input = "dy"})
      -> (tensor<4x8xf32> {eff.output = "y"}, tensor<4x8xf32> {eff.output = "dx"}) {
    %y = eff.linear %x, %w, %b {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %dx = eff.linear %dy, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y, %dx : tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// nn.Linear on 3-D inputs: matmul(x, transpose(W)) in the forward and, in the
// backward, matmul(dy, transpose(save(transpose(W)))). Each becomes rows of
// the left operand times the packed weight, with the transposes folded into
// transpose_b; the saved transposed copy of the weight is gone.
// 100 weights: two blocks (the last partial), codes padded to 50 bytes.
// CHECK-LABEL: module
// CHECK: eff.parameter frozen @w.nf4 : tensor<50xi8>
// CHECK-NEXT: eff.parameter frozen @w.absmax : tensor<2xi8>
// CHECK: %[[W:.*]] = eff.nf4_pack {{.*}} -> tensor<20x5xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
// CHECK-NOT: eff.transpose
// CHECK-NOT: eff.save
// CHECK: %[[ROWS:.*]] = eff.reshape %{{.*}} : tensor<2x3x5xf32> to tensor<6x5xf32>
// CHECK: %[[Y:.*]] = eff.linear %[[ROWS]], %[[W]] {transpose_b = true} : (tensor<6x5xf32>, tensor<20x5xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>) -> tensor<6x20xf32>
// CHECK: eff.reshape %[[Y]] : tensor<6x20xf32> to tensor<2x3x20xf32>
// CHECK: %[[DROWS:.*]] = eff.reshape %{{.*}} : tensor<2x3x20xf32> to tensor<6x20xf32>
// CHECK: %[[DX:.*]] = eff.linear %[[DROWS]], %[[W]] : (tensor<6x20xf32>, tensor<20x5xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>) -> tensor<6x5xf32>
// CHECK: eff.reshape %[[DX]] : tensor<6x5xf32> to tensor<2x3x5xf32>
module {
  eff.parameter frozen @w : tensor<20x5xf32> = dense<0.25> : tensor<20x5xf32>
  func.func @train_step(%w: tensor<20x5xf32> {eff.parameter = @w},
                        %x: tensor<2x3x5xf32> {eff.input = "x"}, %dy: tensor<2x3x20xf32> {eff.input = "dy"})
      -> (tensor<2x3x20xf32> {eff.output = "y"}, tensor<2x3x5xf32> {eff.output = "dx"}) {
    %wt = eff.transpose %w {permutation = array<i64: 1, 0>} : tensor<20x5xf32> -> tensor<5x20xf32>
    %y = eff.matmul %x, %wt : (tensor<2x3x5xf32>, tensor<5x20xf32>) -> tensor<2x3x20xf32>
    %s = eff.save %wt : tensor<5x20xf32>
    %wtt = eff.transpose %s {permutation = array<i64: 1, 0>} : tensor<5x20xf32> -> tensor<20x5xf32>
    %dx = eff.matmul %dy, %wtt : (tensor<2x3x20xf32>, tensor<20x5xf32>) -> tensor<2x3x5xf32>
    return %y, %dx : tensor<2x3x20xf32>, tensor<2x3x5xf32>
  }
}

// -----

// Frozen parameters that cannot be quantized stay as they are, each with a
// remark saying why; trainable ones are not considered.
// CHECK-LABEL: module
// CHECK: eff.parameter frozen @emb : tensor<10x4xf32>
// CHECK: eff.parameter frozen @half : tensor<4x4xf16>
// CHECK: eff.parameter trainable @head : tensor<4x4xf32>
// CHECK-NOT: eff.nf4_pack
module {
  // expected-remark @+1 {{'emb' stays as it is: it is read by eff.gather (operand #0), not as the weight of a matrix product}}
  eff.parameter frozen @emb : tensor<10x4xf32> = dense<1.0> : tensor<10x4xf32>
  // expected-remark @+1 {{'half' stays as it is: its element type is f16 (only f32 weights are quantized)}}
  eff.parameter frozen @half : tensor<4x4xf16> = dense<1.0> : tensor<4x4xf16>
  eff.parameter trainable @head : tensor<4x4xf32> = dense<1.0> : tensor<4x4xf32>
  func.func @train_step(%emb: tensor<10x4xf32> {eff.parameter = @emb}, %half: tensor<4x4xf16> {eff.parameter = @half},
                        %head: tensor<4x4xf32> {eff.parameter = @head}, %ids: tensor<2xi64> {eff.input = "ids"},
                        %xh: tensor<2x4xf16> {eff.input = "xh"})
      -> (tensor<2x4xf32> {eff.output = "y"}, tensor<2x4xf16> {eff.output = "yh"}) {
    %e = eff.gather %emb, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
    %y = eff.linear %e, %head {transpose_b = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %yh = eff.linear %xh, %half {transpose_b = true} : (tensor<2x4xf16>, tensor<4x4xf16>) -> tensor<2x4xf16>
    return %y, %yh : tensor<2x4xf32>, tensor<2x4xf16>
  }
}

// -----

// Under autocast the products read the weight rounded to bf16: the packed
// value has the element type they read (the dequantized weight is rounded
// the same way), and the cast is gone.
// CHECK-LABEL: module
// CHECK: %[[W:.*]] = eff.nf4_pack {{.*}} -> tensor<8x8xbf16, #eff.nf4<block_size = 64, nested_block_size = 256>>
// CHECK-NOT: eff.cast
// CHECK: eff.linear %{{.*}}, %[[W]] {transpose_b = true} : (tensor<4x8xbf16>, tensor<8x8xbf16, #eff.nf4<block_size = 64, nested_block_size = 256>>) -> tensor<4x8xbf16>
module {
  eff.parameter frozen @w : tensor<8x8xf32> = dense<0.5> : tensor<8x8xf32>
  func.func @train_step(%w: tensor<8x8xf32> {eff.parameter = @w}, %x: tensor<4x8xbf16> {eff.input = "x"})
      -> (tensor<4x8xbf16> {eff.output = "y"}) {
    %wb = eff.cast %w : tensor<8x8xf32> to tensor<8x8xbf16>
    %y = eff.linear %x, %wb {transpose_b = true} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
    return %y : tensor<4x8xbf16>
  }
}
