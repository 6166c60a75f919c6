// The emulation checks what a GPU would not forgive and a CPU would: the
// alignment each vector load and store of a kernel claims
// (eff-gpu-form-kernels' 16-byte accesses; a misaligned one faults on a
// GPU), and every index of every load and store within its dimension (a
// vector's last element included). Each thread copies 4 floats with
// 16-byte vector accesses: from the start of a buffer the copy runs; from
// one float in (a view at offset 1) it stops at the first access; a third
// thread reads past the end of an 8-float source, or writes past the end
// of an 8-float destination.
//
// DEFINE: %{lower} = --convert-vector-to-llvm --convert-scf-to-cf --expand-strided-metadata --lower-affine --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts
// RUN: effopt-opt %s --eff-gpu-emulate-launches %{lower} \
// RUN:   | mlir-runner -e aligned -entry-point-result=void -shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=ALIGNED
// RUN: effopt-opt %s --eff-gpu-emulate-launches %{lower} \
// RUN:   | not --crash mlir-runner -e misaligned -entry-point-result=void -shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=MISALIGNED
// RUN: effopt-opt %s --eff-gpu-emulate-launches %{lower} \
// RUN:   | not --crash mlir-runner -e read_past -entry-point-result=void -shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=READ-PAST
// RUN: effopt-opt %s --eff-gpu-emulate-launches %{lower} \
// RUN:   | not --crash mlir-runner -e write_past -entry-point-result=void -shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=WRITE-PAST
// The check reads the view's offset and strides and the buffer's aligned
// pointer; inserted after the emulation made its loops (inside a kernel,
// phases may not write memory before their last exchange), it writes to
// stderr, unbuffered, and aborts.
// RUN: effopt-opt %s --eff-gpu-emulate-launches | FileCheck %s --check-prefix=IR

// ALIGNED: [0,  1,  2,  3,  4,  5,  6,  7]
// MISALIGNED: emulation: a 16-byte vector access at an address that is not 16-byte aligned (a GPU faults: misaligned address)
// READ-PAST: emulation: a kernel reads past a dimension of a buffer (an index out of bounds)
// WRITE-PAST: emulation: a kernel writes past a dimension of a buffer (an index out of bounds)

// IR-LABEL: func.func @copy
// IR:         scf.for
// IR:           scf.for
// IR:             memref.dim
// IR:             arith.cmpi uge
// IR:             scf.if
// IR:               llvm.call @write
// IR:             memref.extract_strided_metadata
// IR:             memref.extract_aligned_pointer_as_index
// IR:             arith.remui
// IR:             scf.if
// IR:               llvm.call @write
// IR:               llvm.call @abort
// IR:             vector.load {{.*}}{alignment = 16 : i64}
// IR-NOT:         eff.emulated_access

#strided = strided<[1], offset: ?>

module {
  func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

  // Two threads, 4 floats each: dst[4t .. 4t + 3] = src[4t .. 4t + 3].
  func.func @copy(%src: memref<8xf32, #strided>, %dst: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1) {
      %i = arith.muli %tx, %c4 : index
      %v = vector.load %src[%i] {alignment = 16 : i64} : memref<8xf32, #strided>, vector<4xf32>
      vector.store %v, %dst[%i] {alignment = 16 : i64} : memref<8xf32>, vector<4xf32>
      gpu.terminator
    }
    return
  }

  // Three threads of 4 floats: dst[4t .. 4t + 3] = src[4t .. 4t + 3].
  func.func @copy3(%src: memref<?xf32>, %dst: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c3, %sy = %c1, %sz = %c1) {
      %i = arith.muli %tx, %c4 : index
      %v = vector.load %src[%i] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
      vector.store %v, %dst[%i] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
      gpu.terminator
    }
    return
  }

  func.func @read_past() {
    %src = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
    %dst = memref.alloc() {alignment = 64 : i64} : memref<12xf32>
    %s = memref.cast %src : memref<8xf32> to memref<?xf32>
    %d = memref.cast %dst : memref<12xf32> to memref<?xf32>
    func.call @iota(%s) : (memref<?xf32>) -> ()
    func.call @copy3(%s, %d) : (memref<?xf32>, memref<?xf32>) -> ()
    return
  }

  func.func @write_past() {
    %src = memref.alloc() {alignment = 64 : i64} : memref<12xf32>
    %dst = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
    %s = memref.cast %src : memref<12xf32> to memref<?xf32>
    %d = memref.cast %dst : memref<8xf32> to memref<?xf32>
    func.call @iota(%s) : (memref<?xf32>) -> ()
    func.call @copy3(%s, %d) : (memref<?xf32>, memref<?xf32>) -> ()
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

  func.func @run(%offset: index) {
    %buffer = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
    %bd = memref.cast %buffer : memref<16xf32> to memref<?xf32>
    func.call @iota(%bd) : (memref<?xf32>) -> ()
    %src = memref.subview %buffer[%offset] [8] [1] : memref<16xf32> to memref<8xf32, #strided>
    %dst = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
    func.call @copy(%src, %dst) : (memref<8xf32, #strided>, memref<8xf32>) -> ()
    %u = memref.cast %dst : memref<8xf32> to memref<*xf32>
    func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    memref.dealloc %buffer : memref<16xf32>
    memref.dealloc %dst : memref<8xf32>
    return
  }

  func.func @aligned() {
    %c0 = arith.constant 0 : index
    func.call @run(%c0) : (index) -> ()
    return
  }

  func.func @misaligned() {
    %c1 = arith.constant 1 : index
    func.call @run(%c1) : (index) -> ()
    return
  }
}
