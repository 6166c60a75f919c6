// RUN: effopt-opt %s --split-input-file -verify-diagnostics

// The results of a start are in flight: only its eff.wait reads them.
func.func @read_in_flight(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'eff.all_reduce_start' op result is in flight: only eff.wait may read it, not eff.add}}
  %f = eff.all_reduce_start %x {world_size = 2 : i64} : tensor<4xf32>
  %y = eff.add %f, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @two_waits(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'eff.reduce_scatter_start' op results are waited for by more than one eff.wait}}
  %f = eff.reduce_scatter_start %x {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
  %a = eff.wait %f : tensor<2xf32>
  %b = eff.wait %f : tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

func.func @wait_for_part(%x: tensor<4xf32>, %y: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'eff.all_reduce_start' op eff.wait must take every result of the start, in order}}
  %f:2 = eff.all_reduce_start %x, %y {world_size = 2 : i64} : tensor<4xf32>, tensor<2xf32>
  %a = eff.wait %f#0 : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

func.func @wait_swapped(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'eff.all_reduce_start' op eff.wait must take every result of the start, in order}}
  %f:2 = eff.all_reduce_start %x, %y {world_size = 2 : i64} : tensor<4xf32>, tensor<4xf32>
  %a:2 = eff.wait %f#1, %f#0 : tensor<4xf32>, tensor<4xf32>
  return %a#0 : tensor<4xf32>
}

// -----

func.func @wait_in_other_block(%x: tensor<2xf32>, %y: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  // expected-error @+1 {{'eff.all_gather_start' op eff.wait must follow the start in the same block}}
  %f = eff.all_gather_start %x {world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
  %r = scf.if %c -> tensor<4xf32> {
    %a = eff.wait %f : tensor<4xf32>
    scf.yield %a : tensor<4xf32>
  } else {
    scf.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @wait_for_nothing_started(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'eff.wait' op waits for the results of one eff.all_reduce_start, eff.reduce_scatter_start or eff.all_gather_start}}
  %a = eff.wait %x : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

func.func @start_uneven(%x: tensor<5xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'eff.reduce_scatter_start' op the input has 5 elements, not world_size (2) x the result's 2}}
  %f = eff.reduce_scatter_start %x {world_size = 2 : i64} : tensor<5xf32> -> tensor<2xf32>
  %a = eff.wait %f : tensor<2xf32>
  return %a : tensor<2xf32>
}

// -----

func.func @gather_start_short(%x: tensor<2xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'eff.all_gather_start' op the result has 6 elements, not world_size (2) x the input's 2}}
  %f = eff.all_gather_start %x {world_size = 2 : i64} : tensor<2xf32> -> tensor<6xf32>
  %a = eff.wait %f : tensor<6xf32>
  return %a : tensor<6xf32>
}

// -----

func.func @all_reduce_start_nothing() {
  // expected-error @+1 {{'eff.all_reduce_start' op needs at least one tensor to sum}}
  "eff.all_reduce_start"() {world_size = 2 : i64} : () -> ()
  return
}
