// RUN: effopt-opt %s --split-input-file --eff-gpu-form-kernels="remarks=true" --verify-diagnostics | FileCheck %s

// A reduction whose combiner is not recognised (the last index of the
// maximum, carried through a select) falls back to one thread per output
// element, in order, and says so.

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @argmax_fallback
// CHECK: gpu.launch
// CHECK:   scf.for
// CHECK:     scf.for {{.*}} iter_args
// CHECK-NOT: gpu.all_reduce
// CHECK: } {eff.kernel = "thread-reduction"}
func.func @argmax_fallback(%x: memref<32x10xf32>, %m: memref<32xf32>, %i: memref<32xi64>) attributes {eff.arena_arg = 0 : i64} {
  // expected-remark @below {{reduction combiner not recognised: one thread per output element (correct, slow)}}
  linalg.generic {indexing_maps = [#id, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x10xf32>) outs(%m, %i : memref<32xf32>, memref<32xi64>) {
  ^bb0(%in: f32, %best: f32, %arg: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %in, %best : f32
    %b = arith.select %gt, %in, %best : f32
    %a = arith.select %gt, %ji, %arg : i64
    linalg.yield %b, %a : f32, i64
  }
  return
}

// -----

// CHECK-LABEL: func.func @softmax_sum
func.func @softmax_sum(%x: memref<8x512xf32>, %s: memref<8xf32>) attributes {eff.arena_arg = 0 : i64} {
  // expected-remark @below {{block reduction: one block per output element}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x512xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    %r = arith.addf %e, %out : f32
    linalg.yield %r : f32
  }
  return
}
