// RUN: effopt-opt %s --eff-offload-optimizer --eff-step-abi --split-input-file --verify-diagnostics | FileCheck %s

// The optimizer's state (optimizer.*: its step counter and the momentum
// buffer) goes to the host region, laid out from 0 with the state's
// alignment; the parameter and the loss scale (read by the forward and
// backward) stay in state. The update code is unchanged.
// CHECK: module attributes {eff.alignment = 64 : i64, eff.host_bytes = 128 : i64, eff.io_bytes = 128 : i64, eff.loss_offset = 64 : i64, eff.state_bytes = 128 : i64}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %arg0: tensor<4xf32> {bufferization.writable = true, eff.offset = 0 : i64, eff.parameter = @w, eff.region = "state"}
// CHECK-SAME: %arg1: tensor<i64> {bufferization.writable = true, eff.host, eff.offset = 0 : i64, eff.parameter = @optimizer.step, eff.region = "host"}
// CHECK-SAME: %arg2: tensor<4xf32> {bufferization.writable = true, eff.host, eff.offset = 64 : i64, eff.parameter = @optimizer.w.momentum_buffer, eff.region = "host"}
// CHECK-SAME: %arg3: tensor<f32> {bufferization.writable = false, eff.offset = 64 : i64, eff.parameter = @loss_scale.scale, eff.region = "state"}
// CHECK-SAME: %arg4: tensor<4xf32> {bufferization.writable = false, eff.input = "x", eff.offset = 0 : i64, eff.region = "io"}
// CHECK: eff.sgd_update %arg0, %{{.*}}, %{{.*}}, %arg1 momentum_buffer %arg2
module {
  eff.parameter trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  eff.parameter optimizer_state @optimizer.step : tensor<i64> = dense<0> : tensor<i64>
  eff.parameter optimizer_state @optimizer.w.momentum_buffer : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  eff.parameter optimizer_state @loss_scale.scale : tensor<f32> = dense<65536.0> : tensor<f32>
  func.func @train_step(%w: tensor<4xf32> {eff.parameter = @w},
                        %step: tensor<i64> {eff.parameter = @optimizer.step},
                        %buf: tensor<4xf32> {eff.parameter = @optimizer.w.momentum_buffer},
                        %scale: tensor<f32> {eff.parameter = @loss_scale.scale},
                        %x: tensor<4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.update = @w},
          tensor<4xf32> {eff.update = @optimizer.w.momentum_buffer}, tensor<i64> {eff.update = @optimizer.step}) {
    %y = eff.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %s = eff.reduce_sum %y {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    %l = eff.mul %s, %scale : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %lr = eff.lr_schedule %step {kind = "constant", lr = 1.000000e-01 : f64} : tensor<i64> -> tensor<f32>
    %w2, %buf2 = eff.sgd_update %w, %x, %lr, %step momentum_buffer %buf {momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %one = eff.constant dense<1> : tensor<i64>
    %step2 = eff.add %step, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
    return %l, %w2, %buf2, %step2 : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>
  }
}

// -----

// A step without optimizer state gets no host region.
// CHECK-LABEL: module attributes
// CHECK-NOT: eff.host_bytes
// CHECK-SAME: eff.state_bytes = 64 : i64
// CHECK-NOT: eff.host
module {
  eff.parameter trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  func.func @train_step(%w: tensor<4xf32> {eff.parameter = @w}, %x: tensor<4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.update = @w}) {
    %y = eff.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    %w2 = eff.sub %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %l, %w2 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// ZeRO's shards stay on the device.
// expected-error @+1 {{eff-offload-optimizer: the optimizer state is sharded by ZeRO stage 1; offloading sharded state is not supported (use zero stage 0)}}
module attributes {eff.zero_stage = 1 : i64, eff.world_size = 2 : i64} {
  func.func @train_step() -> () {
    return
  }
}

// -----

// expected-error @+1 {{eff-offload-optimizer needs func.func @train_step (run eff-optimizer first)}}
module {
  func.func @forward() {
    return
  }
}
