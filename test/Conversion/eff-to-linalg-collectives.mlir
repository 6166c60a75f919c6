// RUN: effopt-opt %s --convert-eff-to-linalg | FileCheck %s

// Each block collective copies its input into a buffer of its own,
// allocates the result's and calls the runtime once with both pointers and
// the elements of the smaller one.
// CHECK-DAG: func.func private @effrt_reduce_scatter_sum_f32(!llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: func.func private @effrt_all_gather_f32(!llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: func.func private @effrt_shard_f32(!llvm.ptr, !llvm.ptr, i64)

// CHECK-LABEL: func.func @reduce_scatter(
// CHECK: %[[SEND:.*]] = memref.alloc() : memref<6xf32>
// CHECK: bufferization.materialize_in_destination %{{.*}} in writable %[[SEND]]
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<3xf32>
// CHECK: %[[N:.*]] = arith.constant 3 : i64
// CHECK: call @effrt_reduce_scatter_sum_f32(%{{.*}}, %{{.*}}, %[[N]])
// CHECK: bufferization.to_tensor %[[RECV]] restrict writable
func.func @reduce_scatter(%x: tensor<6xf32>) -> tensor<3xf32> {
  %y = eff.reduce_scatter %x {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// CHECK-LABEL: func.func @all_gather(
// CHECK: memref.alloc() : memref<3xf32>
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<6xf32>
// CHECK: %[[N:.*]] = arith.constant 3 : i64
// CHECK: call @effrt_all_gather_f32(%{{.*}}, %{{.*}}, %[[N]])
// CHECK: bufferization.to_tensor %[[RECV]] restrict writable
func.func @all_gather(%x: tensor<3xf32>) -> tensor<6xf32> {
  %y = eff.all_gather %x {world_size = 2 : i64} : tensor<3xf32> -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// CHECK-LABEL: func.func @shard(
// CHECK: memref.alloc() : memref<6xf32>
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<3xf32>
// CHECK: call @effrt_shard_f32(
// CHECK: bufferization.to_tensor %[[RECV]] restrict writable
func.func @shard(%x: tensor<6xf32>) -> tensor<3xf32> {
  %y = eff.shard %x {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}
