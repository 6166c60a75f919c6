// Semantics of the partitioned scatter-add without a GPU: an embedding
// gradient with repeated and negative indices whose batch count is dynamic
// (per-thread partitions, eff.kernel = "partitioned-loop-nest": 1001 rows,
// 501 partitions of 2 rows, the last one holding one) and a position-style
// one whose indices are a constant global, with the feature loop outermost
// (static: eff.kernel = "compacted-scatter", 16 partitions of one row;
// form-kernels-scatter-compacted-emulated.mlir tests that way further). The step runs once lowered for the CPU as it is (the serial loops)
// and once after eff-gpu-form-kernels with every launch emulated thread by
// thread; the printed bit patterns of the touched rows are identical, as is
// the count of nonzero elements (no stray writes). The data are not exact
// in f32 (n/3), so the order of each row's additions shows in the bits.
// numpy recomputes every printed value by adding the tokens in order in
// float32 (Inputs/scatter_reference.py).

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
// RUN: %python %S/Inputs/scatter_reference.py %t.gpu | FileCheck %s

// REMARK: remark: loop nest: 1 of 3 loops spread over threads, the written rows split over 501 partitions of 2 rows (each row's owner applies its updates in order; not compacted: a loop of the nest has bounds that are not constants)
// REMARK: remark: loop nest: 1 of 2 loops spread over threads, the written rows split over 16 partitions (row mod 16), one block each: 256 threads compact the hits of 256 serial iterations at a time (compacted scatter

// CHECK: token rows: 1440 values bit-identical to numpy
// CHECK: position rows: 2560 values bit-identical to numpy
// CHECK: nonzero: 1120 as numpy

memref.global "private" constant @positions : memref<16xi64> = dense<[0, 1, 2, 3, 3, 2, 1, 0, 7, 7, 7, -1, 9, 10, 11, 12]>
memref.global "private" constant @choices : memref<9xi64> = dense<[0, 1, 2, 999, 1000, -1, -2, 500, 501]>

func.func @step(%idx: memref<?x16xi64>, %dy: memref<?x16x160xf32>,
                %table: memref<1001x160xf32>, %ptable: memref<16x160xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %c160 = arith.constant 160 : index
  %c1001 = arith.constant 1001 : index
  %nb = memref.dim %idx, %c0 : memref<?x16xi64>
  linalg.fill ins(%zero : f32) outs(%table : memref<1001x160xf32>)
  linalg.fill ins(%zero : f32) outs(%ptable : memref<16x160xf32>)
  // The token embedding's gradient, as GatherGrad lowers it.
  scf.for %b = %c0 to %nb step %c1 {
    scf.for %t = %c0 to %c16 step %c1 {
      scf.for %f = %c0 to %c160 step %c1 {
        %i = memref.load %idx[%b, %t] : memref<?x16xi64>
        %r = arith.index_cast %i : i64 to index
        %neg = arith.cmpi slt, %r, %c0 : index
        %wrapped = arith.addi %r, %c1001 : index
        %row = arith.select %neg, %wrapped, %r : index
        %old = memref.load %table[%row, %f] : memref<1001x160xf32>
        %d = memref.load %dy[%b, %t, %f] : memref<?x16x160xf32>
        %new = arith.addf %old, %d : f32
        memref.store %new, %table[%row, %f] : memref<1001x160xf32>
      }
    }
  }
  // A position-style one: constant indices, batch 0's gradient, the
  // feature loop outside (the serial loop is the innermost one).
  %pos = memref.get_global @positions : memref<16xi64>
  scf.for %f = %c0 to %c160 step %c1 {
    scf.for %t = %c0 to %c16 step %c1 {
      %i = memref.load %pos[%t] : memref<16xi64>
      %r = arith.index_cast %i : i64 to index
      %neg = arith.cmpi slt, %r, %c0 : index
      %wrapped = arith.addi %r, %c16 : index
      %row = arith.select %neg, %wrapped, %r : index
      %old = memref.load %ptable[%row, %f] : memref<16x160xf32>
      %d = memref.load %dy[%c0, %t, %f] : memref<?x16x160xf32>
      %new = arith.addf %old, %d : f32
      memref.store %new, %ptable[%row, %f] : memref<16x160xf32>
    }
  }
  return
}

