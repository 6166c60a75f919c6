// RUN: effopt-opt %s --split-input-file --eff-merge-sibling-reductions | FileCheck %s

// A LayerNorm's scale and bias gradients: two column sums over one output
// gradient become one reduction with two outputs, the scale's first; the
// reshape of the scale gradient between them moves after the merged op.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @scale_and_bias_gradients
// CHECK-SAME: (%[[X:.*]]: tensor<64x16xf32>, %[[DY:.*]]: tensor<64x16xbf16>, %[[M:.*]]: tensor<64x1xf32>)
// CHECK: %[[S:.*]]:2 = linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// CHECK-SAME: ins(%[[X]], %[[M]], %[[DY]] : tensor<64x16xf32>, tensor<64x1xf32>, tensor<64x16xbf16>)
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<16xf32>, tensor<16xf32>)
// CHECK-NEXT: ^bb0(%[[XA:.*]]: f32, %[[MA:.*]]: f32, %[[DA:.*]]: bf16, %[[O1:.*]]: f32, %[[O2:.*]]: f32):
// CHECK-NEXT:   %[[XH:.*]] = arith.subf %[[XA]], %[[MA]]
// CHECK-NEXT:   %[[D1:.*]] = arith.extf %[[DA]]
// CHECK-NEXT:   %[[P:.*]] = arith.mulf %[[D1]], %[[XH]]
// CHECK-NEXT:   %[[A1:.*]] = arith.addf %[[P]], %[[O1]]
// CHECK-NEXT:   %[[D2:.*]] = arith.extf %[[DA]]
// CHECK-NEXT:   %[[A2:.*]] = arith.addf %[[D2]], %[[O2]]
// CHECK-NEXT:   linalg.yield %[[A1]], %[[A2]] : f32, f32
// CHECK: %[[R:.*]] = tensor.expand_shape %[[S]]#0
// CHECK: return %[[R]], %[[S]]#1
func.func @scale_and_bias_gradients(%x: tensor<64x16xf32>, %dy: tensor<64x16xbf16>, %mean: tensor<64x1xf32>) -> (tensor<1x16xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %scale = linalg.generic {indexing_maps = [#id, #row, #id, #col], iterator_types = ["reduction", "parallel"]} ins(%x, %mean, %dy : tensor<64x16xf32>, tensor<64x1xf32>, tensor<64x16xbf16>) outs(%f : tensor<16xf32>) {
  ^bb0(%xi: f32, %mi: f32, %di: bf16, %out: f32):
    %xhat = arith.subf %xi, %mi : f32
    %d = arith.extf %di : bf16 to f32
    %p = arith.mulf %d, %xhat : f32
    %s = arith.addf %p, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %kept = tensor.expand_shape %scale [[0, 1]] output_shape [1, 16] : tensor<16xf32> into tensor<1x16xf32>
  %e2 = tensor.empty() : tensor<16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16xf32>) -> tensor<16xf32>
  %bias = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%dy : tensor<64x16xbf16>) outs(%f2 : tensor<16xf32>) {
  ^bb0(%di: bf16, %out: f32):
    %d = arith.extf %di : bf16 to f32
    %s = arith.addf %d, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %kept, %bias : tensor<1x16xf32>, tensor<16xf32>
}

// -----

// Three column sums of one input: one reduction with three outputs.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @three_sums
// CHECK: %[[S:.*]]:3 = linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return %[[S]]#0, %[[S]]#1, %[[S]]#2
func.func @three_sums(%x: tensor<64x16xf32>, %init: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %a = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<64x16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %b = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<64x16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    %s = arith.addf %m, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %c = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<64x16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.maximumf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %a, %b, %c : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// Left alone: row sums (their innermost loop is reduced), a sum reading
// the first one's result, sums of different inputs over different loop
// ranges.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @not_siblings
// CHECK-COUNT-6: linalg.generic
// CHECK-NOT: linalg.generic
func.func @not_siblings(%x: tensor<64x16xf32>, %y: tensor<64x16xf32>, %z: tensor<32x16xf32>, %r: tensor<64xf32>, %c: tensor<16xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %r1 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x16xf32>) outs(%r : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x16xf32>) outs(%r : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.maximumf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %a = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<64x16xf32>) outs(%c : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %b = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<64x16xf32>) outs(%a : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %d = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%y : tensor<64x16xf32>) outs(%c : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %e = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%z : tensor<32x16xf32>) outs(%c : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %r1, %r2, %a, %b, %d, %e : tensor<64xf32>, tensor<64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// A use of the first sum inside a payload between the two (a generic that
// tensor.extracts from a value it captures) counts as a use: that generic
// moves after the merged op with the other readers, not left before it
// reading a value defined later (found by remat=sqrt on
// nn.TransformerDecoder).
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#vec = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @use_in_a_payload
// CHECK: %[[S:.*]]:2 = linalg.generic
// CHECK: %[[E:.*]] = tensor.expand_shape %[[S]]#0
// CHECK: linalg.generic
// CHECK: tensor.extract %[[E]]
// CHECK: return
func.func @use_in_a_payload(%x: tensor<64x16xf32>, %init: tensor<16xf32>, %v: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %a = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<64x16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %m = tensor.expand_shape %a [[0, 1]] output_shape [1, 16] : tensor<16xf32> into tensor<1x16xf32>
  %e = tensor.empty() : tensor<16xf32>
  %g = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]} ins(%v : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %c0 = arith.constant 0 : index
    %t = tensor.extract %m[%c0, %i] : tensor<1x16xf32>
    %r = arith.mulf %in, %t : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %b = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<64x16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = arith.mulf %in, %in : f32
    %s = arith.addf %p, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %g, %b : tensor<16xf32>, tensor<16xf32>
}
