// RUN: effopt-opt %s --eff-step-abi --split-input-file --verify-diagnostics | FileCheck %s
// RUN: effopt-opt %s --pass-pipeline="builtin.module(eff-step-abi{alignment=256})" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=ALIGN

// State arguments are laid out in "state", inputs then the loss in "io",
// 64-byte aligned. Only updated state is writable; the update goes into its
// argument and the other forward output (%y) is dropped.
// CHECK: module attributes {eff.alignment = 64 : i64, eff.io_bytes = 128 : i64, eff.loss_offset = 64 : i64, eff.state_bytes = 128 : i64}
// CHECK: func.func @train_step(
// CHECK-SAME: %arg0: tensor<4xf32> {bufferization.writable = true, eff.offset = 0 : i64, eff.parameter = @w, eff.region = "state"}
// CHECK-SAME: %arg1: tensor<4xf32> {bufferization.writable = false, eff.offset = 64 : i64, eff.parameter = @m, eff.region = "state"}
// CHECK-SAME: %arg2: tensor<4xf32> {bufferization.writable = false, eff.input = "x", eff.offset = 0 : i64, eff.region = "io"}
// CHECK-SAME: -> (tensor<f32> {eff.offset = 64 : i64, eff.output = "loss"}, tensor<4xf32> {eff.updates_arg = 0 : i64})
// CHECK: %[[NEW:.*]] = eff.sub %arg0, %arg2
// CHECK: %[[IN_PLACE:.*]] = bufferization.materialize_in_destination %[[NEW]] in %arg0
// CHECK: return %{{.*}}, %[[IN_PLACE]] : tensor<f32>, tensor<4xf32>

// A target's alignment (256 for a GPU's library calls) spaces every offset
// and rounds every region size.
// ALIGN: module attributes {eff.alignment = 256 : i64, eff.io_bytes = 512 : i64, eff.loss_offset = 256 : i64, eff.state_bytes = 512 : i64}
// ALIGN: func.func @train_step(
// ALIGN-SAME: eff.offset = 0 : i64, eff.parameter = @w
// ALIGN-SAME: eff.offset = 256 : i64, eff.parameter = @m
// ALIGN-SAME: eff.input = "x", eff.offset = 0 : i64
// ALIGN-SAME: -> (tensor<f32> {eff.offset = 256 : i64
module {
  eff.parameter trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  eff.parameter buffer @m : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  func.func @train_step(%w: tensor<4xf32> {eff.parameter = @w}, %m: tensor<4xf32> {eff.parameter = @m},
                        %x: tensor<4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.output = "y"}, tensor<4xf32> {eff.update = @w}) {
    %y = eff.mul %w, %m : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    %w2 = eff.sub %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %l, %y, %w2 : tensor<f32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{eff-step-abi needs func.func @train_step}}
module {
  func.func @forward() {
    return
  }
}
