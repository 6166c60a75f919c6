// RUN: effopt-opt %s --convert-eff-to-linalg --canonicalize --split-input-file | FileCheck %s

// nn.Conv2d: the input is padded once (fill + insert_slice), the bias
// initialises the accumulator, one copying generic gathers the windows into
// columns [N, C*KH*KW, OH*OW], and a batch_matmul with the filter broadcast
// over the batch (map (d1, d3)) computes the output.
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 * 2 + d3)>
// CHECK-DAG: #[[FILT:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[COLS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @conv_bias_padding
// CHECK: %[[PADDED:.*]] = tensor.insert_slice %arg0 into %{{.*}}[0, 0, 1, 1] [2, 3, 8, 8] [1, 1, 1, 1] : tensor<2x3x8x8xf32> into tensor<2x3x9x9xf32>
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[BIAS]], {{.*}}]}
// CHECK: %[[WINDOWS:.*]] = linalg.generic {indexing_maps = [#[[WIN]], {{.*}}]} ins(%[[PADDED]] : tensor<2x3x9x9xf32>) outs(%{{.*}} : tensor<2x3x3x3x4x4xf32>)
// CHECK: %[[COLUMNS:.*]] = tensor.collapse_shape %[[WINDOWS]] {{\[\[}}0], [1, 2, 3], [4, 5]] : tensor<2x3x3x3x4x4xf32> into tensor<2x27x16xf32>
// CHECK: %[[W:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0], [1, 2, 3]] : tensor<4x3x3x3xf32> into tensor<4x27xf32>
// CHECK: %[[ACC:.*]] = tensor.collapse_shape %[[INIT]] {{\[\[}}0], [1], [2, 3]] : tensor<2x4x4x4xf32> into tensor<2x4x16xf32>
// CHECK: %[[Y:.*]] = linalg.batch_matmul indexing_maps = [#[[FILT]], #[[COLS]], #[[OUT]]] ins(%[[W]], %[[COLUMNS]] : tensor<4x27xf32>, tensor<2x27x16xf32>) outs(%[[ACC]] : tensor<2x4x16xf32>)
// CHECK: tensor.expand_shape %[[Y]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 4, 4, 4]
// CHECK-NOT: eff.
func.func @conv_bias_padding(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x4x4xf32> {
  %0 = eff.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  return %0 : tensor<2x4x4x4xf32>
}

// -----

// Groups: [N, G, C/G, H, W] and [G, F/G, C/G, KH, KW] views and the grouped
// named op; no padding, so no copy of the input.
// CHECK-LABEL: func.func @conv_groups
// CHECK-NOT: tensor.insert_slice
// CHECK-DAG: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2], [3], [4]] output_shape [2, 2, 2, 8, 8]
// CHECK-DAG: %[[W:.*]] = tensor.expand_shape %arg1 {{\[\[}}0, 1], [2], [3], [4]] output_shape [2, 3, 2, 3, 3]
// CHECK: %[[Y:.*]] = linalg.conv_2d_ngchw_gfchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[X]], %[[W]] : tensor<2x2x2x8x8xf32>, tensor<2x3x2x3x3xf32>) outs(%{{.*}} : tensor<2x2x3x4x4xf32>)
// CHECK: tensor.collapse_shape %[[Y]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<2x2x3x4x4xf32> into tensor<2x6x4x4xf32>
func.func @conv_groups(%x: tensor<2x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<2x6x4x4xf32> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, groups = 2 : i64} : (tensor<2x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x4x4xf32>
  return %0 : tensor<2x6x4x4xf32>
}

// -----

// The input gradient: dy spread with (stride - 1) zeros between elements (the
// strided insert_slice), then a stride-1 convolution (im2col + product) with
// the flipped, channel-swapped filter gives the unpadded gradient directly.
// CHECK-DAG: #[[FLIP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, -d3 + 2, -d4 + 2)>
// CHECK-LABEL: func.func @conv_input_grad
// CHECK: %[[SPREAD:.*]] = tensor.insert_slice %arg0 into %{{.*}}[0, 0, 1, 1] [2, 4, 4, 4] [1, 1, 2, 2] : tensor<2x4x4x4xf32> into tensor<2x4x10x10xf32>
// CHECK: %[[FLIPPED:.*]] = linalg.generic {indexing_maps = [#[[FLIP]], {{.*}}]}
// CHECK: %[[WINDOWS:.*]] = linalg.generic {{.*}} ins(%[[SPREAD]] : tensor<2x4x10x10xf32>) outs(%{{.*}} : tensor<2x4x3x3x8x8xf32>)
// CHECK: %[[COLUMNS:.*]] = tensor.collapse_shape %[[WINDOWS]] {{.*}} into tensor<2x36x64xf32>
// CHECK: %[[FILTER:.*]] = tensor.collapse_shape %[[FLIPPED]] {{.*}} : tensor<1x3x4x3x3xf32> into tensor<3x36xf32>
// CHECK: linalg.batch_matmul {{.*}} ins(%[[FILTER]], %[[COLUMNS]] : tensor<3x36xf32>, tensor<2x36x64xf32>) outs(%{{.*}} : tensor<2x3x64xf32>)
func.func @conv_input_grad(%dy: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  %0 = eff.conv2d_input_grad %dy, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %0 : tensor<2x3x8x8xf32>
}

// -----

// The filter gradient: one generic, the batch loop outermost, strided
// reads of the padded input.
// CHECK-DAG: #[[DY:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d6, d7)>
// CHECK-DAG: #[[XP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d3, d6 * 2 + d4, d7 * 2 + d5)>
// CHECK-DAG: #[[DW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d3, d4, d5)>
// CHECK-LABEL: func.func @conv_filter_grad
// CHECK: tensor.insert_slice %arg0 into %{{.*}}[0, 0, 1, 1] [2, 4, 8, 8] [1, 1, 1, 1] : tensor<2x4x8x8xf32> into tensor<2x4x9x9xf32>
// CHECK: %[[DWG:.*]] = linalg.generic {indexing_maps = [#[[DY]], #[[XP]], #[[DW]]], iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: tensor.collapse_shape %[[DWG]] {{\[\[}}0, 1], [2], [3], [4]] : tensor<2x3x2x3x3xf32> into tensor<6x2x3x3xf32>
func.func @conv_filter_grad(%x: tensor<2x4x8x8xf32>, %dy: tensor<2x6x4x4xf32>) -> tensor<6x2x3x3xf32> {
  %0 = eff.conv2d_filter_grad %x, %dy {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x4x8x8xf32>, tensor<2x6x4x4xf32>) -> tensor<6x2x3x3xf32>
  return %0 : tensor<6x2x3x3xf32>
}

// -----

// Ungrouped filter gradient: the columns of the padded input and one
// batch_reduce_matmul dy[n] x cols[n]^T summed over the samples into
// dW [F, C*KH*KW].
// CHECK-DAG: #[[DYM:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[COLT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[DWM:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
// CHECK-LABEL: func.func @conv_filter_grad_ungrouped
// CHECK: %[[WINDOWS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x3x3x4x4xf32>)
// CHECK: %[[COLUMNS:.*]] = tensor.collapse_shape %[[WINDOWS]] {{.*}} into tensor<2x36x16xf32>
// CHECK: %[[DY:.*]] = tensor.collapse_shape %arg1 {{.*}} into tensor<2x6x16xf32>
// CHECK: %[[DW:.*]] = linalg.batch_reduce_matmul indexing_maps = [#[[DYM]], #[[COLT]], #[[DWM]]] ins(%[[DY]], %[[COLUMNS]] : tensor<2x6x16xf32>, tensor<2x36x16xf32>) outs(%{{.*}} : tensor<6x36xf32>)
// CHECK: tensor.expand_shape %[[DW]] {{.*}} output_shape [6, 4, 3, 3]
func.func @conv_filter_grad_ungrouped(%x: tensor<2x4x8x8xf32>, %dy: tensor<2x6x4x4xf32>) -> tensor<6x4x3x3xf32> {
  %0 = eff.conv2d_filter_grad %x, %dy {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<2x6x4x4xf32>) -> tensor<6x4x3x3xf32>
  return %0 : tensor<6x4x3x3xf32>
}

// -----

// A 1x1 stride-1 convolution without padding needs no columns: the input
// itself, viewed as [N, C, H*W], is the product's operand.
// CHECK-LABEL: func.func @conv_1x1
// CHECK-NOT: linalg.generic {{.*}} ins(%arg0
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0 {{.*}} : tensor<2x3x5x5xf32> into tensor<2x3x25xf32>
// CHECK: linalg.batch_matmul {{.*}} ins(%{{.*}}, %[[X]] : tensor<4x3xf32>, tensor<2x3x25xf32>)
func.func @conv_1x1(%x: tensor<2x3x5x5xf32>, %w: tensor<4x3x1x1xf32>) -> tensor<2x4x5x5xf32> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x5x5xf32>, tensor<4x3x1x1xf32>) -> tensor<2x4x5x5xf32>
  return %0 : tensor<2x4x5x5xf32>
}

