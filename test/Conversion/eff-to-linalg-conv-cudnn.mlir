// RUN: effopt-opt %s --pass-pipeline="builtin.module(convert-eff-to-linalg{convolution=cudnn},cse)" --split-input-file | FileCheck %s

// convolution=cudnn (target cuda): every convolution and gradient whose
// tensors share one f32, f16 or bf16 type is one call of the CUDA runtime's
// cuDNN convolutions on the unpadded operands (read in place): x, w and a
// fresh y, the 18 shape arguments (N, C, H, W, F, KH, KW, OH, OW, strides,
// dilations, padding top/left/bottom/right, groups) and the type code (0
// f32, 1 f16, 2 bf16). No workspace buffer: cuDNN uses the device's
// library workspace. A bias is added after the call, per output channel.

// CHECK-LABEL: func.func private @effrt_cuda_conv2d_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i32)
// CHECK-LABEL: func.func @forward_bias_bf16
// CHECK-DAG: bufferization.to_buffer %arg0 read_only : tensor<2x3x9x9xbf16>
// CHECK-DAG: bufferization.to_buffer %arg1 read_only : tensor<5x3x3x3xbf16>
// CHECK-DAG: %[[Y:.*]] = memref.alloc() : memref<2x5x5x5xbf16>
// CHECK-NOT: eff.workspace
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[BF16:.*]] = arith.constant 2 : i32
// The padding (top 1, left 0, bottom 1, right 2), groups 1, then bf16.
// CHECK: call @effrt_cuda_conv2d_fwd({{.*}}, %[[C1]], %[[C0]], %[[C1]], %[[C2]], %[[C1]], %[[BF16]])
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[Y]] restrict writable
// CHECK: %[[B:.*]] = tensor.expand_shape %arg2 {{\[\[}}0, 1, 2]] output_shape [5, 1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[T]], %[[B]] : tensor<2x5x5x5xbf16>, tensor<5x1x1xbf16>)
// CHECK: arith.addf {{.*}} : f32
// CHECK: linalg.yield
// CHECK-NOT: linalg.
// CHECK: return
func.func @forward_bias_bf16(%x: tensor<2x3x9x9xbf16>, %w: tensor<5x3x3x3xbf16>, %b: tensor<5xbf16>) -> tensor<2x5x5x5xbf16> {
  %0 = eff.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 1, 2>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x9x9xbf16>, tensor<5x3x3x3xbf16>, tensor<5xbf16>) -> tensor<2x5x5x5xbf16>
  return %0 : tensor<2x5x5x5xbf16>
}

// -----

// Depthwise in f16 (type 1), and a 1x1 convolution: one call each (no
// columns, no GEMM).
// CHECK-LABEL: func.func @depthwise_and_pointwise_f16
// CHECK-DAG: %[[F16:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[G4:.*]] = arith.constant 4 : i64
// CHECK: call @effrt_cuda_conv2d_fwd({{.*}}, %[[G4]], %[[F16]])
// CHECK: call @effrt_cuda_conv2d_fwd(
// CHECK-NOT: linalg.
// CHECK: return
func.func @depthwise_and_pointwise_f16(%x: tensor<2x4x7x7xf16>, %w: tensor<4x1x3x3xf16>, %p: tensor<8x4x1x1xf16>) -> tensor<2x8x7x7xf16> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<2x4x7x7xf16>, tensor<4x1x3x3xf16>) -> tensor<2x4x7x7xf16>
  %1 = eff.conv2d %0, %p {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x7x7xf16>, tensor<8x4x1x1xf16>) -> tensor<2x8x7x7xf16>
  return %1 : tensor<2x8x7x7xf16>
}

// -----

// The gradients in f32 (type 0): the input gradient reads dy and the filter
// and writes dx; the filter gradient reads x and dy and writes dw (groups
// 2, dilation 2); the shapes are those of the forward convolution.
// CHECK-LABEL: func.func @gradients_f32
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[DX:.*]] = memref.alloc() : memref<2x4x9x9xf32>
// CHECK: call @effrt_cuda_conv2d_bwd_data({{.*}}, %[[F32]])
// CHECK-DAG: %[[DW:.*]] = memref.alloc() : memref<6x2x3x3xf32>
// CHECK: call @effrt_cuda_conv2d_bwd_weights({{.*}}, %[[F32]])
// CHECK-NOT: linalg.
// CHECK: return
func.func @gradients_f32(%x: tensor<2x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %dy: tensor<2x6x9x9xf32>) -> (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) {
  %dx = eff.conv2d_input_grad %dy, %w {strides = array<i64: 1, 1>, padding = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, groups = 2 : i64} : (tensor<2x6x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x4x9x9xf32>
  %dw = eff.conv2d_filter_grad %x, %dy {strides = array<i64: 1, 1>, padding = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<2x6x9x9xf32>) -> tensor<6x2x3x3xf32>
  return %dx, %dw : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>
}
