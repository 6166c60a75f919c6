// RUN: effopt-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule and type-inference failure of the eff dialect.

//===----------------------------------------------------------------------===//
// Parameters, constants and function attributes
//===----------------------------------------------------------------------===//

// expected-error @+1 {{initial value has type 'tensor<3xf32>' but the parameter is declared 'tensor<2xf32>'}}
eff.parameter trainable @w : tensor<2xf32> = dense<1.0> : tensor<3xf32>

// -----

// A ZeRO-3 shard may keep the whole tensor's initial value, of the shape
// eff.shard_of names, and no other.
// expected-error @+1 {{initial value has type 'tensor<3xf32>' but the parameter is declared 'tensor<2xf32>' (a shard of 'tensor<4xf32>')}}
eff.parameter trainable @w : tensor<2xf32> = dense<1.0> : tensor<3xf32> {eff.shard_of = array<i64: 4>}

// -----

// expected-error @+1 {{a trainable parameter must have a floating-point element type, not 'i64'}}
eff.parameter trainable @steps : tensor<2xi64> = dense<0> : tensor<2xi64>

// -----

// expected-error @+1 {{a frozen parameter must have a floating-point element type, not 'i32'}}
eff.parameter frozen @ids : tensor<2xi32>

// -----

// expected-error @+1 {{attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor of numeric values}}
eff.parameter trainable @dynamic : tensor<?xf32>

// -----

func.func @parameter_inside_function() {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  eff.parameter trainable @w : tensor<2xf32>
  return
}

// -----

// expected-error @+1 {{argument #0 attribute 'eff.parameter' names @missing, which is not an eff.parameter}}
func.func @argument_names_missing_parameter(%w: tensor<2xf32> {eff.parameter = @missing}) {
  return
}

// -----

// expected-error @+1 {{argument #0 attribute 'eff.parameter' must name an eff.parameter (@name), got "w"}}
func.func @argument_parameter_not_a_symbol(%w: tensor<2xf32> {eff.parameter = "w"}) {
  return
}

// -----

eff.parameter trainable @w : tensor<2xf32>
// expected-error @+1 {{argument #0 has type 'tensor<3xf32>' but @w is declared 'tensor<2xf32>'}}
func.func @argument_type_differs_from_parameter(%w: tensor<3xf32> {eff.parameter = @w}) {
  return
}

// -----

// expected-error @+1 {{argument #0 attribute 'eff.input' must be a string, got 0 : i64}}
func.func @input_name_not_a_string(%x: tensor<2xf32> {eff.input = 0}) {
  return
}

// -----

// expected-error @+1 {{result #0 attribute 'eff.output' must be a string, got @loss}}
func.func @output_name_not_a_string(%x: tensor<f32>) -> (tensor<f32> {eff.output = @loss}) {
  return %x : tensor<f32>
}

// -----

eff.parameter trainable @w : tensor<2xf32>
// expected-error @+1 {{result #0 updates @w, which is a trainable parameter, not a buffer or optimizer state}}
func.func @buffer_update_of_trainable(%x: tensor<2xf32>) -> (tensor<2xf32> {eff.buffer_update = @w}) {
  return %x : tensor<2xf32>
}

// -----

eff.parameter buffer @mean : tensor<2xf32>
// expected-error @+1 {{result #0 has type 'tensor<4xf32>' but @mean is declared 'tensor<2xf32>'}}
func.func @buffer_update_type_differs(%x: tensor<4xf32>) -> (tensor<4xf32> {eff.buffer_update = @mean}) {
  return %x : tensor<4xf32>
}

// -----

func.func @constant_not_static(%x: tensor<2xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of numeric values}}
  %0 = eff.constant dense<1> : tensor<2xindex>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----

func.func @add_shapes_do_not_broadcast(%a: tensor<4x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{operand shapes [4, 3] and [2] do not broadcast}}
  %0 = "eff.add"(%a, %b) : (tensor<4x3xf32>, tensor<2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @sub_element_types_differ(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{operands must have the same element type, got 'f32' and 'f16'}}
  %0 = eff.sub %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @mul_result_not_the_broadcast(%a: tensor<8x1xf32>, %b: tensor<16xf32>) {
  // expected-error @+2 {{'eff.mul' op inferred type(s) 'tensor<8x16xf32>' are incompatible with return type(s) of operation 'tensor<8x1xf32>'}}
  // expected-error @+1 {{'eff.mul' op failed to infer returned types}}
  %0 = eff.mul %a, %b : (tensor<8x1xf32>, tensor<16xf32>) -> tensor<8x1xf32>
  return
}

// -----

func.func @div_dynamic_operand(%a: tensor<?xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of numeric values}}
  %0 = eff.div %a, %a : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @logical_and_not_bool(%a: tensor<4xi8>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = eff.logical_and %a, %a : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return
}

