// RUN: effopt-opt %s --eff-memory-plan=print=true 2>&1 | FileCheck %s

// %a dies at the copy into %b, so %c (allocated after) reuses its bytes; %b
// lives to the end and must not overlap either.
// CHECK-LABEL: memory plan of @reuse: 3 buffers, arena 192 bytes, peak 192 bytes at op 5
// CHECK-NEXT: offset      bytes  first   last  type
// CHECK-NEXT: {{^ +}}0{{ +}}64{{ +}}0{{ +}}3  memref<16xf32>
// CHECK-NEXT: {{^ +}}128{{ +}}64{{ +}}1{{ +}}7  memref<16xf32>
// CHECK-NEXT: {{^ +}}0{{ +}}128{{ +}}5{{ +}}6  memref<32xf32>
// CHECK-LABEL: func.func @reuse
// CHECK-SAME: eff.arena_bytes = 192
// CHECK-NOT: memref.alloc
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[B:.*]] = memref.view %arg0[%[[C128]]][] : memref<?xi8> to memref<16xf32>
// CHECK: linalg.copy ins(%{{.*}} : memref<16xf32>) outs(%[[B]] : memref<16xf32>)
// CHECK: memref.view %arg0[%{{.*}}][] : memref<?xi8> to memref<32xf32>

func.func @reuse(%arena: memref<?xi8>, %out: memref<32xf32>, %v: f32) attributes {eff.arena_arg = 0 : i64} {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  linalg.fill ins(%v : f32) outs(%a : memref<16xf32>)
  linalg.copy ins(%a : memref<16xf32>) outs(%b : memref<16xf32>)
  %sub = memref.subview %out[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
  %c = memref.alloc() : memref<32xf32>
  linalg.fill ins(%v : f32) outs(%c : memref<32xf32>)
  linalg.copy ins(%b : memref<16xf32>) outs(%sub : memref<16xf32, strided<[1]>>)
  return
}
