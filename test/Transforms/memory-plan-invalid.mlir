// RUN: effopt-opt %s --eff-memory-plan --split-input-file -verify-diagnostics

// expected-error @+1 {{the arena argument must be memref<?xi8>, got 'memref<4xf32>'}}
func.func @bad_arena(%arena: memref<4xf32>) attributes {eff.arena_arg = 0 : i64} {
  return
}

// -----

// expected-error @+1 {{eff.arena_arg 3 is not an argument}}
func.func @no_such_argument(%arena: memref<?xi8>) attributes {eff.arena_arg = 3 : i64} {
  return
}
