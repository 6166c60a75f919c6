// RUN: effopt-opt %s --convert-eff-to-linalg --canonicalize --split-input-file | FileCheck %s

// Broadcasting is an indexing map, not a materialised copy.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @elementwise
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK:   arith.addf
// CHECK: linalg.generic
// CHECK:   arith.maximumf
// CHECK-NOT: eff.
func.func @elementwise(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = eff.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = eff.relu %0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// nn.Linear: the bias initialises the accumulator and the transposed weight
// is an indexing map of linalg.matmul (a GEMM with transB later).
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @linear
// CHECK: %[[INIT:.*]] = linalg.generic
// CHECK: linalg.matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<16x8xf32>) outs(%[[INIT]] : tensor<4x16xf32>)
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = eff.linear %x, %w, %b {transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// A bias that is a constant +0.0 (eff-chunk-cross-entropy starts its f32 dW
// accumulation from one) is a zero fill, which a GEMM call folds into
// beta = 0: no broadcast, C never read. -0.0 is a bias like any other.
// CHECK-LABEL: func.func @linear_zero_bias
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32)
// CHECK-NOT: linalg.generic
// CHECK: linalg.matmul {{.*}} outs(%[[INIT]] : tensor<16x8xf32>)
// CHECK-LABEL: func.func @linear_negative_zero_bias
// CHECK: linalg.generic
// CHECK: linalg.matmul
func.func @linear_zero_bias(%g: tensor<4x16xf32>, %a: tensor<4x8xf32>) -> tensor<16x8xf32> {
  %zero = eff.constant dense<0.000000e+00> : tensor<f32>
  %0 = eff.linear %g, %a, %zero {transpose_a = true} : (tensor<4x16xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}
func.func @linear_negative_zero_bias(%g: tensor<4x16xf32>, %a: tensor<4x8xf32>) -> tensor<16x8xf32> {
  %zero = eff.constant dense<-0.000000e+00> : tensor<f32>
  %0 = eff.linear %g, %a, %zero {transpose_a = true} : (tensor<4x16xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

// Batch dimensions collapse into one batched GEMM, views on both sides.
// CHECK-LABEL: func.func @batched
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x4x5xf32> into tensor<6x4x5xf32>
// CHECK: linalg.batch_matmul ins({{.*}} : tensor<6x4x5xf32>, tensor<6x5x4xf32>) outs({{.*}} : tensor<6x4x4xf32>)
// CHECK: tensor.expand_shape {{.*}} into tensor<2x3x4x4xf32>
func.func @batched(%q: tensor<2x3x4x5xf32>, %k: tensor<2x3x5x4xf32>) -> tensor<2x3x4x4xf32> {
  %0 = eff.matmul %q, %k : (tensor<2x3x4x5xf32>, tensor<2x3x5x4xf32>) -> tensor<2x3x4x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

// A shared 2-D right operand folds the left's batch into rows: one GEMM.
// CHECK-LABEL: func.func @shared_weight
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
// CHECK: linalg.matmul {{.*}} outs({{.*}} : tensor<6x5xf32>)
func.func @shared_weight(%x: tensor<2x3x8xf32>, %w: tensor<8x5xf32>) -> tensor<2x3x5xf32> {
  %0 = eff.matmul %x, %w : (tensor<2x3x8xf32>, tensor<8x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// A transposed shared weight (ONNX's MatMul(x, Transpose(w))) is read
// through the product's indexing map: no transposed copy is made.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @shared_weight_transposed
// CHECK-NOT: linalg.generic
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
// CHECK-NOT: linalg.generic
// CHECK: linalg.matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%[[ROWS]], %arg1 : tensor<6x8xf32>, tensor<5x8xf32>) outs({{.*}} : tensor<6x5xf32>)
// CHECK-NOT: linalg.generic
func.func @shared_weight_transposed(%x: tensor<2x3x8xf32>, %w: tensor<5x8xf32>) -> tensor<2x3x5xf32> {
  %wt = eff.transpose %w {permutation = array<i64: 1, 0>} : tensor<5x8xf32> -> tensor<8x5xf32>
  %0 = eff.matmul %x, %wt : (tensor<2x3x8xf32>, tensor<8x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// Attention's batched products: K^T (a head split and a transpose, perm
// [0, 2, 3, 1]) keeps only the head split as a copy, whose contiguous
// dimension stays last, and the product reads it transposed; P^T (perm
// [0, 1, 3, 2]) needs no copy at all. A transpose with another user is
// left as it is (its copy exists anyway).
// CHECK-DAG: #[[HEADS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @attention_products
// CHECK: %[[K:.*]] = linalg.generic {indexing_maps = [#[[HEADS]], #{{.*}}]{{.*}} ins(%arg1 : tensor<2x4x3x8xf32>) outs(%{{.*}} : tensor<2x3x4x8xf32>)
// CHECK: %[[KC:.*]] = tensor.collapse_shape %[[K]]
// CHECK: linalg.batch_matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%{{.*}}, %[[KC]] : tensor<6x4x8xf32>, tensor<6x4x8xf32>)
// CHECK: %[[P:.*]] = tensor.collapse_shape %arg2
// CHECK: linalg.batch_matmul indexing_maps = [#[[AT]], #[[B]], #[[C]]] ins(%[[P]], %{{.*}} : tensor<6x4x4xf32>, tensor<6x4x8xf32>)
// CHECK: %[[KT2:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<2x4x3x8xf32>) outs(%{{.*}} : tensor<2x3x8x4xf32>)
// CHECK: %[[KT2C:.*]] = tensor.collapse_shape %[[KT2]]
// CHECK: linalg.batch_matmul ins(%{{.*}}, %[[KT2C]] : tensor<6x4x8xf32>, tensor<6x8x4xf32>)
func.func @attention_products(%q: tensor<2x3x4x8xf32>, %k: tensor<2x4x3x8xf32>, %p: tensor<2x3x4x4xf32>,
                              %do: tensor<2x3x4x8xf32>, %q2: tensor<2x3x4x8xf32>)
    -> (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x4xf32>, tensor<2x3x8x4xf32>) {
  %kt = eff.transpose %k {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x4x3x8xf32> -> tensor<2x3x8x4xf32>
  %s = eff.matmul %q, %kt : (tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x4x4xf32>
  %pt = eff.transpose %p {permutation = array<i64: 0, 1, 3, 2>} : tensor<2x3x4x4xf32> -> tensor<2x3x4x4xf32>
  %dv = eff.matmul %pt, %do : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  %kt2 = eff.transpose %k {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x4x3x8xf32> -> tensor<2x3x8x4xf32>
  %s2 = eff.matmul %q2, %kt2 : (tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x4x4xf32>
  %twice = eff.add %kt2, %kt2 : (tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32>
  return %s, %dv, %s2, %twice : tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x4xf32>, tensor<2x3x8x4xf32>
}

// -----

// Float sums accumulate in f64 (as PyTorch's CPU acc_type<float>): a long
// fp32 sum in fp32 loses ~n eps; the mean divides in f64 and rounds once.
// CHECK-LABEL: func.func @reduce_mean
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%{{.*}} : tensor<4xf64>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.extf %{{.*}} : f32 to f64
// CHECK:   arith.addf %{{.*}} : f64
// CHECK: linalg.generic
// CHECK:   arith.divf %{{.*}} : f64
// CHECK:   arith.truncf %{{.*}} : f64 to f32
// CHECK: tensor.expand_shape {{.*}} into tensor<4x1xf32>
func.func @reduce_mean(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %0 = eff.reduce_mean %x {axes = array<i64: 1>, keep_dims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Cross-entropy: ignored labels never index the logits (the index is
// clamped before tensor.extract), the log-sum-exp is stable (max first).
// CHECK-LABEL: func.func @cross_entropy
// CHECK: arith.cmpi ne, %{{.*}}, %c-100_i64
// CHECK: arith.select
// CHECK: tensor.extract %arg0
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: arith.divf
func.func @cross_entropy(%x: tensor<4x10xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  %0 = eff.softmax_cross_entropy mean, %x, %y {ignore_index = -100 : i64} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// One fused loop updates the parameter and its momentum buffer; the step
// counter picks the first-step rule (buffer = gradient).
// CHECK-LABEL: func.func @sgd
// CHECK: %{{.*}}:2 = linalg.generic
// CHECK:   arith.cmpi eq
// CHECK:   arith.select
// CHECK:   linalg.yield %{{.*}}, %{{.*}} : f32, f32
func.func @sgd(%p: tensor<8xf32>, %g: tensor<8xf32>, %lr: tensor<f32>, %step: tensor<i64>, %buf: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0, %1 = eff.sgd_update %p, %g, %lr, %step momentum_buffer %buf {momentum = 0.9 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// The gradient of a reversing slice (torch.flip, x[::-1]-style ONNX Slice
// with step -1 and a strided step -2): the output gradient is reversed
// along the negative-stride dimensions, then inserted with the positive
// stride at the positions the forward slice read (dim 1: 6, 4, 2 read with
// step -2 are 2, 4, 6 with step 2).
// CHECK-LABEL: func.func @reverse_slice_grad
// CHECK: %[[REV:.*]] = linalg.generic
// CHECK:   linalg.index 0
// CHECK:   linalg.index 1
// CHECK:   tensor.extract
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: tensor.insert_slice %[[REV]] into %[[ZERO]][0, 2] [4, 3] [1, 2] : tensor<4x3xf32> into tensor<4x8xf32>
// CHECK-NOT: eff.
func.func @reverse_slice_grad(%dy: tensor<4x3xf32>) -> tensor<4x8xf32> {
  %0 = eff.slice_grad %dy {starts = array<i64: 3, 6>, limits = array<i64: -1, 1>, strides = array<i64: -1, -2>} : (tensor<4x3xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Normalisation statistics accumulate in f64 too: layer_norm's mean and
// biased variance are f64 sums divided by the count, rounded once to f32.
// CHECK-LABEL: func.func @layer_norm_statistics
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.extf %{{.*}} : f32 to f64
// CHECK:   arith.addf %{{.*}} : f64
// CHECK: arith.divf %{{.*}} : f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.subf %{{.*}} : f32
// CHECK:   arith.mulf %{{.*}} : f32
// CHECK:   arith.extf %{{.*}} : f32 to f64
// CHECK:   arith.addf %{{.*}} : f64
// CHECK: math.rsqrt
func.func @layer_norm_statistics(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y, %mean, %rstd = eff.layer_norm %x : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y : tensor<4x8xf32>
}
