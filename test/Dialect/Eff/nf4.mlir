// RUN: effopt-opt %s -split-input-file -test-eff-cost -verify-diagnostics | FileCheck %s

// eff.nf4_pack views an NF4 weight's storage as the weight; it costs nothing,
// and a product reading it reads the packed bytes: 8192 weights are 4096 code
// bytes, 128 absmax bytes, one f32 scale and the f32 offset (4232 bytes),
// with 2048 f32 inputs and 128 f32 biases: 8192 + 4232 + 512 read.
// CHECK-LABEL: func.func @nf4_linear
// CHECK: %[[W:.*]] = eff.nf4_pack %arg0, %arg1, %arg2, %arg3 : tensor<4096xi8>, tensor<128xi8>, tensor<1xf32>, tensor<f32> -> tensor<128x64xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
// CHECK: eff.linear %arg4, %[[W]], %arg5 {transpose_b = true}
func.func @nf4_linear(%c: tensor<4096xi8>, %a: tensor<128xi8>, %n: tensor<1xf32>, %o: tensor<f32>,
                      %x: tensor<32x64xf32>, %b: tensor<128xf32>) -> tensor<32x128xf32> {
  // expected-remark @+1 {{flops = 0, read = 0, written = 0}}
  %w = eff.nf4_pack %c, %a, %n, %o : tensor<4096xi8>, tensor<128xi8>, tensor<1xf32>, tensor<f32>
      -> tensor<128x64xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
  // expected-remark @+1 {{flops = 528384, read = 12936, written = 16384}}
  %y = eff.linear %x, %w, %b {transpose_b = true}
      : (tensor<32x64xf32>, tensor<128x64xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>, tensor<128xf32>) -> tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}

// -----

func.func @storage_types_must_match(%c: tensor<4000xi8>, %a: tensor<128xi8>, %n: tensor<1xf32>, %o: tensor<f32>) {
  // expected-error @+1 {{codes of a 8192-element weight must be 'tensor<4096xi8>', got 'tensor<4000xi8>'}}
  %w = eff.nf4_pack %c, %a, %n, %o : tensor<4000xi8>, tensor<128xi8>, tensor<1xf32>, tensor<f32>
      -> tensor<128x64xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
  return
}

// -----

// 300 blocks of 64 need two nested scales.
func.func @nested_blocks(%c: tensor<9600xi8>, %a: tensor<300xi8>, %n: tensor<1xf32>, %o: tensor<f32>) {
  // expected-error @+1 {{nested_absmax of a 19200-element weight must be 'tensor<2xf32>', got 'tensor<1xf32>'}}
  %w = eff.nf4_pack %c, %a, %n, %o : tensor<9600xi8>, tensor<300xi8>, tensor<1xf32>, tensor<f32>
      -> tensor<300x64xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
  return
}

// -----

func.func @encoding_required(%c: tensor<32xi8>, %a: tensor<1xi8>, %n: tensor<1xf32>, %o: tensor<f32>) {
  // expected-error @+1 {{result must have the #eff.nf4 encoding, got 'tensor<8x8xf32>'}}
  %w = eff.nf4_pack %c, %a, %n, %o : tensor<32xi8>, tensor<1xi8>, tensor<1xf32>, tensor<f32> -> tensor<8x8xf32>
  return
}

// -----

func.func @only_a_product_weight(%c: tensor<32xi8>, %a: tensor<1xi8>, %n: tensor<1xf32>, %o: tensor<f32>, %x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{an NF4 weight can only be the weight operand (b) of eff.linear, but it is operand 0 of eff.linear}}
  %w = eff.nf4_pack %c, %a, %n, %o : tensor<32xi8>, tensor<1xi8>, tensor<1xf32>, tensor<f32>
      -> tensor<8x8xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
  %r = eff.linear %w, %x : (tensor<8x8xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// expected-error @+1 {{block sizes must be positive, got block_size = 0 and nested_block_size = 256}}
func.func private @bad_block(tensor<8x8xf32, #eff.nf4<block_size = 0, nested_block_size = 256>>)
