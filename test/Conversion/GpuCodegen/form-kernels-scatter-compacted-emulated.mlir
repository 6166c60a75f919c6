// Semantics of the compacted scatter (eff.kernel = "compacted-scatter")
// without a GPU: each launch is emulated thread by thread, barrier phase by
// barrier phase, with workgroup memory that starts as all ones. Three
// nests, in the step:
// - @token: serial loops b (3) and t (100), the feature loop spread (40
//   points): 300 iterations, a multiple of neither block size; every sixth
//   token hits row 5 (50 ordered additions), others hit -1 and -3 (wrapped
//   to 1000 and 998) or spread rows, most of the 1001 rows are never hit;
//   512 partitions, which do not divide 1001 rows;
// - @wide: one serial loop (50), two spread loops (40 x 30 = 1200 points,
//   more than a block's 1024 threads: some threads take two points), 7 rows
//   (7 partitions, one row each), a hot row and a negative index;
// - @interleaved: serial, spread, serial loops (4, 24, 9), the row computed
//   from an op of the outer serial loop's body and the inner one's;
// - @two_tables: two tables updated at the same row (not a single
//   read-modify-write: hits are applied one at a time), one of them
//   h = h / 2 + dy, whose bits depend on the order even more.
// In @token and @interleaved (read-modify-writes, at most one point per
// thread) each thread takes four hits at a time and forwards a repeated
// element's value; @wide (two points for some threads) and @two_tables
// apply one hit at a time.
// The step runs once lowered for the CPU as it is (the serial loops) and
// once after eff-gpu-form-kernels with the launches emulated, at the default
// block size and at block-size=32 max-blocks=5 (64 threads for the token
// nest: 5 chunks, the three mask buffers each reused; 5 blocks striding over
// 512 partitions). All four print every element's bits; the runs are
// identical, and numpy adding each row's updates in order in float32 gives
// the same bits (Inputs/scatter_compacted_reference.py). The data are not
// exact in f32 (n/3), so the order of each row's additions shows in the bits.

// RUN: effopt-opt %s --eff-gpu-form-kernels=remarks=true 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: effopt-opt %s --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.cpu
// RUN: effopt-opt %s --eff-gpu-form-kernels --eff-gpu-emulate-launches --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.gpu
// RUN: diff %t.cpu %t.gpu
// Blocks and threads in descending order: the same values (no race the
// ascending order hides).
// RUN: effopt-opt %s --eff-gpu-form-kernels --eff-gpu-emulate-launches=descending=true --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.desc
// RUN: diff %t.cpu %t.desc
// RUN: effopt-opt %s --eff-gpu-form-kernels="block-size=32 max-blocks=5" --eff-gpu-emulate-launches --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.gpu32
// RUN: diff %t.cpu %t.gpu32
// RUN: %python %S/Inputs/scatter_compacted_reference.py %t.gpu | FileCheck %s

// REMARK: remark: loop nest: 1 of 3 loops spread over threads, the written rows split over 512 partitions (row mod 512), one block each: 256 threads compact the hits of 256 serial iterations at a time (compacted scatter
// REMARK: remark: loop nest: 2 of 3 loops spread over threads, the written rows split over 7 partitions (row mod 7), one block each: 1024 threads
// REMARK: remark: loop nest: 1 of 3 loops spread over threads, the written rows split over 13 partitions (row mod 13), one block each: 256 threads
// REMARK: remark: loop nest: 1 of 2 loops spread over threads, the written rows split over 9 partitions (row mod 9), one block each: 256 threads

// CHECK: token: 40040 values bit-identical to numpy (row 5: 50 updates)
// CHECK: wide: 8400 values bit-identical to numpy
// CHECK: interleaved: 312 values bit-identical to numpy
// CHECK: two tables: 288 values bit-identical to numpy