// -----

// Max pooling: one elementwise max per window tap over a strided view of
// the unpadded input, updating only the outputs whose window puts that tap
// on the input (padding never wins); the taps in row-major order.
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<2x3x5x5xf32>)
// Tap (0, 0): outputs [1, 5) x [1, 5) read x[1::2, 1::2].
// CHECK: %[[OUT0:.*]] = tensor.extract_slice %[[INIT]][0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 1, 1]
// CHECK: %[[TAP0:.*]] = tensor.extract_slice %arg0[0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 2, 2]
// CHECK: %[[MAX0:.*]] = linalg.generic {{.*}} ins(%[[TAP0]] : tensor<2x3x4x4xf32>) outs(%[[OUT0]] : tensor<2x3x4x4xf32>)
// CHECK:   arith.maximumf
// CHECK: tensor.insert_slice %[[MAX0]] into %[[INIT]][0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 1, 1]
// Tap (0, 1): columns [0, 5) read x[1::2, 0::2].
// CHECK: tensor.extract_slice %arg0[0, 0, 1, 0] [2, 3, 4, 5] [1, 1, 2, 2]
// CHECK-COUNT-7: arith.maximumf
// CHECK-NOT: linalg.pooling_nchw_max
func.func @max_pool(%x: tensor<2x3x9x9xf32>) -> tensor<2x3x5x5xf32> {
  %0 = eff.max_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<2x3x9x9xf32> -> tensor<2x3x5x5xf32>
  return %0 : tensor<2x3x5x5xf32>
}

