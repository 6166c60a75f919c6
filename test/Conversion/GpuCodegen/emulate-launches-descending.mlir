// eff-gpu-emulate-launches runs blocks and threads in ascending order of
// their ids, or descending with descending=true. A kernel correct on a GPU
// gives the same values in both orders; a race gives the right values in
// one order at most.
//
// @shift_racy moves each element one place down in place, each thread
// reading its right neighbour's element, which that neighbour overwrites
// (no barrier between): ascending, every thread reads before its neighbour
// writes and the result looks right; descending, the neighbour wrote
// first. @shift_blocks is the same race between blocks. @shift_barrier
// reads into a register, waits at a barrier, then writes: right in both
// orders. @sum is a block reduction (gpu.all_reduce) of small integers,
// exact in either order of combination.
//
// DEFINE: %{lower} = --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts
// RUN: effopt-opt %s --eff-gpu-emulate-launches %{lower} \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.asc
// RUN: effopt-opt %s --eff-gpu-emulate-launches=descending=true %{lower} \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.desc
// RUN: FileCheck %s --check-prefix=ASC < %t.asc
// RUN: FileCheck %s --check-prefix=DESC < %t.desc
// The loops' ids: count - 1 - iteration, for blocks and threads.
// RUN: effopt-opt %s --eff-gpu-emulate-launches=descending=true | FileCheck %s --check-prefix=IR

// ASC-LABEL: shift_racy
// ASC-NEXT:  [1,  2,  3,  4,  5,  6,  7,  7]
// ASC-LABEL: shift_blocks
// ASC-NEXT:  [1,  2,  3,  4,  5,  6,  7,  7]
// ASC-LABEL: shift_barrier
// ASC-NEXT:  [1,  2,  3,  4,  5,  6,  7,  7]
// ASC-LABEL: sum
// ASC-NEXT:  [28,  92]

// Descending, each racing thread (block) read what its neighbour had
// already moved down: the last element everywhere.
// DESC-LABEL: shift_racy
// DESC-NEXT:  [7,  7,  7,  7,  7,  7,  7,  7]
// DESC-LABEL: shift_blocks
// DESC-NEXT:  [7,  7,  7,  7,  7,  7,  7,  7]
// DESC-LABEL: shift_barrier
// DESC-NEXT:  [1,  2,  3,  4,  5,  6,  7,  7]
// DESC-LABEL: sum
// DESC-NEXT:  [28,  92]

// IR-LABEL: func.func @shift_racy
// IR:         %[[C8:.*]] = arith.constant 8 : index
// IR:         scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// IR:           %[[LASTB:.*]] = arith.subi %{{.*}}, %{{.*}} : index
// IR:           arith.subi %[[LASTB]], %[[B]] : index
// IR:           scf.for %[[T:.*]] = %{{.*}} to %[[C8]] step
// IR:             %[[LASTT:.*]] = arith.subi %[[C8]], %{{.*}} : index
// IR:             %[[TX:.*]] = arith.subi %[[LASTT]], %[[T]] : index
// IR:             memref.load %{{.*}}[%{{.*}}]
// IR:             memref.store

module {
  llvm.mlir.global internal constant @n_racy("shift_racy\0A\00")
  llvm.mlir.global internal constant @n_blocks("shift_blocks\0A\00")
  llvm.mlir.global internal constant @n_barrier("shift_barrier\0A\00")
  llvm.mlir.global internal constant @n_sum("sum\0A\00")
  func.func private @printString(!llvm.ptr)
  func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

  // One block of 8 threads: m[t] = m[t + 1] (the last keeps its own).
  func.func @shift_racy(%m: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %next = arith.addi %tx, %c1 : index
      %src = arith.minui %next, %c7 : index
      %v = memref.load %m[%src] : memref<8xf32>
      memref.store %v, %m[%tx] : memref<8xf32>
      gpu.terminator
    }
    return
  }

  // 8 blocks of one thread: the same between blocks.
  func.func @shift_blocks(%m: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %next = arith.addi %bx, %c1 : index
      %src = arith.minui %next, %c7 : index
      %v = memref.load %m[%src] : memref<8xf32>
      memref.store %v, %m[%bx] : memref<8xf32>
      gpu.terminator
    }
    return
  }

  // The read through workgroup memory, a barrier, then the write.
  func.func @shift_barrier(%m: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1)
               workgroup(%tile : memref<8xf32, #gpu.address_space<workgroup>>) {
      %next = arith.addi %tx, %c1 : index
      %src = arith.minui %next, %c7 : index
      %v = memref.load %m[%src] : memref<8xf32>
      memref.store %v, %tile[%tx] : memref<8xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %w = memref.load %tile[%tx] : memref<8xf32, #gpu.address_space<workgroup>>
      memref.store %w, %m[%tx] : memref<8xf32>
      gpu.terminator
    }
    return
  }

  // Two blocks of 8 threads, each the sum of its 8 elements.
  func.func @sum(%m: memref<16xf32>, %out: memref<2xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %c8 : index
      %i = arith.addi %base, %tx : index
      %v = memref.load %m[%i] : memref<16xf32>
      %total = gpu.all_reduce add %v uniform {} : (f32) -> f32
      memref.store %total, %out[%bx] : memref<2xf32>
      gpu.terminator
    }
    return
  }

  // m[i] = i.
  func.func @iota(%m: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %m, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %ii = arith.index_cast %i : index to i64
      %f = arith.sitofp %ii : i64 to f32
      memref.store %f, %m[%i] : memref<?xf32>
    }
    return
  }

  func.func @main() {
    %a = memref.alloc() : memref<8xf32>
    %ad = memref.cast %a : memref<8xf32> to memref<?xf32>
    %au = memref.cast %a : memref<8xf32> to memref<*xf32>
    %p0 = llvm.mlir.addressof @n_racy : !llvm.ptr
    func.call @printString(%p0) : (!llvm.ptr) -> ()
    func.call @iota(%ad) : (memref<?xf32>) -> ()
    func.call @shift_racy(%a) : (memref<8xf32>) -> ()
    func.call @printMemrefF32(%au) : (memref<*xf32>) -> ()
    %p1 = llvm.mlir.addressof @n_blocks : !llvm.ptr
    func.call @printString(%p1) : (!llvm.ptr) -> ()
    func.call @iota(%ad) : (memref<?xf32>) -> ()
    func.call @shift_blocks(%a) : (memref<8xf32>) -> ()
    func.call @printMemrefF32(%au) : (memref<*xf32>) -> ()
    %p2 = llvm.mlir.addressof @n_barrier : !llvm.ptr
    func.call @printString(%p2) : (!llvm.ptr) -> ()
    func.call @iota(%ad) : (memref<?xf32>) -> ()
    func.call @shift_barrier(%a) : (memref<8xf32>) -> ()
    func.call @printMemrefF32(%au) : (memref<*xf32>) -> ()
    %s = memref.alloc() : memref<16xf32>
    %sd = memref.cast %s : memref<16xf32> to memref<?xf32>
    func.call @iota(%sd) : (memref<?xf32>) -> ()
    %o = memref.alloc() : memref<2xf32>
    func.call @sum(%s, %o) : (memref<16xf32>, memref<2xf32>) -> ()
    %p3 = llvm.mlir.addressof @n_sum : !llvm.ptr
    func.call @printString(%p3) : (!llvm.ptr) -> ()
    %ou = memref.cast %o : memref<2xf32> to memref<*xf32>
    func.call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
    memref.dealloc %a : memref<8xf32>
    memref.dealloc %s : memref<16xf32>
    memref.dealloc %o : memref<2xf32>
    return
  }
}
