// RUN: effopt-opt %s --split-input-file --eff-fuse-elementwise --canonicalize | FileCheck %s

// A cheap producer with several readers is computed again in each (upstream
// fusion clones it), when its inputs are live there anyway: the mask of a
// clamp is never stored, the forward select and the backward select each
// compare x themselves.
#v = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @mask_recomputed
// CHECK-NOT: tensor<64xi1>
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<64xf32>)
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64xf32>, tensor<64xf32>)
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK: return %[[Y]], %[[DX]]
func.func @mask_recomputed(%x: tensor<64xf32>, %dy: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %em = tensor.empty() : tensor<64xi1>
  %m = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%em : tensor<64xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf olt, %in, %zero : f32
    linalg.yield %c : i1
  } -> tensor<64xi1>
  %e = tensor.empty() : tensor<64xf32>
  %y = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%m, %x : tensor<64xi1>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%c: i1, %in: f32, %out: f32):
    %s = arith.select %c, %zero, %in : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %dx = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%m, %dy : tensor<64xi1>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%c: i1, %in: f32, %out: f32):
    %s = arith.select %c, %zero, %in : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %y, %dx : tensor<64xf32>, tensor<64xf32>
}

// -----

// Recomputing the mask in the backward would keep x (f32) alive until then
// instead of the mask (i1): the mask is stored for the backward, and the
// forward select computes it again (x is live there). A producer with math
// (the exponential) is never computed twice.
#v = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @mask_kept
// CHECK: %[[X:.*]] = linalg.generic
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<64xf32>) outs(%{{.*}} : tensor<64xi1>)
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<64xf32>)
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} ins(%[[M]], %arg1 : tensor<64xi1>, tensor<64xf32>)
// CHECK: return %[[Y]], %[[DX]]
func.func @mask_kept(%a: tensor<64xf32>, %dy: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %x = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%a : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %em = tensor.empty() : tensor<64xi1>
  %m = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%em : tensor<64xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf ogt, %in, %zero : f32
    linalg.yield %c : i1
  } -> tensor<64xi1>
  %y = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%m, %x : tensor<64xi1>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%c: i1, %in: f32, %out: f32):
    %s = arith.select %c, %in, %zero : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %dx = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%m, %dy : tensor<64xi1>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%c: i1, %in: f32, %out: f32):
    %s = arith.select %c, %in, %zero : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %y, %dx : tensor<64xf32>, tensor<64xf32>
}

// -----

// A reader that broadcasts the producer's result would compute each element
// many times: a producer with several readers stays when one broadcasts it.
#v = affine_map<(d0) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @broadcast_reader
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg1, %[[S]] : tensor<4x16xf32>, tensor<4xf32>)
func.func @broadcast_reader(%s0: tensor<4xf32>, %x: tensor<4x16xf32>) -> (tensor<4xf32>, tensor<4x16xf32>) {
  %two = arith.constant 2.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%s0 : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %two : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<4x16xf32>, tensor<4xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %r = arith.addf %in, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %s, %y : tensor<4xf32>, tensor<4x16xf32>
}

// -----

// An update in place (it reads its output: a running maximum, as max
// pooling's backward keeps one per tap) is not computed again in its
// readers: each would read the old values too.
#v = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @update_in_place
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<64xf32>) outs(%arg1 : tensor<64xf32>)
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} ins(%[[M]] : tensor<64xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[M]], %arg2 : tensor<64xf32>, tensor<64xf32>)
func.func @update_in_place(%x: tensor<64xf32>, %best: tensor<64xf32>, %dy: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %two = arith.constant 2.0 : f32
  %m = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%best : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e = tensor.empty() : tensor<64xf32>
  %a = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%m : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %two : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %b = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%m, %dy : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %g: f32, %out: f32):
    %r = arith.addf %in, %g : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----

// A producer of two results is not computed again either (both would be).
#v = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @two_results
// CHECK: %[[P:.*]]:2 = linalg.generic
// CHECK: linalg.generic {{.*}} ins(%[[P]]#0 : tensor<64xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[P]]#0, %[[P]]#1 : tensor<64xf32>, tensor<64xf32>)
func.func @two_results(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %p:2 = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e, %e : tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    %r = arith.mulf %in, %two : f32
    %s = arith.addf %in, %two : f32
    linalg.yield %r, %s : f32, f32
  } -> (tensor<64xf32>, tensor<64xf32>)
  %a = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%p#0 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %in : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %b = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%p#0, %p#1 : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %in1: f32, %out: f32):
    %r = arith.subf %in, %in1 : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %a, %b : tensor<64xf32>, tensor<64xf32>
}
