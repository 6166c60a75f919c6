// RUN: effopt-opt %s --split-input-file --eff-gpu-form-kernels | FileCheck %s
// RUN: effopt-opt %s --split-input-file --eff-gpu-form-kernels=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: effopt-opt %s --split-input-file --eff-gpu-form-kernels=row-groups=false | FileCheck %s --check-prefix=OFF

// A layer norm forward is one kernel: two warp reductions (five xor
// shuffles each, no barrier), the per-row ops in registers (no load of the
// mean or the variance once computed), the normalisation with the lanes
// striding over the row, 16 bytes at a time.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#bc3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME:  %[[X:[^:]*]]: memref<4x8x768xf32>, %[[S:[^:]*]]: memref<4x8xf32>, %[[Q:[^:]*]]: memref<4x8xf32>
// CHECK:       gpu.launch
// CHECK-COUNT-10: gpu.shuffle xor
// CHECK-NOT:   gpu.barrier
// CHECK-NOT:   memref.load %[[S]]
// CHECK-NOT:   memref.load %[[Q]]
// CHECK:       vector.load %[[X]]
// CHECK:       vector.store
// CHECK:       } {eff.kernel = "row-group"}
// CHECK-NOT:   gpu.launch
// REMARK: row group: one warp per row of 768 elements (4 at a time), 8 per block, runs this op and the 4 after it (2 reductions); 2 fills folded in{{$}}
// OFF-LABEL: func.func @layer_norm
// OFF-COUNT-2: eff.kernel = "warp-reduction"
// OFF:         eff.kernel = "elementwise"
func.func @layer_norm(%x: memref<4x8x768xf32>, %s: memref<4x8xf32>, %q: memref<4x8xf32>,
                      %rstd: memref<4x8x1xf32>, %gamma: memref<768xf32>,
                      %y: memref<4x8x768xbf16>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 768.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<4x8xf32>)
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<4x8x768xf32>) outs(%s : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<4x8xf32>) outs(%s : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.divf %a, %n : f32
    linalg.yield %t : f32
  }
  %mean = memref.expand_shape %s [[0], [1, 2]] output_shape [4, 8, 1] : memref<4x8xf32> into memref<4x8x1xf32>
  linalg.fill ins(%zero : f32) outs(%q : memref<4x8xf32>)
  linalg.generic {indexing_maps = [#id3, #bc3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %mean : memref<4x8x768xf32>, memref<4x8x1xf32>) outs(%q : memref<4x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %t = arith.addf %d2, %o : f32
    linalg.yield %t : f32
  }
  %var = memref.expand_shape %q [[0], [1, 2]] output_shape [4, 8, 1] : memref<4x8xf32> into memref<4x8x1xf32>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%var : memref<4x8x1xf32>) outs(%rstd : memref<4x8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %e = arith.addf %v, %eps : f32
    %t = math.rsqrt %e : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [#id3, #bc3, #bc3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %mean, %rstd, %gamma : memref<4x8x768xf32>, memref<4x8x1xf32>, memref<4x8x1xf32>, memref<768xf32>) outs(%y : memref<4x8x768xbf16>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %g: f32, %o: bf16):
    %d = arith.subf %a, %m : f32
    %t = arith.mulf %d, %r : f32
    %u = arith.mulf %t, %g : f32
    %w = arith.truncf %u : f32 to bf16
    linalg.yield %w : bf16
  }
  return
}

// -----

