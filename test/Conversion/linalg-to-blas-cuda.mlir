// RUN: effopt-opt %s --split-input-file --eff-linalg-to-blas=abi=cuda --canonicalize | FileCheck %s
// RUN: not effopt-opt %s --eff-linalg-to-blas=abi=rocm 2>&1 | FileCheck %s --check-prefix=BADABI

// BADABI: eff-linalg-to-blas: abi must be cpu or cuda, got 'rocm'

// abi=cuda: effrt_cuda_gemm, effrt_sgemm's arguments then the type codes of
// A/B and C (0 f32, 1 f16, 2 bf16). An f32 product: codes 0, 0.
// CHECK-LABEL: func.func private @effrt_cuda_gemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64, i32, i32)
// CHECK-LABEL: func.func @f32_linear
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: call @effrt_cuda_gemm(%[[ZERO]], %[[ONE]], {{.*}}, %[[ZERO]], %[[ZERO]])
// CHECK-NOT: effrt_sgemm
func.func @f32_linear(%x: memref<4x8xf32>, %w: memref<16x8xf32>, %y: memref<4x16xf32>) {
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%x, %w : memref<4x8xf32>, memref<16x8xf32>) outs(%y : memref<4x16xf32>)
  return
}

// -----

// bf16 operands, f32 accumulator and C (what native low-precision products
// lower to): codes 2, 0; the +0 fill of C becomes beta = 0.
// CHECK-LABEL: func.func @bf16_operands_f32_c
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[BF16:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: linalg.fill
// CHECK: call @effrt_cuda_gemm({{.*}}, %[[BETA]], %{{.*}}, %{{.*}}, %[[BF16]], %[[F32]])
func.func @bf16_operands_f32_c(%a: memref<4x8xbf16>, %b: memref<8x16xbf16>, %c: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xbf16>, memref<8x16xbf16>) outs(%c : memref<4x16xf32>)
  return
}

// -----

// Batched f16 with an f16 C: codes 1, 1, effrt_cuda_gemm_batched.
// CHECK-LABEL: func.func private @effrt_cuda_gemm_batched(i32, i32, i64, i64, i64, i64, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64, i32, i32)
// CHECK-LABEL: func.func @f16_batched
// CHECK-DAG: %[[F16:.*]] = arith.constant 1 : i32
// CHECK: call @effrt_cuda_gemm_batched({{.*}}, %[[F16]], %[[F16]])
func.func @f16_batched(%a: memref<2x4x8xf16>, %b: memref<2x8x4xf16>, %c: memref<2x4x4xf16>) {
  linalg.batch_matmul ins(%a, %b : memref<2x4x8xf16>, memref<2x8x4xf16>) outs(%c : memref<2x4x4xf16>)
  return
}

// -----

// Mixed operand types, or f32 operands into a bf16 C, are not cuBLASLt
// f32-compute GEMMs: they stay loops (kernels).
// CHECK-LABEL: func.func @mixed_operands
// CHECK: linalg.matmul
// CHECK-LABEL: func.func @f32_into_bf16
// CHECK: linalg.matmul
func.func @mixed_operands(%a: memref<4x8xbf16>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xbf16>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}
func.func @f32_into_bf16(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xbf16>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xbf16>)
  return
}

// -----

// C filled with a bias repeated over the rows right before the product
// (eff-gpu-fold-bias-into-products), through a reshape of the buffer:
// effrt_cuda_gemm_bias (cuBLASLt's bias epilogue; no beta, C not read) with
// the vector after C, and no broadcast left.
// CHECK-LABEL: func.func private @effrt_cuda_gemm_bias(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i32, i32)
// CHECK-LABEL: func.func @bias_epilogue
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[BF16:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[N:.*]] = arith.constant 12 : i64
// CHECK-DAG: memref.extract_strided_metadata %arg0 : memref<12xbf16>
// CHECK: call @effrt_cuda_gemm_bias(%{{.*}}, %{{.*}}, %{{.*}}, %[[N]], {{.*}}, %[[BF16]], %[[BF16]])
// CHECK-NOT: linalg.
func.func @bias_epilogue(%bias: memref<12xbf16>, %a: memref<8x4xbf16>, %b: memref<12x4xbf16>, %c3: memref<2x4x12xbf16>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%bias : memref<12xbf16>) outs(%c3 : memref<2x4x12xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  %c = memref.collapse_shape %c3 [[0, 1], [2]] : memref<2x4x12xbf16> into memref<8x12xbf16>
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%a, %b : memref<8x4xbf16>, memref<12x4xbf16>) outs(%c : memref<8x12xbf16>)
  return
}

// -----

// Not a bias: a broadcast that computes (it stays a kernel, and the GEMM
// adds into C with beta = 1), and one with a write of C in between.
// CHECK-LABEL: func.func @not_a_bias
// CHECK-NOT: effrt_cuda_gemm_bias
// CHECK: linalg.generic
// CHECK: call @effrt_cuda_gemm(
// CHECK: linalg.generic
// CHECK: linalg.fill
// CHECK: call @effrt_cuda_gemm(
func.func @not_a_bias(%bias: memref<12xbf16>, %a: memref<8x4xbf16>, %b: memref<12x4xbf16>, %c: memref<8x12xbf16>, %d: memref<8x12xbf16>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<12xbf16>) outs(%c : memref<8x12xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %n = arith.negf %in : bf16
    linalg.yield %n : bf16
  }
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%a, %b : memref<8x4xbf16>, memref<12x4xbf16>) outs(%c : memref<8x12xbf16>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<12xbf16>) outs(%d : memref<8x12xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  %one = arith.constant 1.0 : bf16
  linalg.fill ins(%one : bf16) outs(%d : memref<8x12xbf16>)
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%a, %b : memref<8x4xbf16>, memref<12x4xbf16>) outs(%d : memref<8x12xbf16>)
  return
}

// -----

// abi=cpu (the default) keeps the f32-only BLAS: bf16 products stay loops.
// RUN: effopt-opt %s --split-input-file --eff-linalg-to-blas --canonicalize | FileCheck %s --check-prefix=CPU
// CPU-LABEL: func.func @bf16_operands_f32_c
// CPU: linalg.matmul
// CPU-NOT: effrt_cuda
