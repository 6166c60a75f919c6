// RUN: effopt-opt %s --split-input-file --eff-gpu-form-kernels | FileCheck %s

// When the row epilogue is not safe the ops stay their own kernels
// (matchRowEpilogue): no barrier, the log-sum-exp alone in its blocks.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#bc = affine_map<(d0, d1) -> (d0, 0)>
#v = affine_map<(d0) -> (d0)>

// A per-row op writing into the logits the gradient reads again (the
// plan would never, but the kernel could not: thread 0 stores before the
// other threads read the row).
// CHECK-LABEL: func.func @per_row_over_logits
// CHECK-NOT:   gpu.barrier
// CHECK:       eff.kernel = "block-reduction"
// CHECK:       eff.kernel = "elementwise"
// CHECK:       eff.kernel = "elementwise"
func.func @per_row_over_logits(%arena: memref<?xi8>, %m: memref<4xf32>, %s: memref<4xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %x = memref.view %arena[%c0][] : memref<?xi8> to memref<4x8192xf32>
  %lse = memref.view %arena[%c0][] : memref<?xi8> to memref<4xf32>
  %g = memref.view %arena[%c0][] : memref<?xi8> to memref<4x8192xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%ninf : f32) outs(%m : memref<4xf32>)
  linalg.fill ins(%zero : f32) outs(%s : memref<4xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8192xf32>) outs(%m, %s : memref<4xf32>, memref<4xf32>) {
  ^bb0(%a: f32, %mo: f32, %so: f32):
    %nm = arith.maximumf %mo, %a : f32
    %same = arith.cmpf oeq, %mo, %nm : f32
    %d = arith.subf %mo, %nm : f32
    %e = math.exp %d : f32
    %r = arith.select %same, %one, %e : f32
    %empty = arith.cmpf oeq, %nm, %ninf : f32
    %dx = arith.subf %a, %nm : f32
    %ex = math.exp %dx : f32
    %t = arith.select %empty, %zero, %ex : f32
    %sr = arith.mulf %so, %r : f32
    %ns = arith.addf %sr, %t : f32
    linalg.yield %nm, %ns : f32, f32
  }
  linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%m, %s : memref<4xf32>, memref<4xf32>) outs(%lse : memref<4xf32>) {
  ^bb0(%mv: f32, %sv: f32, %out: f32):
    %lg = math.log %sv : f32
    %r = arith.addf %mv, %lg : f32
    linalg.yield %r : f32
  }
  %lse2 = memref.expand_shape %lse [[0, 1]] output_shape [4, 1] : memref<4xf32> into memref<4x1xf32>
  linalg.generic {indexing_maps = [#id2, #bc, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %lse2 : memref<4x8192xf32>, memref<4x1xf32>) outs(%g : memref<4x8192xf32>) {
  ^bb0(%a: f32, %l: f32, %out: f32):
    %t = arith.subf %a, %l : f32
    %p = math.exp %t : f32
    linalg.yield %p : f32
  }
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#bc = affine_map<(d0, d1) -> (d0, 0)>
#v = affine_map<(d0) -> (d0)>

// The gradient written over the logits one row further on: a thread would
// overwrite elements another block still reads.
// CHECK-LABEL: func.func @gradient_shifted_over_logits
// CHECK-NOT:   gpu.barrier
// CHECK:       eff.kernel = "block-reduction"
// CHECK:       eff.kernel = "elementwise"
// CHECK:       eff.kernel = "elementwise"
func.func @gradient_shifted_over_logits(%arena: memref<?xi8>, %m: memref<4xf32>, %s: memref<4xf32>, %lse: memref<4xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %row = arith.constant 32768 : index
  %x = memref.view %arena[%c0][] : memref<?xi8> to memref<4x8192xf32>
  %g = memref.view %arena[%row][] : memref<?xi8> to memref<4x8192xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%ninf : f32) outs(%m : memref<4xf32>)
  linalg.fill ins(%zero : f32) outs(%s : memref<4xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8192xf32>) outs(%m, %s : memref<4xf32>, memref<4xf32>) {
  ^bb0(%a: f32, %mo: f32, %so: f32):
    %nm = arith.maximumf %mo, %a : f32
    %same = arith.cmpf oeq, %mo, %nm : f32
    %d = arith.subf %mo, %nm : f32
    %e = math.exp %d : f32
    %r = arith.select %same, %one, %e : f32
    %empty = arith.cmpf oeq, %nm, %ninf : f32
    %dx = arith.subf %a, %nm : f32
    %ex = math.exp %dx : f32
    %t = arith.select %empty, %zero, %ex : f32
    %sr = arith.mulf %so, %r : f32
    %ns = arith.addf %sr, %t : f32
    linalg.yield %nm, %ns : f32, f32
  }
  linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%m, %s : memref<4xf32>, memref<4xf32>) outs(%lse : memref<4xf32>) {
  ^bb0(%mv: f32, %sv: f32, %out: f32):
    %lg = math.log %sv : f32
    %r = arith.addf %mv, %lg : f32
    linalg.yield %r : f32
  }
  %lse2 = memref.expand_shape %lse [[0, 1]] output_shape [4, 1] : memref<4xf32> into memref<4x1xf32>
  linalg.generic {indexing_maps = [#id2, #bc, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %lse2 : memref<4x8192xf32>, memref<4x1xf32>) outs(%g : memref<4x8192xf32>) {
  ^bb0(%a: f32, %l: f32, %out: f32):
    %t = arith.subf %a, %l : f32
    %p = math.exp %t : f32
    linalg.yield %p : f32
  }
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#bc = affine_map<(d0, d1) -> (d0, 0)>
#v = affine_map<(d0) -> (d0)>

// A per-row op reads weights that lie in the logits the gradient
// overwrites in place: another block may still read them while this one
// writes its row (a barrier orders one block only).
// CHECK-LABEL: func.func @per_row_input_in_gradient
// CHECK-NOT:   gpu.barrier
// CHECK:       eff.kernel = "block-reduction"
func.func @per_row_input_in_gradient(%arena: memref<?xi8>, %m: memref<4xf32>, %s: memref<4xf32>, %lse: memref<4xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %x = memref.view %arena[%c0][] : memref<?xi8> to memref<4x8192xf32>
  %w = memref.view %arena[%c64][] : memref<?xi8> to memref<4xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%ninf : f32) outs(%m : memref<4xf32>)
  linalg.fill ins(%zero : f32) outs(%s : memref<4xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8192xf32>) outs(%m, %s : memref<4xf32>, memref<4xf32>) {
  ^bb0(%a: f32, %mo: f32, %so: f32):
    %nm = arith.maximumf %mo, %a : f32
    %same = arith.cmpf oeq, %mo, %nm : f32
    %d = arith.subf %mo, %nm : f32
    %e = math.exp %d : f32
    %r = arith.select %same, %one, %e : f32
    %empty = arith.cmpf oeq, %nm, %ninf : f32
    %dx = arith.subf %a, %nm : f32
    %ex = math.exp %dx : f32
    %t = arith.select %empty, %zero, %ex : f32
    %sr = arith.mulf %so, %r : f32
    %ns = arith.addf %sr, %t : f32
    linalg.yield %nm, %ns : f32, f32
  }
  linalg.generic {indexing_maps = [#v, #v, #v, #v], iterator_types = ["parallel"]}
      ins(%m, %s, %w : memref<4xf32>, memref<4xf32>, memref<4xf32>) outs(%lse : memref<4xf32>) {
  ^bb0(%mv: f32, %sv: f32, %wv: f32, %out: f32):
    %lg = math.log %sv : f32
    %r = arith.addf %mv, %lg : f32
    %rw = arith.mulf %r, %wv : f32
    linalg.yield %rw : f32
  }
  %lse2 = memref.expand_shape %lse [[0, 1]] output_shape [4, 1] : memref<4xf32> into memref<4x1xf32>
  linalg.generic {indexing_maps = [#id2, #bc, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %lse2 : memref<4x8192xf32>, memref<4x1xf32>) outs(%x : memref<4x8192xf32>) {
  ^bb0(%a: f32, %l: f32, %out: f32):
    %t = arith.subf %a, %l : f32
    %p = math.exp %t : f32
    linalg.yield %p : f32
  }
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#bc = affine_map<(d0, d1) -> (d0, 0)>
#v = affine_map<(d0) -> (d0)>

// The same with the gradient in place: one kernel, the barrier before it.
// CHECK-LABEL: func.func @gradient_in_place
// CHECK:       gpu.barrier
// CHECK:       eff.kernel = "block-reduction"
// CHECK-NOT:   eff.kernel
func.func @gradient_in_place(%arena: memref<?xi8>, %m: memref<4xf32>, %s: memref<4xf32>, %lse: memref<4xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %x = memref.view %arena[%c0][] : memref<?xi8> to memref<4x8192xf32>
  %g = memref.view %arena[%c0][] : memref<?xi8> to memref<4x8192xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%ninf : f32) outs(%m : memref<4xf32>)
  linalg.fill ins(%zero : f32) outs(%s : memref<4xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8192xf32>) outs(%m, %s : memref<4xf32>, memref<4xf32>) {
  ^bb0(%a: f32, %mo: f32, %so: f32):
    %nm = arith.maximumf %mo, %a : f32
    %same = arith.cmpf oeq, %mo, %nm : f32
    %d = arith.subf %mo, %nm : f32
    %e = math.exp %d : f32
    %r = arith.select %same, %one, %e : f32
    %empty = arith.cmpf oeq, %nm, %ninf : f32
    %dx = arith.subf %a, %nm : f32
    %ex = math.exp %dx : f32
    %t = arith.select %empty, %zero, %ex : f32
    %sr = arith.mulf %so, %r : f32
    %ns = arith.addf %sr, %t : f32
    linalg.yield %nm, %ns : f32, f32
  }
  linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%m, %s : memref<4xf32>, memref<4xf32>) outs(%lse : memref<4xf32>) {
  ^bb0(%mv: f32, %sv: f32, %out: f32):
    %lg = math.log %sv : f32
    %r = arith.addf %mv, %lg : f32
    linalg.yield %r : f32
  }
  %lse2 = memref.expand_shape %lse [[0, 1]] output_shape [4, 1] : memref<4xf32> into memref<4x1xf32>
  linalg.generic {indexing_maps = [#id2, #bc, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %lse2 : memref<4x8192xf32>, memref<4x1xf32>) outs(%g : memref<4x8192xf32>) {
  ^bb0(%a: f32, %l: f32, %out: f32):
    %t = arith.subf %a, %l : f32
    %p = math.exp %t : f32
    linalg.yield %p : f32
  }
  return
}