func.func @step(%idx: memref<3x100xi64>, %dy: memref<3x100x40xf32>, %table: memref<1001x40xf32>,
                %idx2: memref<50xi64>, %dy2: memref<50x40x30xf32>, %table2: memref<7x40x30xf32>,
                %idx3: memref<36xi64>, %dy3: memref<36x24xf32>, %table3: memref<13x24xf32>,
                %g4: memref<9x16xf32>, %h4: memref<9x16xf32>)
    attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c9 = arith.constant 9 : index
  %c13 = arith.constant 13 : index
  %c24 = arith.constant 24 : index
  %c30 = arith.constant 30 : index
  %c40 = arith.constant 40 : index
  %c50 = arith.constant 50 : index
  %c100 = arith.constant 100 : index
  %c1001 = arith.constant 1001 : index
  linalg.fill ins(%zero : f32) outs(%table : memref<1001x40xf32>)
  linalg.fill ins(%zero : f32) outs(%table2 : memref<7x40x30xf32>)
  linalg.fill ins(%zero : f32) outs(%table3 : memref<13x24xf32>)
  linalg.fill ins(%zero : f32) outs(%g4 : memref<9x16xf32>)
  linalg.fill ins(%zero : f32) outs(%h4 : memref<9x16xf32>)
  // @token
  scf.for %b = %c0 to %c3 step %c1 {
    scf.for %t = %c0 to %c100 step %c1 {
      scf.for %f = %c0 to %c40 step %c1 {
        %i = memref.load %idx[%b, %t] : memref<3x100xi64>
        %r = arith.index_cast %i : i64 to index
        %neg = arith.cmpi slt, %r, %c0 : index
        %wrapped = arith.addi %r, %c1001 : index
        %row = arith.select %neg, %wrapped, %r : index
        %old = memref.load %table[%row, %f] : memref<1001x40xf32>
        %d = memref.load %dy[%b, %t, %f] : memref<3x100x40xf32>
        %new = arith.addf %old, %d : f32
        memref.store %new, %table[%row, %f] : memref<1001x40xf32>
      }
    }
  }
  // @wide
  scf.for %t = %c0 to %c50 step %c1 {
    scf.for %i = %c0 to %c40 step %c1 {
      scf.for %j = %c0 to %c30 step %c1 {
        %x = memref.load %idx2[%t] : memref<50xi64>
        %r = arith.index_cast %x : i64 to index
        %neg = arith.cmpi slt, %r, %c0 : index
        %wrapped = arith.addi %r, %c7 : index
        %row = arith.select %neg, %wrapped, %r : index
        %old = memref.load %table2[%row, %i, %j] : memref<7x40x30xf32>
        %d = memref.load %dy2[%t, %i, %j] : memref<50x40x30xf32>
        %new = arith.addf %old, %d : f32
        memref.store %new, %table2[%row, %i, %j] : memref<7x40x30xf32>
      }
    }
  }
  // @interleaved
  scf.for %s1 = %c0 to %c4 step %c1 {
    %base = arith.muli %s1, %c9 : index
    scf.for %f = %c0 to %c24 step %c1 {
      scf.for %s2 = %c0 to %c9 step %c1 {
        %s = arith.addi %base, %s2 : index
        %x = memref.load %idx3[%s] : memref<36xi64>
        %r = arith.index_cast %x : i64 to index
        %neg = arith.cmpi slt, %r, %c0 : index
        %wrapped = arith.addi %r, %c13 : index
        %row = arith.select %neg, %wrapped, %r : index
        %old = memref.load %table3[%row, %f] : memref<13x24xf32>
        %d = memref.load %dy3[%s, %f] : memref<36x24xf32>
        %new = arith.addf %old, %d : f32
        memref.store %new, %table3[%row, %f] : memref<13x24xf32>
      }
    }
  }
  // @two_tables: the first 20 tokens of @token's indices (mod 9).
  %half = arith.constant 0.5 : f32
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  scf.for %t = %c0 to %c20 step %c1 {
    scf.for %f = %c0 to %c16 step %c1 {
      %x = memref.load %idx[%c0, %t] : memref<3x100xi64>
      %r = arith.index_cast %x : i64 to index
      %neg = arith.cmpi slt, %r, %c0 : index
      %wrapped = arith.addi %r, %c1001 : index
      %row1001 = arith.select %neg, %wrapped, %r : index
      %row = arith.remui %row1001, %c9 : index
      %d = memref.load %dy[%c0, %t, %f] : memref<3x100x40xf32>
      %g = memref.load %g4[%row, %f] : memref<9x16xf32>
      %gn = arith.addf %g, %d : f32
      memref.store %gn, %g4[%row, %f] : memref<9x16xf32>
      %h = memref.load %h4[%row, %f] : memref<9x16xf32>
      %hh = arith.mulf %h, %half : f32
      %hn = arith.addf %hh, %d : f32
      memref.store %hn, %h4[%row, %f] : memref<9x16xf32>
    }
  }
  return
}

