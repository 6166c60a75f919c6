// RUN: effopt-opt %s --eff-offload-optimizer=master-weights=true --split-input-file | FileCheck %s
// RUN: effopt-opt %s --eff-offload-optimizer --split-input-file | FileCheck %s --check-prefix=STATE-ONLY

// Under autocast, @w is a master weight: the step reads it only through
// casts to bf16 (the forward's, and the backward's recomputed one) and the
// optimizer's update. It moves to the host; a bf16 copy, initialised to the
// cast of its initial value (to nearest, ties to even: 1 + 2^-8 -> 1.0,
// 1 + 3 * 2^-8 -> 1.015625), replaces every cast and is updated to the cast
// of the new @w. @ln is read in fp32: it stays on the device.
// CHECK: eff.parameter trainable @w : tensor<4xf32>
// CHECK-NEXT: eff.parameter buffer @w.bf16 : tensor<4xbf16> = dense<[1.000000e+00, 1.015630e+00, -2.000000e+00, 5.000000e-01]> : tensor<4xbf16> {eff.copy_of = @w}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {eff.host, eff.parameter = @w}
// CHECK-SAME: %[[LN:[a-z0-9]+]]: tensor<4xf32> {eff.parameter = @ln}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {eff.host, eff.parameter = @optimizer.step}
// CHECK-SAME: %[[COPY:[a-z0-9]+]]: tensor<4xbf16> {eff.parameter = @w.bf16}
// CHECK-SAME: tensor<4xbf16> {eff.update = @w.bf16}
// CHECK-NOT: eff.cast %[[W]]
// CHECK: %[[Y:.*]] = eff.mul %[[COPY]], %{{.*}} : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
// CHECK: eff.mul %[[COPY]], %{{.*}}
// CHECK: %[[NEW:.*]] = eff.sgd_update %[[W]]
// CHECK-NEXT: %[[NEWCOPY:.*]] = eff.cast %[[NEW]] : tensor<4xf32> to tensor<4xbf16>
// CHECK: return {{.*}}, %[[NEWCOPY]] :

// Without master-weights only the optimizer's state moves.
// STATE-ONLY-NOT: @w.bf16
// STATE-ONLY: %{{[a-z0-9]+}}: tensor<4xf32> {eff.parameter = @w}
// STATE-ONLY: eff.cast %arg0
#opt = loc(fused<"eff.optimizer">["update"])
module {
  eff.parameter trainable @w : tensor<4xf32> = dense<[1.00390625, 1.01171875, -2.0, 0.5]> : tensor<4xf32>
  eff.parameter trainable @ln : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  eff.parameter optimizer_state @optimizer.step : tensor<i64> = dense<0> : tensor<i64>
  func.func @train_step(%w: tensor<4xf32> {eff.parameter = @w}, %ln: tensor<4xf32> {eff.parameter = @ln},
                        %step: tensor<i64> {eff.parameter = @optimizer.step},
                        %x: tensor<4xbf16> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.update = @w},
          tensor<4xf32> {eff.update = @ln}, tensor<i64> {eff.update = @optimizer.step}) {
    %wc = eff.cast %w : tensor<4xf32> to tensor<4xbf16>
    %y = eff.mul %wc, %x : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    %yf = eff.cast %y : tensor<4xbf16> to tensor<4xf32>
    %z = eff.mul %yf, %ln : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = eff.reduce_sum %z {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    %wc2 = eff.cast %w {eff.recomputed} : tensor<4xf32> to tensor<4xbf16>
    %g = eff.mul %wc2, %x : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    %gf = eff.cast %g : tensor<4xbf16> to tensor<4xf32>
    %lr = eff.lr_schedule %step {kind = "constant", lr = 1.000000e-01 : f64} : tensor<i64> -> tensor<f32> loc(#opt)
    %w2 = eff.sgd_update %w, %gf, %lr, %step : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> tensor<4xf32> loc(#opt)
    %ln2 = eff.sgd_update %ln, %z, %lr, %step : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> tensor<4xf32> loc(#opt)
    %one = eff.constant dense<1> : tensor<i64>
    %step2 = eff.add %step, %one : (tensor<i64>, tensor<i64>) -> tensor<i64> loc(#opt)
    return %l, %w2, %ln2, %step2 : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>
  }
}

// -----

// A master weight without a gradient is not updated: nothing to copy back,
// it stays where it is.
// CHECK-LABEL: module
// CHECK-NOT: @frozen_w.bf16
// CHECK: tensor<4xf32> {eff.parameter = @frozen_w}
module {
  eff.parameter trainable @frozen_w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  func.func @train_step(%w: tensor<4xf32> {eff.parameter = @frozen_w}, %x: tensor<4xbf16> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %wc = eff.cast %w : tensor<4xf32> to tensor<4xbf16>
    %y = eff.mul %wc, %x : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    %yf = eff.cast %y : tensor<4xbf16> to tensor<4xf32>
    %l = eff.reduce_sum %yf {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
