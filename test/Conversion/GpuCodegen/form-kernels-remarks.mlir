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

// Rows of at most 4096 elements take a warp each, 8 warps a block (fewer
// when there are fewer rows); longer rows take a block each.

// CHECK-LABEL: func.func @softmax_sum
func.func @softmax_sum(%x: memref<8x512xf32>, %s: memref<8xf32>) attributes {eff.arena_arg = 0 : i64} {
  // expected-remark @below {{warp reduction: one warp per output element, 8 per block}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x512xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    %r = arith.addf %e, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A fill the reduction after it overwrites launches nothing.

// CHECK-LABEL: func.func @two_fills_folded
// CHECK-COUNT-1: gpu.launch
// CHECK-NOT: gpu.launch
func.func @two_fills_folded(%x: memref<8x512xf32>, %s: memref<8xf32>, %m: memref<8xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.fill ins(%ninf : f32) outs(%m : memref<8xf32>)
  // expected-remark @below {{warp reduction: one warp per output element, 8 per block; starts from the fills of outputs 0, 1}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x512xf32>) outs(%s, %m : memref<8xf32>, memref<8xf32>) {
  ^bb0(%in: f32, %out: f32, %mx: f32):
    %r = arith.addf %in, %out : f32
    %q = arith.maximumf %in, %mx : f32
    linalg.yield %r, %q : f32, f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @three_rows
func.func @three_rows(%x: memref<3x4096xf32>, %s: memref<3xf32>) attributes {eff.arena_arg = 0 : i64} {
  // expected-remark @below {{warp reduction: one warp per output element, 3 per block}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x4096xf32>) outs(%s : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @long_rows
func.func @long_rows(%x: memref<8x4097xf32>, %s: memref<8xf32>) attributes {eff.arena_arg = 0 : i64} {
  // expected-remark @below {{block reduction: one block per output element}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x4097xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A scatter-add with repeated rows: the row picked by the index is
// partitioned over blocks (owner computes), each block compacting its hits;
// the remark says how.

// CHECK-LABEL: func.func @scatter_partitioned
// CHECK: gpu.barrier
// CHECK: } {eff.kernel = "compacted-scatter"}
func.func @scatter_partitioned(%idx: memref<32xi64>, %dy: memref<32x64xf32>, %table: memref<100x64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  // expected-remark @below {{loop nest: 1 of 2 loops spread over threads, the written rows split over 100 partitions (row mod 100), one block each: 256 threads compact the hits of 256 serial iterations at a time (compacted scatter; each row's owner applies its updates in order)}}
  scf.for %t = %c0 to %c32 step %c1 {
    scf.for %f = %c0 to %c64 step %c1 {
      %i = memref.load %idx[%t] : memref<32xi64>
      %row = arith.index_cast %i : i64 to index
      %old = memref.load %table[%row, %f] : memref<100x64xf32>
      %d = memref.load %dy[%t, %f] : memref<32x64xf32>
      %new = arith.addf %old, %d : f32
      memref.store %new, %table[%row, %f] : memref<100x64xf32>
    }
  }
  return
}

// -----

// The same with a token count known only at run time: partitioned over
// threads, each scanning every token (compacting needs static loops).

// CHECK-LABEL: func.func @scatter_dynamic_not_compacted
// CHECK: scf.if
// CHECK: } {eff.kernel = "partitioned-loop-nest"}
func.func @scatter_dynamic_not_compacted(%idx: memref<?xi64>, %dy: memref<?x64xf32>, %table: memref<100x64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %idx, %c0 : memref<?xi64>
  // expected-remark @below {{loop nest: 1 of 2 loops spread over threads, the written rows split over 100 partitions of 1 row (each row's owner applies its updates in order; not compacted: a loop of the nest has bounds that are not constants)}}
  scf.for %t = %c0 to %n step %c1 {
    scf.for %f = %c0 to %c64 step %c1 {
      %i = memref.load %idx[%t] : memref<?xi64>
      %row = arith.index_cast %i : i64 to index
      %old = memref.load %table[%row, %f] : memref<100x64xf32>
      %d = memref.load %dy[%t, %f] : memref<?x64xf32>
      %new = arith.addf %old, %d : f32
      memref.store %new, %table[%row, %f] : memref<100x64xf32>
    }
  }
  return
}

// -----

// A scatter whose row depends on the spread loop (one index per element,
// ScatterElements' shape): a block cannot own the rows of a whole chunk of
// iterations, so threads own them.

// CHECK-LABEL: func.func @scatter_elements_not_compacted
// CHECK: } {eff.kernel = "partitioned-loop-nest"}
func.func @scatter_elements_not_compacted(%idx: memref<32x64xi64>, %dy: memref<32x64xf32>, %table: memref<100x64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  // expected-remark @below {{loop nest: 1 of 2 loops spread over threads, the written rows split over 100 partitions of 1 row (each row's owner applies its updates in order; not compacted: the row depends on a loop spread over threads)}}
  scf.for %t = %c0 to %c32 step %c1 {
    scf.for %f = %c0 to %c64 step %c1 {
      %i = memref.load %idx[%t, %f] : memref<32x64xi64>
      %row = arith.index_cast %i : i64 to index
      %old = memref.load %table[%row, %f] : memref<100x64xf32>
      %d = memref.load %dy[%t, %f] : memref<32x64xf32>
      %new = arith.addf %old, %d : f32
      memref.store %new, %table[%row, %f] : memref<100x64xf32>
    }
  }
  return
}

// -----

// Rows read at one index and written at another (a running sum over rows):
// not partitioned, the row loop runs in order in each thread.

// CHECK-LABEL: func.func @running_sum_not_partitioned
// CHECK-NOT: scf.if
// CHECK: } {eff.kernel = "loop-nest"}
func.func @running_sum_not_partitioned(%x: memref<32x64xf32>, %s: memref<32x64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  // expected-remark @below {{loop nest: 1 of 2 loops spread over threads, the others run in order in each thread (rows not partitioned: a written buffer is accessed at different indices)}}
  scf.for %t = %c1 to %c32 step %c1 {
    scf.for %f = %c0 to %c64 step %c1 {
      %tm1 = arith.subi %t, %c1 : index
      %prev = memref.load %s[%tm1, %f] : memref<32x64xf32>
      %v = memref.load %x[%t, %f] : memref<32x64xf32>
      %sum = arith.addf %prev, %v : f32
      memref.store %sum, %s[%t, %f] : memref<32x64xf32>
    }
  }
  return
}

// -----

// A 2-D histogram: both indices come from data, so no single row dimension
// to partition; one thread walks it all.

// CHECK-LABEL: func.func @histogram2d_serial
// CHECK-NOT: scf.if
// CHECK: } {eff.kernel = "serial-loop-nest"}
func.func @histogram2d_serial(%a: memref<64xi64>, %b: memref<64xi64>, %h: memref<16x16xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  // expected-remark @below {{loop nest without independent loops: one thread (rows not partitioned: a written buffer is indexed by several values the nest computes)}}
  scf.for %t = %c0 to %c64 step %c1 {
    %i = memref.load %a[%t] : memref<64xi64>
    %j = memref.load %b[%t] : memref<64xi64>
    %r = arith.index_cast %i : i64 to index
    %c = arith.index_cast %j : i64 to index
    %old = memref.load %h[%r, %c] : memref<16x16xf32>
    %new = arith.addf %old, %one : f32
    memref.store %new, %h[%r, %c] : memref<16x16xf32>
  }
  return
}

// -----

// Two tables whose rows two different index arrays pick: not partitioned.

// CHECK-LABEL: func.func @two_row_indices
// CHECK: } {eff.kernel = "loop-nest"}
func.func @two_row_indices(%ia: memref<32xi64>, %ib: memref<32xi64>, %dy: memref<32x8xf32>, %ta: memref<50x8xf32>, %tb: memref<50x8xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  // expected-remark @below {{loop nest: 1 of 2 loops spread over threads, the others run in order in each thread (rows not partitioned: the written buffers' rows are chosen by different values)}}
  scf.for %t = %c0 to %c32 step %c1 {
    scf.for %f = %c0 to %c8 step %c1 {
      %i = memref.load %ia[%t] : memref<32xi64>
      %j = memref.load %ib[%t] : memref<32xi64>
      %r = arith.index_cast %i : i64 to index
      %s = arith.index_cast %j : i64 to index
      %d = memref.load %dy[%t, %f] : memref<32x8xf32>
      %a = memref.load %ta[%r, %f] : memref<50x8xf32>
      %a1 = arith.addf %a, %d : f32
      memref.store %a1, %ta[%r, %f] : memref<50x8xf32>
      %b = memref.load %tb[%s, %f] : memref<50x8xf32>
      %b1 = arith.addf %b, %d : f32
      memref.store %b1, %tb[%s, %f] : memref<50x8xf32>
    }
  }
  return
}
