// RUN: effopt-opt %s --eff-shape-loop-nests --split-input-file | FileCheck %s
// RUN: effopt-opt %s --eff-shape-loop-nests --convert-linalg-to-parallel-loops --eff-parallel-loops="min-work=1 min-chunks=1" --split-input-file | FileCheck %s --check-prefix=LOOPS

// An SGD update of a 3x3 filter: the learning rate is loaded once before the
// op, and the four contiguous dimensions are one loop.
// CHECK-LABEL: func.func @sgd_filter
// CHECK: %[[LR:.*]] = memref.load %arg2[] : memref<f32>
// CHECK: %[[G:.*]] = memref.collapse_shape %arg1 {{\[}}[0, 1, 2, 3]] : memref<8x4x3x3xf32> into memref<288xf32>
// CHECK: %[[P:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1, 2, 3]] : memref<8x4x3x3xf32> into memref<288xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[G]], %[[LR]] : memref<288xf32>, f32) outs(%[[P]] : memref<288xf32>)
// LOOPS-LABEL: func.func @sgd_filter
// LOOPS: memref.load %arg2[]
// LOOPS: scf.parallel (%[[I:.*]]) = (%c0) to (%c288) step (%c1) {
// LOOPS-NOT: memref.load %arg2
// LOOPS: memref.store %{{.*}}, %{{.*}}[%[[I]]] : memref<288xf32>
func.func @sgd_filter(%p: memref<8x4x3x3xf32>, %g: memref<8x4x3x3xf32>, %lr: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> ()>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%g, %lr : memref<8x4x3x3xf32>, memref<f32>) outs(%p : memref<8x4x3x3xf32>) {
  ^bb0(%x: f32, %l: f32, %y: f32):
    %m = arith.mulf %x, %l : f32
    %s = arith.subf %y, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A 0-d buffer that is also written stays a buffer.
// CHECK-LABEL: func.func @scalar_output
// CHECK-NOT: memref.load
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : memref<12xf32>, memref<f32>) outs(%arg1 : memref<f32>)
func.func @scalar_output(%x: memref<4x3xf32>, %acc: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> ()>, affine_map<(a, b) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%x, %acc : memref<4x3xf32>, memref<f32>) outs(%acc : memref<f32>) {
  ^bb0(%v: f32, %a: f32, %o: f32):
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Batch-norm statistics over N, H, W of NCHW: the channel loop moves
// outside the reductions (so it can be threaded), H and W become one
// reduction loop, N stays before them: each channel's sum runs over the
// same elements in the same order.
// CHECK-LABEL: func.func @channel_sums
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : memref<4x8x5x5xf32> into memref<4x8x25xf32>
// CHECK: linalg.generic {indexing_maps = [#[[XMAP:.*]], #[[OUTMAP:.*]]], iterator_types = ["parallel", "reduction", "reduction"]} ins(%[[X]] : memref<4x8x25xf32>) outs(%arg1 : memref<8xf64>)
// LOOPS-LABEL: func.func @channel_sums
// LOOPS: scf.parallel (%[[C:.*]]) = (%c0) to (%c8) step (%c1) {
// LOOPS-NEXT: scf.for %[[N:.*]] = %c0 to %c4 step %c1 {
// LOOPS-NEXT: scf.for %[[HW:.*]] = %c0 to %c25 step %c1 {
// LOOPS: memref.load %{{.*}}[%[[N]], %[[C]], %[[HW]]] : memref<4x8x25xf32>
func.func @channel_sums(%x: memref<4x8x5x5xf32>, %acc: memref<8xf64>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (b)>],
                  iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : memref<4x8x5x5xf32>) outs(%acc : memref<8xf64>) {
  ^bb0(%v: f32, %a: f64):
    %e = arith.extf %v : f32 to f64
    %s = arith.addf %e, %a : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// A column sum keeps its order: its innermost loop is parallel and
// vectorises across the outputs.
// CHECK-LABEL: func.func @column_sums
// CHECK: iterator_types = ["reduction", "parallel"]
func.func @column_sums(%x: memref<64x32xf32>, %acc: memref<32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (b)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x32xf32>) outs(%acc : memref<32xf32>) {
  ^bb0(%v: f32, %a: f32):
    %s = arith.addf %v, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A strided view (the interior of a padded buffer) collapses only where its
// rows are contiguous: here nowhere, so the op is left as it is.
// CHECK-LABEL: func.func @strided_view
// CHECK-NOT: memref.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel", "parallel"]
func.func @strided_view(%a: memref<4x16x16xf32, strided<[324, 18, 1], offset: 19>>, %b: memref<4x16x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : memref<4x16x16xf32, strided<[324, 18, 1], offset: 19>>) outs(%b : memref<4x16x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// A per-row operand [6] broadcast over [6, 4, 5]: the two dimensions it
// does not read collapse, the one it reads stays apart.
// CHECK-LABEL: func.func @broadcast_operand
// CHECK: memref.collapse_shape %arg0 {{\[}}[0], [1, 2]] : memref<6x4x5xf32> into memref<6x20xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %arg1 : memref<6x20xf32>, memref<6xf32>)
func.func @broadcast_operand(%x: memref<6x4x5xf32>, %b: memref<6xf32>, %y: memref<6x4x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a)>, affine_map<(a, b, c) -> (a, b, c)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<6x4x5xf32>, memref<6xf32>) outs(%y : memref<6x4x5xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A fill of a 4-d buffer is one loop.
// CHECK-LABEL: func.func @fill
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1, 2, 3]] : memref<8x4x3x3xf32> into memref<288xf32>
// CHECK: linalg.generic {{.*}} outs(%[[FLAT]] : memref<288xf32>)
func.func @fill(%a: memref<8x4x3x3xf32>) {
  %c = arith.constant 0.0 : f32
  linalg.fill ins(%c : f32) outs(%a : memref<8x4x3x3xf32>)
  return
}

// -----

// A transposed operand keeps apart the dimensions it reads in another order.
// CHECK-LABEL: func.func @transposed_operand
// CHECK-NOT: memref.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel", "parallel"]
func.func @transposed_operand(%x: memref<6x4x5xf32>, %y: memref<6x5x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, c, b)>, affine_map<(a, b, c) -> (a, b, c)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<6x4x5xf32>) outs(%y : memref<6x5x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  return
}

