// RUN: effopt-opt %s --eff-zero="world-size=2" | FileCheck %s

// A token mean with ignore_index: each rank weighs its result by its count
// of counted targets (0 for a rank without any, whose mean is 0/0) and the
// sums are divided by the global count: the global mean, not a mean of
// the ranks' means.
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
// CHECK: %[[LOSS:.*]] = eff.softmax_cross_entropy
// CHECK: %[[IGNORE:.*]] = eff.constant dense<-100> : tensor<i64>
// CHECK: %[[COUNTED:.*]] = eff.cmp ne, %[[T]], %[[IGNORE]]
// CHECK: %[[ONES:.*]] = eff.cast %[[COUNTED]]
// CHECK: %[[COUNT:.*]] = eff.reduce_sum %[[ONES]]
// CHECK-DAG: %[[HAS:.*]] = eff.cmp gt, %[[COUNT]]
// CHECK-DAG: %[[LW:.*]] = eff.mul %[[LOSS]], %[[COUNT]]
// CHECK-DAG: %[[GW:.*]] = eff.mul %[[W]], %[[COUNT]]
// CHECK-DAG: %[[LW0:.*]] = eff.where %[[HAS]], %[[LW]]
// CHECK-DAG: %[[GW0:.*]] = eff.where %[[HAS]], %[[GW]]
// The tensors in the order the step produces them (the gradient here is
// the argument itself, before the loss).
// CHECK: %[[SUM:.*]]:3 = eff.all_reduce %[[COUNT]], %[[GW0]], %[[LW0]] {world_size = 2 : i64} : tensor<f32>, tensor<5xf32>, tensor<f32>
// CHECK-DAG: %[[GMEAN:.*]] = eff.div %[[SUM]]#1, %[[SUM]]#0
// CHECK-DAG: %[[LMEAN:.*]] = eff.div %[[SUM]]#2, %[[SUM]]#0
// CHECK: return %[[LMEAN]], %[[GMEAN]]
