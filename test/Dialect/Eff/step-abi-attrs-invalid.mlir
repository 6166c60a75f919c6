// RUN: effopt-opt %s --split-input-file --verify-diagnostics

// The step ABI's attributes (eff-step-abi, eff-memory-plan) are declared by
// the dialect and verified wherever they appear.

// expected-error @+1 {{'eff.state_bytes' must be a non-negative i64, got -64 : i64}}
module attributes {eff.state_bytes = -64 : i64} {
}

// -----

// expected-error @+1 {{'eff.io_bytes' is 100, not a multiple of the alignment 64 (eff.alignment)}}
module attributes {eff.alignment = 64 : i64, eff.io_bytes = 100 : i64} {
}

// -----

// expected-error @+1 {{'eff.alignment' must be a power of two, got 48}}
module attributes {eff.alignment = 48 : i64} {
}

// -----

// expected-error @+1 {{'eff.step_kind' must be "forward" (absent for a training step), got "inference"}}
module attributes {eff.step_kind = "inference"} {
}

// -----

module {
  // expected-error @+1 {{'eff.loss_offset' is only valid on a module}}
  func.func @f() attributes {eff.loss_offset = 0 : i64} {
    return
  }
}

// -----

// expected-error @+1 {{'eff.arena_arg' is 3 but the function has 1 arguments}}
func.func @no_such_argument(%arena: memref<?xi8>) attributes {eff.arena_arg = 3 : i64} {
  return
}

// -----

// expected-error @+1 {{argument #0 'eff.region' must be "state", "host" or "io", got "arena"}}
func.func @bad_region(%x: tensor<4xf32> {eff.region = "arena", eff.offset = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0 has 'eff.region' but no 'eff.offset'}}
func.func @no_offset(%x: tensor<4xf32> {eff.region = "io"}) {
  return
}

// -----

module attributes {eff.alignment = 64 : i64} {
  // expected-error @+1 {{argument #0 'eff.offset' is 32, not a multiple of the alignment 64 (eff.alignment)}}
  func.func @misaligned(%x: tensor<4xf32> {eff.region = "io", eff.offset = 32 : i64}) {
    return
  }
}

// -----

// expected-error @+1 {{result #0 'eff.region' must be "io", got "state"}}
func.func @result_in_state(%x: tensor<4xf32>) -> (tensor<4xf32> {eff.region = "state", eff.offset = 0 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0 'eff.updates_arg' is 2 but the function has 1 arguments}}
func.func @updates_nothing(%x: tensor<4xf32>) -> (tensor<4xf32> {eff.updates_arg = 2 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'eff.offset' is an attribute of function arguments and results, not of operations}}
func.func @offset_on_op() attributes {eff.offset = 0 : i64} {
  return
}
