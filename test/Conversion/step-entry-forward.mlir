// RUN: effopt-opt %s --eff-step-abi=mode=forward --convert-eff-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --eff-step-entry | FileCheck %s

// effc --mode forward: the entry point reads the parameter from state and
// the input from io, and copies EVERY result of @forward (f32, i1, i64,
// one of them an input returned as is) to its place in io after the inputs.
// CHECK-NOT: eff.parameter
// CHECK: func.func private @forward(
// CHECK: func.func @effx_step(
// CHECK-SAME: %[[STATE:[^:]*]]: memref<?xi8>, %[[ARENA:[^:]*]]: memref<?xi8>, %[[IO:[^:]*]]: memref<?xi8>)
// CHECK-SAME: eff.arena_arg = 1
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[STATE]][%[[C0]]][] : memref<?xi8> to memref<4xf32>
// CHECK: memref.view %[[IO]][%{{.*}}][] : memref<?xi8> to memref<4xf32>
// CHECK: %[[R:.*]]:4 = call @forward(
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[Y:.*]] = memref.view %[[IO]][%[[C64]]][] : memref<?xi8> to memref<4xf32>
// CHECK: memref.copy %[[R]]#0, %[[Y]]
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[B:.*]] = memref.view %[[IO]][%[[C128]]][] : memref<?xi8> to memref<4xi1>
// CHECK: memref.copy %[[R]]#1, %[[B]]
// CHECK: %[[C192:.*]] = arith.constant 192 : index
// CHECK: %[[N:.*]] = memref.view %[[IO]][%[[C192]]][] : memref<?xi8> to memref<i64>
// CHECK: memref.copy %[[R]]#2, %[[N]]
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[X:.*]] = memref.view %[[IO]][%[[C256]]][] : memref<?xi8> to memref<4xf32>
// CHECK: memref.copy %[[R]]#3, %[[X]]
// CHECK-NEXT: return
module {
  eff.parameter trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  func.func @forward(%w: tensor<4xf32> {eff.parameter = @w}, %x: tensor<4xf32> {eff.input = "x"})
      -> (tensor<4xf32> {eff.output = "y"}, tensor<4xi1> {eff.output = "b"},
          tensor<i64> {eff.output = "n"}, tensor<4xf32> {eff.output = "x_again"}) {
    %y = eff.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = eff.cmp gt, %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %n = eff.constant dense<7> : tensor<i64>
    return %y, %b, %n, %x : tensor<4xf32>, tensor<4xi1>, tensor<i64>, tensor<4xf32>
  }
}
