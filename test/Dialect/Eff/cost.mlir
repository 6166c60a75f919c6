// RUN: effopt-opt %s -split-input-file -test-eff-cost -verify-diagnostics

// Exact FLOPs and bytes of the eff ops, as CostOpInterface reports them
// (see EffInterfaces.td): a multiply-add is 2 FLOPs, a transcendental 1;
// every operand is read once and every result written once; i1 takes one
// byte per element, bf16 and f16 two, f32 and i32 four, f64 and i64 eight.

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// [8, 4, 32, 16] x [8, 4, 16, 32]: 32768 outputs of K = 16 multiply-adds.
// Reads 2 x 16384 f32, writes 32768 f32.
func.func @matmul_batched(%q: tensor<8x4x32x16xf32>, %kt: tensor<8x4x16x32xf32>) -> tensor<8x4x32x32xf32> {
  // expected-remark @+1 {{flops = 1048576, read = 131072, written = 131072}}
  %0 = eff.matmul %q, %kt : (tensor<8x4x32x16xf32>, tensor<8x4x16x32xf32>) -> tensor<8x4x32x32xf32>
  return %0 : tensor<8x4x32x32xf32>
}

// -----

// The [4, 5] weight broadcasts over the batch: 30 outputs of K = 4, but the
// weight is read once (24 + 20 elements).
func.func @matmul_broadcast_batch(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  // expected-remark @+1 {{flops = 240, read = 176, written = 120}}
  %0 = eff.matmul %x, %w : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// 32 x 128 outputs of K = 64 multiply-adds, plus one bias add each:
// 2 * 64 * 4096 + 4096. Reads 2048 + 8192 + 128 f32.
func.func @linear_with_bias(%x: tensor<32x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>) -> tensor<32x128xf32> {
  // expected-remark @+1 {{flops = 528384, read = 41472, written = 16384}}
  %0 = eff.linear %x, %w, %b {transpose_b = true} : (tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

// -----

// 8 outputs of K = 8: 128, and no bias.
func.func @linear_without_bias(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  // expected-remark @+1 {{flops = 128, read = 192, written = 32}}
  %0 = eff.linear %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// alpha and beta other than 1 each scale every output once more:
// 128 + 8 (alpha) + 8 (bias) + 8 (beta).
func.func @linear_alpha_beta(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<2xf32>) -> tensor<4x2xf32> {
  // expected-remark @+1 {{flops = 152, read = 200, written = 32}}
  %0 = eff.linear %a, %b, %c {alpha = 2.0 : f64, beta = 0.5 : f64} : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

// -----

// Four groups: each of the 2 x 12 x 3 x 5 = 360 outputs sums
// C/groups x KH x KW = 2 x 3 x 3 = 18 products, then adds the bias:
// 2 * 18 * 360 + 360. Reads 1296 + 216 + 12 f32.
func.func @conv2d_groups_with_bias(%x: tensor<2x8x9x9xf32>, %w: tensor<12x2x3x3xf32>, %b: tensor<12xf32>) -> tensor<2x12x3x5xf32> {
  // expected-remark @+1 {{flops = 13320, read = 6096, written = 1440}}
  %0 = eff.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 2, 1, 2>, dilations = array<i64: 2, 2>, groups = 4 : i64} : (tensor<2x8x9x9xf32>, tensor<12x2x3x3xf32>, tensor<12xf32>) -> tensor<2x12x3x5xf32>
  return %0 : tensor<2x12x3x5xf32>
}

// -----

// Depthwise: groups == channels, so each output sums only 3 x 3 products.
func.func @conv2d_depthwise(%x: tensor<1x4x4x4xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x2x2xf32> {
  // expected-remark @+1 {{flops = 288, read = 400, written = 64}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x4x4x4xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x2x2xf32>
  return %0 : tensor<1x4x2x2xf32>
}

// -----

// One comparison per window element: 8 outputs x 4.
func.func @max_pool2d(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // expected-remark @+1 {{flops = 32, read = 128, written = 32}}
  %0 = eff.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// -----

// One addition per window element and one division: 9 outputs x (4 + 1).
func.func @avg_pool2d_ceil_mode(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> {
  // expected-remark @+1 {{flops = 45, read = 100, written = 36}}
  %0 = eff.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, ceil_mode = true} : tensor<1x1x5x5xf32> -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----

// One FLOP per output; the broadcast operand is read once.
func.func @add_broadcast(%a: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  // expected-remark @+1 {{flops = 128, read = 576, written = 512}}
  %0 = eff.add %a, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// Per element: exp 1, rsqrt 2 (sqrt and divide), sigmoid 3 (exp, add,
// divide), exact GELU 5 (divide, erf, add, two multiplies), tanh GELU 9.
func.func @unary_costs(%x: tensor<4x8xf32>) {
  // expected-remark @+1 {{flops = 32, read = 128, written = 128}}
  %0 = eff.exp %x : tensor<4x8xf32>
  // expected-remark @+1 {{flops = 64, read = 128, written = 128}}
  %1 = eff.rsqrt %x : tensor<4x8xf32>
  // expected-remark @+1 {{flops = 96, read = 128, written = 128}}
  %2 = eff.sigmoid %x : tensor<4x8xf32>
  // expected-remark @+1 {{flops = 160, read = 128, written = 128}}
  %3 = eff.gelu %x : tensor<4x8xf32>
  // expected-remark @+1 {{flops = 288, read = 128, written = 128}}
  %4 = eff.gelu %x approximate tanh : tensor<4x8xf32>
  return
}

// -----

// bf16 is two bytes per element.
func.func @bf16_two_bytes(%x: tensor<8x8xbf16>) -> tensor<8x8xbf16> {
  // expected-remark @+1 {{flops = 64, read = 128, written = 128}}
  %0 = eff.exp %x : tensor<8x8xbf16>
  return %0 : tensor<8x8xbf16>
}

// -----

// i1 is one byte per element, not one bit.
func.func @i1_one_byte(%a: tensor<4x4xi1>, %b: tensor<4xi1>) -> tensor<4x4xi1> {
  // expected-remark @+1 {{flops = 16, read = 16, written = 16}}
  %0 = eff.logical_not %a : tensor<4x4xi1>
  // expected-remark @+1 {{flops = 16, read = 20, written = 16}}
  %1 = eff.logical_and %0, %b : (tensor<4x4xi1>, tensor<4xi1>) -> tensor<4x4xi1>
  return %1 : tensor<4x4xi1>
}

// -----

// A comparison writes one i1 byte per element; a selection reads one.
func.func @cmp_and_where(%x: tensor<2x3xf32>, %t: tensor<f32>) -> tensor<2x3xf32> {
  // expected-remark @+1 {{flops = 6, read = 28, written = 6}}
  %m = eff.cmp gt, %x, %t : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  // expected-remark @+1 {{flops = 6, read = 34, written = 24}}
  %0 = eff.where %m, %x, %t : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// One conversion per element; f32 to bf16 halves the bytes.
func.func @cast_halves_bytes(%x: tensor<8x16xf32>) -> tensor<8x16xbf16> {
  // expected-remark @+1 {{flops = 128, read = 512, written = 256}}
  %0 = eff.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
  return %0 : tensor<8x16xbf16>
}

// -----

// Random number, compare and scale per element; writes the f32 output and
// the i1 mask.
func.func @dropout(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-remark @+1 {{flops = 1536, read = 2048, written = 2560}}
  %y, %mask = eff.dropout %x {ratio = 0.1 : f64, seed = 7 : i64} : tensor<8x64xf32> -> (tensor<8x64xf32>, tensor<8x64xi1>)
  return %y : tensor<8x64xf32>
}

//===----------------------------------------------------------------------===//
// Reductions, softmax and normalisation
//===----------------------------------------------------------------------===//

// -----

// One operation per input element; the mean also divides each output.
func.func @reductions(%x: tensor<8x16xf32>) {
  // expected-remark @+1 {{flops = 128, read = 512, written = 32}}
  %0 = eff.reduce_sum %x {axes = array<i64: 1>} : tensor<8x16xf32> -> tensor<8xf32>
  // expected-remark @+1 {{flops = 136, read = 512, written = 32}}
  %1 = eff.reduce_mean %x {axes = array<i64: 1>} : tensor<8x16xf32> -> tensor<8xf32>
  // expected-remark @+1 {{flops = 128, read = 512, written = 4}}
  %2 = eff.reduce_max %x {axes = array<i64: 0, 1>} : tensor<8x16xf32> -> tensor<f32>
  // expected-remark @+1 {{flops = 128, read = 512, written = 64}}
  %3 = eff.reduce_min %x {axes = array<i64: 0>, keep_dims = true} : tensor<8x16xf32> -> tensor<1x16xf32>
  return
}

// -----

// Max, subtract, exp, sum and normalise: 5 per element.
func.func @softmax(%x: tensor<8x4x32x32xf32>) {
  // expected-remark @+1 {{flops = 163840, read = 131072, written = 131072}}
  %0 = eff.softmax %x {axis = -1 : i64} : tensor<8x4x32x32xf32>
  // expected-remark @+1 {{flops = 163840, read = 131072, written = 131072}}
  %1 = eff.log_softmax %x {axis = 1 : i64} : tensor<8x4x32x32xf32>
  return
}

// -----

// 6 per element (mean, variance, normalise) plus scale and shift:
// 8 x 16384. Writes y and the f32 per-row mean and rstd (8 x 32 each).
func.func @layer_norm_affine(%x: tensor<8x32x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<8x32x64xf32> {
  // expected-remark @+1 {{flops = 131072, read = 66048, written = 67584}}
  %y, %mean, %rstd = eff.layer_norm %x scale %g bias %b : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x1xf32>, tensor<8x32x1xf32>)
  return %y : tensor<8x32x64xf32>
}

// -----

// Without scale and bias, 6 per element. The bf16 input and output take 2
// bytes, the f32 statistics 4.
func.func @layer_norm_bf16_no_affine(%x: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  // expected-remark @+1 {{flops = 1536, read = 512, written = 544}}
  %y, %mean, %rstd = eff.layer_norm %x : (tensor<4x64xbf16>) -> (tensor<4x64xbf16>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y : tensor<4x64xbf16>
}

// -----

// Training: batch statistics, normalise, scale and shift, 8 per element.
// Inference: subtract, multiply by rstd, scale and shift, 4 per element.
func.func @batch_norm(%x: tensor<4x16xf32>, %c: tensor<16xf32>) {
  // expected-remark @+1 {{flops = 512, read = 512, written = 512}}
  %y:5 = eff.batch_norm_train %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  // expected-remark @+1 {{flops = 256, read = 512, written = 256}}
  %z = eff.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

// Log-softmax over 256 x 10 logits (5 each), then pick and reduce (2 per
// label). Reads f32 logits and i64 labels; writes one f32.
func.func @softmax_cross_entropy_mean(%x: tensor<256x10xf32>, %l: tensor<256xi64>) -> tensor<f32> {
  // expected-remark @+1 {{flops = 13312, read = 12288, written = 4}}
  %0 = eff.softmax_cross_entropy mean, %x, %l : (tensor<256x10xf32>, tensor<256xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// 280 logits and 28 i32 labels, plus the 10-class weight; writes 28 losses.
func.func @softmax_cross_entropy_none_weighted(%x: tensor<4x10x7xf32>, %l: tensor<4x7xi32>, %w: tensor<10xf32>) -> tensor<4x7xf32> {
  // expected-remark @+1 {{flops = 1456, read = 1272, written = 112}}
  %0 = eff.softmax_cross_entropy none, %x, %l weight %w : (tensor<4x10x7xf32>, tensor<4x7xi32>, tensor<10xf32>) -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

// Pick and reduce: 2 per label.
func.func @nll_loss(%x: tensor<32x10xf32>, %l: tensor<32xi64>) -> tensor<f32> {
  // expected-remark @+1 {{flops = 64, read = 1536, written = 4}}
  %0 = eff.nll_loss mean, %x, %l : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Data movement: no arithmetic
//===----------------------------------------------------------------------===//

// -----

func.func @movement(%x: tensor<8x16xf32>, %table: tensor<256x64xf32>, %ids: tensor<8x32xi64>) {
  // expected-remark @+1 {{flops = 0, read = 512, written = 512}}
  %0 = eff.reshape %x : tensor<8x16xf32> to tensor<128xf32>
  // expected-remark @+1 {{flops = 0, read = 512, written = 512}}
  %1 = eff.transpose %x {permutation = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  // expected-remark @+1 {{flops = 0, read = 1024, written = 1024}}
  %2 = eff.concat %x, %x {axis = 0 : i64} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  // expected-remark @+1 {{flops = 0, read = 512, written = 128}}
  %3 = eff.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 8, 16>, strides = array<i64: 2, 2>} : tensor<8x16xf32> -> tensor<4x8xf32>
  // expected-remark @+1 {{flops = 0, read = 512, written = 512}}
  %4:2 = eff.split %x {axis = 1 : i64} : tensor<8x16xf32> -> tensor<8x4xf32>, tensor<8x12xf32>
  // expected-remark @+1 {{flops = 0, read = 512, written = 720}}
  %5 = eff.pad %x {low = array<i64: 1, 1>, high = array<i64: 1, 1>} : tensor<8x16xf32> -> tensor<10x18xf32>
  // expected-remark @+1 {{flops = 0, read = 512, written = 2048}}
  %6 = eff.broadcast_to %x : tensor<8x16xf32> to tensor<4x8x16xf32>
  // An embedding lookup reads the whole table (the interface's default).
  // expected-remark @+1 {{flops = 0, read = 67584, written = 65536}}
  %7 = eff.gather %table, %ids {axis = 0 : i64} : (tensor<256x64xf32>, tensor<8x32xi64>) -> tensor<8x32x64xf32>
  return
}

// -----

// shape_of reads only the type: no tensor data.
func.func @shape_of_reads_nothing(%x: tensor<8x16xf32>) -> tensor<2xi64> {
  // expected-remark @+1 {{flops = 0, read = 0, written = 16}}
  %0 = eff.shape_of %x : tensor<8x16xf32> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// A constant reads nothing and writes its value.
func.func @constant() -> tensor<2x3xi64> {
  // expected-remark @+1 {{flops = 0, read = 0, written = 48}}
  %0 = eff.constant dense<1> : tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// A bucket of 320 f32 over 4 ranks: (N - 1) / N of the elements in
// additions; each tensor read and written once.
func.func @all_reduce_bucket(%a: tensor<256xf32>, %b: tensor<64xf32>) -> (tensor<256xf32>, tensor<64xf32>) {
  // expected-remark @+1 {{flops = 240, read = 1280, written = 1280}}
  %0:2 = eff.all_reduce %a, %b {world_size = 4 : i64} : tensor<256xf32>, tensor<64xf32>
  return %0#0, %0#1 : tensor<256xf32>, tensor<64xf32>
}

// -----

// Reduce-scatter of 256 f32 over 4 ranks: a rank receives and adds 3/4 of
// them; all-gather and shard move data only.
func.func @reduce_scatter_gather_shard(%a: tensor<256xf32>, %b: tensor<64xf32>) -> (tensor<64xf32>, tensor<256xf32>, tensor<64xf32>) {
  // expected-remark @+1 {{flops = 192, read = 1024, written = 256}}
  %0 = eff.reduce_scatter %a {world_size = 4 : i64} : tensor<256xf32> -> tensor<64xf32>
  // expected-remark @+1 {{flops = 0, read = 256, written = 1024}}
  %1 = eff.all_gather %b {world_size = 4 : i64} : tensor<64xf32> -> tensor<256xf32>
  // expected-remark @+1 {{flops = 0, read = 1024, written = 256}}
  %2 = eff.shard %a {world_size = 4 : i64} : tensor<256xf32> -> tensor<64xf32>
  return %0, %1, %2 : tensor<64xf32>, tensor<256xf32>, tensor<64xf32>
}

// -----

// A started collective costs what the blocking one does; its wait moves
// nothing more.
func.func @started(%a: tensor<256xf32>, %b: tensor<64xf32>) -> (tensor<256xf32>, tensor<64xf32>, tensor<256xf32>) {
  // expected-remark @+1 {{flops = 192, read = 1024, written = 1024}}
  %0 = eff.all_reduce_start %a {world_size = 4 : i64} : tensor<256xf32>
  // expected-remark @+1 {{flops = 192, read = 1024, written = 256}}
  %1 = eff.reduce_scatter_start %a {world_size = 4 : i64} : tensor<256xf32> -> tensor<64xf32>
  // expected-remark @+1 {{flops = 0, read = 256, written = 1024}}
  %2 = eff.all_gather_start %b {world_size = 4 : i64} : tensor<64xf32> -> tensor<256xf32>
  // expected-remark @+1 {{flops = 0, read = 0, written = 0}}
  %3 = eff.wait %0 : tensor<256xf32>
  // expected-remark @+1 {{flops = 0, read = 0, written = 0}}
  %4 = eff.wait %1 : tensor<64xf32>
  // expected-remark @+1 {{flops = 0, read = 0, written = 0}}
  %5 = eff.wait %2 : tensor<256xf32>
  return %3, %4, %5 : tensor<256xf32>, tensor<64xf32>, tensor<256xf32>
}