func.func private @printMemrefI32(memref<*xi32>) attributes {llvm.emit_c_interface}

/// ((7 n + 13 j) mod 17 - 8) / 3 + n / 8 in f32.
func.func @value(%n: index, %j: index) -> f32 {
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c13 = arith.constant 13 : index
  %c17 = arith.constant 17 : index
  %three = arith.constant 3.0 : f32
  %eighth = arith.constant 0.125 : f32
  %a = arith.muli %n, %c7 : index
  %bj = arith.muli %j, %c13 : index
  %sum = arith.addi %a, %bj : index
  %r = arith.remui %sum, %c17 : index
  %v = arith.subi %r, %c8 : index
  %vi = arith.index_cast %v : index to i64
  %vf = arith.sitofp %vi : i64 to f32
  %third = arith.divf %vf, %three : f32
  %ni = arith.index_cast %n : index to i64
  %nf = arith.sitofp %ni : i64 to f32
  %bias = arith.mulf %nf, %eighth : f32
  %x = arith.addf %third, %bias : f32
  return %x : f32
}

/// dst[n, j] = value(n, j) for a (rows x cols) matrix.
func.func @fill(%dst: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %dst, %c0 : memref<?x?xf32>
  %cols = memref.dim %dst, %c1 : memref<?x?xf32>
  scf.for %n = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %x = func.call @value(%n, %j) : (index, index) -> f32
      memref.store %x, %dst[%n, %j] : memref<?x?xf32>
    }
  }
  return
}

