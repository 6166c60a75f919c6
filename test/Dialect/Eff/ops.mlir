// RUN: effopt-opt %s -split-input-file | effopt-opt -split-input-file | FileCheck %s
// RUN: effopt-opt %s -split-input-file --mlir-print-op-generic | effopt-opt -split-input-file | FileCheck %s
// RUN: effopt-opt %s -split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Every eff op survives printing and parsing again, in the custom and in the
// generic form, with each optional operand and attribute present and absent.

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

// Every role, each with a `dense` and a `dense_resource` initial value, and
// without one. Names with dots print bare; other names stay quoted.
// CHECK: eff.parameter trainable @fc1.weight : tensor<2x2xf32> = dense_resource<fc1.weight> : tensor<2x2xf32>
// CHECK: eff.parameter trainable @fc1.bias : tensor<2xf32> = dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>
// CHECK: eff.parameter frozen @embed.weight : tensor<2xf32> = dense_resource<embed.weight> : tensor<2xf32>
// CHECK: eff.parameter frozen @"embed tokens" : tensor<2xf32> = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: eff.parameter buffer @bn.running_mean : tensor<2xf32> = dense<0.000000e+00> : tensor<2xf32>
// CHECK: eff.parameter buffer @bn.running_var : tensor<2xf32> = dense_resource<bn.running_var> : tensor<2xf32>
// CHECK: eff.parameter buffer @bn.num_batches_tracked : tensor<i64> = dense<0> : tensor<i64>
// CHECK: eff.parameter trainable @uninitialised : tensor<3xbf16>{{$}}
// GENERIC: "eff.parameter"() <{initial_value = dense_resource<fc1.weight> : tensor<2x2xf32>, role = 0 : i32, sym_name = "fc1.weight", type = tensor<2x2xf32>}> : () -> ()
// GENERIC: "eff.parameter"() <{role = 0 : i32, sym_name = "uninitialised", type = tensor<3xbf16>}> : () -> ()
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%{{.*}}: tensor<2x2xf32> {eff.parameter = @fc1.weight}, %{{.*}}: tensor<2xf32> {eff.input = "x"})
// CHECK-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<2xf32> {eff.buffer_update = @bn.running_mean})
// CHECK: dialect_resources
// CHECK-DAG: fc1.weight: "0x040000000000803F000000400000404000008040"
// CHECK-DAG: embed.weight: "0x040000000000803F00000040"
// CHECK-DAG: bn.running_var: "0x040000000000803F0000803F"
eff.parameter trainable @"fc1.weight" : tensor<2x2xf32> = dense_resource<fc1.weight> : tensor<2x2xf32>
eff.parameter trainable @"fc1.bias" : tensor<2xf32> = dense<[0.5, -0.5]> : tensor<2xf32>
eff.parameter frozen @"embed.weight" : tensor<2xf32> = dense_resource<embed.weight> : tensor<2xf32>
eff.parameter frozen @"embed tokens" : tensor<2xf32> = dense<[1.0, 2.0]> : tensor<2xf32>
eff.parameter buffer @"bn.running_mean" : tensor<2xf32> = dense<0.0> : tensor<2xf32>
eff.parameter buffer @"bn.running_var" : tensor<2xf32> = dense_resource<bn.running_var> : tensor<2xf32>
eff.parameter buffer @"bn.num_batches_tracked" : tensor<i64> = dense<0> : tensor<i64>
eff.parameter trainable @uninitialised : tensor<3xbf16>
func.func @forward(%w: tensor<2x2xf32> {eff.parameter = @"fc1.weight"},
                   %x: tensor<2xf32> {eff.input = "x"})
    -> (tensor<f32> {eff.output = "loss"},
        tensor<2xf32> {eff.buffer_update = @"bn.running_mean"}) {
  %0 = eff.reduce_sum %w {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
  return %0, %x : tensor<f32>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      "fc1.weight": "0x040000000000803F000000400000404000008040",
      "embed.weight": "0x040000000000803F00000040",
      "bn.running_var": "0x040000000000803F0000803F"
    }
  }
#-}

// -----

