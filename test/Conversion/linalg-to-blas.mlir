// RUN: effopt-opt %s --eff-linalg-to-blas --canonicalize | FileCheck %s

// nn.Linear's product: B is read transposed (transB = 1, ldb = K).
// CHECK: func.func private @effrt_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64)
// CHECK-LABEL: func.func @linear
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[M:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[N:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[K:.*]] = arith.constant 8 : i64
// CHECK: call @effrt_sgemm(%[[ZERO]], %[[ONE]], %[[M]], %[[N]], %[[K]], %{{.*}}, %{{.*}}, %[[K]], %{{.*}}, %[[K]], %{{.*}}, %{{.*}}, %[[N]])
// CHECK-NOT: linalg.matmul
func.func @linear(%x: memref<4x8xf32>, %w: memref<16x8xf32>, %y: memref<4x16xf32>) {
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%x, %w : memref<4x8xf32>, memref<16x8xf32>) outs(%y : memref<4x16xf32>)
  return
}

// A strided view (a column slice of a wider buffer) keeps its row stride as
// the leading dimension; the batch stride comes from the layout too.
// CHECK-LABEL: func.func @batched_strided
// CHECK-DAG: %[[LDA:.*]] = arith.constant 24 : i64
// CHECK-DAG: %[[SA:.*]] = arith.constant 96 : i64
// CHECK: call @effrt_sgemm_batched({{.*}}, %[[LDA]], %[[SA]], {{.*}})
func.func @batched_strided(%qkv: memref<2x4x24xf32>, %k: memref<2x8x4xf32>, %out: memref<2x4x4xf32>) {
  %q = memref.subview %qkv[0, 0, 0] [2, 4, 8] [1, 1, 1] : memref<2x4x24xf32> to memref<2x4x8xf32, strided<[96, 24, 1]>>
  linalg.batch_matmul ins(%q, %k : memref<2x4x8xf32, strided<[96, 24, 1]>>, memref<2x8x4xf32>) outs(%out : memref<2x4x4xf32>)
  return
}

// Products the GEMM cannot express (f64 here) stay loops.
// CHECK-LABEL: func.func @f64
// CHECK: linalg.matmul
func.func @f64(%a: memref<2x2xf64>, %b: memref<2x2xf64>, %c: memref<2x2xf64>) {
  linalg.matmul ins(%a, %b : memref<2x2xf64>, memref<2x2xf64>) outs(%c : memref<2x2xf64>)
  return
}

// An im2col convolution: the filter [F, C*KH*KW] is shared by every sample
// (batch stride 0), the columns and the output are per sample.
// CHECK-LABEL: func.func @conv_broadcast_filter
// CHECK-DAG: %[[ZERO64:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[B:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[F:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[P:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[CKK:.*]] = arith.constant 27 : i64
// CHECK-DAG: %[[SCOLS:.*]] = arith.constant 432 : i64
// CHECK-DAG: %[[SOUT:.*]] = arith.constant 64 : i64
// CHECK: call @effrt_sgemm_batched(%{{.*}}, %{{.*}}, %[[B]], %[[F]], %[[P]], %[[CKK]], %{{.*}}, %{{.*}}, %[[CKK]], %[[ZERO64]], %{{.*}}, %[[P]], %[[SCOLS]], %{{.*}}, %{{.*}}, %[[P]], %[[SOUT]])
// CHECK-NOT: linalg.batch_matmul
func.func @conv_broadcast_filter(%w: memref<4x27xf32>, %cols: memref<2x27x16xf32>, %y: memref<2x4x16xf32>) {
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (m, k)>,
                                       affine_map<(b, m, n, k) -> (b, k, n)>,
                                       affine_map<(b, m, n, k) -> (b, m, n)>]
    ins(%w, %cols : memref<4x27xf32>, memref<2x27x16xf32>) outs(%y : memref<2x4x16xf32>)
  return
}

// A convolution's filter gradient: every sample's product accumulates into
// the one C (strideC = 0), the columns read transposed.
// CHECK-LABEL: func.func @conv_filter_grad
// CHECK-DAG: %[[ZERO32:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE32:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[ZERO64:.*]] = arith.constant 0 : i64
// CHECK: call @effrt_sgemm_batched(%[[ZERO32]], %[[ONE32]], {{.*}}, %[[ZERO64]])
// CHECK-NOT: linalg.batch_reduce_matmul
func.func @conv_filter_grad(%dy: memref<2x4x16xf32>, %cols: memref<2x27x16xf32>, %dw: memref<4x27xf32>) {
  linalg.batch_reduce_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                                              affine_map<(b, m, n, k) -> (b, n, k)>,
                                              affine_map<(b, m, n, k) -> (m, n)>]
    ins(%dy, %cols : memref<2x4x16xf32>, memref<2x27x16xf32>) outs(%dw : memref<4x27xf32>)
  return
}

// A batch_reduce_matmul the GEMM cannot express (f64) stays a loop nest.
// CHECK-LABEL: func.func @reduce_f64
// CHECK: linalg.batch_reduce_matmul
func.func @reduce_f64(%a: memref<2x2x2xf64>, %b: memref<2x2x2xf64>, %c: memref<2x2xf64>) {
  linalg.batch_reduce_matmul ins(%a, %b : memref<2x2x2xf64>, memref<2x2x2xf64>) outs(%c : memref<2x2xf64>)
  return
}

// A zero fill of exactly C right before the product (through a reshape
// view) is dropped: the call gets beta = 0 and BLAS writes C unread.
// CHECK-LABEL: func.func @zero_fill_beta
// CHECK-DAG: %[[BETA0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: linalg.fill
// CHECK: call @effrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BETA0]], %{{.*}}, %{{.*}})
func.func @zero_fill_beta(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %buf: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%buf : memref<64xf32>)
  %y = memref.expand_shape %buf [[0, 1]] output_shape [4, 16] : memref<64xf32> into memref<4x16xf32>
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%y : memref<4x16xf32>)
  return
}

// Anything else between the fill and the product keeps the fill (and beta = 1).
// CHECK-LABEL: func.func @fill_then_read
// CHECK-DAG: %[[BETA1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: call @effrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BETA1]], %{{.*}}, %{{.*}})
func.func @fill_then_read(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %y: memref<4x16xf32>, %out: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<4x16xf32>)
  memref.copy %y, %out : memref<4x16xf32> to memref<4x16xf32>
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%y : memref<4x16xf32>)
  return
}