// What stays out of a group: an op after a library call (the group ends
// there); a write over memory a member read in another layout (here the
// bf16 rows over the f32 input's bytes: another row's warp may still read
// them), which runs as its own kernel after the group; rows longer than
// 4096 (block reductions); one reduction with a per-row op after it (a
// warp reduction with an epilogue, as without row groups); a reduction
// that adds to what its output held (no fill: every lane would load it
// while lane 0 stores the total over it, @accumulates).

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @stays_out
// CHECK:       eff.kernel = "row-group"
// CHECK:       eff.kernel = "elementwise"
// CHECK:       call @effrt_cuda_barrier_free_call
// CHECK:       eff.kernel = "warp-reduction"
// CHECK:       eff.kernel = "block-reduction"
// CHECK:       eff.kernel = "elementwise"
// CHECK-NOT:   gpu.launch
// REMARK: row group: one warp per row of 64 elements (4 at a time), 8 per block, runs this op and the 1 after it (1 reductions); 1 fill folded in{{$}}
// REMARK: warp reduction: one warp per output element, 8 per block; the elementwise op after it runs in its epilogue
// REMARK: block reduction: one block per output element{{$}}
func.func private @effrt_cuda_barrier_free_call()
func.func @stays_out(%arena: memref<65536xi8>, %s: memref<16xf32>, %t: memref<16xf32>,
                     %l: memref<16x5000xf32>, %ls: memref<16xf32>, %e: memref<16x5000xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<16xf32>)
  %c0 = arith.constant 0 : index
  %c8192 = arith.constant 8192 : index
  %x = memref.view %arena[%c0][] : memref<65536xi8> to memref<16x64xf32>
  %y = memref.view %arena[%c8192][] : memref<65536xi8> to memref<16x64xf32>
  %h = memref.view %arena[%c0][] : memref<65536xi8> to memref<16x64xbf16>
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<16x64xf32>, memref<16xf32>) outs(%y : memref<16x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<16x64xf32>) outs(%h : memref<16x64xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  }
  func.call @effrt_cuda_barrier_free_call() : () -> ()
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<16x64xf32>) outs(%t : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%t : memref<16xf32>) outs(%t : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%l : memref<16x5000xf32>) outs(%ls : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%l, %ls : memref<16x5000xf32>, memref<16xf32>) outs(%e : memref<16x5000xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// CHECK-LABEL: func.func @accumulates
// CHECK:       eff.kernel = "warp-reduction"
// CHECK:       eff.kernel = "elementwise"
// CHECK-NOT:   gpu.launch
func.func @accumulates(%arena: memref<65536xi8>, %x: memref<16x64xf32>, %s: memref<16xf32>,
                       %y: memref<16x64xf32>) attributes {eff.arena_arg = 0 : i64} {
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<16x64xf32>, memref<16xf32>) outs(%y : memref<16x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A residual add before a row reduction whose sum the plan put over the
// add's input %g (GPT-2's layer norm sums over the GEMM output): the sum
// is a per-row value only the group reads, so it is not stored and the
// add joins (one kernel). When something after the group reads it
// (@sum_read_after: a copy after a library call), it is stored, it would
// race with the add's reads of other rows, and the add runs alone.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @sum_unstored
// CHECK:       gpu.launch
// CHECK-NOT:   memref.store {{.*}} : memref<16xf32>
// CHECK:       } {eff.kernel = "row-group"}
// CHECK-NOT:   gpu.launch
// CHECK-LABEL: func.func @sum_read_after
// CHECK:       } {eff.kernel = "elementwise"}
// CHECK:       gpu.launch
// CHECK:       memref.store {{.*}} : memref<16xf32>
// CHECK:       } {eff.kernel = "row-group"}
// REMARK: row group: one warp per row of 64 elements (4 at a time), 8 per block, runs this op and the 2 after it (1 reductions); 1 fill folded in; 1 per-row value kept in registers only{{$}}
// REMARK: row group: one warp per row of 64 elements (4 at a time), 8 per block, runs this op and the 1 after it (1 reductions); 1 fill folded in{{$}}
func.func @sum_unstored(%arena: memref<65536xi8>, %x: memref<16x64xf32>,
                        %y: memref<16x64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c8192 = arith.constant 8192 : index
  %g = memref.view %arena[%c0][] : memref<65536xi8> to memref<16x64xf32>
  %h = memref.view %arena[%c8192][] : memref<65536xi8> to memref<16x64xf32>
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %g : memref<16x64xf32>, memref<16x64xf32>) outs(%h : memref<16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  }
  %s = memref.view %arena[%c0][] : memref<65536xi8> to memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<16xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%h : memref<16x64xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h, %s : memref<16x64xf32>, memref<16xf32>) outs(%y : memref<16x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}
func.func private @effrt_cuda_barrier_free_call()
func.func @sum_read_after(%arena: memref<65536xi8>, %x: memref<16x64xf32>,
                          %y: memref<16x64xf32>, %t: memref<16xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c8192 = arith.constant 8192 : index
  %g = memref.view %arena[%c0][] : memref<65536xi8> to memref<16x64xf32>
  %h = memref.view %arena[%c8192][] : memref<65536xi8> to memref<16x64xf32>
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %g : memref<16x64xf32>, memref<16x64xf32>) outs(%h : memref<16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  }
  %s = memref.view %arena[%c0][] : memref<65536xi8> to memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<16xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%h : memref<16x64xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h, %s : memref<16x64xf32>, memref<16xf32>) outs(%y : memref<16x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  }
  func.call @effrt_cuda_barrier_free_call() : () -> ()
  memref.copy %s, %t : memref<16xf32> to memref<16xf32>
  return
}

// -----