// -----

func.func @exp_of_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = eff.exp %a : tensor<4xi32>
  return
}

// -----

func.func @relu_changes_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "eff.relu"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @cmp_element_types_differ(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{operands must have the same element type, got 'i32' and 'i64'}}
  %0 = eff.cmp eq, %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @cmp_result_not_bool(%a: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = eff.cmp lt, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_values_differ(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{operands must have the same element type, got 'f32' and 'bf16'}}
  %0 = eff.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @where_condition_does_not_broadcast(%c: tensor<3xi1>, %a: tensor<2x4xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{condition shape [3] does not broadcast with the value shape [2, 4]}}
  %0 = eff.where %c, %a, %b : (tensor<3xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @cast_changes_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = eff.cast %a : tensor<4xf32> to tensor<2x2xi32>
  return
}

// -----

func.func @dropout_ratio_one(%x: tensor<4xf32>) {
  // expected-error @+1 {{ratio must be in [0, 1), got 1}}
  %y, %m = eff.dropout %x {ratio = 1.0 : f64, seed = 0 : i64} : tensor<4xf32> -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_ratio_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{ratio must be in [0, 1), got -0.5}}
  %y, %m = eff.dropout %x {ratio = -0.5 : f64, seed = 0 : i64} : tensor<4xf32> -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_mask_shape(%x: tensor<4xf32>) {
  // expected-error @+2 {{'eff.dropout' op inferred type(s) 'tensor<4xf32>', 'tensor<4xi1>' are incompatible with return type(s) of operation 'tensor<4xf32>', 'tensor<2xi1>'}}
  // expected-error @+1 {{'eff.dropout' op failed to infer returned types}}
  %y, %m = eff.dropout %x {ratio = 0.5 : f64, seed = 0 : i64} : tensor<4xf32> -> (tensor<4xf32>, tensor<2xi1>)
  return
}

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

// -----

func.func @shape_of_wrong_length(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'eff.shape_of' op inferred type(s) 'tensor<2xi64>' are incompatible with return type(s) of operation 'tensor<3xi64>'}}
  // expected-error @+1 {{'eff.shape_of' op failed to infer returned types}}
  %0 = eff.shape_of %x : tensor<2x3xf32> -> tensor<3xi64>
  return
}

// -----

func.func @reshape_element_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)}}
  %0 = eff.reshape %x : tensor<2x3xf32> to tensor<4x2xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot change the element type from 'f32' to 'i32'}}
  %0 = eff.reshape %x : tensor<2x3xf32> to tensor<6xi32>
  return
}

// -----

func.func @transpose_duplicate_index(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{permutation [0, 2, 2] is not a permutation of [0, 3)}}
  %0 = eff.transpose %x {permutation = array<i64: 0, 2, 2>} : tensor<2x3x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

func.func @transpose_index_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{permutation [1, 2] is not a permutation of [0, 2)}}
  %0 = eff.transpose %x {permutation = array<i64: 1, 2>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_wrong_length(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{permutation has 3 entries but the input has rank 2}}
  %0 = eff.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_result_shape(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'eff.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'eff.transpose' op failed to infer returned types}}
  %0 = eff.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_to_incompatible(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{cannot broadcast [3, 4] to [2, 4, 4]}}
  %0 = eff.broadcast_to %x : tensor<3x4xf32> to tensor<2x4x4xf32>
  return
}

// -----

func.func @broadcast_to_lower_rank(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{cannot broadcast [2, 4] to [4]}}
  %0 = eff.broadcast_to %x : tensor<2x4xf32> to tensor<4xf32>
  return
}

// -----

func.func @broadcast_to_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{cannot change the element type from 'f32' to 'f16'}}
  %0 = eff.broadcast_to %x : tensor<4xf32> to tensor<2x4xf16>
  return
}

// -----

