// RUN: effopt-opt %s --split-input-file --eff-gpu-emulate-launches --verify-diagnostics

// The emulation runs 1-D launches (what eff-gpu-form-kernels forms); a
// launch with more than one block or thread in y or z is refused, not run
// as its x slice.
func.func @two_d(%m: memref<4x4xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{emulation needs 1-D launches (y and z sizes of 1)}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c4, %sz = %c1) {
    memref.store %zero, %m[%tx, %ty] : memref<4x4xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @up_shuffle(%m: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1 : i32
  %width = arith.constant 32 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %m[%tx] : memref<32xf32>
    // expected-error @+1 {{emulation supports xor shuffles only}}
    %s, %ok = gpu.shuffle up %v, %one, %width : f32
    memref.store %s, %m[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// After the last shuffle a barrier may split the last phase (a row group's
// column partial sums), but the code after it runs thread by thread again:
// it may not use a value a thread computed before it.
func.func @shuffle_value_across_barrier(%m: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1 : i32
  %width = arith.constant 32 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %m[%tx] : memref<32xf32>
    %s, %ok = gpu.shuffle xor %v, %one, %width : f32
    gpu.barrier
    // expected-error @+1 {{emulation: a thread's value is used across a barrier}}
    memref.store %s, %m[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// A barrier before the last shuffle: the phases replay the code before
// each shuffle, which a barrier cannot split.
func.func @barrier_before_shuffle(%m: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1 : i32
  %width = arith.constant 32 : i32
  // expected-error @+1 {{emulation needs every gpu.shuffle at the top level of the body, no gpu.all_reduce beside them and barriers only at the top level after the last shuffle}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %m[%tx] : memref<32xf32>
    gpu.barrier
    %s, %ok = gpu.shuffle xor %v, %one, %width : f32
    memref.store %s, %m[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// After a block's all_reduce and a barrier (a log-sum-exp's row epilogue),
// each thread runs the code after the barrier with the block's totals; a
// value computed from the thread's own id before the barrier is not the
// block's: refused.
func.func @thread_value_after_all_reduce_barrier(%m: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %m[%tx] : memref<32xf32>
    %total = gpu.all_reduce add %v uniform {} : (f32) -> f32
    %mine = arith.addf %total, %v : f32
    gpu.barrier
    // expected-error @+1 {{emulation: a thread's value is used across a barrier}}
    memref.store %mine, %m[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// A barrier before the last all_reduce: not a row epilogue, refused.
func.func @barrier_before_all_reduce(%m: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{emulation needs at most one barrier beside gpu.all_reduce, at the top level after the last one}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %m[%tx] : memref<32xf32>
    gpu.barrier
    %total = gpu.all_reduce add %v uniform {} : (f32) -> f32
    memref.store %total, %m[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// The access checks write their message with libc's write and abort; a
// module that declares either with another type is refused, not left
// unchecked.
// expected-error @+1 {{emulation: the module declares write or abort with other types than libc's; the access checks need them}}
module {
  // expected-error @+1 {{redefinition of function 'write' of different type}}
  llvm.func @write(i32) -> i32
  func.func @own_write(%m: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
      %v = memref.load %m[%tx] : memref<4xf32>
      memref.store %v, %m[%tx] : memref<4xf32>
      gpu.terminator
    }
    return
  }
}
