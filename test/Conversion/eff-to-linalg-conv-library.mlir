// REQUIRES: onednn
// RUN: effopt-opt %s --pass-pipeline="builtin.module(convert-eff-to-linalg{convolution=library})" --split-input-file | FileCheck %s

// convolution=library: every f32 convolution and gradient is one call of
// the runtime's oneDNN kernels on the unpadded operands (read in place),
// with the 18 shape arguments (N, C, H, W, F, KH, KW, OH, OW, strides,
// dilations, padding top/left/bottom/right, groups) and a workspace the
// memory plan places (its size, from oneDNN at compile time, is passed
// after it). No padding, columns or GEMM remain.

// CHECK-LABEL: func.func @forward_bias
// CHECK-DAG: %[[X:.*]] = bufferization.to_buffer %arg0 read_only : tensor<2x3x9x9xf32> to memref<2x3x9x9xf32>
// CHECK-DAG: bufferization.to_buffer %arg1 read_only : tensor<5x3x3x3xf32>
// CHECK-DAG: bufferization.to_buffer %arg2 read_only : tensor<5xf32>
// CHECK-DAG: %[[Y:.*]] = memref.alloc() : memref<2x5x5x5xf32>
// CHECK-DAG: %[[WS:.*]] = memref.alloc() {eff.workspace} : memref<{{[0-9]+}}xi8>
// CHECK: call @effrt_conv2d_fwd_f32({{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, !llvm.ptr, i64) -> ()
// CHECK: bufferization.to_tensor %[[Y]] restrict writable
// CHECK-NOT: linalg.
// CHECK: return
func.func @forward_bias(%x: tensor<2x3x9x9xf32>, %w: tensor<5x3x3x3xf32>, %b: tensor<5xf32>) -> tensor<2x5x5x5xf32> {
  %0 = eff.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x9x9xf32>, tensor<5x3x3x3xf32>, tensor<5xf32>) -> tensor<2x5x5x5xf32>
  return %0 : tensor<2x5x5x5xf32>
}

// -----

// Without bias the bias pointer is null; a depthwise convolution is one
// call too (groups = C = F = 4).
// CHECK-LABEL: func.func @depthwise_nobias
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : i64
// CHECK: call @effrt_conv2d_fwd_f32(%{{.*}}, %{{.*}}, %[[NULL]], %{{.*}}, %{{.*}}, %[[C4]],
// CHECK-NOT: linalg.
func.func @depthwise_nobias(%x: tensor<2x4x7x7xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<2x4x7x7xf32> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<2x4x7x7xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x7x7xf32>
  return %0 : tensor<2x4x7x7xf32>
}

// -----

// The gradients: input gradient from dy and the filter, filter gradient
// from x and dy (groups 2, dilation 2).
// CHECK-LABEL: func.func @gradients
// CHECK: call @effrt_conv2d_bwd_data_f32(
// CHECK: call @effrt_conv2d_bwd_weights_f32(
// CHECK-NOT: linalg.
// CHECK: return
func.func @gradients(%x: tensor<2x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %dy: tensor<2x6x9x9xf32>) -> (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) {
  %dx = eff.conv2d_input_grad %dy, %w {strides = array<i64: 1, 1>, padding = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, groups = 2 : i64} : (tensor<2x6x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x4x9x9xf32>
  %dw = eff.conv2d_filter_grad %x, %dy {strides = array<i64: 1, 1>, padding = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<2x6x9x9xf32>) -> tensor<6x2x3x3xf32>
  return %dx, %dw : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>
}

// -----

// bf16 convolutions are not library calls: they keep im2col + GEMM.
// CHECK-LABEL: func.func @bf16_keeps_im2col
// CHECK-NOT: call @effrt_conv2d
// CHECK: linalg.batch_matmul
func.func @bf16_keeps_im2col(%x: tensor<2x3x8x8xbf16>, %w: tensor<4x3x3x3xbf16>) -> tensor<2x4x6x6xbf16> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16>) -> tensor<2x4x6x6xbf16>
  return %0 : tensor<2x4x6x6xbf16>
}

// -----

// A 1x1 stride-1 unpadded convolution is a plain GEMM (no columns): it
// stays one, in the library policy too.
// CHECK-LABEL: func.func @pointwise_stays_gemm
// CHECK-NOT: call @effrt_conv2d
// CHECK: linalg.batch_matmul
func.func @pointwise_stays_gemm(%x: tensor<2x8x5x5xf32>, %w: tensor<16x8x1x1xf32>) -> tensor<2x16x5x5xf32> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf32>, tensor<16x8x1x1xf32>) -> tensor<2x16x5x5xf32>
  return %0 : tensor<2x16x5x5xf32>
}

// -----

// A strided 1x1 convolution (ResNet's projection) is a library call.
// CHECK-LABEL: func.func @pointwise_strided
// CHECK: call @effrt_conv2d_fwd_f32(
func.func @pointwise_strided(%x: tensor<2x8x5x5xf32>, %w: tensor<16x8x1x1xf32>) -> tensor<2x16x3x3xf32> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf32>, tensor<16x8x1x1xf32>) -> tensor<2x16x3x3xf32>
  return %0 : tensor<2x16x3x3xf32>
}
