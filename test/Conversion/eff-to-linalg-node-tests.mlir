// RUN: effopt-opt %s --convert-eff-to-linalg --split-input-file | FileCheck %s

// Lowering bugs found by ONNX's backend node tests run forward
// (test/E2E/onnx-node-forward.test).

// test_pow_types_int64_float32: integer Pow is square-and-multiply in the
// loop body (math.ipowi has no lowering to LLVM here).
// CHECK-LABEL: func.func @pow_int
// CHECK-NOT: math.ipowi
// CHECK: linalg.generic
// CHECK: arith.shrui
// CHECK: arith.muli
// CHECK: arith.select
// CHECK-NOT: math.ipowi
func.func @pow_int(%x: tensor<3xi64>, %y: tensor<3xi64>) -> tensor<3xi64> {
  %0 = eff.pow %x, %y : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// test_slice_start_out_of_bounds: an empty slice starting at the end is an
// empty tensor (extract_slice rejects the offset).
// CHECK-LABEL: func.func @empty_slice
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[E:.*]] = tensor.empty() : tensor<20x0x5xf32>
// CHECK: return %[[E]]
func.func @empty_slice(%x: tensor<20x10x5xf32>) -> tensor<20x0x5xf32> {
  %0 = eff.slice %x {limits = array<i64: 20, 10, 5>, starts = array<i64: 0, 10, 0>, strides = array<i64: 1, 1, 1>} : tensor<20x10x5xf32> -> tensor<20x0x5xf32>
  return %0 : tensor<20x0x5xf32>
}

// -----

// test_split_zero_size_splits: empty pieces are empty tensors.
// CHECK-LABEL: func.func @empty_split
// CHECK-NOT: tensor.extract_slice
// CHECK-COUNT-3: tensor.empty() : tensor<0xf32>
func.func @empty_split(%x: tensor<0xf32>) -> (tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) {
  %0:3 = eff.split %x {axis = 0 : i64} : tensor<0xf32> -> tensor<0xf32>, tensor<0xf32>, tensor<0xf32>
  return %0#0, %0#1, %0#2 : tensor<0xf32>, tensor<0xf32>, tensor<0xf32>
}

// -----

// Concatenating an empty tensor at the end inserts nothing for it.
// CHECK-LABEL: func.func @concat_empty
// CHECK: tensor.insert_slice %arg0
// CHECK-NOT: tensor.insert_slice
func.func @concat_empty(%x: tensor<2xf32>, %e: tensor<0xf32>) -> tensor<2xf32> {
  %0 = eff.concat %x, %e {axis = 0 : i64} : (tensor<2xf32>, tensor<0xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
