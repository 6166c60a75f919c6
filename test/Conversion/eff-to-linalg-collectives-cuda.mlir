// RUN: effopt-opt %s --convert-eff-to-linalg="collectives=cuda" | FileCheck %s --implicit-check-not="call @effrt_{{(allreduce|reduce_scatter|all_gather|shard|collective)}}"
// RUN: not effopt-opt %s --convert-eff-to-linalg="collectives=nccl" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: convert-eff-to-linalg: collectives must be cpu or cuda, got 'nccl'

// The cuda target's collectives: the CPU lowering (buffers of their own,
// one call each) with the CUDA runtime's entry points, which take the same
// arguments as device pointers and queue NCCL on the GPU.
// CHECK-DAG: func.func private @effrt_cuda_allreduce_sum_f32(!llvm.ptr, i64)
// CHECK-DAG: func.func private @effrt_cuda_reduce_scatter_sum_f32(!llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: func.func private @effrt_cuda_all_gather_f32(!llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: func.func private @effrt_cuda_shard_f32(!llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: func.func private @effrt_cuda_allreduce_sum_f32_start(!llvm.ptr, i64) -> i64
// CHECK-DAG: func.func private @effrt_cuda_reduce_scatter_sum_f32_start(!llvm.ptr, !llvm.ptr, i64) -> i64
// CHECK-DAG: func.func private @effrt_cuda_all_gather_f32_start(!llvm.ptr, !llvm.ptr, i64) -> i64
// CHECK-DAG: func.func private @effrt_cuda_collective_wait(i64, !llvm.ptr, !llvm.ptr)

// CHECK-LABEL: func.func @all_reduce(
// CHECK: %[[BUF:.*]] = memref.alloc() {eff.collective_buffer} : memref<6xf32>
// CHECK: %[[N:.*]] = arith.constant 6 : i64
// CHECK: call @effrt_cuda_allreduce_sum_f32(%{{.*}}, %[[N]])
func.func @all_reduce(%a: tensor<2xf32>, %b: tensor<4xf32>) -> (tensor<2xf32>, tensor<4xf32>) {
  %s:2 = eff.all_reduce %a, %b {world_size = 2 : i64} : tensor<2xf32>, tensor<4xf32>
  return %s#0, %s#1 : tensor<2xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @reduce_scatter(
// CHECK: %[[SEND:.*]] = memref.alloc() {eff.collective_buffer} : memref<6xf32>
// CHECK: bufferization.materialize_in_destination %{{.*}} in writable %[[SEND]]
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<3xf32>
// CHECK: %[[N:.*]] = arith.constant 3 : i64
// CHECK: call @effrt_cuda_reduce_scatter_sum_f32(%{{.*}}, %{{.*}}, %[[N]])
// CHECK: bufferization.to_tensor %[[RECV]] restrict writable
func.func @reduce_scatter(%x: tensor<6xf32>) -> tensor<3xf32> {
  %y = eff.reduce_scatter %x {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// CHECK-LABEL: func.func @all_gather(
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<6xf32>
// CHECK: call @effrt_cuda_all_gather_f32(%{{.*}}, %{{.*}}, %{{.*}})
// CHECK: bufferization.to_tensor %[[RECV]] restrict writable
func.func @all_gather(%x: tensor<3xf32>) -> tensor<6xf32> {
  %y = eff.all_gather %x {world_size = 2 : i64} : tensor<3xf32> -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// CHECK-LABEL: func.func @shard(
// CHECK: call @effrt_cuda_shard_f32(
func.func @shard(%x: tensor<6xf32>) -> tensor<3xf32> {
  %y = eff.shard %x {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// Started: the request of the `_start` call goes to
// effrt_cuda_collective_wait with both buffers, after the work between.
// CHECK-LABEL: func.func @all_gather_started(
// CHECK: %[[SEND:.*]] = memref.alloc() {eff.collective_buffer} : memref<3xf32>
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<6xf32>
// CHECK: %[[REQ:.*]] = call @effrt_cuda_all_gather_f32_start(%{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64) -> i64
// CHECK: math.exp
// CHECK: memref.extract_aligned_pointer_as_index %[[SEND]]
// CHECK: memref.extract_aligned_pointer_as_index %[[RECV]]
// CHECK: call @effrt_cuda_collective_wait(%[[REQ]], %{{.*}}, %{{.*}}) : (i64, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: bufferization.to_tensor %[[RECV]] restrict writable
func.func @all_gather_started(%x: tensor<3xf32>) -> tensor<6xf32> {
  %f = eff.all_gather_start %x {world_size = 2 : i64} : tensor<3xf32> -> tensor<6xf32>
  %e = eff.exp %x : tensor<3xf32>
  %y = eff.wait %f : tensor<6xf32>
  return %y : tensor<6xf32>
}

// CHECK-LABEL: func.func @sums_started(
// CHECK: call @effrt_cuda_allreduce_sum_f32_start(
// CHECK: call @effrt_cuda_reduce_scatter_sum_f32_start(
// CHECK: call @effrt_cuda_collective_wait(
// CHECK: call @effrt_cuda_collective_wait(
func.func @sums_started(%a: tensor<2xf32>, %x: tensor<6xf32>) -> (tensor<2xf32>, tensor<3xf32>) {
  %f = eff.all_reduce_start %a {world_size = 2 : i64} : tensor<2xf32>
  %g = eff.reduce_scatter_start %x {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
  %s = eff.wait %f : tensor<2xf32>
  %y = eff.wait %g : tensor<3xf32>
  return %s, %y : tensor<2xf32>, tensor<3xf32>
}
