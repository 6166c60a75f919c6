// RUN: effopt-opt %s --split-input-file --eff-merge-equal-reductions | FileCheck %s

// A cross-entropy and its gradient over the same logits: the gradient's
// row max and sum of exponentials (each from its own fill, reading its own
// reshape of the max) equal the loss's, so each is computed once.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @loss_and_gradient
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return %[[S:.*]], %[[S]]
func.func @loss_and_gradient(%x: tensor<64x512xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<64xf32>
  %f0 = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<64xf32>) -> tensor<64xf32>
  %m0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x512xf32>) outs(%f0 : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %c0 = tensor.expand_shape %m0 [[0, 1]] output_shape [64, 1] : tensor<64xf32> into tensor<64x1xf32>
  %z0 = tensor.empty() : tensor<64xf32>
  %g0 = linalg.fill ins(%zero : f32) outs(%z0 : tensor<64xf32>) -> tensor<64xf32>
  %s0 = linalg.generic {indexing_maps = [#id, #col, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %c0 : tensor<64x512xf32>, tensor<64x1xf32>) outs(%g0 : tensor<64xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %out : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %f1 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %m1 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x512xf32>) outs(%f1 : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %c1 = tensor.expand_shape %m1 [[0, 1]] output_shape [64, 1] : tensor<64xf32> into tensor<64x1xf32>
  %z1 = tensor.empty() : tensor<64xf32>
  %g1 = linalg.fill ins(%zero : f32) outs(%z1 : tensor<64xf32>) -> tensor<64xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #col, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %c1 : tensor<64x512xf32>, tensor<64x1xf32>) outs(%g1 : tensor<64xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %out : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %s0, %s1 : tensor<64xf32>, tensor<64xf32>
}

// -----

// Left alone: reductions that differ in their body (max vs min) or their
// start (-inf vs 0), and a reduction whose result is as large as a
// sixteenth of what it reads or more (8 of 64 columns summed: keeping it
// alive could cost what recomputing it saves).
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r3 = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @different
// CHECK-COUNT-6: linalg.generic
func.func @different(%x: tensor<64x512xf32>, %y: tensor<8x8x8xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<64xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %g = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %a = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x512xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %b = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x512xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.minimumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %c = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x512xf32>) outs(%g : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e8 = tensor.empty() : tensor<8x8xf32>
  %f8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = linalg.generic {indexing_maps = [#id3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%y : tensor<8x8x8xf32>) outs(%f8 : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %d2 = linalg.generic {indexing_maps = [#id3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%y : tensor<8x8x8xf32>) outs(%f8 : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %h = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x512xf32>) outs(%g : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %a, %b, %c, %d, %d2, %h : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<64xf32>
}

// -----

// Two Adam updates' bias corrections from one learning rate and step: one
// computation. A third with another weight decay, and a fourth reading
// another step, stay.
#s = affine_map<() -> ()>
// CHECK-LABEL: func.func @scalar_computations
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return %[[A:.*]], %[[A]], %[[B:.*]], %[[C:.*]] :
func.func @scalar_computations(%lr: tensor<f32>, %step: tensor<i64>, %step2: tensor<i64>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %e0 = tensor.empty() : tensor<f32>
  %a = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%lr, %step : tensor<f32>, tensor<i64>) outs(%e0 : tensor<f32>) {
  ^bb0(%l: f32, %t: i64, %out: f32):
    %c1 = arith.constant 1 : i64
    %n = arith.addi %t, %c1 : i64
    %f = arith.sitofp %n : i64 to f32
    %r = arith.divf %l, %f : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<f32>
  %a2 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%lr, %step : tensor<f32>, tensor<i64>) outs(%e1 : tensor<f32>) {
  ^bb0(%l: f32, %t: i64, %out: f32):
    %c1 = arith.constant 1 : i64
    %n = arith.addi %t, %c1 : i64
    %f = arith.sitofp %n : i64 to f32
    %r = arith.divf %l, %f : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %b = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%lr, %step : tensor<f32>, tensor<i64>) outs(%e1 : tensor<f32>) {
  ^bb0(%l: f32, %t: i64, %out: f32):
    %c2 = arith.constant 2 : i64
    %n = arith.addi %t, %c2 : i64
    %f = arith.sitofp %n : i64 to f32
    %r = arith.divf %l, %f : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %c = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%lr, %step2 : tensor<f32>, tensor<i64>) outs(%e1 : tensor<f32>) {
  ^bb0(%l: f32, %t: i64, %out: f32):
    %c1 = arith.constant 1 : i64
    %n = arith.addi %t, %c1 : i64
    %f = arith.sitofp %n : i64 to f32
    %r = arith.divf %l, %f : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %a, %a2, %b, %c : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