// -----

// Average pooling: a sum pooling divided by one divisor, or by PyTorch's
// per-window divisors when windows overlap the padding and it does not
// count (count_include_pad = false).
// CHECK-LABEL: func.func @avg_pool
// CHECK-DAG: %[[DIVISORS:.*]] = arith.constant dense<{{\[\[}}4.000000e+00, 6.000000e+00, 6.000000e+00, 6.000000e+00], [6.000000e+00, 9.000000e+00
// CHECK-DAG: %[[FOUR:.*]] = arith.constant 4.000000e+00 : f32
// CHECK: %[[SUM:.*]] = linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%arg0, %{{.*}} : tensor<2x3x8x8xf32>, tensor<2x2xf32>)
// CHECK: linalg.generic
// CHECK:   arith.divf %{{.*}}, %[[FOUR]] : f32
// CHECK: %[[PADDED:.*]] = tensor.insert_slice %arg0
// CHECK: %[[SUM2:.*]] = linalg.pooling_nchw_sum {{.*}} ins(%[[PADDED]], %{{.*}} : tensor<2x3x10x10xf32>, tensor<3x3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[SUM2]], %[[DIVISORS]] : tensor<2x3x4x4xf32>, tensor<4x4xf32>)
// CHECK:   arith.divf
func.func @avg_pool(%x: tensor<2x3x8x8xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) {
  %0 = eff.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  %1 = eff.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false} : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  return %0, %1 : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>
}

// -----

