// RUN: effopt-opt %s --convert-eff-to-linalg | FileCheck %s

// Each block collective copies its input into a buffer of its own (tagged
// eff.collective_buffer, for eff-fold-collective-copies),
// allocates the result's and calls the runtime once with both pointers and
// the elements of the smaller one.
// CHECK-DAG: func.func private @effrt_reduce_scatter_sum_f32(!llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: func.func private @effrt_all_gather_f32(!llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: func.func private @effrt_shard_f32(!llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: func.func private @effrt_reduce_scatter_sum_f32_start(!llvm.ptr, !llvm.ptr, i64) -> i64
// CHECK-DAG: func.func private @effrt_allreduce_sum_f32_start(!llvm.ptr, i64) -> i64
// CHECK-DAG: func.func private @effrt_collective_wait(i64, !llvm.ptr, !llvm.ptr)

// CHECK-LABEL: func.func @reduce_scatter(
// CHECK: %[[SEND:.*]] = memref.alloc() {eff.collective_buffer} : memref<6xf32>
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
// CHECK: memref.alloc() {eff.collective_buffer} : memref<3xf32>
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<6xf32>
// CHECK: %[[N:.*]] = arith.constant 3 : i64
// CHECK: call @effrt_all_gather_f32(%{{.*}}, %{{.*}}, %[[N]])
// CHECK: bufferization.to_tensor %[[RECV]] restrict writable
func.func @all_gather(%x: tensor<3xf32>) -> tensor<6xf32> {
  %y = eff.all_gather %x {world_size = 2 : i64} : tensor<3xf32> -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// CHECK-LABEL: func.func @shard(
// CHECK: memref.alloc() {eff.collective_buffer} : memref<6xf32>
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<3xf32>
// CHECK: call @effrt_shard_f32(
// CHECK: bufferization.to_tensor %[[RECV]] restrict writable
func.func @shard(%x: tensor<6xf32>) -> tensor<3xf32> {
  %y = eff.shard %x {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// A started collective lowers as the blocking one, with the `_start` call
// returning a request; its wait calls effrt_collective_wait with the
// request and both buffers (so the plan keeps them live while in flight),
// and the result is read from there on.
// CHECK-LABEL: func.func @reduce_scatter_started(
// CHECK: %[[SEND:.*]] = memref.alloc() {eff.collective_buffer} : memref<6xf32>
// CHECK: bufferization.materialize_in_destination %{{.*}} in writable %[[SEND]]
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<3xf32>
// CHECK: %[[REQ:.*]] = call @effrt_reduce_scatter_sum_f32_start(%{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64) -> i64
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: memref.extract_aligned_pointer_as_index %[[SEND]]
// CHECK: memref.extract_aligned_pointer_as_index %[[RECV]]
// CHECK: call @effrt_collective_wait(%[[REQ]], %{{.*}}, %{{.*}}) : (i64, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: %[[Y:.*]] = bufferization.to_tensor %[[RECV]] restrict writable
// CHECK-NEXT: return %[[Y]]
func.func @reduce_scatter_started(%x: tensor<6xf32>) -> tensor<3xf32> {
  %f = eff.reduce_scatter_start %x {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
  %e = eff.exp %x : tensor<6xf32>
  %y = eff.wait %f : tensor<3xf32>
  return %y : tensor<3xf32>
}

// An all-reduce's bucket is sent and received in one buffer: its wait
// names it twice.
// CHECK-LABEL: func.func @all_reduce_started(
// CHECK: %[[BUF:.*]] = memref.alloc() {eff.collective_buffer} : memref<6xf32>
// CHECK: %[[REQ:.*]] = call @effrt_allreduce_sum_f32_start(%{{.*}}, %{{.*}}) : (!llvm.ptr, i64) -> i64
// CHECK: memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: call @effrt_collective_wait(%[[REQ]], %{{.*}}, %{{.*}})
// CHECK: bufferization.to_tensor %{{.*}} restrict writable : memref<2xf32, strided<[1]>> to tensor<2xf32>
// CHECK: bufferization.to_tensor %{{.*}} restrict writable : memref<4xf32, strided<[1], offset: 2>> to tensor<4xf32>
func.func @all_reduce_started(%a: tensor<2xf32>, %b: tensor<4xf32>) -> (tensor<2xf32>, tensor<4xf32>) {
  %f:2 = eff.all_reduce_start %a, %b {world_size = 2 : i64} : tensor<2xf32>, tensor<4xf32>
  %s:2 = eff.wait %f#0, %f#1 : tensor<2xf32>, tensor<4xf32>
  return %s#0, %s#1 : tensor<2xf32>, tensor<4xf32>
}