func.func @concat_axis_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range [-2, 1]}}
  %0 = eff.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_of_scalars(%a: tensor<f32>) {
  // expected-error @+1 {{axis 0 is out of range for a rank-0 tensor, which has no axes}}
  %0 = eff.concat %a, %a {axis = 0 : i64} : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  return
}

// -----

func.func @concat_shapes_differ(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{input shapes [2, 3] and [4, 3] differ outside axis 1}}
  %0 = eff.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_ranks_differ(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+1 {{inputs must have the same rank, got [2, 3] and [2, 3, 1]}}
  %0 = eff.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_element_types_differ(%a: tensor<2xi32>, %b: tensor<2xi64>) {
  // expected-error @+1 {{inputs must have the same element type, got 'i32' and 'i64'}}
  %0 = eff.concat %a, %b {axis = 0 : i64} : (tensor<2xi32>, tensor<2xi64>) -> tensor<4xi32>
  return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @+1 {{needs at least one input}}
  %0 = eff.concat {axis = 0 : i64} : () -> tensor<0xf32>
  return
}

// -----

func.func @slice_out_of_bounds(%x: tensor<8xf32>) {
  // expected-error @+1 {{dimension 0 reads indices 4 to 9 outside [0, 8)}}
  %0 = eff.slice %x {starts = array<i64: 4>, limits = array<i64: 10>, strides = array<i64: 1>} : tensor<8xf32> -> tensor<6xf32>
  return
}

// -----

func.func @slice_negative_stride_out_of_bounds(%x: tensor<8xf32>) {
  // expected-error @+1 {{dimension 0 reads indices 8 to 0 outside [0, 8)}}
  %0 = eff.slice %x {starts = array<i64: 8>, limits = array<i64: -1>, strides = array<i64: -2>} : tensor<8xf32> -> tensor<5xf32>
  return
}

// -----

func.func @slice_zero_stride(%x: tensor<8xf32>) {
  // expected-error @+1 {{stride of dimension 0 is zero}}
  %0 = eff.slice %x {starts = array<i64: 0>, limits = array<i64: 8>, strides = array<i64: 0>} : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

// The verifier must not index the short arrays.
func.func @slice_wrong_entry_count(%x: tensor<8x2xf32>) {
  // expected-error @+1 {{starts, limits and strides need 2 entries each (the input rank)}}
  %0 = eff.slice %x {starts = array<i64: 0>, limits = array<i64: 8>, strides = array<i64: 1>} : tensor<8x2xf32> -> tensor<8x2xf32>
  return
}

// -----

// limits - starts does not fit in 64 bits.
func.func @slice_bounds_overflow(%x: tensor<8xf32>) {
  // expected-error @+1 {{the bounds of dimension 0 overflow}}
  %0 = "eff.slice"(%x) {starts = array<i64: -9223372036854775807>, limits = array<i64: 9223372036854775807>, strides = array<i64: 1>} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @slice_result_shape(%x: tensor<8xf32>) {
  // expected-error @+2 {{'eff.slice' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error @+1 {{'eff.slice' op failed to infer returned types}}
  %0 = eff.slice %x {starts = array<i64: 0>, limits = array<i64: 8>, strides = array<i64: 2>} : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @split_sizes_do_not_add_up(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{pieces along axis 1 add up to 9, but the input has 10}}
  %a, %b = eff.split %x {axis = 1 : i64} : tensor<4x10xf32> -> tensor<4x3xf32>, tensor<4x6xf32>
  return
}

// -----

func.func @split_axis_out_of_range(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{axis -3 is out of range [-2, 1]}}
  %a, %b = eff.split %x {axis = -3 : i64} : tensor<4x10xf32> -> tensor<2x10xf32>, tensor<2x10xf32>
  return
}

// -----

func.func @split_shape_outside_axis(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{result shape [3, 5] differs from the input [4, 10] outside axis 1}}
  %a, %b = eff.split %x {axis = 1 : i64} : tensor<4x10xf32> -> tensor<4x5xf32>, tensor<3x5xf32>
  return
}

// -----

func.func @split_element_type(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{results must have the input's element type 'f32', got 'f16'}}
  %a, %b = eff.split %x {axis = 1 : i64} : tensor<4x10xf32> -> tensor<4x5xf32>, tensor<4x5xf16>
  return
}

// -----

func.func @split_rank(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{results must have the input's rank 2, got [4, 5, 1]}}
  %a, %b = eff.split %x {axis = 1 : i64} : tensor<4x10xf32> -> tensor<4x5xf32>, tensor<4x5x1xf32>
  return
}

// -----

func.func @split_no_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{needs at least one result}}
  "eff.split"(%x) {axis = 0 : i64} : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @pad_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{padding of dimension 0 is negative}}
  %0 = eff.pad %x {low = array<i64: -1>, high = array<i64: 0>} : tensor<4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @pad_wrong_entry_count(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{low and high need 2 entries each (the input rank)}}
  %0 = eff.pad %x {low = array<i64: 1>, high = array<i64: 1>} : tensor<4x4xf32> -> tensor<6x4xf32>
  return
}

