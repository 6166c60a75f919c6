// RUN: effopt-opt %s --eff-zero="world-size=2" | FileCheck %s
// RUN: effopt-opt %s --eff-zero="world-size=2" --convert-eff-to-linalg | FileCheck %s --check-prefix=LOWER

// A token mean with ignore_index: each rank weighs its loss and gradients
// by its count of counted targets (0 for a rank without any, whose mean is
// 0/0) and the sums are divided by the global count: the global mean, not
// a mean of the ranks' means. The count (from the labels alone) comes
// first; it and the weighted loss are summed in a bucket of their own, the
// gradients after it.
module {
  eff.parameter trainable @w : tensor<5xf32>
  func.func @forward_backward(%w: tensor<5xf32> {eff.parameter = @w},
                              %z: tensor<2x5xf32> {eff.input = "z"},
                              %t: tensor<2xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<5xf32> {eff.gradient = @w}) {
    %zw = eff.mul %z, %w : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
    %loss = eff.softmax_cross_entropy mean, %zw, %t {ignore_index = -100 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32>
    return %loss, %w : tensor<f32>, tensor<5xf32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<5xf32>
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<2xi64>
// CHECK-DAG: %[[IGNORE:.*]] = eff.constant dense<-100> : tensor<i64>
// CHECK-DAG: %[[ZERO:.*]] = eff.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[COUNTED:.*]] = eff.cmp ne, %[[T]], %[[IGNORE]]
// CHECK-NEXT: %[[ONES:.*]] = eff.cast %[[COUNTED]]
// CHECK-NEXT: %[[COUNT:.*]] = eff.reduce_sum %[[ONES]]
// CHECK-NEXT: %[[HAS:.*]] = eff.cmp gt, %[[COUNT]], %[[ZERO]]
// The gradient (the argument itself here) is final before the loss: it is
// weighed and summed first; the division waits for the global count.
// CHECK-NEXT: %[[GW:.*]] = eff.mul %[[W]], %[[COUNT]]
// CHECK-NEXT: %[[GW0:.*]] = eff.where %[[HAS]], %[[GW]], %[[ZERO]]
// CHECK-NEXT: %[[GSUM:.*]] = eff.all_reduce %[[GW0]] {world_size = 2 : i64} : tensor<5xf32>
// CHECK: %[[LOSS:.*]] = eff.softmax_cross_entropy
// CHECK-NEXT: %[[LW:.*]] = eff.mul %[[LOSS]], %[[COUNT]]
// CHECK-NEXT: %[[LW0:.*]] = eff.where %[[HAS]], %[[LW]], %[[ZERO]]
// CHECK-NEXT: %[[LSUM:.*]]:2 = eff.all_reduce %[[COUNT]], %[[LW0]] {world_size = 2 : i64} : tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[GMEAN:.*]] = eff.div %[[GSUM]], %[[LSUM]]#0
// CHECK-NEXT: %[[LMEAN:.*]] = eff.div %[[LSUM]]#1, %[[LSUM]]#0
// CHECK-NEXT: return %[[LMEAN]], %[[GMEAN]]

// The CPU lowering of a bucket of two tensors: one buffer, each tensor a
// contiguous view of it, summed in place by one call of the runtime.
// LOWER: func.func private @effrt_allreduce_sum_f32(!llvm.ptr, i64)
// LOWER: %[[BUF:.*]] = memref.alloc() {eff.collective_buffer} : memref<2xf32>
// LOWER: %[[V0:.*]] = memref.subview %[[BUF]][0] [1] [1]
// LOWER: %[[S0:.*]] = memref.collapse_shape %[[V0]] []
// LOWER: bufferization.materialize_in_destination %{{.*}} in writable %[[S0]]
// LOWER: %[[V1:.*]] = memref.subview %[[BUF]][1] [1] [1]
// LOWER: %[[S1:.*]] = memref.collapse_shape %[[V1]] []
// LOWER: bufferization.materialize_in_destination %{{.*}} in writable %[[S1]]
// LOWER: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// LOWER: %[[PTR:.*]] = llvm.inttoptr
// LOWER: %[[COUNT:.*]] = arith.constant 2 : i64
// LOWER: call @effrt_allreduce_sum_f32(%[[PTR]], %[[COUNT]])
// LOWER: bufferization.to_tensor %[[S0]] restrict writable
// LOWER: bufferization.to_tensor %[[S1]] restrict writable