func.func private @printMemrefI32(memref<*xi32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefI64(memref<*xi64>) attributes {llvm.emit_c_interface}

/// Copies the bits of `rows` rows of `src` from `first` into `dst` from
/// `at`.
func.func @bits(%src: memref<?x160xf32>, %first: index, %rows: index, %dst: memref<?x160xi32>, %at: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c160 = arith.constant 160 : index
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %c160 step %c1 {
      %si = arith.addi %first, %i : index
      %di = arith.addi %at, %i : index
      %v = memref.load %src[%si, %j] : memref<?x160xf32>
      %w = arith.bitcast %v : f32 to i32
      memref.store %w, %dst[%di, %j] : memref<?x160xi32>
    }
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c9 = arith.constant 9 : index
  %c13 = arith.constant 13 : index
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c8 = arith.constant 8 : index
  %c160 = arith.constant 160 : index
  %c499 = arith.constant 499 : index
  %c998 = arith.constant 998 : index
  %c1001 = arith.constant 1001 : index
  %three = arith.constant 3.0 : f32
  %eighth = arith.constant 0.125 : f32
  %zero = arith.constant 0.0 : f32
  %choices = memref.get_global @choices : memref<9xi64>
  %idx = memref.alloc() : memref<3x16xi64>
  %dy = memref.alloc() : memref<3x16x160xf32>
  // Token n = 16 b + t picks choices[(4 n + n / 9) mod 9];
  // dy[n, j] = ((7 n + 13 j) mod 17 - 8) / 3 + n / 8.
  scf.for %b = %c0 to %c3 step %c1 {
    scf.for %t = %c0 to %c16 step %c1 {
      %b16 = arith.muli %b, %c16 : index
      %n = arith.addi %b16, %t : index
      %n4 = arith.muli %n, %c4 : index
      %n9 = arith.divui %n, %c9 : index
      %s = arith.addi %n4, %n9 : index
      %k = arith.remui %s, %c9 : index
      %choice = memref.load %choices[%k] : memref<9xi64>
      memref.store %choice, %idx[%b, %t] : memref<3x16xi64>
      %ni = arith.index_cast %n : index to i64
      %nf = arith.sitofp %ni : i64 to f32
      %bias = arith.mulf %nf, %eighth : f32
      scf.for %j = %c0 to %c160 step %c1 {
        %a = arith.muli %n, %c7 : index
        %bj = arith.muli %j, %c13 : index
        %sum = arith.addi %a, %bj : index
        %r = arith.remui %sum, %c17 : index
        %v = arith.subi %r, %c8 : index
        %vi = arith.index_cast %v : index to i64
        %vf = arith.sitofp %vi : i64 to f32
        %third = arith.divf %vf, %three : f32
        %x = arith.addf %third, %bias : f32
        memref.store %x, %dy[%b, %t, %j] : memref<3x16x160xf32>
      }
    }
  }
  %table = memref.alloc() : memref<1001x160xf32>
  %ptable = memref.alloc() : memref<16x160xf32>
  %idxd = memref.cast %idx : memref<3x16xi64> to memref<?x16xi64>
  %dyd = memref.cast %dy : memref<3x16x160xf32> to memref<?x16x160xf32>
  func.call @step(%idxd, %dyd, %table, %ptable)
    : (memref<?x16xi64>, memref<?x16x160xf32>, memref<1001x160xf32>, memref<16x160xf32>) -> ()
  // The bits of rows 0-2, 499-501 and 998-1000 of the table, then of the
  // position table.
  %tbits = memref.alloc() : memref<9x160xi32>
  %td = memref.cast %table : memref<1001x160xf32> to memref<?x160xf32>
  %tbd = memref.cast %tbits : memref<9x160xi32> to memref<?x160xi32>
  func.call @bits(%td, %c0, %c3, %tbd, %c0) : (memref<?x160xf32>, index, index, memref<?x160xi32>, index) -> ()
  func.call @bits(%td, %c499, %c3, %tbd, %c3) : (memref<?x160xf32>, index, index, memref<?x160xi32>, index) -> ()
  func.call @bits(%td, %c998, %c3, %tbd, %c6) : (memref<?x160xf32>, index, index, memref<?x160xi32>, index) -> ()
  %u0 = memref.cast %tbits : memref<9x160xi32> to memref<*xi32>
  func.call @printMemrefI32(%u0) : (memref<*xi32>) -> ()
  %pbits = memref.alloc() : memref<16x160xi32>
  %pd = memref.cast %ptable : memref<16x160xf32> to memref<?x160xf32>
  %pbd = memref.cast %pbits : memref<16x160xi32> to memref<?x160xi32>
  func.call @bits(%pd, %c0, %c16, %pbd, %c0) : (memref<?x160xf32>, index, index, memref<?x160xi32>, index) -> ()
  %u1 = memref.cast %pbits : memref<16x160xi32> to memref<*xi32>
  func.call @printMemrefI32(%u1) : (memref<*xi32>) -> ()
  // Nonzero elements of the whole table.
  %count = memref.alloc() : memref<1xi64>
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %nonzero = scf.for %i = %c0 to %c1001 step %c1 iter_args(%acc = %c0_i64) -> (i64) {
    %row = scf.for %j = %c0 to %c160 step %c1 iter_args(%racc = %acc) -> (i64) {
      %v = memref.load %table[%i, %j] : memref<1001x160xf32>
      %nz = arith.cmpf une, %v, %zero : f32
      %inc = arith.select %nz, %c1_i64, %c0_i64 : i64
      %next = arith.addi %racc, %inc : i64
      scf.yield %next : i64
    }
    scf.yield %row : i64
  }
  memref.store %nonzero, %count[%c0] : memref<1xi64>
  %u2 = memref.cast %count : memref<1xi64> to memref<*xi64>
  func.call @printMemrefI64(%u2) : (memref<*xi64>) -> ()
  return
}
