// RUN: effopt-opt %s --eff-autodiff --eff-grad-accum=steps=4 --split-input-file | FileCheck %s
// RUN: effopt-opt %s --eff-autodiff --eff-grad-accum=steps=1 --split-input-file | FileCheck %s --check-prefix=SINGLE

// A token-level cross-entropy with ignore_index: each micro-batch of 2 rows
// (of 8) weighs its count of non-ignored targets, and the sums are divided
// by the global count after the loop. The bf16 cast of the fp32 master
// weight does not depend on the micro-batch: it is hoisted out of the loop
// (once per optimizer step), like the backward's seed.

// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<5x8xf32> {eff.parameter = @w}
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x8xf32> {eff.input = "x"}
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<8xi64> {eff.input = "t"}
// CHECK-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<5x8xf32> {eff.gradient = @w})
// CHECK-DAG: %[[WB:.*]] = eff.cast %[[W]] : tensor<5x8xf32> to tensor<5x8xbf16>
// CHECK-DAG: %[[SEED:.*]] = eff.constant {eff.loss_seed} dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZERO:.*]] = eff.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ACC0:.*]] = eff.constant dense<0.000000e+00> : tensor<5x8xf32>
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[LOOP:.*]]:3 = scf.for %[[K:.*]] = %{{.*}} to %[[C4]] step %{{.*}} iter_args(%[[LSUM:.*]] = %[[ZERO]], %[[WSUM:.*]] = %[[ZERO]], %[[ACC:.*]] = %[[ACC0]]) -> (tensor<f32>, tensor<f32>, tensor<5x8xf32>)
// CHECK: %[[OFF:.*]] = arith.muli %[[K]], %{{.*}} : index
// CHECK: %[[XS:.*]] = tensor.extract_slice %[[X]][%[[OFF]], 0] [2, 8] [1, 1] : tensor<8x8xf32> to tensor<2x8xf32>
// CHECK: %[[TS:.*]] = tensor.extract_slice %[[T]][%{{.*}}] [2] [1] : tensor<8xi64> to tensor<2xi64>
// CHECK-NOT: eff.cast %[[W]]
// CHECK: %[[Z:.*]] = eff.linear %{{.*}}, %[[WB]]
// CHECK: %[[L:.*]] = eff.softmax_cross_entropy mean, %{{.*}}, %[[TS]] {ignore_index = -100 : i64}
// CHECK: eff.softmax_cross_entropy_grad mean, %{{.*}}, %[[TS]], %[[SEED]]
// CHECK: %[[COUNTED:.*]] = eff.cmp ne, %[[TS]], %{{.*}} : (tensor<2xi64>, tensor<i64>) -> tensor<2xi1>
// CHECK: %[[ONES:.*]] = eff.cast %[[COUNTED]] : tensor<2xi1> to tensor<2xf32>
// CHECK: %[[N:.*]] = eff.reduce_sum %[[ONES]] {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
// CHECK: %[[NZ:.*]] = eff.cmp gt, %[[N]]
// CHECK: %[[WL:.*]] = eff.mul %[[L]], %[[N]]
// CHECK: eff.where %[[NZ]], %[[WL]]
// CHECK: %[[LNEW:.*]] = eff.add %[[LSUM]]
// CHECK: bufferization.materialize_in_destination %[[LNEW]] in %[[LSUM]]
// CHECK: %[[WNEW:.*]] = eff.add %[[WSUM]], %[[N]]
// CHECK: bufferization.materialize_in_destination %[[WNEW]] in %[[WSUM]]
// CHECK: %[[WG:.*]] = eff.mul %{{.*}}, %[[N]] : (tensor<5x8xf32>, tensor<f32>) -> tensor<5x8xf32>
// CHECK: %[[GSUM:.*]] = eff.add %[[ACC]], %{{.*}} : (tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<5x8xf32>
// CHECK: %[[GNEW:.*]] = bufferization.materialize_in_destination %[[GSUM]] in %[[ACC]]
// CHECK: scf.yield %{{.*}}, %{{.*}}, %[[GNEW]]
// CHECK: } {eff.accumulation}
// CHECK: %[[LOSS:.*]] = eff.div %[[LOOP]]#0, %[[LOOP]]#1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: %[[GRAD:.*]] = eff.div %[[LOOP]]#2, %[[LOOP]]#1 : (tensor<5x8xf32>, tensor<f32>) -> tensor<5x8xf32>
// CHECK: return %[[LOSS]], %[[GRAD]]