// max_pool2d_grad: the first maximum's tap per window (an i32 tensor), one
// elementwise update per tap over strided views; then, taps from the last,
// dy added where the window picked that tap, into a strided view of dx
// (PyTorch's accumulation order). avg_pool2d_grad: dy / divisor spread
// with stride zeros, summed by a stride-1 sum pooling.
// CHECK-LABEL: func.func @pool_grads
// CHECK: %[[TAPS0:.*]] = linalg.fill ins(%c-1_i32 : i32) outs(%{{.*}} : tensor<2x3x5x5xi32>)
// CHECK: %[[ARGMAX:.*]]:2 = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x3x4x4xf32>) outs(%{{.*}}, %{{.*}} : tensor<2x3x4x4xf32>, tensor<2x3x4x4xi32>)
// CHECK:   arith.cmpf ogt
// CHECK:   arith.cmpf uno
// CHECK:   arith.select %{{.*}}, %c0_i32
// CHECK: tensor.insert_slice %[[ARGMAX]]#1 into %[[TAPS0]][0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 1, 1]
// The last tap (2, 2) first: outputs [0, 4) x [0, 4) add into dx[1::2, 1::2].
// CHECK: %[[DX0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x3x9x9xf32>)
// CHECK: %[[VIEW:.*]] = tensor.extract_slice %[[DX0]][0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 2, 2]
// CHECK: %[[ADD:.*]] = linalg.generic {{.*}} outs(%[[VIEW]] : tensor<2x3x4x4xf32>)
// CHECK:   arith.cmpi eq, %{{.*}}, %c8_i32
// CHECK:   arith.addf
// CHECK: tensor.insert_slice %[[ADD]] into %[[DX0]][0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 2, 2]
// CHECK-COUNT-8: arith.cmpi eq
// CHECK: %[[DX:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 2, 2] : tensor<2x3x4x4xf32> into tensor<2x3x9x9xf32>
// CHECK: %[[SCALED:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<2x3x5x5xf32>)
// CHECK:   arith.divf
// CHECK: %[[SPREAD:.*]] = tensor.insert_slice %[[SCALED]] into %{{.*}}[0, 0, 1, 1] [2, 3, 5, 5] [1, 1, 2, 2] : tensor<2x3x5x5xf32> into tensor<2x3x11x11xf32>
// CHECK: %[[DA:.*]] = linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[SPREAD]], %{{.*}} : tensor<2x3x11x11xf32>, tensor<3x3xf32>) outs(%{{.*}} : tensor<2x3x9x9xf32>)
// CHECK: return %[[DX]], %[[DA]]
func.func @pool_grads(%x: tensor<2x3x9x9xf32>, %dy: tensor<2x3x5x5xf32>) -> (tensor<2x3x9x9xf32>, tensor<2x3x9x9xf32>) {
  %0 = eff.max_pool2d_grad %x, %dy {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x9x9xf32>, tensor<2x3x5x5xf32>) -> tensor<2x3x9x9xf32>
  %1 = eff.avg_pool2d_grad %dy {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x5x5xf32>) -> tensor<2x3x9x9xf32>
  return %0, %1 : tensor<2x3x9x9xf32>, tensor<2x3x9x9xf32>
}

// -----

// Taps that only ever meet padding are cropped: a 3x3 convolution padded by
// 1 over a 1x1 image is its centre tap, unpadded; the copy of the centre
// taps made for the forward serves the input gradient too; the filter
// gradient of the other taps is zero. A 1x1 convolution of 1x1 images is a
// product over channels with the batch as rows: y = x w^T, dx = dy w,
// dw = dy^T x, one GEMM each.
// CHECK-LABEL: func.func @crop_1x1_image
// CHECK: %[[SLICE:.*]] = tensor.extract_slice %arg1[0, 0, 1, 1] [4, 3, 1, 1] [1, 1, 1, 1] : tensor<4x3x3x3xf32> to tensor<4x3x1x1xf32>
// CHECK: %[[CENTRE:.*]] = linalg.copy ins(%[[SLICE]] : tensor<4x3x1x1xf32>)
// CHECK-NOT: linalg.copy
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1, 2, 3]] : tensor<2x3x1x1xf32> into tensor<2x3xf32>
// CHECK: %[[W:.*]] = tensor.collapse_shape %[[CENTRE]] {{\[}}[0], [1, 2, 3]] : tensor<4x3x1x1xf32> into tensor<4x3xf32>
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[X]], %[[W]] : tensor<2x3xf32>, tensor<4x3xf32>) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<4x3xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<2x3xf32>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK-NOT: batch_matmul
// CHECK: %[[DW:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 1, 1] [4, 3, 1, 1] [1, 1, 1, 1] : tensor<4x3x1x1xf32> into tensor<4x3x3x3xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[DW]]
func.func @crop_1x1_image(%x: tensor<2x3x1x1xf32>, %w: tensor<4x3x3x3xf32>, %dy: tensor<2x4x1x1xf32>) -> (tensor<2x4x1x1xf32>, tensor<2x3x1x1xf32>, tensor<4x3x3x3xf32>) {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x1x1xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x1x1xf32>
  %1 = eff.conv2d_input_grad %dy, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x1x1xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x1x1xf32>
  %2 = eff.conv2d_filter_grad %x, %dy {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x1x1xf32>, tensor<2x4x1x1xf32>) -> tensor<4x3x3x3xf32>
  return %0, %1, %2 : tensor<2x4x1x1xf32>, tensor<2x3x1x1xf32>, tensor<4x3x3x3xf32>
}