// -----

// A per-channel operand read through constant indices ([1, C, 1, 1]) is
// read through a view without its size-1 dimensions ([C], indexed by the
// channel alone), so the op's indexing is plain and H and W collapse.
// CHECK-LABEL: func.func @constant_indices
// CHECK: %[[S:.*]] = memref.collapse_shape %arg1 {{\[}}[0, 1, 2, 3]] : memref<1x64x1x1xf32> into memref<64xf32>
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : memref<16x64x4x4xf32> into memref<16x64x16xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[S]] : memref<16x64x16xf32>, memref<64xf32>)
func.func @constant_indices(%x: memref<16x64x4x4xf32>, %s: memref<1x64x1x1xf32>, %y: memref<16x64x4x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (0, b, 0, 0)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : memref<16x64x4x4xf32>, memref<1x64x1x1xf32>) outs(%y : memref<16x64x4x4xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.mulf %v, %w : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A constant index into a dimension of size > 1 is a real element choice:
// only the size-1 dimensions go, and the op keeps its four loops.
// CHECK-LABEL: func.func @constant_index_of_wide_dim
// CHECK: memref.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : memref<2x64x1x1xf32> into memref<2x64xf32>
// CHECK-NOT: memref.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "parallel"]
func.func @constant_index_of_wide_dim(%x: memref<16x64x4x4xf32>, %s: memref<2x64x1x1xf32>, %y: memref<16x64x4x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (1, b, 0, 0)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : memref<16x64x4x4xf32>, memref<2x64x1x1xf32>) outs(%y : memref<16x64x4x4xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.mulf %v, %w : f32
    linalg.yield %r : f32
  }
  return
}
