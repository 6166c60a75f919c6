// RUN: effopt-opt %s --pass-pipeline="builtin.module(convert-eff-to-linalg{f32-accumulator=f32 low-precision-products=native convolution=direct},canonicalize)" --split-input-file | FileCheck %s
// RUN: effopt-opt %s --convert-eff-to-linalg --canonicalize --split-input-file | FileCheck %s --check-prefix=CPU

// The numerics a target chooses (its lowering policy). The CPU's defaults:
// f32 sums accumulate in f64, f16/bf16 products widen their operands to f32
// first, ungrouped convolutions are im2col + GEMM. A GPU's: f32 sums in
// f32, products that read bf16 operands into an f32 accumulator (tensor
// cores), convolutions left to the named op (a convolution library).

// CHECK-LABEL: func.func @sum_f32
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NOT: f64
// CPU-LABEL: func.func @sum_f32
// CPU: linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>) outs(%{{.*}} : tensor<4xf64>)
// CPU: arith.truncf %{{.*}} : f64 to f32
func.func @sum_f32(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = eff.reduce_sum %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @linear_bf16
// CHECK: %[[P:.*]] = linalg.matmul {{.*}} ins(%arg0, %arg1 : tensor<4x8xbf16>, tensor<16x8xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<4x16xf32>) outs(%{{.*}} : tensor<4x16xbf16>)
// CPU-LABEL: func.func @linear_bf16
// CPU: linalg.matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<4x16xf32>)
func.func @linear_bf16(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>) -> tensor<4x16xbf16> {
  %0 = eff.linear %x, %w {transpose_b = true} : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// A batched product broadcasts in the operands' own type.
// CHECK-LABEL: func.func @batched_f16
// CHECK: linalg.batch_matmul ins({{.*}} : tensor<6x4x5xf16>, tensor<6x5x4xf16>) outs({{.*}} : tensor<6x4x4xf32>)
// CPU-LABEL: func.func @batched_f16
// CPU: linalg.batch_matmul ins({{.*}} : tensor<6x4x5xf32>, tensor<6x5x4xf32>) outs({{.*}} : tensor<6x4x4xf32>)
func.func @batched_f16(%q: tensor<2x3x4x5xf16>, %k: tensor<3x5x4xf16>) -> tensor<2x3x4x4xf16> {
  %0 = eff.matmul %q, %k : (tensor<2x3x4x5xf16>, tensor<3x5x4xf16>) -> tensor<2x3x4x4xf16>
  return %0 : tensor<2x3x4x4xf16>
}

// -----

// CHECK-LABEL: func.func @conv_direct
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_ngchw_gfchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x1x3x8x8xf32>, tensor<1x4x3x3x3xf32>) outs(%{{.*}} : tensor<2x1x4x6x6xf32>)
// CPU-LABEL: func.func @conv_direct
// CPU: linalg.batch_matmul
func.func @conv_direct(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %0 : tensor<2x4x6x6xf32>
}

// -----

// The filter gradient without columns: one reduction over samples and
// output positions.
// CHECK-LABEL: func.func @conv_filter_grad_direct
// CHECK-NOT: linalg.batch_reduce_matmul
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CPU-LABEL: func.func @conv_filter_grad_direct
// CPU: linalg.batch_reduce_matmul
func.func @conv_filter_grad_direct(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32> {
  %0 = eff.conv2d_filter_grad %x, %dy {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}
