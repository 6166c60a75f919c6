// RUN: effopt-opt %s --eff-optimizer="optimizer=sgd lr=0.1 momentum=0.9 weight-decay=0.01" --split-input-file | FileCheck %s --check-prefix=SGD
// RUN: effopt-opt %s --eff-optimizer="optimizer=adamw lr=3e-4 weight-decay=0.1 no-weight-decay=.*bias schedule=cosine warmup-steps=10 total-steps=100 clip-grad-norm=1.0 amsgrad=true" --split-input-file | FileCheck %s --check-prefix=ADAMW
// RUN: effopt-opt %s --eff-optimizer="optimizer=adam beta1=0.8 beta2=0.99 eps=1e-6" --split-input-file | FileCheck %s --check-prefix=ADAM

module {
  eff.parameter trainable @w : tensor<4x2xf32>
  eff.parameter trainable @bias : tensor<4xf32>
  eff.parameter buffer @running : tensor<4xf32>
  eff.parameter trainable @unused : tensor<3xf32>
  func.func @forward_backward(%w: tensor<4x2xf32> {eff.parameter = @w}, %bias: tensor<4xf32> {eff.parameter = @bias},
                              %running: tensor<4xf32> {eff.parameter = @running}, %unused: tensor<3xf32> {eff.parameter = @unused},
                              %x: tensor<2xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.output = "y"}, tensor<4xf32> {eff.buffer_update = @running},
          tensor<4x2xf32> {eff.gradient = @w}, tensor<4xf32> {eff.gradient = @bias})
      attributes {eff.no_gradient = [@unused]} {
    %loss = eff.reduce_sum %x {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %loss, %bias, %running, %w, %bias : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4x2xf32>, tensor<4xf32>
  }
}

// SGD-DAG: eff.parameter optimizer_state @optimizer.step : tensor<i64> = dense<0> : tensor<i64>
// SGD-DAG: eff.parameter optimizer_state @optimizer.w.momentum_buffer : tensor<4x2xf32> = dense<0.000000e+00> : tensor<4x2xf32>
// SGD-DAG: eff.parameter optimizer_state @optimizer.bias.momentum_buffer : tensor<4xf32>
// SGD-LABEL: func.func @train_step(
// SGD-SAME: %[[W:[a-z0-9]+]]: tensor<4x2xf32> {eff.parameter = @w}
// SGD-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {eff.parameter = @optimizer.step}
// SGD-SAME: %[[WBUF:[a-z0-9]+]]: tensor<4x2xf32> {eff.parameter = @optimizer.w.momentum_buffer}
// SGD-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.output = "y"}, tensor<4xf32> {eff.update = @running}, tensor<4x2xf32> {eff.update = @w}, tensor<4x2xf32> {eff.update = @optimizer.w.momentum_buffer}, tensor<4xf32> {eff.update = @bias}, tensor<4xf32> {eff.update = @optimizer.bias.momentum_buffer}, tensor<i64> {eff.update = @optimizer.step})
// SGD: %[[LR:.*]] = eff.lr_schedule %[[STEP]] {kind = "constant", lr = 1.000000e-01 : f64} : tensor<i64> -> tensor<f32>
// SGD: %[[NEWW:.*]], %[[NEWBUF:.*]] = eff.sgd_update %[[W]], %[[W]], %[[LR]], %[[STEP]] momentum_buffer %[[WBUF]] {momentum = 9.000000e-01 : f64, weight_decay = 1.000000e-02 : f64}
// SGD: %[[ONE:.*]] = eff.constant dense<1> : tensor<i64>
// SGD: %[[NEXT:.*]] = eff.add %[[STEP]], %[[ONE]] : (tensor<i64>, tensor<i64>) -> tensor<i64>
// SGD: return {{.*}}, %[[NEWW]], %[[NEWBUF]], {{.*}}, %[[NEXT]] :
// SGD-NOT: @unused.momentum_buffer

// ADAMW-DAG: eff.parameter optimizer_state @optimizer.w.max_exp_avg_sq
// ADAMW-LABEL: func.func @train_step(
// ADAMW: %[[LR:.*]] = eff.lr_schedule %{{.*}} {kind = "cosine", lr = 3.000000e-04 : f64, total_steps = 100 : i64, warmup_steps = 10 : i64}
// ADAMW: %[[NORM:.*]] = eff.sqrt
// ADAMW: %[[COEF:.*]] = eff.min
// ADAMW: %[[GW:.*]] = eff.mul %{{.*}}, %[[COEF]] : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
// ADAMW: %[[GB:.*]] = eff.mul %{{.*}}, %[[COEF]] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// ADAMW: eff.adam_update %{{.*}}, %[[GW]], %{{.*}}, %{{.*}}, %[[LR]], %{{.*}} max_exp_avg_sq %{{.*}} {decoupled, weight_decay = 1.000000e-01 : f64}
// ADAMW: eff.adam_update %{{.*}}, %[[GB]], %{{.*}}, %{{.*}}, %[[LR]], %{{.*}} max_exp_avg_sq %{{.*}} {decoupled}

// ADAM-LABEL: func.func @train_step(
// ADAM: eff.adam_update {{.*}} {beta1 = 8.000000e-01 : f64, beta2 = 0.98999{{[0-9]*}} : f64, eps = 9.99{{[0-9]*}}E-7 : f64}
// ADAM-NOT: decoupled
