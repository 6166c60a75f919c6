// RUN: effopt-opt %s --eff-offload-optimizer --eff-step-abi --convert-eff-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --eff-step-entry | FileCheck %s

// A step with its optimizer state in host memory (eff-offload-optimizer):
// the entry point takes the host region as a fourth argument, and the
// momentum buffer is a view of it, updated in place there.
// CHECK: func.func @effx_step(
// CHECK-SAME: %[[STATE:[^:]*]]: memref<?xi8>, %[[ARENA:[^:]*]]: memref<?xi8>, %[[IO:[^:]*]]: memref<?xi8>, %[[HOST:[^:]*]]: memref<?xi8>)
// CHECK-SAME: eff.arena_arg = 1
// CHECK-DAG: %[[W:.*]] = memref.view %[[STATE]][%{{.*}}][] : memref<?xi8> to memref<4xf32>
// CHECK-DAG: %[[BUF:.*]] = memref.view %[[HOST]][%{{.*}}][] : memref<?xi8> to memref<4xf32>
// CHECK-DAG: %[[X:.*]] = memref.view %[[IO]][%{{.*}}][] : memref<?xi8> to memref<4xf32>
// CHECK: call @train_step(%[[W]], %[[BUF]], %[[X]])
module {
  eff.parameter trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  eff.parameter optimizer_state @optimizer.w.momentum_buffer : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  func.func @train_step(%w: tensor<4xf32> {eff.parameter = @w},
                        %buf: tensor<4xf32> {eff.parameter = @optimizer.w.momentum_buffer},
                        %x: tensor<4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4xf32> {eff.update = @w},
          tensor<4xf32> {eff.update = @optimizer.w.momentum_buffer}) {
    %y = eff.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    %buf2 = eff.add %buf, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %w2 = eff.sub %w, %buf2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %l, %w2, %buf2 : tensor<f32>, tensor<4xf32>, tensor<4xf32>
  }
}
