// RUN: effopt-opt %s --split-input-file --eff-gpu-narrow-products --eff-fuse-elementwise --canonicalize | FileCheck %s

// GPT-2's logits under bf16 autocast: a bf16 product into f32, rounded to
// bf16 and widened again for the f32 loss, read by a row max and by the
// gather of each target's logit. The product writes bf16; the widening
// moves into both readers; no f32 [4, 16] tensor is left.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @logits
// CHECK-NOT: tensor<4x16xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : bf16
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : bf16) outs(%{{.*}} : tensor<4x16xbf16>)
// CHECK: %[[P:.*]] = linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%arg0, %arg1 : tensor<4x8xbf16>, tensor<16x8xbf16>) outs(%[[INIT]] : tensor<4x16xbf16>) -> tensor<4x16xbf16>
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<4x16xbf16>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: arith.maximumf %[[W]]
// CHECK: linalg.generic
// CHECK: %[[X:.*]] = tensor.extract %[[P]][%{{.*}}, %{{.*}}] : tensor<4x16xbf16>
// CHECK-NEXT: %[[XW:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK-NEXT: linalg.yield %[[XW]]
// CHECK-NOT: tensor<4x16xf32>
func.func @logits(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %t: tensor<4xindex>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<4x8xbf16>, tensor<16x8xbf16>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.truncf %in : f32 to bf16
    %b = arith.extf %a : bf16 to f32
    linalg.yield %b : f32
  } -> tensor<4x16xf32>
  %e3 = tensor.empty() : tensor<4xf32>
  %f3 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%r : tensor<4x16xf32>) outs(%f3 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.maximumf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %g = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%t : tensor<4xindex>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%in: index, %out: f32):
    %i = linalg.index 0 : index
    %x1 = tensor.extract %r[%i, %in] : tensor<4x16xf32>
    linalg.yield %x1 : f32
  } -> tensor<4xf32>
  return %m, %g : tensor<4xf32>, tensor<4xf32>
}

// -----

// A batched f16 product (attention scores) rounded to f16 by its only
// reader: the product writes f16.
#b = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @batched_f16
// CHECK: linalg.batch_matmul ins(%arg0, %arg1 : tensor<2x4x8xf16>, tensor<2x8x4xf16>) outs(%{{.*}} : tensor<2x4x4xf16>) -> tensor<2x4x4xf16>
// CHECK-NOT: arith.truncf
func.func @batched_f16(%a: tensor<2x4x8xf16>, %b: tensor<2x8x4xf16>) -> tensor<2x4x4xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = linalg.batch_matmul ins(%a, %b : tensor<2x4x8xf16>, tensor<2x8x4xf16>) outs(%f : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %e2 = tensor.empty() : tensor<2x4x4xf16>
  %r = linalg.generic {indexing_maps = [#b, #b], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p : tensor<2x4x4xf32>) outs(%e2 : tensor<2x4x4xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<2x4x4xf16>
  return %r : tensor<2x4x4xf16>
}

// -----

// Left in f32: a reader that uses the f32 value itself (a loss on the
// unrounded product), a product accumulating into existing values, an f32
// product, and a result returned as it is.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: linalg.matmul {{.*}} -> tensor<4x4xf32>
// CHECK-NOT: linalg.matmul
func.func @kept(%a: tensor<4x8xbf16>, %b: tensor<8x4xbf16>, %acc: tensor<4x4xf32>,
                %x: tensor<4x8xf32>, %y: tensor<8x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p0 = linalg.matmul ins(%a, %b : tensor<4x8xbf16>, tensor<8x4xbf16>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p0 : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %p1 = linalg.matmul ins(%a, %b : tensor<4x8xbf16>, tensor<8x4xbf16>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e16 = tensor.empty() : tensor<4x4xbf16>
  %r1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x4xf32>) outs(%e16 : tensor<4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  %p2 = linalg.matmul ins(%x, %y : tensor<4x8xf32>, tensor<8x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x4xf32>) outs(%e16 : tensor<4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  %p3 = linalg.matmul ins(%a, %b : tensor<4x8xbf16>, tensor<8x4xbf16>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r0, %r1, %r2, %p3 : tensor<4x4xf32>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xf32>
}
