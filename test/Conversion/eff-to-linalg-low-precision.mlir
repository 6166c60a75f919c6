// RUN: effopt-opt %s --convert-eff-to-linalg --canonicalize --split-input-file | FileCheck %s

// Products of bf16/f16 accumulate in f32, as PyTorch's CPU GEMMs do: the
// operands (and the bias that initialises the accumulator) are widened to
// f32 temporaries, the product is an f32 linalg.matmul (an sgemm later),
// and the result is rounded once.
// CHECK-LABEL: func.func @linear_bf16
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<16xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<16x8xbf16>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[P:.*]] = linalg.matmul {{.*}} ins(%[[X]], %[[W]] : tensor<4x8xf32>, tensor<16x8xf32>) outs(%[[INIT]] : tensor<4x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<4x16xf32>) outs(%{{.*}} : tensor<4x16xbf16>)
// CHECK:   arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: linalg.matmul
func.func @linear_bf16(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %0 = eff.linear %x, %w, %b {transpose_b = true} : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// A batched product widens while it broadcasts.
// CHECK-LABEL: func.func @batched_f16
// CHECK: linalg.batch_matmul ins({{.*}} : tensor<6x4x5xf32>, tensor<6x5x4xf32>) outs({{.*}} : tensor<6x4x4xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @batched_f16(%q: tensor<2x3x4x5xf16>, %k: tensor<3x5x4xf16>) -> tensor<2x3x4x4xf16> {
  %0 = eff.matmul %q, %k : (tensor<2x3x4x5xf16>, tensor<3x5x4xf16>) -> tensor<2x3x4x4xf16>
  return %0 : tensor<2x3x4x4xf16>
}

// -----

// im2col writes f32 columns straight from the f16 input; the filter is
// widened; one f32 product per sample; one rounding.
// CHECK-LABEL: func.func @conv_f16
// CHECK: %[[COLS:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<2x3x8x8xf16>) outs(%{{.*}} : tensor<2x3x3x3x6x6xf32>)
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK: %[[F:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x27xf16>) outs(%{{.*}} : tensor<4x27xf32>)
// CHECK: linalg.batch_matmul {{.*}} ins(%[[F]], %{{.*}} : tensor<4x27xf32>, tensor<2x27x36xf32>) outs(%{{.*}} : tensor<2x4x36xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @conv_f16(%x: tensor<2x3x8x8xf16>, %w: tensor<4x3x3x3xf16>) -> tensor<2x4x6x6xf16> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x6x6xf16>
  return %0 : tensor<2x4x6x6xf16>
}

// -----

// The filter gradient sums over the batch in f32 (batch_reduce_matmul with
// an f32 accumulator), then rounds.
// CHECK-LABEL: func.func @conv_filter_grad_bf16
// CHECK: linalg.batch_reduce_matmul {{.*}} ins({{.*}} : tensor<2x4x36xf32>, tensor<2x27x36xf32>) outs({{.*}} : tensor<4x27xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @conv_filter_grad_bf16(%dy: tensor<2x4x6x6xbf16>, %x: tensor<2x3x8x8xbf16>) -> tensor<4x3x3x3xbf16> {
  %0 = eff.conv2d_filter_grad %x, %dy {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x8xbf16>, tensor<2x4x6x6xbf16>) -> tensor<4x3x3x3xbf16>
  return %0 : tensor<4x3x3x3xbf16>
}

// -----

// Casts go through f32 (c10::BFloat16/Half semantics): f32 -> bf16 is one
// truncf; f16 -> bf16 is exact extension then one rounding.
// CHECK-LABEL: func.func @casts
// CHECK: ^bb0(%[[A:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[A]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[T]]
// CHECK: ^bb0(%[[H:.*]]: f16, %{{.*}}: bf16):
// CHECK-NEXT: %[[E:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[E]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: ^bb0(%[[D:.*]]: f64, %{{.*}}: f16):
// CHECK-NEXT: %[[N:.*]] = arith.truncf %[[D]] : f64 to f32
// CHECK-NEXT: %[[S:.*]] = arith.truncf %[[N]] : f32 to f16
// CHECK-NEXT: linalg.yield %[[S]]
func.func @casts(%x: tensor<8xf32>, %h: tensor<8xf16>, %d: tensor<8xf64>) -> (tensor<8xbf16>, tensor<8xbf16>, tensor<8xf16>) {
  %0 = eff.cast %x : tensor<8xf32> to tensor<8xbf16>
  %1 = eff.cast %h : tensor<8xf16> to tensor<8xbf16>
  %2 = eff.cast %d : tensor<8xf64> to tensor<8xf16>
  return %0, %1, %2 : tensor<8xbf16>, tensor<8xbf16>, tensor<8xf16>
}

// -----

// An elementwise op computes in f32 and rounds once: GELU's erf, products
// and sums are f32; the one truncf is at the end.
// CHECK-LABEL: func.func @gelu_bf16
// CHECK: ^bb0(%[[IN:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[X:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NOT: bf16
// CHECK: math.erf %{{.*}} : f32
// CHECK-NOT: bf16
// CHECK: %[[Y:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT: linalg.yield %[[Y]] : bf16
func.func @gelu_bf16(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %0 = eff.gelu %x : tensor<8xbf16>
  return %0 : tensor<8xbf16>
}

// -----

// Each eff op rounds its own result (PyTorch's eager semantics): mul then
// add are two f32 computations with a bf16 rounding between them.
// CHECK-LABEL: func.func @mul_add_bf16
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.truncf %{{.*}} : f32 to bf16
func.func @mul_add_bf16(%x: tensor<8xbf16>, %y: tensor<8xbf16>) -> tensor<8xbf16> {
  %0 = eff.mul %x, %y : (tensor<8xbf16>, tensor<8xbf16>) -> tensor<8xbf16>
  %1 = eff.add %0, %x : (tensor<8xbf16>, tensor<8xbf16>) -> tensor<8xbf16>
  return %1 : tensor<8xbf16>
}

// -----

// Sums of bf16 accumulate in f32 and round once.
// CHECK-LABEL: func.func @reduce_sum_bf16
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @reduce_sum_bf16(%x: tensor<4x8xbf16>) -> tensor<4xbf16> {
  %0 = eff.reduce_sum %x {axes = array<i64: 1>} : tensor<4x8xbf16> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// Average pooling sums f16 windows into f32 (the named op widens) and
// divides there before the one rounding.
// CHECK-LABEL: func.func @avg_pool_f16
// CHECK: linalg.pooling_nchw_sum {{.*}} ins(%arg0, %{{.*}} : tensor<2x3x8x8xf16>, tensor<2x2xf16>) outs(%{{.*}} : tensor<2x3x4x4xf32>)
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.truncf %{{.*}} : f32 to f16
func.func @avg_pool_f16(%x: tensor<2x3x8x8xf16>) -> tensor<2x3x4x4xf16> {
  %0 = eff.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : tensor<2x3x8x8xf16> -> tensor<2x3x4x4xf16>
  return %0 : tensor<2x3x4x4xf16>
}

// -----

// Layer norm on bf16 keeps mean and rstd in f32 (its statistics results are
// f32); the normalised output is rounded once.
// CHECK-LABEL: func.func @layer_norm_bf16
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4xf64>)
// CHECK: math.rsqrt %{{.*}} : f32
// CHECK: ^bb0(%{{.*}}: bf16, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: bf16):
func.func @layer_norm_bf16(%x: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %y, %m, %r = eff.layer_norm %x {axis = 1 : i64} : (tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y, %m, %r : tensor<4x8xbf16>, tensor<4x1xf32>, tensor<4x1xf32>
}