/// Prints the bits of a matrix.
func.func @print_bits(%src: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %src, %c0 : memref<?x?xf32>
  %cols = memref.dim %src, %c1 : memref<?x?xf32>
  %bits = memref.alloc(%rows, %cols) : memref<?x?xi32>
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %v = memref.load %src[%i, %j] : memref<?x?xf32>
      %w = arith.bitcast %v : f32 to i32
      memref.store %w, %bits[%i, %j] : memref<?x?xi32>
    }
  }
  %u = memref.cast %bits : memref<?x?xi32> to memref<*xi32>
  func.call @printMemrefI32(%u) : (memref<*xi32>) -> ()
  memref.dealloc %bits : memref<?x?xi32>
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c13 = arith.constant 13 : index
  %c36 = arith.constant 36 : index
  %c37 = arith.constant 37 : index
  %c50 = arith.constant 50 : index
  %c100 = arith.constant 100 : index
  %c300 = arith.constant 300 : index
  %c1001 = arith.constant 1001 : index
  %m1 = arith.constant -1 : i64
  %m3 = arith.constant -3 : i64
  %i6 = arith.constant 6 : i64
  %i5 = arith.constant 5 : i64
  %i2 = arith.constant 2 : i64
  // Token n: n mod 6 = 0 -> 5, 1 -> -1, 2 -> -3, else 37 n mod 1001.
  %idx = memref.alloc() : memref<3x100xi64>
  scf.for %n = %c0 to %c300 step %c1 {
    %k = arith.remui %n, %c6 : index
    %n37 = arith.muli %n, %c37 : index
    %spread = arith.remui %n37, %c1001 : index
    %si = arith.index_cast %spread : index to i64
    %is2 = arith.cmpi eq, %k, %c2 : index
    %v2 = arith.select %is2, %m3, %si : i64
    %is1 = arith.cmpi eq, %k, %c1 : index
    %v1 = arith.select %is1, %m1, %v2 : i64
    %is0 = arith.cmpi eq, %k, %c0 : index
    %v0 = arith.select %is0, %i5, %v1 : i64
    %b = arith.divui %n, %c100 : index
    %t = arith.remui %n, %c100 : index
    memref.store %v0, %idx[%b, %t] : memref<3x100xi64>
  }
  // t mod 4 = 0 -> 2, 1 -> -1, else t mod 5.
  %idx2 = memref.alloc() : memref<50xi64>
  scf.for %t = %c0 to %c50 step %c1 {
    %k = arith.remui %t, %c4 : index
    %t5 = arith.remui %t, %c5 : index
    %ti = arith.index_cast %t5 : index to i64
    %is1 = arith.cmpi eq, %k, %c1 : index
    %v1 = arith.select %is1, %m1, %ti : i64
    %is0 = arith.cmpi eq, %k, %c0 : index
    %v0 = arith.select %is0, %i2, %v1 : i64
    memref.store %v0, %idx2[%t] : memref<50xi64>
  }
  // 5 s mod 13 - 6.
  %idx3 = memref.alloc() : memref<36xi64>
  scf.for %s = %c0 to %c36 step %c1 {
    %s5 = arith.muli %s, %c5 : index
    %r = arith.remui %s5, %c13 : index
    %ri = arith.index_cast %r : index to i64
    %v = arith.subi %ri, %i6 : i64
    memref.store %v, %idx3[%s] : memref<36xi64>
  }
  %dy = memref.alloc() : memref<3x100x40xf32>
  %dyc = memref.collapse_shape %dy [[0, 1], [2]] : memref<3x100x40xf32> into memref<300x40xf32>
  %dyd = memref.cast %dyc : memref<300x40xf32> to memref<?x?xf32>
  func.call @fill(%dyd) : (memref<?x?xf32>) -> ()
  %dy2 = memref.alloc() : memref<50x40x30xf32>
  %dy2c = memref.collapse_shape %dy2 [[0], [1, 2]] : memref<50x40x30xf32> into memref<50x1200xf32>
  %dy2d = memref.cast %dy2c : memref<50x1200xf32> to memref<?x?xf32>
  func.call @fill(%dy2d) : (memref<?x?xf32>) -> ()
  %dy3 = memref.alloc() : memref<36x24xf32>
  %dy3d = memref.cast %dy3 : memref<36x24xf32> to memref<?x?xf32>
  func.call @fill(%dy3d) : (memref<?x?xf32>) -> ()
  %table = memref.alloc() : memref<1001x40xf32>
  %table2 = memref.alloc() : memref<7x40x30xf32>
  %table3 = memref.alloc() : memref<13x24xf32>
  %g4 = memref.alloc() : memref<9x16xf32>
  %h4 = memref.alloc() : memref<9x16xf32>
  func.call @step(%idx, %dy, %table, %idx2, %dy2, %table2, %idx3, %dy3, %table3, %g4, %h4)
    : (memref<3x100xi64>, memref<3x100x40xf32>, memref<1001x40xf32>,
       memref<50xi64>, memref<50x40x30xf32>, memref<7x40x30xf32>,
       memref<36xi64>, memref<36x24xf32>, memref<13x24xf32>,
       memref<9x16xf32>, memref<9x16xf32>) -> ()
  %td = memref.cast %table : memref<1001x40xf32> to memref<?x?xf32>
  func.call @print_bits(%td) : (memref<?x?xf32>) -> ()
  %t2c = memref.collapse_shape %table2 [[0], [1, 2]] : memref<7x40x30xf32> into memref<7x1200xf32>
  %t2d = memref.cast %t2c : memref<7x1200xf32> to memref<?x?xf32>
  func.call @print_bits(%t2d) : (memref<?x?xf32>) -> ()
  %t3d = memref.cast %table3 : memref<13x24xf32> to memref<?x?xf32>
  func.call @print_bits(%t3d) : (memref<?x?xf32>) -> ()
  %gh = memref.alloc() : memref<18x16xf32>
  %gpart = memref.subview %gh[0, 0] [9, 16] [1, 1] : memref<18x16xf32> to memref<9x16xf32, strided<[16, 1]>>
  %hpart = memref.subview %gh[9, 0] [9, 16] [1, 1] : memref<18x16xf32> to memref<9x16xf32, strided<[16, 1], offset: 144>>
  memref.copy %g4, %gpart : memref<9x16xf32> to memref<9x16xf32, strided<[16, 1]>>
  memref.copy %h4, %hpart : memref<9x16xf32> to memref<9x16xf32, strided<[16, 1], offset: 144>>
  %ghd = memref.cast %gh : memref<18x16xf32> to memref<?x?xf32>
  func.call @print_bits(%ghd) : (memref<?x?xf32>) -> ()
  return
}
