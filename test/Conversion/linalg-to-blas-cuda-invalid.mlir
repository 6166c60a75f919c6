// RUN: effopt-opt %s --eff-linalg-to-blas=abi=cuda -verify-diagnostics

// A product that writes bf16 (eff-gpu-narrow-products) accumulates in f32
// only as a cuBLASLt call; with C written transposed there is none, and as
// loops it would accumulate in bf16: refused.
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#nm = affine_map<(d0, d1, d2) -> (d1, d0)>
func.func @transposed_bf16_c(%a: memref<4x8xbf16>, %b: memref<8x16xbf16>, %c: memref<16x4xbf16>) {
  // expected-error @+1 {{eff-linalg-to-blas: a product that writes 'bf16' must become a GEMM call}}
  linalg.matmul indexing_maps = [#mk, #kn, #nm] ins(%a, %b : memref<4x8xbf16>, memref<8x16xbf16>) outs(%c : memref<16x4xbf16>)
  return
}
