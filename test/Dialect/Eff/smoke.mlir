// RUN: effopt-opt %s | FileCheck %s
// CHECK-LABEL: func.func @smoke
func.func @smoke(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: eff.relu
  %0 = eff.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
