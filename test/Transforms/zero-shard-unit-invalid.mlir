// RUN: not effopt-opt %s --eff-zero="world-size=2 stage=2" --eff-optimizer="optimizer=adamw8bit quant-block-size=4 min-8bit-size=0" 2>&1 | FileCheck %s --check-prefix=EIGHTBIT
// RUN: not effopt-opt %s --eff-zero="world-size=2 stage=3" --eff-optimizer="optimizer=adafactor" 2>&1 | FileCheck %s --check-prefix=ADAFACTOR
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=3 shard-unit=row" --eff-optimizer="optimizer=adafactor" -verify-diagnostics -o /dev/null

// eff-optimizer cuts its state as its optimizer needs (8-bit: whole
// blocks; Adafactor: whole rows); eff-zero must have cut the gradients
// (stage 2) and the parameters (stage 3) the same way, with the matching
// shard-unit (effc sets it from --optimizer). Here eff-zero cut them by
// element: 6 of the 12 elements per rank, not 2 whole blocks of 4 (8) nor
// 2 whole rows of 4 (8).
// EIGHTBIT: error: eff-optimizer: the gradient of w is 'tensor<6xf32>', not its ZeRO shard 'tensor<8xf32>' (eff-zero shard-unit=quant-block)
// ADAFACTOR: error: eff-optimizer: adafactor needs shards of 8 elements of w (eff-zero shard-unit=row), got 6
module {
  eff.parameter trainable @w : tensor<3x4xf32>
  func.func @forward_backward(%w: tensor<3x4xf32> {eff.parameter = @w},
                              %x: tensor<3x4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<3x4xf32> {eff.gradient = @w}) {
    %p = eff.mul %w, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %loss = eff.reduce_sum %p {axes = array<i64: 0, 1>} : tensor<3x4xf32> -> tensor<f32>
    return %loss, %x : tensor<f32>, tensor<3x4xf32>
  }
}
