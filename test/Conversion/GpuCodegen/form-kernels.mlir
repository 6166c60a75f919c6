// Row groups and small batches (several ops in one kernel) are off here,
// so each strategy shows on its own; form-kernels-row-groups*.mlir and
// form-kernels-batches-emulated.mlir test them.
// RUN: effopt-opt %s --split-input-file --eff-gpu-form-kernels="row-groups=false small-batches=false" | FileCheck %s

// An elementwise op: one launch of 256-thread blocks with a grid-stride loop
// over the linearised 32x128 space, delinearised innermost-fastest; f32
// rows of 128: each thread takes 4 neighbours with 16-byte vector loads
// (the broadcast bias too, being indexed by the same column) and one
// vector store, so the loop runs over 1024 vectors. The host keeps no load
// or store.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @elementwise
// CHECK-NOT: memref.load
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%[[GX:.*]] = %c4{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%[[SX:.*]] = %c256
// CHECK:   %[[MUL:.*]] = arith.muli %[[BX]], %[[SX]]
// CHECK:   %[[FIRST:.*]] = arith.addi %[[MUL]], %[[TX]]
// CHECK:   %[[STRIDE:.*]] = arith.muli %[[GX]], %[[SX]]
// CHECK:   scf.for %[[I:.*]] = %[[FIRST]] to %c1024{{.*}} step %[[STRIDE]]
// CHECK:     %[[J:.*]] = arith.remui %[[I]], %c32
// CHECK:     %[[ROW:.*]] = arith.divui %[[I]], %c32
// CHECK:     %[[COL:.*]] = arith.muli %[[J]], %c4
// CHECK:     %[[X:.*]] = vector.load %{{.*}}[%[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<32x128xf32>, vector<4xf32>
// CHECK:     %[[B:.*]] = vector.load %{{.*}}[%[[COL]]] {alignment = 16 : i64} : memref<128xf32>, vector<4xf32>
// CHECK-COUNT-4: arith.addf
// CHECK:     %[[V:.*]] = vector.from_elements
// CHECK:     vector.store %[[V]], %{{.*}}[%[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<32x128xf32>, vector<4xf32>
// CHECK:   gpu.terminator
// CHECK: } {eff.kernel = "elementwise"}
// CHECK-NOT: memref.load
// CHECK: return
func.func @elementwise(%x: memref<32x128xf32>, %b: memref<128xf32>, %y: memref<32x128xf32>) attributes {eff.arena_arg = 0 : i64} {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<32x128xf32>, memref<128xf32>) outs(%y : memref<32x128xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Scalar threads where 16-byte vectors do not fit: rows of 10 f32 (not a
// multiple of 4), a view whose offset is not a multiple of the width, and
// a transposed read (its contiguous dimension is not the thread's). One
// element per thread, delinearised innermost-fastest.

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @scalar_elementwise
// CHECK-NOT: vector.
// CHECK: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c2{{.*}}, %{{.*}}) threads
// CHECK:   scf.for %[[I:.*]] = %{{.*}} to %c320{{.*}} step
// CHECK:     %[[J:.*]] = arith.remui %[[I]], %c10
// CHECK:     %[[ROW:.*]] = arith.divui %[[I]], %c10
// CHECK:     memref.load %{{.*}}[%[[ROW]], %[[J]]] : memref<32x10xf32>
// CHECK:     memref.store %{{.*}}[%[[ROW]], %[[J]]]
// CHECK: } {eff.kernel = "elementwise"}
// CHECK: gpu.launch
// CHECK:     memref.load %{{.*}} : memref<32x128xf32, strided<[128, 1], offset: 2>>
// CHECK: } {eff.kernel = "elementwise"}
// CHECK: gpu.launch
// CHECK:     memref.load %{{.*}} : memref<128x32xf32>
// CHECK: } {eff.kernel = "elementwise"}
// CHECK-NOT: vector.
// CHECK: return
func.func @scalar_elementwise(%x: memref<32x10xf32>, %y: memref<32x10xf32>,
                              %v: memref<32x128xf32, strided<[128, 1], offset: 2>>,
                              %w: memref<32x128xf32>, %tr: memref<128x32xf32>) attributes {eff.arena_arg = 0 : i64} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<32x10xf32>) outs(%y : memref<32x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%v : memref<32x128xf32, strided<[128, 1], offset: 2>>) outs(%w : memref<32x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%tr : memref<128x32xf32>) outs(%w : memref<32x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

// A row reduction (a softmax's max) after its fill: one kernel, the fill
// folded into the reduction's initial value. Rows of at most 4096 elements
// take one warp each, 8 rows to a 256-thread block (the grid over rows):
// the lanes stride over the row from the identity -inf, a butterfly of xor
// shuffles (offsets 16 to 1) combines them with the payload's own
// maximumf, lane 0 folds in the fill's value (instead of loading the
// output) and stores. 32 rows fill 4 blocks exactly, so no row guard.

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_max
// CHECK-SAME: %{{.*}}: memref<32x10xf32>, %[[M:.*]]: memref<32xf32>
// CHECK: %[[FILL:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NOT: gpu.launch
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4{{.*}}, %{{.*}}, %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK:   %[[LANE:.*]] = arith.remui %[[TX]], %[[C32:.*]] : index
// CHECK:   %[[FIRST:.*]] = arith.muli %[[BX]], %c8
// CHECK:   %[[WARP:.*]] = arith.divui %[[TX]], %[[C32]]
// CHECK:   %[[ROW:.*]] = arith.addi %[[FIRST]], %[[WARP]]
// CHECK-NOT: arith.select
// CHECK:   %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:   %[[PARTIAL:.*]] = scf.for %[[R:.*]] = %[[LANE]] to %c10{{.*}} step %[[C32]] iter_args(%[[ACC:.*]] = %[[NEG_INF]]) -> (f32)
// CHECK:     %[[X:.*]] = memref.load %{{.*}}[%[[ROW]], %[[R]]]
// CHECK:     %[[MX:.*]] = arith.maximumf %[[X]], %[[ACC]]
// CHECK:     scf.yield %[[MX]]
// CHECK:   %[[S16:.*]], %{{.*}} = gpu.shuffle xor %[[PARTIAL]], %c16_i32, %c32_i32 : f32
// CHECK:   %[[M16:.*]] = arith.maximumf %[[S16]], %[[PARTIAL]] : f32
// CHECK:   gpu.shuffle xor %[[M16]], %c8_i32
// CHECK:   gpu.shuffle xor %{{.*}}, %c4_i32
// CHECK:   gpu.shuffle xor %{{.*}}, %c2_i32
// CHECK:   %[[S1:.*]], %{{.*}} = gpu.shuffle xor %[[M2:.*]], %c1_i32
// CHECK:   %[[TOTAL:.*]] = arith.maximumf %[[S1]], %[[M2]] : f32
// CHECK-NOT: gpu.all_reduce
// CHECK:   %[[IS_LANE0:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK:   scf.if %[[IS_LANE0]]
// CHECK-NOT: memref.load
// CHECK:     %[[RES:.*]] = arith.maximumf %[[TOTAL]], %[[FILL]]
// CHECK:     memref.store %[[RES]], %[[M]][%[[ROW]]]
// CHECK: } {eff.kernel = "warp-reduction"}
// CHECK-NOT: gpu.launch
func.func @row_max(%x: memref<32x10xf32>, %m: memref<32xf32>) attributes {eff.arena_arg = 0 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%ninf : f32) outs(%m : memref<32xf32>)
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x10xf32>) outs(%m : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// 20 rows: the last of 3 blocks has 4 warps without a row. They reduce
// nothing (the loop ends at 0) but still shuffle, so every shuffle runs in
// full warps; only lanes 0 of warps with a row store. A bf16 sum moves its
// bits through the i32 shuffles and adds in bf16 like the payload.

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @partial_block_bf16
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c3{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK:   %[[ROW:.*]] = arith.addi
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %c20
// CHECK:   %[[END:.*]] = arith.select %[[IN]], %c100{{.*}}, %c0
// CHECK:   %[[PARTIAL:.*]] = scf.for %{{.*}} = %{{.*}} to %[[END]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (bf16)
// CHECK:   %[[BITS:.*]] = arith.bitcast %[[PARTIAL]] : bf16 to i16
// CHECK:   %[[WIDE:.*]] = arith.extui %[[BITS]] : i16 to i32
// CHECK:   %[[GOT:.*]], %{{.*}} = gpu.shuffle xor %[[WIDE]], %c16_i32, %c32_i32 : i32
// CHECK:   %[[NARROW:.*]] = arith.trunci %[[GOT]] : i32 to i16
// CHECK:   %[[BACK:.*]] = arith.bitcast %[[NARROW]] : i16 to bf16
// CHECK:   arith.addf %[[BACK]], %[[PARTIAL]] : bf16
// CHECK:   %[[LANE0:.*]] = arith.cmpi eq
// CHECK:   %[[STORES:.*]] = arith.andi %[[LANE0]], %[[IN]] : i1
// CHECK:   scf.if %[[STORES]]
// CHECK: } {eff.kernel = "warp-reduction"}
func.func @partial_block_bf16(%x: memref<20x100xbf16>, %s: memref<20xbf16>) attributes {eff.arena_arg = 0 : i64} {
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<20x100xbf16>) outs(%s : memref<20xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %r = arith.addf %in, %out : bf16
    linalg.yield %r : bf16
  }
  return
}

// -----

// Rows longer than 4096 elements keep one block per row (blockSize
// threads) striding from the identity, combined by gpu.all_reduce; thread
// 0 folds in the initial value with the payload's own combiner. 5001
// elements: no whole vectors, one element per thread and step.

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @long_row_max
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4{{.*}}, %{{.*}}, %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%[[SX:.*]] = %c256
// CHECK:   %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:   %[[PARTIAL:.*]] = scf.for %[[R:.*]] = %[[TX]] to %c5001{{.*}} step %[[SX]] iter_args(%[[ACC:.*]] = %[[NEG_INF]]) -> (f32)
// CHECK:     %[[X:.*]] = memref.load %{{.*}}[%[[BX]], %[[R]]]
// CHECK:     %[[M:.*]] = arith.maximumf %[[X]], %[[ACC]]
// CHECK:     scf.yield %[[M]]
// CHECK:   %[[TOTAL:.*]] = gpu.all_reduce {{ *}}maximumf %[[PARTIAL]] uniform
// CHECK:   scf.if
// CHECK:     %[[INIT:.*]] = memref.load %{{.*}}[%[[BX]]]
// CHECK:     %[[RES:.*]] = arith.maximumf %[[TOTAL]], %[[INIT]]
// CHECK:     memref.store %[[RES]], %{{.*}}[%[[BX]]]
// CHECK: } {eff.kernel = "block-reduction"}
func.func @long_row_max(%x: memref<4x5001xf32>, %m: memref<4xf32>) attributes {eff.arena_arg = 0 : i64} {
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x5001xf32>) outs(%m : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The same for a cross-entropy's rows of bf16 logits (50304 wide): threads
// take 8 neighbours (16 bytes) at a time, 50304 / 8 = 6288 vectors, the
// payload once per element in order.
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @long_row_max_vectors
// CHECK: gpu.launch
// CHECK:   scf.for %[[V:.*]] = %{{.*}} to %c6288{{.*}} step
// CHECK:     vector.load %{{.*}} {alignment = 16 : i64} : memref<4x50304xbf16>, vector<8xbf16>
// CHECK-COUNT-8: arith.maximumf
// CHECK:   gpu.all_reduce {{ *}}maximumf
// CHECK: } {eff.kernel = "block-reduction"}
func.func @long_row_max_vectors(%x: memref<4x50304xbf16>, %m: memref<4xbf16>) attributes {eff.arena_arg = 0 : i64} {
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x50304xbf16>) outs(%m : memref<4xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %r = arith.maximumf %in, %out : bf16
    linalg.yield %r : bf16
  }
  return
}

// -----

// Fills that stay kernels: the reduction also reads the filled buffer
// (through another view of its memory), an op between the fill and the
// reduction reads the filled buffer, the reduction covers only part of the
// filled buffer. A thread reduction (a column sum) folds its fill too.

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#cols = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @fills_that_stay
// CHECK: eff.kernel = "elementwise"
// CHECK: eff.kernel = "warp-reduction"
// CHECK-COUNT-2: eff.kernel = "elementwise"
// CHECK: eff.kernel = "warp-reduction"
// CHECK: eff.kernel = "elementwise"
// CHECK: eff.kernel = "warp-reduction"
// CHECK-NOT: eff.kernel = "elementwise"
// CHECK: eff.kernel = "thread-reduction"
func.func @fills_that_stay(%arena: memref<4096xi8>, %x: memref<32x10xf32>, %y: memref<32x10xf32>, %z: memref<10xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %s = memref.view %arena[%c0][] : memref<4096xi8> to memref<32xf32>
  %s2 = memref.view %arena[%c64][] : memref<4096xi8> to memref<32x10xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<32xf32>)
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%s2 : memref<32x10xf32>) outs(%s : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  %t = memref.view %arena[%c0][] : memref<4096xi8> to memref<32xf32>
  %c2048 = arith.constant 2048 : index
  %w = memref.view %arena[%c2048][] : memref<4096xi8> to memref<32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<32xf32>)
  linalg.copy ins(%t : memref<32xf32>) outs(%w : memref<32xf32>)
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<32x10xf32>) outs(%t : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  %u = memref.view %arena[%c0][] : memref<4096xi8> to memref<64xf32>
  %u16 = memref.subview %u[0] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1]>>
  linalg.fill ins(%zero : f32) outs(%u : memref<64xf32>)
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x10xf32>) outs(%u16 : memref<32xf32, strided<[1]>>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%z : memref<10xf32>)
  linalg.generic {indexing_maps = [#id, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<32x10xf32>) outs(%z : memref<10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A fill folds into its reduction past ops that touch other memory (the
// fill of a split reduction's result comes before the partial sums').

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @fill_folds_past_other_memory
// CHECK: eff.kernel = "elementwise"
// CHECK-NOT: eff.kernel = "elementwise"
// CHECK: eff.kernel = "warp-reduction"
// CHECK-NOT: eff.kernel
func.func @fill_folds_past_other_memory(%arena: memref<4096xi8>, %x: memref<32x10xf32>, %y: memref<32x10xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<4096xi8> to memref<32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<32xf32>)
  linalg.copy ins(%x : memref<32x10xf32>) outs(%y : memref<32x10xf32>)
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<32x10xf32>) outs(%t : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A column sum (one thread per output) runs the update after it in its
// epilogue: the update reads the sum from the register and its parameter
// and moment from memory, which it writes in place. The second update
// writes its parameter at another point than it reads it: it stays.

#id = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (9 - d0)>
// CHECK-LABEL: func.func @thread_reduction_epilogues
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: memref.store
// CHECK: memref.load %{{.*}} : memref<10xf32>
// CHECK: memref.load %{{.*}} : memref<10xf32>
// CHECK: memref.store
// CHECK: memref.store
// CHECK: eff.kernel = "thread-reduction"
// CHECK-NOT: eff.kernel = "elementwise"
// CHECK: eff.kernel = "thread-reduction"
// CHECK: eff.kernel = "elementwise"
// CHECK-NOT: eff.kernel
func.func @thread_reduction_epilogues(%arena: memref<4096xi8>, %g: memref<32x10xf32>, %p: memref<10xf32>, %m: memref<10xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %rate = arith.constant 0.1 : f32
  %c0 = arith.constant 0 : index
  %sum = memref.view %arena[%c0][] : memref<4096xi8> to memref<10xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<10xf32>)
  linalg.generic {indexing_maps = [#id, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<32x10xf32>) outs(%sum : memref<10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #v, #v, #v, #v], iterator_types = ["parallel"]}
      ins(%sum, %p, %m : memref<10xf32>, memref<10xf32>, memref<10xf32>) outs(%p, %m : memref<10xf32>, memref<10xf32>) {
  ^bb0(%gs: f32, %pi: f32, %mi: f32, %po: f32, %mo: f32):
    %mn = arith.addf %mi, %gs : f32
    %step = arith.mulf %mn, %rate : f32
    %pn = arith.subf %pi, %step : f32
    linalg.yield %pn, %mn : f32, f32
  }
  %c64 = arith.constant 64 : index
  %sum2 = memref.view %arena[%c64][] : memref<4096xi8> to memref<10xf32>
  linalg.fill ins(%zero : f32) outs(%sum2 : memref<10xf32>)
  linalg.generic {indexing_maps = [#id, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<32x10xf32>) outs(%sum2 : memref<10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #v, #rev], iterator_types = ["parallel"]}
      ins(%sum2, %p : memref<10xf32>, memref<10xf32>) outs(%p : memref<10xf32>) {
  ^bb0(%gs: f32, %pi: f32, %po: f32):
    %pn = arith.subf %pi, %gs : f32
    linalg.yield %pn : f32
  }
  return
}

// -----

// Elementwise ops that stay kernels before a thread reduction reading
// their output: the partial sums are planned over the op's input (other
// threads may still read it), and the reduction reads bytes the output
// overlaps only in part (a window of a larger buffer).

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#part = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @prologues_that_stay
// CHECK: eff.kernel = "elementwise"
// CHECK: eff.kernel = "thread-reduction"
// CHECK: eff.kernel = "elementwise"
// CHECK: eff.kernel = "thread-reduction"
func.func @prologues_that_stay(%arena: memref<8192xi8>, %dy: memref<2x6x8xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %c2048 = arith.constant 2048 : index
  %in = memref.view %arena[%c0][] : memref<8192xi8> to memref<2x6x8xf32>
  %out = memref.view %arena[%c1024][] : memref<8192xi8> to memref<2x6x8xf32>
  %partial = memref.view %arena[%c0][] : memref<8192xi8> to memref<2x2x8xf32>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%in : memref<2x6x8xf32>) outs(%out : memref<2x6x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  }
  %rows = memref.expand_shape %out [[0], [1, 2], [3]] output_shape [2, 2, 3, 8] : memref<2x6x8xf32> into memref<2x2x3x8xf32>
  linalg.generic {indexing_maps = [#id4, #part], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%rows : memref<2x2x3x8xf32>) outs(%partial : memref<2x2x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  %big = memref.view %arena[%c2048][] : memref<8192xi8> to memref<4x6x8xf32>
  %half = memref.subview %big[1, 0, 0] [2, 6, 8] [1, 1, 1] : memref<4x6x8xf32> to memref<2x6x8xf32, strided<[48, 8, 1], offset: 48>>
  %whole = memref.view %arena[%c2048][] : memref<8192xi8> to memref<2x6x8xf32>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dy : memref<2x6x8xf32>) outs(%whole : memref<2x6x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  %rows2 = memref.expand_shape %half [[0], [1, 2], [3]] output_shape [2, 2, 3, 8] : memref<2x6x8xf32, strided<[48, 8, 1], offset: 48>> into memref<2x2x3x8xf32, strided<[48, 24, 8, 1], offset: 48>>
  %partial2 = memref.view %arena[%c1024][] : memref<8192xi8> to memref<2x2x8xf32>
  linalg.generic {indexing_maps = [#id4, #part], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%rows2 : memref<2x2x3x8xf32, strided<[48, 24, 8, 1], offset: 48>>) outs(%partial2 : memref<2x2x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A mean (the sum over 64, in place) and a variance step (out of place)
// run in the epilogue of the reduction before them: the storing lane
// computes them from the values it just stored, no load.

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @epilogue_mean
// CHECK-SAME: %{{.*}}: memref<32x64xf32>, %[[S:.*]]: memref<32xf32>, %[[Q:.*]]: memref<32xf32>, %[[V:.*]]: memref<32xf32>
// CHECK: gpu.launch
// CHECK:   scf.if
// CHECK:     %[[SUM:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK:     memref.store %[[SUM]], %[[S]][%[[ROW:.*]]]
// CHECK-NOT: memref.load
// CHECK:     %[[MEAN:.*]] = arith.divf %[[SUM]], %{{.*}} : f32
// CHECK:     memref.store %[[MEAN]], %[[S]][%[[ROW]]]
// CHECK: } {eff.kernel = "warp-reduction"}
// CHECK: gpu.launch
// CHECK:   scf.if
// CHECK:     memref.store %[[SQ:.*]], %[[Q]][%[[ROW2:.*]]]
// CHECK:     %[[VAR:.*]] = arith.divf %[[SQ]], %{{.*}} : f32
// CHECK:     memref.store %[[VAR]], %[[V]][%[[ROW2]]]
// CHECK: } {eff.kernel = "warp-reduction"}
// CHECK-NOT: gpu.launch
func.func @epilogue_mean(%x: memref<32x64xf32>, %s: memref<32xf32>, %q: memref<32xf32>, %var: memref<32xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 64.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<32xf32>)
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x64xf32>) outs(%s : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%s : memref<32xf32>) outs(%s : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.divf %in, %n : f32
    linalg.yield %m : f32
  }
  linalg.fill ins(%zero : f32) outs(%q : memref<32xf32>)
  linalg.generic {indexing_maps = [#id, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x, %s : memref<32x64xf32>, memref<32xf32>) outs(%q : memref<32xf32>) {
  ^bb0(%in: f32, %mean: f32, %out: f32):
    %d = arith.subf %in, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    %r = arith.addf %d2, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%q : memref<32xf32>) outs(%var : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.divf %in, %n : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Rows of 64 f32 (contiguous, aligned): each lane loads 4 neighbours at a
// time with one 16-byte vector load (16 vectors a row, the lanes striding
// over them) and applies the payload to them in order; the per-row mean
// (not indexed by the reduction dim) is loaded once per vector.

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @vector_row_variance
// CHECK: gpu.launch
// CHECK:   %[[LANE:.*]] = arith.remui
// CHECK:   scf.for %[[V:.*]] = %[[LANE]] to %c16{{.*}} step %c32{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK:     %[[FIRST:.*]] = arith.muli %[[V]], %c4
// CHECK:     %[[X:.*]] = vector.load %{{.*}}[%{{.*}}, %[[FIRST]]] {alignment = 16 : i64} : memref<32x64xf32>, vector<4xf32>
// CHECK:     %[[MEAN:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<32xf32>
// CHECK:     %[[X0:.*]] = vector.extract %[[X]][0]
// CHECK:     %[[D0:.*]] = arith.subf %[[X0]], %[[MEAN]]
// CHECK:     %[[Q0:.*]] = arith.mulf %[[D0]], %[[D0]]
// CHECK:     %[[A0:.*]] = arith.addf %[[Q0]], %[[ACC]]
// CHECK:     vector.extract %[[X]][1]
// CHECK:     vector.extract %[[X]][2]
// CHECK:     vector.extract %[[X]][3]
// CHECK:     %[[A3:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK:     scf.yield %[[A3]]
// CHECK:   gpu.shuffle xor
// CHECK: } {eff.kernel = "warp-reduction"}
func.func @vector_row_variance(%x: memref<32x64xf32>, %mean: memref<32xf32>, %q: memref<32xf32>) attributes {eff.arena_arg = 0 : i64} {
  linalg.generic {indexing_maps = [#id, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : memref<32x64xf32>, memref<32xf32>) outs(%q : memref<32xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %r = arith.addf %d2, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Elementwise ops that stay kernels after a reduction: one writes the
// reduction's input (other warps may still read it), one reads memory the
// reduction's output overlaps through another view, one reads the
// reduction's output at another point (reversed).

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (31 - d0)>
// CHECK-LABEL: func.func @epilogues_that_stay
// CHECK: eff.kernel = "warp-reduction"
// CHECK: eff.kernel = "elementwise"
// CHECK: eff.kernel = "warp-reduction"
// CHECK: eff.kernel = "elementwise"
// CHECK: eff.kernel = "warp-reduction"
// CHECK: eff.kernel = "elementwise"
func.func @epilogues_that_stay(%arena: memref<8192xi8>, %s: memref<32xf32>, %t: memref<32xf32>, %u: memref<32xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %x = memref.view %arena[%c0][] : memref<8192xi8> to memref<32x64xf32>
  %x0 = memref.view %arena[%c0][] : memref<8192xi8> to memref<32xf32>
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x64xf32>) outs(%s : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%s : memref<32xf32>) outs(%x0 : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x64xf32>) outs(%t : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  %t64 = memref.cast %t : memref<32xf32> to memref<?xf32>
  linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%s, %t64 : memref<32xf32>, memref<?xf32>) outs(%u : memref<32xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %a = arith.addf %in, %in2 : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x64xf32>) outs(%t : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#rev, #v], iterator_types = ["parallel"]}
      ins(%t : memref<32xf32>) outs(%u : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

// A multi-output reduction to rank 0 with f64 accumulators (the CPU
// policy's): one block of 1024 threads, one all_reduce per output.

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @two_f64_sums
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c1024
// CHECK:   scf.for {{.*}} iter_args({{.*}}, {{.*}}) -> (f64, f64)
// CHECK:   gpu.all_reduce {{ *}}add %{{.*}} uniform {{.*}}
// CHECK:   } : (f64) -> f64
// CHECK:   gpu.all_reduce {{ *}}add %{{.*}} uniform {{.*}}
// CHECK:   } : (f64) -> f64
// CHECK: } {eff.kernel = "block-reduction"}
func.func @two_f64_sums(%x: memref<4096xf32>, %sum: memref<f64>, %sq: memref<f64>) attributes {eff.arena_arg = 0 : i64} {
  linalg.generic {indexing_maps = [#v, #s, #s], iterator_types = ["reduction"]}
      ins(%x : memref<4096xf32>) outs(%sum, %sq : memref<f64>, memref<f64>) {
  ^bb0(%in: f32, %a: f64, %b: f64):
    %e = arith.extf %in : f32 to f64
    %a1 = arith.addf %e, %a : f64
    %q = arith.mulf %e, %e : f64
    %b1 = arith.addf %q, %b : f64
    linalg.yield %a1, %b1 : f64, f64
  }
  return
}

// -----

// A sum over rows (a bias gradient): the parallel dim is the innermost, so
// one thread per column walks the rows; neighbouring threads read
// neighbouring columns.

#id = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @column_sum
// CHECK: gpu.launch
// CHECK:   scf.for %[[J:.*]] = %{{.*}} to %c64
// CHECK:     %[[INIT:.*]] = memref.load %{{.*}}[%[[J]]] : memref<64xf32>
// CHECK:     %[[SUM:.*]] = scf.for %[[I:.*]] = %c0{{.*}} to %c256{{.*}} step %c1{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]])
// CHECK:       memref.load %{{.*}}[%[[I]], %[[J]]] : memref<256x64xf32>
// CHECK:     memref.store %[[SUM]], %{{.*}}[%[[J]]]
// CHECK-NOT: gpu.all_reduce
// CHECK: } {eff.kernel = "thread-reduction"}
func.func @column_sum(%x: memref<256x64xf32>, %g: memref<64xf32>) attributes {eff.arena_arg = 0 : i64} {
  linalg.generic {indexing_maps = [#id, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<256x64xf32>) outs(%g : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// An i1 "any overflow" flag: shuffles move 32 bits, so the flag is widened
// to i32 around the block reduction.

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @any_nonfinite
// CHECK: gpu.launch
// CHECK:   %[[WIDE:.*]] = arith.extui %{{.*}} : i1 to i32
// CHECK:   %[[ANY:.*]] = gpu.all_reduce {{ *}}or %[[WIDE]] uniform
// CHECK:   arith.trunci %[[ANY]] : i32 to i1
// CHECK: } {eff.kernel = "block-reduction"}
func.func @any_nonfinite(%x: memref<1000xf32>, %flag: memref<i1>) attributes {eff.arena_arg = 0 : i64} {
  %inf = arith.constant 0x7F800000 : f32
  linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
      ins(%x : memref<1000xf32>) outs(%flag : memref<i1>) {
  ^bb0(%in: f32, %out: i1):
    %a = math.absf %in : f32
    %bad = arith.cmpf ugt, %a, %inf : f32
    %r = arith.ori %bad, %out : i1
    linalg.yield %r : i1
  }
  return
}

// -----

// Copies: from a splat constant a fill (no global on the device), from
// another constant a copy kernel that reads the global inside the kernel
// (outlining takes it into the GPU module), between buffers a copy kernel.

memref.global "private" constant @zeros : memref<4x8xf32> = dense<0.0>
memref.global "private" constant @table : memref<4xi64> = dense<[3, 1, 4, 1]>
// CHECK-LABEL: func.func @copies
// CHECK-NOT: memref.get_global
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: memref.get_global
// CHECK: gpu.launch
// CHECK:   %[[FILL:.*]] = vector.from_elements %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]] : vector<4xf32>
// CHECK:   vector.store %[[FILL]], %{{.*}} : memref<4x8xf32>, vector<4xf32>
// CHECK: } {eff.kernel = "elementwise"}
// CHECK: gpu.launch
// CHECK:   %[[T:.*]] = memref.get_global @table : memref<4xi64>
// CHECK:   vector.load %[[T]][%{{.*}}] {alignment = 16 : i64} : memref<4xi64>, vector<2xi64>
// CHECK: } {eff.kernel = "elementwise"}
// CHECK: gpu.launch
// CHECK:   vector.load %{{.*}} : memref<4x8xf32, strided<[16, 1]>>, vector<4xf32>
// CHECK:   vector.store %{{.*}} : memref<4x8xf32>, vector<4xf32>
// CHECK: } {eff.kernel = "elementwise"}
func.func @copies(%a: memref<4x8xf32>, %t: memref<4xi64>, %src: memref<4x8xf32, strided<[16, 1]>>) attributes {eff.arena_arg = 0 : i64} {
  %z = memref.get_global @zeros : memref<4x8xf32>
  memref.copy %z, %a : memref<4x8xf32> to memref<4x8xf32>
  %g = memref.get_global @table : memref<4xi64>
  memref.copy %g, %t : memref<4xi64> to memref<4xi64>
  memref.copy %src, %a : memref<4x8xf32, strided<[16, 1]>> to memref<4x8xf32>
  return
}

// -----

// A kernel reads a view of a constant (a CumSum's triangle mask, reshaped):
// the view is re-created in the kernel, and the host's own view of the
// global, now read by nothing, goes with the global.

memref.global "private" constant @mask : memref<4x4xi1> = dense<true>
// CHECK-LABEL: func.func @view_of_global
// CHECK-NOT: memref.get_global
// CHECK-NOT: memref.expand_shape
// CHECK: gpu.launch
// CHECK:   %[[M:.*]] = memref.get_global @mask : memref<4x4xi1>
// CHECK:   memref.expand_shape %[[M]]
// CHECK: } {eff.kernel = "elementwise"}
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @view_of_global(%out: memref<2x2x4xi1>) attributes {eff.arena_arg = 0 : i64} {
  %g = memref.get_global @mask : memref<4x4xi1>
  %v = memref.expand_shape %g [[0, 1], [2]] output_shape [2, 2, 4] : memref<4x4xi1> into memref<2x2x4xi1>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v : memref<2x2x4xi1>) outs(%out : memref<2x2x4xi1>) {
  ^bb0(%in: i1, %o: i1):
    %n = arith.xori %in, %o : i1
    linalg.yield %n : i1
  }
  return
}

// -----

// The gradient-accumulation loop holds a library call: it stays on the
// host, its body's fusion groups become kernels, the call stays a call.

#v = affine_map<(d0) -> (d0)>
func.func private @effrt_sgemm(i32) -> ()
// CHECK-LABEL: func.func @accumulation_loop
// CHECK: scf.for
// CHECK:   memref.subview
// CHECK:   gpu.launch
// CHECK:   } {eff.kernel = "elementwise"}
// CHECK:   func.call @effrt_sgemm
// CHECK:   gpu.launch
// CHECK:   } {eff.kernel = "elementwise"}
// CHECK: } {eff.accumulation_loop}
func.func @accumulation_loop(%in: memref<64xf32>, %acc: memref<16xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c0_i32 = arith.constant 0 : i32
  scf.for %k = %c0 to %c4 step %c1 {
    %off = arith.muli %k, %c4 : index
    %mb = memref.subview %in[%off] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
        ins(%mb : memref<16xf32, strided<[1], offset: ?>>) outs(%acc : memref<16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %s = arith.addf %x, %o : f32
      linalg.yield %s : f32
    }
    func.call @effrt_sgemm(%c0_i32) : (i32) -> ()
    linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]} outs(%acc : memref<16xf32>) {
    ^bb0(%o: f32):
      %h = arith.mulf %o, %o : f32
      linalg.yield %h : f32
    }
  } {eff.accumulation_loop}
  return
}

// -----

// An embedding gradient's scatter-add: tokens may repeat, so the token loops
// stay serial; the feature loop indexes every access of the written table,
// so its iterations are spread over threads. The rows the data picks are
// partitioned over blocks (row mod 256: one row per block), each block
// compacting its hits (compacted scatter): thread i computes the row of
// token chunk + i only and ORs its bit into a workgroup mask when the block
// owns it (and the word's bit into a summary word); after a barrier each
// thread owning a feature takes the set bits in ascending order (lowest set
// bit first, the summary picking the nonzero words), four at a time: the
// four hits' gradient loads first, then their read-modify-writes in
// order, a hit at the element the previous one stored taking that value.

// CHECK-LABEL: func.func @embedding_scatter
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c256{{.*}}) threads(%[[TID:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}}) {{.*}}workgroup(%[[MASK:.*]] : memref<27xi32, #gpu.address_space<workgroup>>)
// CHECK:   scf.for %[[PART:.*]] = %{{.*}} to %c256{{.*}} step
// CHECK:     gpu.barrier
// CHECK:     memref.store %c0_i32, %[[MASK]]
// CHECK:     gpu.barrier
// CHECK:     scf.for %[[C:.*]] = %{{.*}} to %c1{{.*}} step
// CHECK:       %[[CS:.*]] = arith.muli %[[C]], %c256
// CHECK:       %[[S:.*]] = arith.addi %[[CS]], %[[TID]]
// CHECK:       %[[T:.*]] = arith.remui %[[S]], %c32
// CHECK:       %[[B:.*]] = arith.divui %[[S]], %c32
// CHECK:       %[[I:.*]] = memref.load %{{.*}}[%[[B]], %[[T]]] : memref<8x32xi64>
// CHECK:       %[[ROW:.*]] = arith.index_cast %[[I]]
// CHECK:       %[[OWN:.*]] = arith.cmpi eq, %[[ROW]], %[[PART]]
// CHECK:       scf.if %[[OWN]] {
// CHECK:         memref.atomic_rmw ori %{{.*}}, %[[MASK]]
// CHECK:         memref.atomic_rmw ori %{{.*}}, %[[MASK]]
// CHECK:       gpu.barrier
// CHECK:       %[[WORKER:.*]] = arith.cmpi ult, %[[TID]], %c64
// CHECK:       scf.if %[[WORKER]] {
// CHECK:         %[[SUMMARY:.*]] = memref.load %[[MASK]]
// CHECK:         scf.while (%{{.*}} = %[[SUMMARY]], {{.*}}) : (i32, i32, index, i1, index, index, f32)
// CHECK:           scf.if %{{.*}} -> (i32, i32, index) {
// CHECK:             memref.load %[[MASK]]
// The four hits' gradient loads, then their updates in order.
// CHECK-COUNT-4:   memref.load %{{.*}}[%{{.*}}, %{{.*}}, %[[TID]]] : memref<8x32x64xf32>
// CHECK-NOT:       memref.store
// CHECK:           scf.if %{{.*}} -> (f32) {
// CHECK:           } else {
// CHECK:             memref.load %{{.*}}[%{{.*}}, %[[TID]]] : memref<256x64xf32>
// CHECK:           memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[TID]]] : memref<256x64xf32>
// CHECK:           scf.if %{{.*}} -> (i1, index, index, f32) {
// CHECK: } {eff.kernel = "compacted-scatter"}
func.func @embedding_scatter(%idx: memref<8x32xi64>, %dy: memref<8x32x64xf32>, %table: memref<256x64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.for %b = %c0 to %c8 step %c1 {
    scf.for %t = %c0 to %c32 step %c1 {
      scf.for %f = %c0 to %c64 step %c1 {
        %i = memref.load %idx[%b, %t] : memref<8x32xi64>
        %row = arith.index_cast %i : i64 to index
        %old = memref.load %table[%row, %f] : memref<256x64xf32>
        %d = memref.load %dy[%b, %t, %f] : memref<8x32x64xf32>
        %new = arith.addf %old, %d : f32
        memref.store %new, %table[%row, %f] : memref<256x64xf32>
      }
    }
  }
  return
}

// -----

// GPT-2's token embedding gradient (50257 x 768, 4 x 1024 tokens, indices
// normalized for negatives): 512 partitions (row mod 512, rows out of the
// table owned by none), one block of 768 threads each (one feature per
// thread), scanning the 4096 tokens 768 at a time (6 chunks, the last
// partial), with a three-buffer mask of 25 words each (a summary word, then
// one bit per thread).

// CHECK-LABEL: func.func @embedding_scatter_gpt2
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c512{{.*}}) threads({{.*}}) in (%{{.*}} = %c768{{.*}}) {{.*}}workgroup(%{{.*}} : memref<75xi32, #gpu.address_space<workgroup>>)
// CHECK:   scf.for %[[PART:.*]] = %{{.*}} to %c512{{.*}} step
// CHECK:     scf.for %{{.*}} = %{{.*}} to %c6{{.*}} step
// CHECK:       arith.cmpi ult, %{{.*}}, %c4096
// CHECK:       %[[ROW:.*]] = arith.select
// CHECK:       %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %c50257
// CHECK:       %[[MOD:.*]] = arith.remui %[[ROW]], %c512
// CHECK:       %[[MINE:.*]] = arith.cmpi eq, %[[MOD]], %[[PART]]
// CHECK:       arith.andi %[[IN]], %[[MINE]]
// CHECK: } {eff.kernel = "compacted-scatter"}
func.func @embedding_scatter_gpt2(%idx: memref<4x1024xi64>, %dy: memref<4x1024x768xf32>, %table: memref<50257x768xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c768 = arith.constant 768 : index
  %c1024 = arith.constant 1024 : index
  %c50257 = arith.constant 50257 : index
  scf.for %b = %c0 to %c4 step %c1 {
    scf.for %t = %c0 to %c1024 step %c1 {
      scf.for %f = %c0 to %c768 step %c1 {
        %i = memref.load %idx[%b, %t] : memref<4x1024xi64>
        %r = arith.index_cast %i : i64 to index
        %neg = arith.cmpi slt, %r, %c0 : index
        %wrapped = arith.addi %r, %c50257 : index
        %row = arith.select %neg, %wrapped, %r : index
        %old = memref.load %table[%row, %f] : memref<50257x768xf32>
        %d = memref.load %dy[%b, %t, %f] : memref<4x1024x768xf32>
        %new = arith.addf %old, %d : f32
        memref.store %new, %table[%row, %f] : memref<50257x768xf32>
      }
    }
  }
  return
}

// -----

// A scatter along a middle axis (Gather axis=1's gradient): both outer
// feature loops are spread (160 points), the rows picked by the index are
// partitioned over blocks (32 rows: one each).

// CHECK-LABEL: func.func @scatter_axis1
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c32{{.*}}) threads(%[[TID:.*]], %{{.*}}, %{{.*}}) in
// CHECK:   scf.for %[[PART:.*]] =
// CHECK:     arith.cmpi eq, %{{.*}}, %[[PART]]
// CHECK:     arith.cmpi ult, %[[TID]], %c160
// CHECK:       scf.while
// CHECK:         arith.remui %[[TID]], %c16
// CHECK:         arith.divui %[[TID]], %c16
// CHECK:         memref.store
// CHECK: } {eff.kernel = "compacted-scatter"}
func.func @scatter_axis1(%idx: memref<12xi32>, %dy: memref<10x12x16xf32>, %table: memref<10x32x16xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %c12 = arith.constant 12 : index
  %c16 = arith.constant 16 : index
  scf.for %a = %c0 to %c10 step %c1 {
    scf.for %t = %c0 to %c12 step %c1 {
      scf.for %f = %c0 to %c16 step %c1 {
        %i = memref.load %idx[%t] : memref<12xi32>
        %row = arith.index_cast %i : i32 to index
        %old = memref.load %table[%a, %row, %f] : memref<10x32x16xf32>
        %d = memref.load %dy[%a, %t, %f] : memref<10x12x16xf32>
        %new = arith.addf %old, %d : f32
        memref.store %new, %table[%a, %row, %f] : memref<10x32x16xf32>
      }
    }
  }
  return
}

// -----

// A running sum along the tokens (each step reads the previous row) is not
// a scatter: the loads of the written buffer are not at the stored indices,
// so the token loop stays serial in each thread and nothing is partitioned.

// CHECK-LABEL: func.func @running_sum_stays_serial
// CHECK: gpu.launch
// CHECK:   scf.for %[[P:.*]] = %{{.*}} to %c64{{.*}} step
// CHECK:     scf.for %[[T:.*]] = %c1 to %c32 step %c1
// CHECK-NOT:   scf.if
// CHECK:       memref.store %{{.*}}, %{{.*}}[%[[T]], %[[P]]]
// CHECK: } {eff.kernel = "loop-nest"}
func.func @running_sum_stays_serial(%x: memref<32x64xf32>, %s: memref<32x64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
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