// SINGLE-LABEL: func.func @forward_backward
// SINGLE-NOT: scf.for
// SINGLE: return
module {
  eff.parameter trainable @w : tensor<5x8xf32>
  func.func @forward(%w: tensor<5x8xf32> {eff.parameter = @w},
                     %x: tensor<2x8xf32> {eff.input = "x"}, %t: tensor<2xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<2x5xf32> {eff.output = "logits"}) {
    %wb = eff.cast %w : tensor<5x8xf32> to tensor<5x8xbf16>
    %xb = eff.cast %x : tensor<2x8xf32> to tensor<2x8xbf16>
    %zb = eff.linear %xb, %wb {transpose_b = true} : (tensor<2x8xbf16>, tensor<5x8xbf16>) -> tensor<2x5xbf16>
    %z = eff.cast %zb : tensor<2x5xbf16> to tensor<2x5xf32>
    %loss = eff.softmax_cross_entropy mean, %z, %t {ignore_index = -100 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32>
    return %loss, %z : tensor<f32>, tensor<2x5xf32>
  }
}

// -----

// BatchNorm's running statistics are carried through the iterations (each
// micro-batch updates them in turn); a loss without ignore_index is the
// plain mean of the micro-batch losses (weight 1, divided by K).

// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: %[[RM:[a-z0-9_]+]]: tensor<2xf32> {eff.parameter = @rm}
// CHECK-SAME: %[[RV:[a-z0-9_]+]]: tensor<2xf32> {eff.parameter = @rv}
// CHECK-SAME: %{{.*}}: tensor<16x2xf32> {eff.input = "x"}
// CHECK-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<2xf32> {eff.buffer_update = @rm}, tensor<2xf32> {eff.buffer_update = @rv}, tensor<2xf32> {eff.gradient = @g}, tensor<2xf32> {eff.gradient = @b})
// CHECK-DAG: %[[RM0:.*]] = bufferization.alloc_tensor() copy(%[[RM]])
// CHECK-DAG: %[[RV0:.*]] = bufferization.alloc_tensor() copy(%[[RV]])
// CHECK-DAG: %[[ONE:.*]] = eff.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[LOOP:.*]]:6 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[CM:.*]] = %[[RM0]], %[[CV:.*]] = %[[RV0]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [4, 2] [1, 1] : tensor<16x2xf32> to tensor<4x2xf32>
// CHECK: %{{.*}}, %[[NM:[a-z_0-9]+]], %[[NV:[a-z_0-9]+]], %{{.*}}, %{{.*}} = eff.batch_norm_train %{{.*}}, %{{.*}}, %{{.*}}, %[[CM]], %[[CV]]
// CHECK-NOT: eff.where
// CHECK: eff.add %{{.*}}, %[[ONE]]
// CHECK: bufferization.materialize_in_destination %[[NM]] in %[[CM]]
// CHECK: bufferization.materialize_in_destination %[[NV]] in %[[CV]]
// CHECK: } {eff.accumulation}
// CHECK: %[[DG:.*]] = eff.div %[[LOOP]]#4, %[[LOOP]]#1
// CHECK: %[[DB:.*]] = eff.div %[[LOOP]]#5, %[[LOOP]]#1
// CHECK: return %{{.*}}, %[[LOOP]]#2, %[[LOOP]]#3, %[[DG]], %[[DB]]
module {
  eff.parameter trainable @g : tensor<2xf32>
  eff.parameter trainable @b : tensor<2xf32>
  eff.parameter buffer @rm : tensor<2xf32>
  eff.parameter buffer @rv : tensor<2xf32>
  func.func @forward(%g: tensor<2xf32> {eff.parameter = @g}, %b: tensor<2xf32> {eff.parameter = @b},
                     %rm: tensor<2xf32> {eff.parameter = @rm}, %rv: tensor<2xf32> {eff.parameter = @rv},
                     %x: tensor<4x2xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<2xf32> {eff.buffer_update = @rm},
          tensor<2xf32> {eff.buffer_update = @rv}) {
    %y:5 = eff.batch_norm_train %x, %g, %b, %rm, %rv {epsilon = 1.0e-05 : f64, momentum = 1.0e-01 : f64}
        : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
        -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
    %s = eff.mul %y#0, %y#0 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %loss = eff.reduce_mean %s {axes = array<i64: 0, 1>} : tensor<4x2xf32> -> tensor<f32>
    return %loss, %y#1, %y#2 : tensor<f32>, tensor<2xf32>, tensor<2xf32>
  }
}
