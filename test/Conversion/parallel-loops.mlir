// RUN: effopt-opt %s --convert-linalg-to-parallel-loops --eff-parallel-loops --split-input-file | FileCheck %s
// RUN: effopt-opt %s --convert-linalg-to-parallel-loops --eff-parallel-loops="min-work=1 min-chunks=1" --split-input-file | FileCheck %s --check-prefix=ALL

// A large elementwise nest: threads over the rows only; the columns stay an
// inner scf.for that LLVM vectorises.
// CHECK-LABEL: func.func @large_elementwise
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NEXT: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK: arith.addf
// CHECK: memref.store
// CHECK-NOT: scf.parallel
// ALL-LABEL: func.func @large_elementwise
// ALL: scf.parallel (%{{.*}}) =
func.func @large_elementwise(%a: memref<512x256xf32>, %b: memref<512x256xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<512x256xf32>) outs(%b : memref<512x256xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Too little work to pay for waking threads: sequential loops.
// CHECK-LABEL: func.func @small_elementwise
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: scf.for
// With min-work=1 the same nest keeps the leading dimension parallel.
// ALL-LABEL: func.func @small_elementwise
// ALL: scf.parallel (%{{[^,]*}}) =
// ALL-NEXT: scf.for
func.func @small_elementwise(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A row reduction: the rows are shared out, each row's sum stays one
// sequential loop (the same order for any number of threads). Two leading
// dimensions are kept when the first alone has fewer than min-chunks trips.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %{{.*}}) {
// CHECK-NEXT: scf.for
// CHECK: arith.addf
func.func @row_sum(%a: memref<2x64x1024xf32>, %s: memref<2x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : memref<2x64x1024xf32>) outs(%s : memref<2x64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A reduction outermost (a column sum): the parallel loop inside it would
// fork once per row, so it is made sequential.
// CHECK-LABEL: func.func @column_sum
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: scf.for
func.func @column_sum(%a: memref<1024x256xf32>, %s: memref<256xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%a : memref<1024x256xf32>) outs(%s : memref<256xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// In eff-grad-accum's micro-batch loop (eff.accumulation) a nest is one of
// the step's own and is threaded as at the top level; in any other loop it
// stays sequential.
// CHECK-LABEL: func.func @in_accumulation_loop
// CHECK: scf.for
// CHECK: scf.parallel
// CHECK: } {eff.accumulation}
// CHECK: scf.for
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @in_accumulation_loop(%a: memref<512x256xf32>, %b: memref<512x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %k = %c0 to %c4 step %c1 {
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                    iterator_types = ["parallel", "parallel"]}
        ins(%a : memref<512x256xf32>) outs(%b : memref<512x256xf32>) {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
  } {eff.accumulation}
  scf.for %k = %c0 to %c4 step %c1 {
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                    iterator_types = ["parallel", "parallel"]}
        ins(%a : memref<512x256xf32>) outs(%b : memref<512x256xf32>) {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
  }
  return
}
