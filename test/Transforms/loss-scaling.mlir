// RUN: effopt-opt %s --eff-loss-scaling | FileCheck %s
// RUN: effopt-opt %s --eff-loss-scaling="init-scale=1024 hysteresis=2 min-scale=1 growth-interval=100" | FileCheck %s --check-prefix=OPTS
// RUN: effopt-opt %s --eff-loss-scaling="static=true" | FileCheck %s --check-prefix=STATIC
// RUN: effopt-opt %s --eff-loss-scaling --eff-optimizer="optimizer=adamw lr=0.1" | FileCheck %s --check-prefix=SKIP

// The joint step as eff-autodiff leaves it: loss = sum(w * x), seeded with
// the marked constant 1.
module {
  eff.parameter trainable @w : tensor<4xf32>
  eff.parameter buffer @running : tensor<4xf32>
  func.func @forward_backward(%w: tensor<4xf32> {eff.parameter = @w},
                              %running: tensor<4xf32> {eff.parameter = @running},
                              %x: tensor<4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.buffer_update = @running},
          tensor<4xf32> {eff.gradient = @w}) {
    %p = eff.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %loss = eff.reduce_sum %p {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    %seed = eff.constant {eff.loss_seed} dense<1.0> : tensor<f32>
    %gb = eff.broadcast_to %seed : tensor<f32> to tensor<4xf32>
    %gw = eff.mul %gb, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %loss, %x, %gw : tensor<f32>, tensor<4xf32>, tensor<4xf32>
  }
}

// CHECK-DAG: eff.parameter optimizer_state @loss_scale.scale : tensor<f32> = dense<6.553600e+04> : tensor<f32>
// CHECK-DAG: eff.parameter optimizer_state @loss_scale.growth_tracker : tensor<i64> = dense<0> : tensor<i64>
// CHECK-DAG: eff.parameter optimizer_state @loss_scale.hysteresis : tensor<i64> = dense<1> : tensor<i64>
// CHECK-DAG: eff.parameter optimizer_state @loss_scale.skipped_steps : tensor<i64> = dense<0> : tensor<i64>
// CHECK-DAG: eff.parameter optimizer_state @loss_scale.last_step_skipped : tensor<i64> = dense<0> : tensor<i64>
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[SCALE:[a-z0-9]+]]: tensor<f32> {eff.parameter = @loss_scale.scale}
// CHECK-SAME: %[[TRACKER:[a-z0-9]+]]: tensor<i64> {eff.parameter = @loss_scale.growth_tracker}
// CHECK-SAME: %[[HYST:[a-z0-9]+]]: tensor<i64> {eff.parameter = @loss_scale.hysteresis}
// CHECK-SAME: %[[SKIPPED:[a-z0-9]+]]: tensor<i64> {eff.parameter = @loss_scale.skipped_steps}
// CHECK-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.buffer_update = @running}, tensor<4xf32> {eff.gradient = @w}, tensor<i1> {eff.skip_step}, tensor<f32> {eff.buffer_update = @loss_scale.scale}, tensor<i64> {eff.buffer_update = @loss_scale.growth_tracker}, tensor<i64> {eff.buffer_update = @loss_scale.hysteresis}, tensor<i64> {eff.buffer_update = @loss_scale.skipped_steps}, tensor<i64> {eff.buffer_update = @loss_scale.last_step_skipped})
// CHECK-SAME: attributes {eff.loss_scaled}
// The backward starts from the scale, not from 1.
// CHECK-NOT: eff.loss_seed
// CHECK: %[[GB:.*]] = eff.broadcast_to %[[SCALE]] : tensor<f32> to tensor<4xf32>
// CHECK: %[[GW:.*]] = eff.mul %[[GB]]
// CHECK: %[[INF:.*]], %[[G:.*]] = eff.unscale_gradients %[[SCALE]], %[[GW]] : (tensor<f32>, tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>)
// CHECK: %[[NS:.*]], %[[NT:.*]], %[[NH:.*]] = eff.update_loss_scale %[[SCALE]], %[[TRACKER]], %[[HYST]], %[[INF]] {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 2000 : i64, hysteresis = 1 : i64, min_scale = 0.000000e+00 : f64}
// CHECK: %[[ONE:.*]] = eff.cast %[[INF]] : tensor<i1> to tensor<i64>
// CHECK: %[[TOTAL:.*]] = eff.add %[[SKIPPED]], %[[ONE]]
// CHECK: return %{{.*}}, %{{.*}}, %[[G]], %[[INF]], %[[NS]], %[[NT]], %[[NH]], %[[TOTAL]], %[[ONE]] :

// OPTS-DAG: eff.parameter optimizer_state @loss_scale.scale : tensor<f32> = dense<1.024000e+03> : tensor<f32>
// OPTS-DAG: eff.parameter optimizer_state @loss_scale.hysteresis : tensor<i64> = dense<2> : tensor<i64>
// OPTS: eff.update_loss_scale {{.*}} {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 100 : i64, hysteresis = 2 : i64, min_scale = 1.000000e+00 : f64}

// STATIC-LABEL: func.func @forward_backward(
// STATIC: eff.unscale_gradients
// STATIC-NOT: eff.update_loss_scale
// STATIC: return

// On a skipped step the optimizer keeps the parameter, its moments and the
// step counter; the buffer and the loss-scale state are updated anyway.
// SKIP-LABEL: func.func @train_step(
// SKIP-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {eff.parameter = @w}
// SKIP-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {eff.parameter = @optimizer.step}
// SKIP-SAME: %[[M:[a-z0-9]+]]: tensor<4xf32> {eff.parameter = @optimizer.w.exp_avg}
// SKIP-SAME: %[[V:[a-z0-9]+]]: tensor<4xf32> {eff.parameter = @optimizer.w.exp_avg_sq}
// SKIP: %[[INF:.*]], %[[G:.*]] = eff.unscale_gradients
// SKIP: %[[NW:.*]], %[[NM:.*]], %[[NV:.*]] = eff.adam_update %[[W]], %[[G]], %[[M]], %[[V]]
// SKIP: %[[NEXT:.*]] = eff.add %[[STEP]]
// SKIP-DAG: %[[KW:.*]] = eff.where %[[INF]], %[[W]], %[[NW]]
// SKIP-DAG: %[[KM:.*]] = eff.where %[[INF]], %[[M]], %[[NM]]
// SKIP-DAG: %[[KV:.*]] = eff.where %[[INF]], %[[V]], %[[NV]]
// SKIP-DAG: %[[KS:.*]] = eff.where %[[INF]], %[[STEP]], %[[NEXT]]
// SKIP: return {{.*}}%[[KW]], %[[KM]], %[[KV]], %[[KS]]