// A write over what a reduction member read (the same lane, the same
// address) joins only when no reduction follows it: %d16 over %dy joins,
// the sum of %dx after it runs as a warp reduction of its own.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @no_reduction_after_overwrite
// CHECK:       } {eff.kernel = "row-group"}
// CHECK:       } {eff.kernel = "warp-reduction"}
// CHECK-NOT:   gpu.launch
// REMARK: row group: one warp per row of 64 elements (4 at a time), 8 per block, runs this op and the 2 after it (1 reductions); 1 fill folded in; 1 per-row value kept in registers only{{$}}
// REMARK: warp reduction: one warp per output element, 8 per block
func.func @no_reduction_after_overwrite(%arena: memref<65536xi8>, %x: memref<16x64xf32>, %t: memref<16xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %dy = memref.view %arena[%c0][] : memref<65536xi8> to memref<16x64xbf16>
  %s = memref.view %arena[%c4096][] : memref<65536xi8> to memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<16xf32>)
  linalg.generic {indexing_maps = [#id2, #id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%dy, %x : memref<16x64xbf16>, memref<16x64xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%a: bf16, %b: f32, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %p = arith.mulf %e, %b : f32
    %r = arith.addf %p, %o : f32
    linalg.yield %r : f32
  }
  %dx = memref.view %arena[%c8192][] : memref<65536xi8> to memref<16x64xf32>
  linalg.generic {indexing_maps = [#id2, #rows, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%dy, %s : memref<16x64xbf16>, memref<16xf32>) outs(%dx : memref<16x64xf32>) {
  ^bb0(%a: bf16, %m: f32, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %r = arith.subf %e, %m : f32
    linalg.yield %r : f32
  }
  %d16 = memref.view %arena[%c0][] : memref<65536xi8> to memref<16x64xbf16>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%dx : memref<16x64xf32>) outs(%d16 : memref<16x64xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.fill ins(%zero : f32) outs(%t : memref<16xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%dx : memref<16x64xf32>) outs(%t : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A per-row op written in place over a per-row input it loads (no member
// wrote it: a remat's recomputed mean over the saved row sum) stays out
// when its output is stored (read after the group): every lane loads the
// sum, lane 0 stores the mean, so in a group other lanes could load the
// mean instead. It runs before the kernel; the reduction and the op after
// it read the mean it stored. Read by members only, the mean is not stored
// and the op joins (@per_row_in_place_unstored).

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @per_row_in_place
// CHECK:       } {eff.kernel = "elementwise"}
// CHECK:       } {eff.kernel = "row-group"}
// CHECK:       call @effrt_cuda_barrier_free_call
// CHECK-LABEL: func.func @per_row_in_place_unstored
// CHECK:       } {eff.kernel = "row-group"}
// CHECK-NOT:   gpu.launch
// REMARK: row group: one warp per row of 64 elements (4 at a time), 8 per block, runs this op and the 2 after it (1 reductions); 1 fill folded in; 1 op between them runs before it{{$}}
// REMARK: row group: one warp per row of 64 elements (4 at a time), 8 per block, runs this op and the 3 after it (1 reductions); 1 fill folded in; 1 per-row value kept in registers only{{$}}
func.func private @effrt_cuda_barrier_free_call()
func.func @per_row_in_place(%arena: memref<65536xi8>, %x: memref<16x64xf32>,
                            %h: memref<16x64xf32>, %q: memref<16xf32>,
                            %y: memref<16x64xf32>, %saved: memref<16xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %n = arith.constant 64.0 : f32
  %c0 = arith.constant 0 : index
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x64xf32>) outs(%h : memref<16x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %one : f32
    linalg.yield %r : f32
  }
  %sum = memref.view %arena[%c0][] : memref<65536xi8> to memref<16xf32>
  %mean = memref.view %arena[%c0][] : memref<65536xi8> to memref<16xf32>
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%sum : memref<16xf32>) outs(%mean : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%q : memref<16xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%h, %mean : memref<16x64xf32>, memref<16xf32>) outs(%q : memref<16xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %r = arith.addf %d2, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows, #rows, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h, %mean, %q : memref<16x64xf32>, memref<16xf32>, memref<16xf32>) outs(%y : memref<16x64xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %r = arith.mulf %d, %s : f32
    linalg.yield %r : f32
  }
  func.call @effrt_cuda_barrier_free_call() : () -> ()
  memref.copy %mean, %saved : memref<16xf32> to memref<16xf32>
  return
}
func.func @per_row_in_place_unstored(%arena: memref<65536xi8>, %x: memref<16x64xf32>,
                                     %h: memref<16x64xf32>, %q: memref<16xf32>,
                                     %y: memref<16x64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %n = arith.constant 64.0 : f32
  %c0 = arith.constant 0 : index
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x64xf32>) outs(%h : memref<16x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %one : f32
    linalg.yield %r : f32
  }
  %sum = memref.view %arena[%c0][] : memref<65536xi8> to memref<16xf32>
  %mean = memref.view %arena[%c0][] : memref<65536xi8> to memref<16xf32>
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%sum : memref<16xf32>) outs(%mean : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%q : memref<16xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%h, %mean : memref<16x64xf32>, memref<16xf32>) outs(%q : memref<16xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %r = arith.addf %d2, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows, #rows, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h, %mean, %q : memref<16x64xf32>, memref<16xf32>, memref<16xf32>) outs(%y : memref<16x64xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %r = arith.mulf %d, %s : f32
    linalg.yield %r : f32
  }
  return
}
