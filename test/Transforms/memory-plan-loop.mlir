// RUN: effopt-opt %s --eff-memory-plan=print=true 2>&1 | FileCheck %s

// eff-grad-accum's micro-batch loop: the body follows the loop in the
// schedule (the loop is position 2, its body 3..8). %acc, allocated before
// the loop and read in it, lives to the end of the body and past the loop;
// %t, allocated in the body, lives within one iteration, so %u (after %t's
// last use in the body) reuses its bytes.
// CHECK-LABEL: memory plan of @loop: 3 buffers, arena 128 bytes, peak 128 bytes at op 4
// CHECK-NEXT: offset      bytes  first   last  type
// CHECK-NEXT: {{^ +}}0{{ +}}64{{ +}}0{{ +}}9  memref<16xf32>
// CHECK-NEXT: {{^ +}}64{{ +}}64{{ +}}4{{ +}}5  memref<16xf32>
// CHECK-NEXT: {{^ +}}64{{ +}}64{{ +}}6{{ +}}7  memref<16xf32>
// CHECK-LABEL: func.func @loop
// CHECK-SAME: eff.arena_bytes = 128
// CHECK-NOT: memref.alloc
func.func @loop(%arena: memref<?xi8>, %out: memref<16xf32>, %v: f32) attributes {eff.arena_arg = 0 : i64} {
  %acc = memref.alloc() : memref<16xf32>
  %c0 = arith.constant 0 : index
  scf.for %k = %c0 to %c0 step %c0 {
    %c1 = arith.constant 1 : index
    %t = memref.alloc() : memref<16xf32>
    linalg.fill ins(%v : f32) outs(%t : memref<16xf32>)
    %u = memref.alloc() : memref<16xf32>
    linalg.copy ins(%acc : memref<16xf32>) outs(%u : memref<16xf32>)
  } {eff.accumulation}
  linalg.copy ins(%acc : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