// -----

func.func @pad_overflow(%x: tensor<4xf32>) {
  // expected-error @+1 {{padding of dimension 0 overflows}}
  %0 = "eff.pad"(%x) {low = array<i64: 9223372036854775807>, high = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @pad_fraction_into_integers(%x: tensor<4xi64>) {
  // expected-error @+1 {{padding value 0.5 is not representable in 'i64'}}
  %0 = eff.pad %x {low = array<i64: 1>, high = array<i64: 0>, value = 0.5 : f64} : tensor<4xi64> -> tensor<5xi64>
  return
}

// -----

func.func @pad_negative_into_unsigned(%x: tensor<4xui8>) {
  // expected-error @+1 {{padding value -1 is not representable in 'ui8'}}
  %0 = eff.pad %x {low = array<i64: 1>, high = array<i64: 0>, value = -1.0 : f64} : tensor<4xui8> -> tensor<5xui8>
  return
}

// -----

func.func @pad_two_into_bool(%x: tensor<4xi1>) {
  // expected-error @+1 {{padding value 2 is not representable in 'i1'}}
  %0 = eff.pad %x {low = array<i64: 1>, high = array<i64: 0>, value = 2.0 : f64} : tensor<4xi1> -> tensor<5xi1>
  return
}

// -----

func.func @gather_axis_out_of_range(%t: tensor<16x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{axis 2 is out of range [-2, 1]}}
  %0 = eff.gather %t, %i {axis = 2 : i64} : (tensor<16x4xf32>, tensor<3xi64>) -> tensor<16x3xf32>
  return
}

// -----

func.func @gather_float_indices(%t: tensor<16x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = eff.gather %t, %i {axis = 0 : i64} : (tensor<16x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_result_shape(%t: tensor<16x4xf32>, %i: tensor<2x3xi32>) {
  // expected-error @+2 {{'eff.gather' op inferred type(s) 'tensor<2x3x4xf32>' are incompatible with return type(s) of operation 'tensor<6x4xf32>'}}
  // expected-error @+1 {{'eff.gather' op failed to infer returned types}}
  %0 = eff.gather %t, %i {axis = 0 : i64} : (tensor<16x4xf32>, tensor<2x3xi32>) -> tensor<6x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_duplicate_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axes [1, -1] name dimension 1 twice}}
  %0 = eff.reduce_sum %x {axes = array<i64: 1, -1>} : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

func.func @reduce_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -3 is out of range [-2, 1]}}
  %0 = eff.reduce_max %x {axes = array<i64: -3>} : tensor<2x3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @reduce_keep_dims_mismatch(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'eff.reduce_mean' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'eff.reduce_mean' op failed to infer returned types}}
  %0 = eff.reduce_mean %x {axes = array<i64: 1>, keep_dims = true} : tensor<2x3xf32> -> tensor<2xf32>
  return
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_contracting_mismatch(%a: tensor<4x8xf32>, %b: tensor<6x2xf32>) {
  // expected-error @+1 {{contracting dimensions differ: [4, 8] x [6, 2] multiplies K = 8 by K = 6}}
  %0 = eff.matmul %a, %b : (tensor<4x8xf32>, tensor<6x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_rank_one(%a: tensor<8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{operands must have rank >= 2, got 1 and 2}}
  %0 = eff.matmul %a, %b : (tensor<8xf32>, tensor<8x2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @matmul_batch_does_not_broadcast(%a: tensor<3x4x8xf32>, %b: tensor<2x8x2xf32>) {
  // expected-error @+1 {{batch dimensions of [3, 4, 8] and [2, 8, 2] do not broadcast}}
  %0 = eff.matmul %a, %b : (tensor<3x4x8xf32>, tensor<2x8x2xf32>) -> tensor<3x4x2xf32>
  return
}

// -----

func.func @matmul_element_types_differ(%a: tensor<4x8xf32>, %b: tensor<8x2xbf16>) {
  // expected-error @+1 {{lhs and rhs must have the same element type, got 'f32' and 'bf16'}}
  %0 = eff.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xbf16>) -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_result_shape(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+2 {{'eff.matmul' op inferred type(s) 'tensor<4x2xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'eff.matmul' op failed to infer returned types}}
  %0 = eff.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @linear_contracting_mismatch(%x: tensor<32x64xf32>, %w: tensor<128x32xf32>) {
  // expected-error @+1 {{contracting dimensions differ: op(a) is [32, 64] and op(b) is [32, 128]}}
  %0 = eff.linear %x, %w {transpose_b = true} : (tensor<32x64xf32>, tensor<128x32xf32>) -> tensor<32x128xf32>
  return
}

// -----

func.func @linear_bias_mismatch(%x: tensor<32x64xf32>, %w: tensor<128x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{bias of shape [64] does not broadcast to [32, 128]}}
  %0 = eff.linear %x, %w, %b {transpose_b = true} : (tensor<32x64xf32>, tensor<128x64xf32>, tensor<64xf32>) -> tensor<32x128xf32>
  return
}

// -----

func.func @linear_rank_three(%x: tensor<2x32x64xf32>, %w: tensor<64x128xf32>) {
  // expected-error @+1 {{operands must have rank 2, got 3 and 2}}
  %0 = eff.linear %x, %w : (tensor<2x32x64xf32>, tensor<64x128xf32>) -> tensor<2x32x128xf32>
  return
}

// -----

func.func @linear_element_types_differ(%x: tensor<32x64xbf16>, %w: tensor<64x128xf32>) {
  // expected-error @+1 {{a and b must have the same element type, got 'bf16' and 'f32'}}
  %0 = eff.linear %x, %w : (tensor<32x64xbf16>, tensor<64x128xf32>) -> tensor<32x128xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

// -----

func.func @conv2d_groups_do_not_divide(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{groups = 4 must divide the input channels (6) and the output channels (4)}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_groups_zero(%x: tensor<1x6x8x8xf32>, %w: tensor<4x6x3x3xf32>) {
  // expected-error @+1 {{groups = 0 must divide the input channels (6) and the output channels (4)}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 0 : i64} : (tensor<1x6x8x8xf32>, tensor<4x6x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_filter_channels(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{filter expects 4 input channels (2 per group x 2 groups), the input has 6}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_bias_shape(%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{bias must have shape [4] (one per output channel), got [2]}}
  %0 = eff.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_input_not_nchw(%x: tensor<2x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{input must be NCHW (rank 4), got rank 3}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<4x6x6xf32>
  return
}

// -----

func.func @conv2d_filter_not_oihw(%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error @+1 {{filter must be OIHW (rank 4), got rank 3}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<4x2x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_padding_entries(%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{padding needs 4 entries ([top, left, bottom, right]), got 2}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv2d_stride_zero(%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{strides must be >= 1, got [1, 0]}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 0>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_window_larger_than_input(%x: tensor<1x2x2x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{the window of size 3 is larger than the padded input (2) along H}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x2x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x0x6xf32>
  return
}

// -----

func.func @conv2d_element_types_differ(%x: tensor<1x2x8x8xbf16>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{input and filter must have the same element type, got 'bf16' and 'f32'}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8xbf16>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xbf16>
  return
}

// -----

func.func @conv2d_result_shape(%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{'eff.conv2d' op inferred type(s) 'tensor<1x4x6x6xf32>' are incompatible with return type(s) of operation 'tensor<1x4x8x8xf32>'}}
  // expected-error @+1 {{'eff.conv2d' op failed to infer returned types}}
  %0 = eff.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @max_pool2d_kernel_entries(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{kernel_size needs 2 entries, got 3}}
  %0 = eff.max_pool2d %x {kernel_size = array<i64: 2, 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @max_pool2d_kernel_zero(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{kernel_size must be >= 1, got [0, 2]}}
  %0 = eff.max_pool2d %x {kernel_size = array<i64: 0, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @max_pool2d_dilation_entries(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{dilations need 2 entries, got 1}}
  %0 = eff.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1>} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @max_pool2d_dilation_zero(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{dilations must be >= 1, got [0, 1]}}
  %0 = eff.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 0, 1>} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @max_pool2d_window_overflow(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{the window or the padding overflows along W}}
  %0 = eff.max_pool2d %x {kernel_size = array<i64: 2, 3>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 9223372036854775807>} : tensor<1x1x8x8xf32> -> tensor<1x1x7x1xf32>
  return
}

// -----

func.func @avg_pool2d_stride_entries(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{strides need 2 entries, got 1}}
  %0 = eff.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2>, padding = array<i64: 0, 0, 0, 0>} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @avg_pool2d_negative_padding(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{padding must be >= 0, got [0, 0, -1, 0]}}
  %0 = eff.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, -1, 0>} : tensor<1x1x8x8xf32> -> tensor<1x1x3x4xf32>
  return
}

// -----

func.func @avg_pool2d_window_larger_than_input(%x: tensor<1x1x4x2xf32>) {
  // expected-error @+1 {{the window of size 3 is larger than the padded input (2) along W}}
  %0 = eff.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : tensor<1x1x4x2xf32> -> tensor<1x1x2x0xf32>
  return
}

// -----

func.func @avg_pool2d_ceil_mode_result(%x: tensor<1x1x5x5xf32>) {
  // expected-error @+2 {{'eff.avg_pool2d' op inferred type(s) 'tensor<1x1x3x3xf32>' are incompatible with return type(s) of operation 'tensor<1x1x2x2xf32>'}}
  // expected-error @+1 {{'eff.avg_pool2d' op failed to infer returned types}}
  %0 = eff.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, ceil_mode = true} : tensor<1x1x5x5xf32> -> tensor<1x1x2x2xf32>
  return
}

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

// -----

func.func @softmax_axis_out_of_range(%x: tensor<2x3x4x5xf32>) {
  // expected-error @+1 {{axis 4 is out of range [-4, 3]}}
  %0 = eff.softmax %x {axis = 4 : i64} : tensor<2x3x4x5xf32>
  return
}

// -----

func.func @log_softmax_of_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{axis -1 is out of range for a rank-0 tensor, which has no axes}}
  %0 = eff.log_softmax %x {axis = -1 : i64} : tensor<f32>
  return
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<8x32x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{scale must have the normalised shape [64], got [32]}}
  %y, %m, %r = eff.layer_norm %x scale %g : (tensor<8x32x64xf32>, tensor<32xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x1xf32>, tensor<8x32x1xf32>)
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<8x32x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{bias must have the normalised shape [32, 64], got [64]}}
  %y, %m, %r = eff.layer_norm %x bias %b {axis = 1 : i64} : (tensor<8x32x64xf32>, tensor<64xf32>) -> (tensor<8x32x64xf32>, tensor<8x1x1xf32>, tensor<8x1x1xf32>)
  return
}

// -----

// With a scale, the bad axis must be reported before the scale is compared
// with the normalised shape.
func.func @layer_norm_axis_out_of_range(%x: tensor<8x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{axis 2 is out of range [-2, 1]}}
  %y, %m, %r = eff.layer_norm %x scale %g {axis = 2 : i64} : (tensor<8x64xf32>, tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>)
  return
}

// -----

func.func @layer_norm_negative_epsilon(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{epsilon must be >= 0, got -1}}
  %y, %m, %r = eff.layer_norm %x {epsilon = -1.0 : f64} : (tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>)
  return
}

// -----

func.func @layer_norm_statistics_type(%x: tensor<8x64xbf16>) {
  // expected-error @+2 {{'eff.layer_norm' op inferred type(s) 'tensor<8x64xbf16>', 'tensor<8x1xf32>', 'tensor<8x1xf32>' are incompatible with return type(s) of operation 'tensor<8x64xbf16>', 'tensor<8x1xbf16>', 'tensor<8x1xbf16>'}}
  // expected-error @+1 {{'eff.layer_norm' op failed to infer returned types}}
  %y, %m, %r = eff.layer_norm %x : (tensor<8x64xbf16>) -> (tensor<8x64xbf16>, tensor<8x1xbf16>, tensor<8x1xbf16>)
  return
}

// -----

func.func @batch_norm_train_per_channel_shape(%x: tensor<4x16x8x8xf32>, %c: tensor<16xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{running_var must have shape [16] (one per channel), got [8]}}
  %y:5 = eff.batch_norm_train %x, %c, %c, %c, %v {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : (tensor<4x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>) -> (tensor<4x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @batch_norm_train_momentum_range(%x: tensor<4x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{momentum must be in [0, 1], got 1.5}}
  %y:5 = eff.batch_norm_train %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64, momentum = 1.5 : f64} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_train_one_value_per_channel(%x: tensor<1x16x1x1xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{needs more than one value per channel in training, got 1 for input shape [1, 16, 1, 1]}}
  %y:5 = eff.batch_norm_train %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : (tensor<1x16x1x1xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x16x1x1xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// No channels at all must be diagnosed, not divided by.
func.func @batch_norm_train_empty_batch(%x: tensor<0x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{needs more than one value per channel in training, got 0 for input shape [0, 4]}}
  %y:5 = eff.batch_norm_train %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : (tensor<0x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<0x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @batch_norm_train_rank_one(%x: tensor<16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{input must have a channel dimension (rank >= 2), got rank 1}}
  %y:5 = eff.batch_norm_train %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_scale_shape(%x: tensor<4x16xf32>, %c: tensor<16xf32>, %s: tensor<1x16xf32>) {
  // expected-error @+1 {{scale must have shape [16] (one per channel), got [1, 16]}}
  %y = eff.batch_norm %x, %s, %c, %c, %c {epsilon = 1.0e-05 : f64} : (tensor<4x16xf32>, tensor<1x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @batch_norm_negative_epsilon(%x: tensor<4x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{epsilon must be >= 0, got -0.001}}
  %y = eff.batch_norm %x, %c, %c, %c, %c {epsilon = -1.0e-03 : f64} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

func.func @cross_entropy_label_shape(%x: tensor<32x10xf32>, %l: tensor<10xi64>) {
  // expected-error @+1 {{labels must have shape [32] for input of shape [32, 10], got [10]}}
  %0 = eff.softmax_cross_entropy mean, %x, %l : (tensor<32x10xf32>, tensor<10xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_spatial_label_shape(%x: tensor<4x10x7xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{labels must have shape [4, 7] for input of shape [4, 10, 7], got [4]}}
  %0 = eff.softmax_cross_entropy mean, %x, %l : (tensor<4x10x7xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_weight_shape(%x: tensor<32x10xf32>, %l: tensor<32xi64>, %w: tensor<32xf32>) {
  // expected-error @+1 {{weight must have shape [10] (one per class), got [32]}}
  %0 = eff.softmax_cross_entropy mean, %x, %l weight %w : (tensor<32x10xf32>, tensor<32xi64>, tensor<32xf32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_input_rank_one(%x: tensor<10xf32>, %l: tensor<i64>) {
  // expected-error @+1 {{input must be [N, C, ...], got rank 1}}
  %0 = eff.softmax_cross_entropy mean, %x, %l : (tensor<10xf32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_float_labels(%x: tensor<32x10xf32>, %l: tensor<32xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = eff.softmax_cross_entropy mean, %x, %l : (tensor<32x10xf32>, tensor<32xf32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_none_is_per_sample(%x: tensor<32x10xf32>, %l: tensor<32xi64>) {
  // expected-error @+2 {{'eff.softmax_cross_entropy' op inferred type(s) 'tensor<32xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{'eff.softmax_cross_entropy' op failed to infer returned types}}
  %0 = eff.softmax_cross_entropy none, %x, %l : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  return
}

// -----

func.func @nll_loss_label_shape(%x: tensor<32x10xf32>, %l: tensor<32x1xi32>) {
  // expected-error @+1 {{labels must have shape [32] for input of shape [32, 10], got [32, 1]}}
  %0 = eff.nll_loss sum, %x, %l : (tensor<32x10xf32>, tensor<32x1xi32>) -> tensor<f32>
  return
}

// -----

func.func @nll_loss_weight_shape(%x: tensor<32x10xf32>, %l: tensor<32xi64>, %w: tensor<1x10xf32>) {
  // expected-error @+1 {{weight must have shape [10] (one per class), got [1, 10]}}
  %0 = eff.nll_loss mean, %x, %l weight %w : (tensor<32x10xf32>, tensor<32xi64>, tensor<1x10xf32>) -> tensor<f32>
  return
}
