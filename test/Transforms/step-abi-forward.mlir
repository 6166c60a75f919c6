// RUN: effopt-opt %s --eff-step-abi=mode=forward --split-input-file --verify-diagnostics | FileCheck %s

// effc --mode forward: @forward keeps every result, of any dtype and count.
// Parameters are read-only state; inputs and then every result are placed
// in io, 64-byte aligned. There is no loss.
// CHECK: module attributes {eff.alignment = 64 : i64, eff.io_bytes = 256 : i64, eff.state_bytes = 64 : i64, eff.step_kind = "forward"}
// CHECK: func.func @forward(
// CHECK-SAME: %arg0: tensor<4xf32> {bufferization.writable = false, eff.offset = 0 : i64, eff.parameter = @w, eff.region = "state"}
// CHECK-SAME: %arg1: tensor<4xf32> {bufferization.writable = false, eff.input = "x", eff.offset = 0 : i64, eff.region = "io"}
// CHECK-SAME: %arg2: tensor<2x3xi64> {bufferization.writable = false, eff.input = "i", eff.offset = 64 : i64, eff.region = "io"}
// CHECK-SAME: -> (tensor<4xf32> {eff.offset = 128 : i64, eff.output = "y", eff.region = "io"},
// CHECK-SAME: tensor<4xi1> {eff.offset = 192 : i64, eff.output = "b", eff.region = "io"},
// CHECK-SAME: tensor<0xf32> {eff.offset = 256 : i64, eff.output = "e", eff.region = "io"})
// CHECK-NOT: materialize_in_destination
module {
  eff.parameter trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  func.func @forward(%w: tensor<4xf32> {eff.parameter = @w}, %x: tensor<4xf32> {eff.input = "x"},
                     %i: tensor<2x3xi64> {eff.input = "i"})
      -> (tensor<4xf32> {eff.output = "y"}, tensor<4xi1> {eff.output = "b"}, tensor<0xf32> {eff.output = "e"}) {
    %y = eff.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = eff.cmp gt, %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %e = eff.constant dense<> : tensor<0xf32>
    return %y, %b, %e : tensor<4xf32>, tensor<4xi1>, tensor<0xf32>
  }
}

// -----

// expected-error @+1 {{eff-step-abi{mode=forward} needs func.func @forward}}
module {
  func.func @train_step() {
    return
  }
}
