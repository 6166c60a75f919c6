// RUN: effopt-opt %s --split-input-file --eff-zero="world-size=0" -verify-diagnostics
// RUN: not effopt-opt %s --split-input-file --eff-zero="world-size=2 stage=1" --eff-optimizer="optimizer=adafactor" 2>&1 | FileCheck %s --check-prefix=ADAFACTOR
// RUN: not effopt-opt %s --split-input-file --eff-zero="world-size=2 stage=2" --eff-optimizer="optimizer=adamw8bit" 2>&1 | FileCheck %s --check-prefix=EIGHTBIT
// RUN: not effopt-opt %s --eff-zero="world-size=2 stage=4" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not effopt-opt %s --eff-zero="world-size=2 bucket-bytes=-1" 2>&1 | FileCheck %s --check-prefix=BUCKET

// ADAFACTOR: error: eff-optimizer: adafactor's factored state is not elementwise and cannot be sharded by ZeRO stage 1 yet; use sgd, adam or adamw, or stage 0
// EIGHTBIT: error: eff-optimizer: adamw8bit's block-wise 8-bit state cannot be sharded by ZeRO stage 2 yet; use sgd, adam or adamw, or stage 0
// RANGE: error: eff-zero: stage must be 0, 1, 2 or 3, got 4
// BUCKET: error: eff-zero: bucket-bytes must be at least 0, got -1

// expected-error @+1 {{eff-zero: world-size must be at least 1, got 0}}
module {
  func.func @forward_backward(%x: tensor<4xf32>) -> tensor<f32> {
    %s = eff.reduce_sum %x {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

