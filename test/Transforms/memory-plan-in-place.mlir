// RUN: effopt-opt %s --split-input-file --eff-memory-plan="print=true in-place=true" 2>&1 | FileCheck %s
// RUN: effopt-opt %s --split-input-file --eff-memory-plan=print=true 2>&1 | FileCheck %s --check-prefix=OFF
// OFF-NOT: in place

// An elementwise op that reads %a for the last time, element for element
// (the same map as its output), writes %b over %a's bytes; %c, computed
// from %b the same way, takes them next: one 64-byte slot for the chain.
// The peak counts the shared bytes once.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: memory plan of @chain: 3 buffers, arena 64 bytes, peak 64 bytes
// CHECK-NEXT: offset      bytes  first   last  type
// CHECK-NEXT: {{^ +}}0{{ +}}64{{ +}}0{{ +}}3  memref<16xf32>{{$}}
// CHECK-NEXT: {{^ +}}0{{ +}}64{{ +}}3{{ +}}5  memref<16xf32>  in place
// CHECK-NEXT: {{^ +}}0{{ +}}64{{ +}}5{{ +}}6  memref<16xi32>  in place
func.func @chain(%arena: memref<?xi8>, %x: memref<16xf32>, %out: memref<16xf32>) attributes {eff.arena_arg = 0 : i64} {
  %a = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<16xf32>) outs(%a : memref<16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  %b = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a, %x : memref<16xf32>, memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%in: f32, %y: f32, %o: f32):
    %s = arith.subf %in, %y : f32
    linalg.yield %s : f32
  }
  %c = memref.alloc() : memref<16xi32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : memref<16xf32>) outs(%c : memref<16xi32>) {
  ^bb0(%in: f32, %o: i32):
    %i = arith.fptosi %in : f32 to i32
    linalg.yield %i : i32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%c : memref<16xi32>) outs(%out : memref<16xf32>) {
  ^bb0(%in: i32, %o: f32):
    %f = arith.sitofp %in : i32 to f32
    linalg.yield %f : f32
  }
  return
}

// -----

// Not in place: %a is read again later; %b's op reads %a transposed (an
// element another iteration writes); %c's op accumulates into its output
// (reads it); %d is narrower than %a (bf16: element i would overwrite half
// of an f32 another iteration still reads). Each takes bytes of its own.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#t2 = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: memory plan of @not_in_place
// CHECK-NOT: in place
// CHECK-LABEL: func.func @not_in_place
func.func @not_in_place(%arena: memref<?xi8>, %x: memref<4x4xf32>, %out: memref<4x4xf32>, %out16: memref<4x4xbf16>) attributes {eff.arena_arg = 0 : i64} {
  %a = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x4xf32>) outs(%a : memref<4x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %r = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a : memref<4x4xf32>) outs(%r : memref<4x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  %b = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [#t2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a : memref<4x4xf32>) outs(%b : memref<4x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %c = memref.alloc() : memref<4x4xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%b : memref<4x4xf32>) outs(%c : memref<4x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  }
  %d = memref.alloc() : memref<4x4xbf16>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%c : memref<4x4xf32>) outs(%d : memref<4x4xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  linalg.copy ins(%d : memref<4x4xbf16>) outs(%out16 : memref<4x4xbf16>)
  linalg.copy ins(%r : memref<4x4xf32>) outs(%out : memref<4x4xf32>)
  return
}
