// RUN: effopt-opt %s --eff-memory-plan=print=true 2>&1 | FileCheck %s

func.func private @effrt_reduce_scatter_sum_f32_start(index, index, i64) -> i64
func.func private @effrt_collective_wait(i64, index, index)

// A reduce-scatter in flight: its buffers' last use is the wait that names
// them, so the temporary computed meanwhile (%t) does not take the send
// buffer's bytes, though nothing reads that buffer after the start.
// CHECK-LABEL: memory plan of @in_flight: 3 buffers, arena 192 bytes, peak 160 bytes at op 7
// CHECK-NEXT: offset      bytes  first   last  type
// CHECK-NEXT: {{^ +}}0{{ +}}64{{ +}}1{{ +}}12  memref<16xf32>
// CHECK-NEXT: {{^ +}}128{{ +}}32{{ +}}2{{ +}}14  memref<8xf32>
// CHECK-NEXT: {{^ +}}64{{ +}}64{{ +}}7{{ +}}9  memref<16xf32>
func.func @in_flight(%arena: memref<?xi8>, %out: memref<16xf32>, %v: f32) attributes {eff.arena_arg = 0 : i64} {
  %n = arith.constant 8 : i64
  %send = memref.alloc() : memref<16xf32>
  %recv = memref.alloc() : memref<8xf32>
  linalg.fill ins(%v : f32) outs(%send : memref<16xf32>)
  %p = memref.extract_aligned_pointer_as_index %send : memref<16xf32> -> index
  %q = memref.extract_aligned_pointer_as_index %recv : memref<8xf32> -> index
  %r = call @effrt_reduce_scatter_sum_f32_start(%p, %q, %n) : (index, index, i64) -> i64
  %t = memref.alloc() : memref<16xf32>
  linalg.fill ins(%v : f32) outs(%t : memref<16xf32>)
  linalg.copy ins(%t : memref<16xf32>) outs(%out : memref<16xf32>)
  %p2 = memref.extract_aligned_pointer_as_index %send : memref<16xf32> -> index
  %q2 = memref.extract_aligned_pointer_as_index %recv : memref<8xf32> -> index
  call @effrt_collective_wait(%r, %p2, %q2) : (i64, index, index) -> ()
  %sub = memref.subview %out[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  linalg.copy ins(%recv : memref<8xf32>) outs(%sub : memref<8xf32, strided<[1]>>)
  return
}
