// RUN: effopt-opt %s --split-input-file --eff-gpu-form-kernels --verify-diagnostics
// RUN: not effopt-opt %s --split-input-file --eff-gpu-form-kernels="vector-bytes=12" 2>&1 | FileCheck %s --check-prefix=BADVEC
// BADVEC: error: eff-gpu-form-kernels: vector-bytes 12 is not 0 or a power of two

// A value the host needs from memory (a library call's argument read from a
// buffer) cannot move into a kernel.
func.func private @effrt_attention(i64) -> ()
func.func @host_load(%seed: memref<i64>) attributes {eff.arena_arg = 0 : i64} {
  // expected-error @below {{'memref.load' op eff-gpu-form-kernels: would access memory on the host (only gpu.launch kernels and library calls may)}}
  %s = memref.load %seed[] : memref<i64>
  func.call @effrt_attention(%s) : (i64) -> ()
  return
}

// -----

// A constant global handed to a library lives in host memory
// (eff-gpu-stage-constants, before the memory plan, copies it to the
// device for such a read).
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func private @effrt_use(memref<4xf32>) -> ()
func.func @global_to_library(%arena: memref<?xi8>) attributes {eff.arena_arg = 0 : i64} {
  // expected-error @below {{'memref.get_global' op eff-gpu-form-kernels: constant global @table is used on the host by 'func.call' (its data is not on the device)}}
  %t = memref.get_global @table : memref<4xf32>
  func.call @effrt_use(%t) : (memref<4xf32>) -> ()
  return
}

// -----

// A host allocation is memory outside the arena.
func.func private @effrt_use(memref<4xf32>) -> ()
func.func @host_alloc(%arena: memref<?xi8>) attributes {eff.arena_arg = 0 : i64} {
  // expected-error @below {{'memref.alloc' op eff-gpu-form-kernels: would access memory on the host (only gpu.launch kernels and library calls may)}}
  %a = memref.alloc() : memref<4xf32>
  func.call @effrt_use(%a) : (memref<4xf32>) -> ()
  return
}