// -----

// Stride 2 over a 2x5 image: the first row of taps reads only padding (the
// rows are cropped to taps 1..2 and the top padding to 0, the input padded
// by the bottom row only the window never reaches); every column of
// taps meets the input, so the columns stay.
// CHECK-LABEL: func.func @crop_rows
// CHECK: tensor.extract_slice %arg1[0, 0, 1, 0] [4, 3, 2, 3] [1, 1, 1, 1] : tensor<4x3x3x3xf32> to tensor<4x3x2x3xf32>
// CHECK: linalg.copy
// CHECK: tensor.insert_slice %arg0 into %{{.*}}[0, 0, 0, 1] [2, 3, 2, 5] [1, 1, 1, 1] : tensor<2x3x2x5xf32> into tensor<2x3x3x7xf32>
// CHECK: linalg.batch_matmul
func.func @crop_rows(%x: tensor<2x3x2x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x1x3xf32> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x2x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x1x3xf32>
  return %0 : tensor<2x4x1x3xf32>
}

// -----

// A pointwise convolution over small maps (here 2x2, 32 -> 32 channels) is
// one GEMM over every sample's positions: the activations transposed to
// [C, N*P], the product, the result transposed back (with the bias). Its
// filter gradient is dy[F, N*P] x[C, N*P]^T, one GEMM too.
// CHECK-LABEL: func.func @pointwise_small_maps
// CHECK: %[[XT:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x32x4xf32>) outs(%{{.*}} : tensor<32x4x4xf32>)
// CHECK: %[[X:.*]] = tensor.collapse_shape %[[XT]] {{\[}}[0], [1, 2]] : tensor<32x4x4xf32> into tensor<32x16xf32>
// CHECK: %[[Y:.*]] = linalg.matmul ins(%{{.*}}, %[[X]] : tensor<32x32xf32>, tensor<32x16xf32>) outs(%{{.*}} : tensor<32x16xf32>)
// CHECK: %[[YT:.*]] = tensor.expand_shape %[[Y]] {{\[}}[0], [1, 2]] output_shape [32, 4, 4] : tensor<32x16xf32> into tensor<32x4x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[YT]], %arg2 : tensor<32x4x4xf32>, tensor<32xf32>) outs(%{{.*}} : tensor<4x32x4xf32>)
// CHECK:   arith.addf
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<32x16xf32>) outs(%{{.*}} : tensor<32x32xf32>)
// CHECK-NOT: batch_reduce_matmul
func.func @pointwise_small_maps(%x: tensor<4x32x2x2xf32>, %w: tensor<32x32x1x1xf32>, %b: tensor<32xf32>, %dy: tensor<4x32x2x2xf32>) -> (tensor<4x32x2x2xf32>, tensor<32x32x1x1xf32>) {
  %0 = eff.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x32x2x2xf32>, tensor<32x32x1x1xf32>, tensor<32xf32>) -> tensor<4x32x2x2xf32>
  %1 = eff.conv2d_filter_grad %x, %dy {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x32x2x2xf32>, tensor<4x32x2x2xf32>) -> tensor<32x32x1x1xf32>
  return %0, %1 : tensor<4x32x2x2xf32>, tensor<32x32x1x1xf32>
}

// -----

// Over larger maps (8x8) the per-sample products stay.
// CHECK-LABEL: func.func @pointwise_large_maps
// CHECK: linalg.batch_matmul
func.func @pointwise_large_maps(%x: tensor<4x32x8x8xf32>, %w: tensor<32x32x1x1xf32>) -> tensor<4x32x8x8xf32> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<4x32x8x8xf32>
  return %0 : tensor<4x32x8x8xf32>
}
