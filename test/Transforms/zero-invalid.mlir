// RUN: effopt-opt %s --split-input-file --eff-zero="world-size=0" -verify-diagnostics
// RUN: not effopt-opt %s --eff-zero="world-size=2 stage=1" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not effopt-opt %s --eff-zero="world-size=2 stage=4" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not effopt-opt %s --eff-zero="world-size=2 bucket-bytes=-1" 2>&1 | FileCheck %s --check-prefix=BUCKET

// STAGE: error: eff-zero: stage 1 (sharded optimizer state, gradients or parameters) is not implemented yet; stage 0 (plain data parallel) is
// RANGE: error: eff-zero: stage must be 0, 1, 2 or 3, got 4
// BUCKET: error: eff-zero: bucket-bytes must be at least 0, got -1

// expected-error @+1 {{eff-zero: world-size must be at least 1, got 0}}
module {
  func.func @forward_backward(%x: tensor<4xf32>) -> tensor<f32> {
    %s = eff.reduce_sum %x {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
