// RUN: effopt-opt %s --eff-fuse-elementwise --canonicalize | FileCheck %s

// A generic that only widens bf16 to f32 fuses into each of its generic
// readers (each widens what it reads) and a tensor.extract of it reads the
// bf16 source; a named product still reads the wide tensor, so it stays.
#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @widening_readers
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x16xbf16>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT: arith.extf %[[A]] : bf16 to f32
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x16xbf16>)
// CHECK: math.exp
// CHECK: %[[GATHER:.*]] = linalg.generic
// CHECK: %[[X:.*]] = tensor.extract %arg0[%{{.*}}, %{{.*}}] : tensor<4x16xbf16>
// CHECK-NEXT: arith.extf %[[X]] : bf16 to f32
// CHECK: return %[[SUM]], %[[EXP]], %[[GATHER]]
func.func @widening_readers(%x: tensor<4x16xbf16>, %t: tensor<4xindex>) -> (tensor<4xf32>, tensor<4x16xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x16xbf16>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %y = arith.extf %in : bf16 to f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%w : tensor<4x16xf32>) outs(%f1 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.exp %in : f32
    linalg.yield %a : f32
  } -> tensor<4x16xf32>
  %g = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%t : tensor<4xindex>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%in: index, %out: f32):
    %i = linalg.index 0 : index
    %v = tensor.extract %w[%i, %in] : tensor<4x16xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  return %s, %ex, %g : tensor<4xf32>, tensor<4x16xf32>, tensor<4xf32>
}

// A widening that also transposes: the extract's indices are permuted
// back to the source's ([i, j] of the [16, 4] result is [j, i] of x).
// CHECK-LABEL: func.func @transposed_widening_extract
// CHECK-SAME: (%[[XS:.*]]: tensor<4x16xbf16>, %[[I:.*]]: index, %[[J:.*]]: index)
// CHECK: %[[E:.*]] = tensor.extract %[[XS]][%[[J]], %[[I]]] : tensor<4x16xbf16>
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[E]] : bf16 to f32
// CHECK-NEXT: return %[[W]]
func.func @transposed_widening_extract(%x: tensor<4x16xbf16>, %i: index, %j: index) -> f32 {
  %e = tensor.empty() : tensor<16x4xf32>
  %w = linalg.generic {indexing_maps = [#id, #t], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x16xbf16>) outs(%e : tensor<16x4xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %y = arith.extf %in : bf16 to f32
    linalg.yield %y : f32
  } -> tensor<16x4xf32>
  %v = tensor.extract %w[%i, %j] : tensor<16x4xf32>
  return %v : f32
}

// Read by a named product: the wide tensor stays for it.
// CHECK-LABEL: func.func @product_reader
// CHECK: %[[WIDE:.*]] = linalg.generic
// CHECK: arith.extf
// CHECK: linalg.matmul ins(%[[WIDE]], %arg1 : tensor<4x16xf32>, tensor<16x4xf32>)
func.func @product_reader(%x: tensor<4x16xbf16>, %y: tensor<16x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x16xbf16>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %a = arith.extf %in : bf16 to f32
    linalg.yield %a : f32
  } -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = linalg.matmul ins(%w, %y : tensor<4x16xf32>, tensor<16x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %p : tensor<4x4xf32>
}
