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
