// RUN: effopt-opt %s --eff-memory-plan --split-input-file -verify-diagnostics

// expected-error @+1 {{the arena argument must be memref<?xi8>, got 'memref<4xf32>'}}
func.func @bad_arena(%arena: memref<4xf32>) attributes {eff.arena_arg = 0 : i64} {
  return
}

// -----

// A buffer allocated in a loop body and carried to the next iteration has
// no single place in the arena.
func.func @escaping(%arena: memref<?xi8>, %init: memref<4xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%x = %init) -> (memref<4xf32>) {
    // expected-error @+1 {{this buffer is yielded to the next iteration of its loop: it has no single place in the arena (the loop-carried value was not updated in place)}}
    %t = memref.alloc() : memref<4xf32>
    memref.copy %x, %t : memref<4xf32> to memref<4xf32>
    scf.yield %t : memref<4xf32>
  }
  return
}