// CHECK-LABEL: func.func @constant
// CHECK: eff.constant dense<[8, -1]> : tensor<2xi64>
// CHECK: eff.constant dense<true> : tensor<4xi1>
// CHECK: eff.constant dense<1.500000e+00> : tensor<2x2xbf16>
func.func @constant() -> (tensor<2xi64>, tensor<4xi1>, tensor<2x2xbf16>) {
  %0 = eff.constant dense<[8, -1]> : tensor<2xi64>
  %1 = eff.constant dense<true> : tensor<4xi1>
  %2 = eff.constant dense<1.5> : tensor<2x2xbf16>
  return %0, %1, %2 : tensor<2xi64>, tensor<4xi1>, tensor<2x2xbf16>
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[I:.*]]: tensor<4xi32>, %[[B:.*]]: tensor<4xi1>)
// CHECK: eff.neg %[[X]] : tensor<4x8xf32>
// CHECK: eff.neg %[[I]] : tensor<4xi32>
// CHECK: eff.abs %[[X]] : tensor<4x8xf32>
// CHECK: eff.abs %[[I]] : tensor<4xi32>
// CHECK: eff.exp %[[X]] : tensor<4x8xf32>
// CHECK: eff.log %[[X]] : tensor<4x8xf32>
// CHECK: eff.sqrt %[[X]] : tensor<4x8xf32>
// CHECK: eff.rsqrt %[[X]] : tensor<4x8xf32>
// CHECK: eff.reciprocal %[[X]] : tensor<4x8xf32>
// CHECK: eff.tanh %[[X]] : tensor<4x8xf32>
// CHECK: eff.sigmoid %[[X]] : tensor<4x8xf32>
// CHECK: eff.relu %[[X]] : tensor<4x8xf32>
// CHECK: eff.erf %[[X]] : tensor<4x8xf32>
// CHECK: eff.logical_not %[[B]] : tensor<4xi1>
func.func @unary(%x: tensor<4x8xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>) {
  %0 = eff.neg %x : tensor<4x8xf32>
  %1 = eff.neg %i : tensor<4xi32>
  %2 = eff.abs %x : tensor<4x8xf32>
  %3 = eff.abs %i : tensor<4xi32>
  %4 = eff.exp %x : tensor<4x8xf32>
  %5 = eff.log %x : tensor<4x8xf32>
  %6 = eff.sqrt %x : tensor<4x8xf32>
  %7 = eff.rsqrt %x : tensor<4x8xf32>
  %8 = eff.reciprocal %x : tensor<4x8xf32>
  %9 = eff.tanh %x : tensor<4x8xf32>
  %10 = eff.sigmoid %x : tensor<4x8xf32>
  %11 = eff.relu %x : tensor<4x8xf32>
  %12 = eff.erf %x : tensor<4x8xf32>
  %13 = eff.logical_not %b : tensor<4xi1>
  return
}

// -----

// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xbf16>)
// CHECK: eff.gelu %[[X]] : tensor<8x16xbf16>
// CHECK: eff.gelu %[[X]] approximate tanh : tensor<8x16xbf16>
// GENERIC-LABEL: sym_name = "gelu"
// GENERIC: "eff.gelu"(%{{.*}}) <{approximate = 0 : i32}> : (tensor<8x16xbf16>) -> tensor<8x16xbf16>
// GENERIC: "eff.gelu"(%{{.*}}) <{approximate = 1 : i32}> : (tensor<8x16xbf16>) -> tensor<8x16xbf16>
func.func @gelu(%x: tensor<8x16xbf16>) {
  %0 = eff.gelu %x : tensor<8x16xbf16>
  %1 = eff.gelu %x approximate tanh : tensor<8x16xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @arith_broadcast
// CHECK-SAME: (%[[A:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>, %[[S:.*]]: tensor<f32>)
// CHECK: eff.add %[[A]], %[[B]] : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
// CHECK: eff.sub %[[B]], %[[A]] : (tensor<16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK: eff.mul %[[A]], %[[S]] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
// CHECK: eff.div %[[S]], %[[S]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: eff.pow %[[A]], %[[S]] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
// CHECK: eff.max %[[A]], %[[A]] : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK: eff.min %[[B]], %[[S]] : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
func.func @arith_broadcast(%a: tensor<8x16xf32>, %b: tensor<16xf32>, %s: tensor<f32>) {
  %0 = eff.add %a, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %1 = eff.sub %b, %a : (tensor<16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = eff.mul %a, %s : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %3 = eff.div %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %4 = eff.pow %a, %s : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %5 = eff.max %a, %a : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %6 = eff.min %b, %s : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  return
}

// -----

// Both operands broadcast: [4, 1] and [3] give [4, 3].
// CHECK-LABEL: func.func @arith_broadcast_both_ways
// CHECK: eff.add %{{.*}}, %{{.*}} : (tensor<4x1xi64>, tensor<3xi64>) -> tensor<4x3xi64>
func.func @arith_broadcast_both_ways(%a: tensor<4x1xi64>, %b: tensor<3xi64>) -> tensor<4x3xi64> {
  %0 = eff.add %a, %b : (tensor<4x1xi64>, tensor<3xi64>) -> tensor<4x3xi64>
  return %0 : tensor<4x3xi64>
}

// -----

// CHECK-LABEL: func.func @logical
// CHECK-SAME: (%[[A:.*]]: tensor<4x4xi1>, %[[B:.*]]: tensor<4xi1>)
// CHECK: eff.logical_and %[[A]], %[[B]] : (tensor<4x4xi1>, tensor<4xi1>) -> tensor<4x4xi1>
// CHECK: eff.logical_or %[[B]], %[[A]] : (tensor<4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
func.func @logical(%a: tensor<4x4xi1>, %b: tensor<4xi1>) {
  %0 = eff.logical_and %a, %b : (tensor<4x4xi1>, tensor<4xi1>) -> tensor<4x4xi1>
  %1 = eff.logical_or %b, %a : (tensor<4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  return
}

// -----

// CHECK-LABEL: func.func @cmp_predicates
// CHECK-SAME: (%[[A:.*]]: tensor<4x4xf32>, %[[B:.*]]: tensor<f32>, %[[U:.*]]: tensor<4xui8>)
// CHECK: eff.cmp eq, %[[A]], %[[B]] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
// CHECK: eff.cmp ne, %[[A]], %[[B]]
// CHECK: eff.cmp lt, %[[A]], %[[B]]
// CHECK: eff.cmp le, %[[A]], %[[B]]
// CHECK: eff.cmp gt, %[[A]], %[[B]]
// CHECK: eff.cmp ge, %[[U]], %[[U]] : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
func.func @cmp_predicates(%a: tensor<4x4xf32>, %b: tensor<f32>, %u: tensor<4xui8>) {
  %0 = eff.cmp eq, %a, %b : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
  %1 = eff.cmp ne, %a, %b : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
  %2 = eff.cmp lt, %a, %b : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
  %3 = eff.cmp le, %a, %b : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
  %4 = eff.cmp gt, %a, %b : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
  %5 = eff.cmp ge, %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  return
}

// -----

// CHECK-LABEL: func.func @where_causal_mask
// CHECK-SAME: (%[[M:.*]]: tensor<1x1x4x4xi1>, %[[S:.*]]: tensor<2x3x4x4xf32>, %[[N:.*]]: tensor<f32>)
// CHECK: eff.where %[[M]], %[[S]], %[[N]] : (tensor<1x1x4x4xi1>, tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
func.func @where_causal_mask(%m: tensor<1x1x4x4xi1>, %s: tensor<2x3x4x4xf32>, %n: tensor<f32>) -> tensor<2x3x4x4xf32> {
  %0 = eff.where %m, %s, %n : (tensor<1x1x4x4xi1>, tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[I:.*]]: tensor<8x16xi64>)
// CHECK: eff.cast %[[X]] : tensor<8x16xf32> to tensor<8x16xbf16>
// CHECK: eff.cast %[[X]] : tensor<8x16xf32> to tensor<8x16xi32>
// CHECK: eff.cast %[[I]] : tensor<8x16xi64> to tensor<8x16xi1>
// CHECK: eff.cast %[[I]] : tensor<8x16xi64> to tensor<8x16xui8>
func.func @cast(%x: tensor<8x16xf32>, %i: tensor<8x16xi64>) {
  %0 = eff.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
  %1 = eff.cast %x : tensor<8x16xf32> to tensor<8x16xi32>
  %2 = eff.cast %i : tensor<8x16xi64> to tensor<8x16xi1>
  %3 = eff.cast %i : tensor<8x16xi64> to tensor<8x16xui8>
  return
}

// -----

// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>)
// CHECK: eff.dropout %[[X]] {ratio = 1.000000e-01 : f64, seed = 7 : i64} : tensor<8x64xf32> -> (tensor<8x64xf32>, tensor<8x64xi1>)
func.func @dropout(%x: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xi1>) {
  %y, %mask = eff.dropout %x {ratio = 0.1 : f64, seed = 7 : i64} : tensor<8x64xf32> -> (tensor<8x64xf32>, tensor<8x64xi1>)
  return %y, %mask : tensor<8x64xf32>, tensor<8x64xi1>
}

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @shape_of
// CHECK: eff.shape_of %{{.*}} : tensor<8x16xf32> -> tensor<2xi64>
// CHECK: eff.shape_of %{{.*}} : tensor<f32> -> tensor<0xi64>
func.func @shape_of(%x: tensor<8x16xf32>, %s: tensor<f32>) {
  %0 = eff.shape_of %x : tensor<8x16xf32> -> tensor<2xi64>
  %1 = eff.shape_of %s : tensor<f32> -> tensor<0xi64>
  return
}

// -----

// CHECK-LABEL: func.func @reshape
// CHECK: eff.reshape %{{.*}} : tensor<8x4x16xf32> to tensor<32x16xf32>
// CHECK: eff.reshape %{{.*}} : tensor<8x4x16xf32> to tensor<512xf32>
// CHECK: eff.reshape %{{.*}} : tensor<1xi64> to tensor<i64>
func.func @reshape(%x: tensor<8x4x16xf32>, %i: tensor<1xi64>) {
  %0 = eff.reshape %x : tensor<8x4x16xf32> to tensor<32x16xf32>
  %1 = eff.reshape %x : tensor<8x4x16xf32> to tensor<512xf32>
  %2 = eff.reshape %i : tensor<1xi64> to tensor<i64>
  return
}

// -----

// CHECK-LABEL: func.func @transpose
// CHECK: eff.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x32x4x16xf32> -> tensor<8x4x32x16xf32>
func.func @transpose(%x: tensor<8x32x4x16xf32>) -> tensor<8x4x32x16xf32> {
  %0 = eff.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x32x4x16xf32> -> tensor<8x4x32x16xf32>
  return %0 : tensor<8x4x32x16xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to
// CHECK: eff.broadcast_to %{{.*}} : tensor<1x16xf32> to tensor<4x8x16xf32>
func.func @broadcast_to(%x: tensor<1x16xf32>) -> tensor<4x8x16xf32> {
  %0 = eff.broadcast_to %x : tensor<1x16xf32> to tensor<4x8x16xf32>
  return %0 : tensor<4x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<8x4xf32>)
// CHECK: eff.concat %[[A]], %[[B]], %[[A]] {axis = -1 : i64} : (tensor<8x16xf32>, tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<8x36xf32>
// CHECK: eff.concat %[[A]] {axis = 0 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
func.func @concat(%a: tensor<8x16xf32>, %b: tensor<8x4xf32>) {
  %0 = eff.concat %a, %b, %a {axis = -1 : i64} : (tensor<8x16xf32>, tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<8x36xf32>
  %1 = eff.concat %a {axis = 0 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

// CHECK-LABEL: func.func @slice
// CHECK: eff.slice %{{.*}} {limits = array<i64: 8, 32>, starts = array<i64: 0, 0>, strides = array<i64: 1, 2>} : tensor<8x32xf32> -> tensor<8x16xf32>
func.func @slice(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %0 = eff.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 8, 32>, strides = array<i64: 1, 2>} : tensor<8x32xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// A negative stride walks backwards; the limit -1 reaches index 0.
// CHECK-LABEL: func.func @slice_negative_stride
// CHECK: eff.slice %{{.*}} {limits = array<i64: -1>, starts = array<i64: 7>, strides = array<i64: -1>} : tensor<8xf32> -> tensor<8xf32>
func.func @slice_negative_stride(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = eff.slice %x {starts = array<i64: 7>, limits = array<i64: -1>, strides = array<i64: -1>} : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @split_qkv
// CHECK: %{{.*}}:3 = eff.split %{{.*}} {axis = 2 : i64} : tensor<8x32x192xf32> -> tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>
// GENERIC-LABEL: sym_name = "split_qkv"
// GENERIC: "eff.split"(%{{.*}}) <{axis = 2 : i64}> : (tensor<8x32x192xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>)
func.func @split_qkv(%qkv: tensor<8x32x192xf32>) -> tensor<8x32x64xf32> {
  %q, %k, %v = eff.split %qkv {axis = 2 : i64} : tensor<8x32x192xf32> -> tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>
  return %v : tensor<8x32x64xf32>
}

// -----

// CHECK-LABEL: func.func @split_uneven_negative_axis
// CHECK: %{{.*}}:2 = eff.split %{{.*}} {axis = -1 : i64} : tensor<4x10xf32> -> tensor<4x3xf32>, tensor<4x7xf32>
func.func @split_uneven_negative_axis(%x: tensor<4x10xf32>) -> tensor<4x7xf32> {
  %a, %b = eff.split %x {axis = -1 : i64} : tensor<4x10xf32> -> tensor<4x3xf32>, tensor<4x7xf32>
  return %b : tensor<4x7xf32>
}

// -----

// CHECK-LABEL: func.func @pad
// CHECK: eff.pad %{{.*}} {high = array<i64: 0, 0, 1, 1>, low = array<i64: 0, 0, 1, 1>} : tensor<8x16x4x4xf32> -> tensor<8x16x6x6xf32>
// CHECK: eff.pad %{{.*}} {high = array<i64: 2>, low = array<i64: 0>, value = -1.000000e+00 : f64} : tensor<3xi64> -> tensor<5xi64>
func.func @pad(%x: tensor<8x16x4x4xf32>, %i: tensor<3xi64>) {
  %0 = eff.pad %x {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : tensor<8x16x4x4xf32> -> tensor<8x16x6x6xf32>
  %1 = eff.pad %i {low = array<i64: 0>, high = array<i64: 2>, value = -1.0 : f64} : tensor<3xi64> -> tensor<5xi64>
  return
}

// -----

// CHECK-LABEL: func.func @gather_embedding
// CHECK: eff.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<256x64xf32>, tensor<8x32xi64>) -> tensor<8x32x64xf32>
func.func @gather_embedding(%table: tensor<256x64xf32>, %ids: tensor<8x32xi64>) -> tensor<8x32x64xf32> {
  %0 = eff.gather %table, %ids {axis = 0 : i64} : (tensor<256x64xf32>, tensor<8x32xi64>) -> tensor<8x32x64xf32>
  return %0 : tensor<8x32x64xf32>
}

// -----

// A scalar index drops the gathered dimension.
// CHECK-LABEL: func.func @gather_scalar_index
// CHECK: eff.gather %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<4x3xf32>, tensor<i32>) -> tensor<4xf32>
func.func @gather_scalar_index(%x: tensor<4x3xf32>, %i: tensor<i32>) -> tensor<4xf32> {
  %0 = eff.gather %x, %i {axis = -1 : i64} : (tensor<4x3xf32>, tensor<i32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @reductions
// CHECK: eff.reduce_sum %{{.*}} {axes = array<i64: 1>} : tensor<8x16x4xf32> -> tensor<8x4xf32>
// CHECK: eff.reduce_mean %{{.*}} {axes = array<i64: -1, 0>, keep_dims = true} : tensor<8x16x4xf32> -> tensor<1x16x1xf32>
// CHECK: eff.reduce_max %{{.*}} {axes = array<i64: 0, 1, 2>} : tensor<8x16x4xf32> -> tensor<f32>
// CHECK: eff.reduce_min %{{.*}} {axes = array<i64: 2>, keep_dims = true} : tensor<8x16x4xi32> -> tensor<8x16x1xi32>
func.func @reductions(%x: tensor<8x16x4xf32>, %i: tensor<8x16x4xi32>) {
  %0 = eff.reduce_sum %x {axes = array<i64: 1>} : tensor<8x16x4xf32> -> tensor<8x4xf32>
  %1 = eff.reduce_mean %x {axes = array<i64: -1, 0>, keep_dims = true} : tensor<8x16x4xf32> -> tensor<1x16x1xf32>
  %2 = eff.reduce_max %x {axes = array<i64: 0, 1, 2>, keep_dims = false} : tensor<8x16x4xf32> -> tensor<f32>
  %3 = eff.reduce_min %i {axes = array<i64: 2>, keep_dims = true} : tensor<8x16x4xi32> -> tensor<8x16x1xi32>
  return
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @matmul_batched
// CHECK: eff.matmul %{{.*}}, %{{.*}} : (tensor<8x4x32x16xf32>, tensor<8x4x16x32xf32>) -> tensor<8x4x32x32xf32>
func.func @matmul_batched(%q: tensor<8x4x32x16xf32>, %kt: tensor<8x4x16x32xf32>) -> tensor<8x4x32x32xf32> {
  %0 = eff.matmul %q, %kt : (tensor<8x4x32x16xf32>, tensor<8x4x16x32xf32>) -> tensor<8x4x32x32xf32>
  return %0 : tensor<8x4x32x32xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_broadcast_batch
// CHECK: eff.matmul %{{.*}}, %{{.*}} : (tensor<8x32x64xf32>, tensor<64x128xf32>) -> tensor<8x32x128xf32>
func.func @matmul_broadcast_batch(%x: tensor<8x32x64xf32>, %w: tensor<64x128xf32>) -> tensor<8x32x128xf32> {
  %0 = eff.matmul %x, %w : (tensor<8x32x64xf32>, tensor<64x128xf32>) -> tensor<8x32x128xf32>
  return %0 : tensor<8x32x128xf32>
}

// -----

// CHECK-LABEL: func.func @linear_with_bias
// CHECK-SAME: (%[[X:.*]]: tensor<32x64xf32>, %[[W:.*]]: tensor<128x64xf32>, %[[B:.*]]: tensor<128xf32>)
// CHECK: eff.linear %[[X]], %[[W]], %[[B]] {transpose_b = true} : (tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<32x128xf32>
func.func @linear_with_bias(%x: tensor<32x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>) -> tensor<32x128xf32> {
  %0 = eff.linear %x, %w, %b {transpose_b = true} : (tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

// -----

// CHECK-LABEL: func.func @linear_without_bias
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<64x128xf32>)
// CHECK: eff.linear %[[A]], %[[B]] {transpose_a = true} : (tensor<64x32xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
// GENERIC-LABEL: sym_name = "linear_without_bias"
// GENERIC: "eff.linear"(%{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, beta = 1.000000e+00 : f64, transpose_a = true, transpose_b = false}> : (tensor<64x32xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
func.func @linear_without_bias(%a: tensor<64x32xf32>, %b: tensor<64x128xf32>) -> tensor<32x128xf32> {
  %0 = eff.linear %a, %b {transpose_a = true} : (tensor<64x32xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

// -----

// Gemm's alpha and beta, both transposes and a bias broadcast from [M, 1].
// CHECK-LABEL: func.func @linear_gemm_attributes
// CHECK: eff.linear %{{.*}}, %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f64, beta = 2.000000e+00 : f64, transpose_a = true, transpose_b = true} : (tensor<64x32xf32>, tensor<128x64xf32>, tensor<32x1xf32>) -> tensor<32x128xf32>
func.func @linear_gemm_attributes(%a: tensor<64x32xf32>, %b: tensor<128x64xf32>, %c: tensor<32x1xf32>) -> tensor<32x128xf32> {
  %0 = eff.linear %a, %b, %c {alpha = 0.5 : f64, beta = 2.0 : f64, transpose_a = true, transpose_b = true} : (tensor<64x32xf32>, tensor<128x64xf32>, tensor<32x1xf32>) -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @conv2d_with_bias
// CHECK: eff.conv2d %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<32x1x8x8xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>) -> tensor<32x16x8x8xf32>
func.func @conv2d_with_bias(%x: tensor<32x1x8x8xf32>, %w: tensor<16x1x3x3xf32>, %b: tensor<16xf32>) -> tensor<32x16x8x8xf32> {
  %0 = eff.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<32x1x8x8xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>) -> tensor<32x16x8x8xf32>
  return %0 : tensor<32x16x8x8xf32>
}

// -----

// Four groups of 2 input channels each, stride 2, dilation 2, no bias:
// H = (9 + 0 + 1 - 5) / 2 + 1 = 3, W = (9 + 2 + 2 - 5) / 2 + 1 = 5.
// CHECK-LABEL: func.func @conv2d_groups_without_bias
// CHECK: eff.conv2d %{{.*}}, %{{.*}} {dilations = array<i64: 2, 2>, groups = 4 : i64, padding = array<i64: 0, 2, 1, 2>, strides = array<i64: 2, 2>} : (tensor<2x8x9x9xf32>, tensor<12x2x3x3xf32>) -> tensor<2x12x3x5xf32>
func.func @conv2d_groups_without_bias(%x: tensor<2x8x9x9xf32>, %w: tensor<12x2x3x3xf32>) -> tensor<2x12x3x5xf32> {
  %0 = eff.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 0, 2, 1, 2>, dilations = array<i64: 2, 2>, groups = 4 : i64} : (tensor<2x8x9x9xf32>, tensor<12x2x3x3xf32>) -> tensor<2x12x3x5xf32>
  return %0 : tensor<2x12x3x5xf32>
}

// -----

// CHECK-LABEL: func.func @max_pool2d
// CHECK: eff.max_pool2d %{{.*}} {dilations = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<32x16x8x8xf32> -> tensor<32x16x4x4xf32>
func.func @max_pool2d(%x: tensor<32x16x8x8xf32>) -> tensor<32x16x4x4xf32> {
  %0 = eff.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<32x16x8x8xf32> -> tensor<32x16x4x4xf32>
  return %0 : tensor<32x16x4x4xf32>
}

// -----

// ceil_mode keeps the partial last window: ceil((7 - 3) / 2) + 1 = 3.
// CHECK-LABEL: func.func @max_pool2d_ceil_mode
// CHECK: eff.max_pool2d %{{.*}} {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_size = array<i64: 3, 3>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
func.func @max_pool2d_ceil_mode(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
  %0 = eff.max_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @avg_pool2d
// CHECK: eff.avg_pool2d %{{.*}} {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<32x32x4x4xf32> -> tensor<32x32x2x2xf32>
func.func @avg_pool2d(%x: tensor<32x32x4x4xf32>) -> tensor<32x32x2x2xf32> {
  %0 = eff.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = true} : tensor<32x32x4x4xf32> -> tensor<32x32x2x2xf32>
  return %0 : tensor<32x32x2x2xf32>
}

// -----

// CHECK-LABEL: func.func @avg_pool2d_ceil_mode_exclude_pad
// CHECK: eff.avg_pool2d %{{.*}} {ceil_mode = true, count_include_pad = false, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<1x3x5x5xf32> -> tensor<1x3x3x3xf32>
func.func @avg_pool2d_ceil_mode_exclude_pad(%x: tensor<1x3x5x5xf32>) -> tensor<1x3x3x3xf32> {
  %0 = eff.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, ceil_mode = true, count_include_pad = false} : tensor<1x3x5x5xf32> -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @softmax
// CHECK: eff.softmax %{{.*}} {axis = -1 : i64} : tensor<8x4x32x32xf32>
// CHECK: eff.log_softmax %{{.*}} {axis = 1 : i64} : tensor<8x4x32x32xf32>
func.func @softmax(%x: tensor<8x4x32x32xf32>) {
  %0 = eff.softmax %x {axis = -1 : i64} : tensor<8x4x32x32xf32>
  %1 = eff.log_softmax %x {axis = 1 : i64} : tensor<8x4x32x32xf32>
  return
}

// -----

// CHECK-LABEL: func.func @layer_norm_scale_and_bias
// CHECK-SAME: (%[[X:.*]]: tensor<8x32x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: eff.layer_norm %[[X]] scale %[[G]] bias %[[B]] {epsilon = 1.000000e-03 : f64} : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x1xf32>, tensor<8x32x1xf32>)
func.func @layer_norm_scale_and_bias(%x: tensor<8x32x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<8x32x64xf32> {
  %y, %mean, %rstd = eff.layer_norm %x scale %g bias %b {axis = -1 : i64, epsilon = 1.0e-03 : f64} : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x32x64xf32>, tensor<8x32x1xf32>, tensor<8x32x1xf32>)
  return %y : tensor<8x32x64xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_scale_only
// CHECK-SAME: (%[[X:.*]]: tensor<8x32x64xf32>, %[[G:.*]]: tensor<32x64xf32>)
// CHECK: eff.layer_norm %[[X]] scale %[[G]] {axis = 1 : i64} : (tensor<8x32x64xf32>, tensor<32x64xf32>) -> (tensor<8x32x64xf32>, tensor<8x1x1xf32>, tensor<8x1x1xf32>)
func.func @layer_norm_scale_only(%x: tensor<8x32x64xf32>, %g: tensor<32x64xf32>) -> tensor<8x32x64xf32> {
  %y, %mean, %rstd = eff.layer_norm %x scale %g {axis = 1 : i64} : (tensor<8x32x64xf32>, tensor<32x64xf32>) -> (tensor<8x32x64xf32>, tensor<8x1x1xf32>, tensor<8x1x1xf32>)
  return %y : tensor<8x32x64xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_bias_only
// CHECK-SAME: (%[[X:.*]]: tensor<4x64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: eff.layer_norm %[[X]] bias %[[B]] : (tensor<4x64xf32>, tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
// GENERIC-LABEL: sym_name = "layer_norm_bias_only"
// GENERIC: "eff.layer_norm"(%{{.*}}, %{{.*}}) <{axis = -1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 1>}>
func.func @layer_norm_bias_only(%x: tensor<4x64xf32>, %b: tensor<64xf32>) -> tensor<4x64xf32> {
  %y, %mean, %rstd = eff.layer_norm %x bias %b : (tensor<4x64xf32>, tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y : tensor<4x64xf32>
}

// -----

// Without scale and bias; bf16 input keeps its statistics in f32.
// CHECK-LABEL: func.func @layer_norm_bf16_no_affine
// CHECK: eff.layer_norm %{{.*}} : (tensor<4x64xbf16>) -> (tensor<4x64xbf16>, tensor<4x1xf32>, tensor<4x1xf32>)
func.func @layer_norm_bf16_no_affine(%x: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  %y, %mean, %rstd = eff.layer_norm %x : (tensor<4x64xbf16>) -> (tensor<4x64xbf16>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y : tensor<4x64xbf16>
}

// -----

// CHECK-LABEL: func.func @batch_norm_train
// CHECK: eff.batch_norm_train %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64, momentum = 1.000000e-01 : f64} : (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
func.func @batch_norm_train(%x: tensor<32x16x8x8xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %mean: tensor<16xf32>, %var: tensor<16xf32>) -> tensor<32x16x8x8xf32> {
  %y, %rm, %rv, %m, %r = eff.batch_norm_train %x, %g, %b, %mean, %var {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %y : tensor<32x16x8x8xf32>
}

// -----

// No channels: nothing to normalise, and nothing to divide by.
// CHECK-LABEL: func.func @batch_norm_train_no_channels
// CHECK: eff.batch_norm_train {{.*}} : (tensor<2x0x3xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> (tensor<2x0x3xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>)
func.func @batch_norm_train_no_channels(%x: tensor<2x0x3xf32>, %c: tensor<0xf32>) -> tensor<2x0x3xf32> {
  %y:5 = eff.batch_norm_train %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : (tensor<2x0x3xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> (tensor<2x0x3xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>)
  return %y#0 : tensor<2x0x3xf32>
}

// -----

// CHECK-LABEL: func.func @batch_norm(
// CHECK: eff.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<32x16xf32>
func.func @batch_norm(%x: tensor<32x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %mean: tensor<16xf32>, %var: tensor<16xf32>) -> tensor<32x16xf32> {
  %y = eff.batch_norm %x, %g, %b, %mean, %var {epsilon = 1.0e-05 : f64} : (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<32x16xf32>
  return %y : tensor<32x16xf32>
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @softmax_cross_entropy_mean
// CHECK: eff.softmax_cross_entropy mean, %{{.*}}, %{{.*}} : (tensor<256x10xf32>, tensor<256xi64>) -> tensor<f32>
func.func @softmax_cross_entropy_mean(%logits: tensor<256x10xf32>, %labels: tensor<256xi64>) -> tensor<f32> {
  %0 = eff.softmax_cross_entropy mean, %logits, %labels : (tensor<256x10xf32>, tensor<256xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @softmax_cross_entropy_weight_ignore_index
// CHECK-SAME: (%[[X:.*]]: tensor<4x10x7xf32>, %[[L:.*]]: tensor<4x7xi32>, %[[W:.*]]: tensor<10xf32>)
// CHECK: eff.softmax_cross_entropy sum, %[[X]], %[[L]] weight %[[W]] {ignore_index = -100 : i64} : (tensor<4x10x7xf32>, tensor<4x7xi32>, tensor<10xf32>) -> tensor<f32>
func.func @softmax_cross_entropy_weight_ignore_index(%x: tensor<4x10x7xf32>, %l: tensor<4x7xi32>, %w: tensor<10xf32>) -> tensor<f32> {
  %0 = eff.softmax_cross_entropy sum, %x, %l weight %w {ignore_index = -100 : i64} : (tensor<4x10x7xf32>, tensor<4x7xi32>, tensor<10xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @softmax_cross_entropy_none
// CHECK: eff.softmax_cross_entropy none, %{{.*}}, %{{.*}} : (tensor<4x10x7xf32>, tensor<4x7xi64>) -> tensor<4x7xf32>
func.func @softmax_cross_entropy_none(%x: tensor<4x10x7xf32>, %l: tensor<4x7xi64>) -> tensor<4x7xf32> {
  %0 = eff.softmax_cross_entropy none, %x, %l : (tensor<4x10x7xf32>, tensor<4x7xi64>) -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

// CHECK-LABEL: func.func @nll_loss
// CHECK-SAME: (%[[X:.*]]: tensor<32x10xf32>, %[[L:.*]]: tensor<32xi64>, %[[W:.*]]: tensor<10xf32>)
// CHECK: eff.nll_loss mean, %[[X]], %[[L]] : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
// CHECK: eff.nll_loss none, %[[X]], %[[L]] weight %[[W]] {ignore_index = 0 : i64} : (tensor<32x10xf32>, tensor<32xi64>, tensor<10xf32>) -> tensor<32xf32>
// GENERIC-LABEL: sym_name = "nll_loss"
// GENERIC: "eff.nll_loss"(%{{.*}}, %{{.*}}) <{reduction = 1 : i32}>
// GENERIC: "eff.nll_loss"(%{{.*}}, %{{.*}}, %{{.*}}) <{ignore_index = 0 : i64, reduction = 0 : i32}>
func.func @nll_loss(%x: tensor<32x10xf32>, %l: tensor<32xi64>, %w: tensor<10xf32>) {
  %0 = eff.nll_loss mean, %x, %l : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  %1 = eff.nll_loss none, %x, %l weight %w {ignore_index = 0 : i64} : (tensor<32x10xf32>, tensor<32xi64>, tensor<10xf32>) -> tensor<32xf32>
  return
}

// -----

// CHECK-LABEL: func.func @started_collectives
// CHECK: %[[F:.*]]:2 = eff.all_reduce_start %{{.*}}, %{{.*}} {world_size = 2 : i64} : tensor<4xf32>, tensor<f32>
// CHECK: eff.wait %[[F]]#0, %[[F]]#1 : tensor<4xf32>, tensor<f32>
// CHECK: %[[R:.*]] = eff.reduce_scatter_start %{{.*}} {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
// CHECK: eff.wait %[[R]] : tensor<2xf32>
// CHECK: %[[G:.*]] = eff.all_gather_start %{{.*}} {eff.recomputed, world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
// CHECK: eff.wait %[[G]] : tensor<4xf32>
// GENERIC-LABEL: sym_name = "started_collectives"
// GENERIC: "eff.all_reduce_start"
// GENERIC: "eff.wait"
func.func @started_collectives(%x: tensor<4xf32>, %s: tensor<f32>, %h: tensor<2xf32>) {
  %f:2 = eff.all_reduce_start %x, %s {world_size = 2 : i64} : tensor<4xf32>, tensor<f32>
  %0:2 = eff.wait %f#0, %f#1 : tensor<4xf32>, tensor<f32>
  %r = eff.reduce_scatter_start %x {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
  %1 = eff.wait %r : tensor<2xf32>
  %g = eff.all_gather_start %h {eff.recomputed, world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
  %2 = eff.wait %g : tensor<4xf32>
  return
}
