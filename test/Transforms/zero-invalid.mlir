// RUN: effopt-opt %s --split-input-file --eff-zero="world-size=0" -verify-diagnostics
// RUN: not effopt-opt %s --eff-zero="world-size=2 stage=2 shard-unit=block" 2>&1 | FileCheck %s --check-prefix=UNIT
// RUN: not effopt-opt %s --eff-zero="world-size=2 stage=2 shard-unit=quant-block quant-block-size=0" 2>&1 | FileCheck %s --check-prefix=QBLOCK
// RUN: not effopt-opt %s --eff-zero="world-size=2 stage=4" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not effopt-opt %s --eff-zero="world-size=2 bucket-bytes=-1" 2>&1 | FileCheck %s --check-prefix=BUCKET
// RUN: not effopt-opt %s --eff-zero="world-size=2 min-buckets=0" 2>&1 | FileCheck %s --check-prefix=MINB

// UNIT: error: eff-zero: shard-unit must be element, quant-block or row, got 'block'
// QBLOCK: error: eff-zero: quant-block-size must be > 0 and min-8bit-size >= 0, got 0 and 4096
// RANGE: error: eff-zero: stage must be 0, 1, 2 or 3, got 4
// BUCKET: error: eff-zero: bucket-bytes must be at least 0, got -1
// MINB: error: eff-zero: min-buckets must be at least 1, got 0

// expected-error @+1 {{eff-zero: world-size must be at least 1, got 0}}
module {
  func.func @forward_backward(%x: tensor<4xf32>) -> tensor<f32> {
    %s = eff.reduce_sum %x {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

