// RUN: effopt-opt %s --eff-zero="world-size=2 stage=1" --eff-optimizer="optimizer=adafactor" | FileCheck %s --check-prefix=F1
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=2 shard-unit=row" --eff-optimizer="optimizer=adafactor" | FileCheck %s --check-prefix=F2
// RUN: effopt-opt %s --eff-zero="world-size=2 stage=3 shard-unit=row" --eff-optimizer="optimizer=adafactor" | FileCheck %s --check-prefix=F3

// Adafactor under ZeRO: the matrix @w (3 x 4) is cut by whole rows (2 per
// rank, the fourth row padding: S = 8); the stack @s (2 matrices of 2 x 3)
// by whole matrices (S = 6); the vector @b by element.
module {
  eff.parameter trainable @w : tensor<3x4xf32>
  eff.parameter trainable @s : tensor<2x2x3xf32>
  eff.parameter trainable @b : tensor<3xf32>
  func.func @forward_backward(%w: tensor<3x4xf32> {eff.parameter = @w},
                              %s: tensor<2x2x3xf32> {eff.parameter = @s},
                              %b: tensor<3xf32> {eff.parameter = @b},
                              %x: tensor<3x4xf32> {eff.input = "x"},
                              %y: tensor<2x2x3xf32> {eff.input = "y"},
                              %z: tensor<3xf32> {eff.input = "z"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<3x4xf32> {eff.gradient = @w},
          tensor<2x2x3xf32> {eff.gradient = @s}, tensor<3xf32> {eff.gradient = @b}) {
    %p = eff.mul %w, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %loss = eff.reduce_sum %p {axes = array<i64: 0, 1>} : tensor<3x4xf32> -> tensor<f32>
    return %loss, %x, %y, %z : tensor<f32>, tensor<3x4xf32>, tensor<2x2x3xf32>, tensor<3xf32>
  }
}

// Stage 1: the row factor of @w is this rank's 2 rows; its column factor
// stays whole (the same on every rank). @s keeps its matrices' factors
// (2 rows, 3 columns of one matrix); @b half its variance.
// F1-DAG: eff.parameter optimizer_state @optimizer.w.row_var : tensor<2xf32> {{.*}} {eff.shard_of = array<i64: 3, 1>}
// F1-DAG: eff.parameter optimizer_state @optimizer.w.col_var : tensor<1x4xf32> = dense<0.000000e+00> : tensor<1x4xf32>{{$}}
// F1-DAG: eff.parameter optimizer_state @optimizer.s.row_var : tensor<2xf32> {{.*}} {eff.shard_of = array<i64: 2, 2, 1>}
// F1-DAG: eff.parameter optimizer_state @optimizer.s.col_var : tensor<3xf32> {{.*}} {eff.shard_of = array<i64: 2, 1, 3>}
// F1-DAG: eff.parameter optimizer_state @optimizer.b.variance : tensor<2xf32> {{.*}} {eff.shard_of = array<i64: 3>}
// F1-LABEL: func.func @train_step(
// The rows of @w: this rank's rows of the squared gradient give the row
// factor; the partial column sums, the sum of squares of the parameter
// shard and the sum of the new row factor are summed over the ranks in one
// all-reduce; the column mean and the row factor's mean divide by the 3
// real rows.
// F1: %[[W:.*]] = eff.shard %{{.*}} {world_size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// F1: %[[G:.*]] = eff.shard %{{.*}} {world_size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// F1: %[[SQ:.*]] = eff.mul %[[G]], %[[G]]
// F1: %[[PSQ:.*]] = eff.mul %[[W]], %[[W]]
// F1: %[[PSUM:.*]] = eff.reduce_sum %[[PSQ]] {axes = array<i64: 0>} : tensor<8xf32> -> tensor<f32>
// F1: %[[ROWS:.*]] = eff.reshape %[[SQ]] : tensor<8xf32> to tensor<2x4xf32>
// F1: eff.reduce_mean %[[ROWS]] {axes = array<i64: 1>, keep_dims = true} : tensor<2x4xf32> -> tensor<2x1xf32>
// F1: %[[COLS:.*]] = eff.reduce_sum %[[ROWS]] {axes = array<i64: 0>, keep_dims = true} : tensor<2x4xf32> -> tensor<1x4xf32>
// F1: %[[ROWSUM:.*]] = eff.reduce_sum %{{.*}} {axes = array<i64: 0, 1>} : tensor<2x1xf32> -> tensor<f32>
// F1: %[[SUMS:.*]]:3 = eff.all_reduce %[[PSUM]], %[[COLS]], %[[ROWSUM]] {world_size = 2 : i64} : tensor<f32>, tensor<1x4xf32>, tensor<f32>
// F1: %[[THREE:.*]] = eff.constant dense<3.000000e+00> : tensor<f32>
// F1: eff.div %[[SUMS]]#1, %[[THREE]] : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
// F1: eff.div %[[SUMS]]#2, %[[THREE]]
// RMS(param) over the 12 real elements; RMS(update) from a second
// all-reduce; then the updated rows are gathered.
// F1: %[[TWELVE:.*]] = eff.constant dense<1.200000e+01> : tensor<f32>
// F1: eff.div %[[SUMS]]#0, %[[TWELVE]]
// F1: %[[USQ:.*]] = eff.reduce_sum %{{.*}} {axes = array<i64: 0>} : tensor<8xf32> -> tensor<f32>
// F1: eff.all_reduce %[[USQ]] {world_size = 2 : i64} : tensor<f32>
// F1: eff.all_gather %{{.*}} {world_size = 2 : i64} : tensor<8xf32> -> tensor<16xf32>
// @s: its factors are local (reduce_mean over a 1 x 2 x 3 view); only
// RMS(param) and RMS(update) are all-reduced.
// F1: %[[S:.*]] = eff.shard %{{.*}} {world_size = 2 : i64} : tensor<12xf32> -> tensor<6xf32>
// F1: eff.reduce_mean %{{.*}} {axes = array<i64: 2>, keep_dims = true} : tensor<1x2x3xf32> -> tensor<1x2x1xf32>
// F1: eff.reduce_mean %{{.*}} {axes = array<i64: 1>, keep_dims = true} : tensor<1x2x3xf32> -> tensor<1x1x3xf32>
// F1: eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<f32>
// F1: eff.all_reduce %{{.*}} {world_size = 2 : i64} : tensor<f32>
// F1: eff.all_gather %{{.*}} {world_size = 2 : i64} : tensor<6xf32> -> tensor<12xf32>
// @b: elementwise on its shard of 2.
// F1: eff.shard %{{.*}} {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
// F1: eff.all_gather %{{.*}} {world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>

// Stage 2: eff-zero (shard-unit=row) reduce-scatters each gradient into the
// same rows / matrices.
// F2-LABEL: func.func @train_step(
// F2-DAG: eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// F2-DAG: eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<12xf32> -> tensor<6xf32>
// F2-DAG: eff.reduce_scatter %{{.*}} {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>

// Stage 3: the parameters are the shards.
// F3-DAG: eff.parameter trainable @w : tensor<8xf32> {eff.shard_of = array<i64: 3, 4>}
// F3-DAG: eff.parameter trainable @s : tensor<6xf32> {eff.shard_of = array<i64: 2, 2, 3>}
// F3-DAG: eff.parameter trainable @b : tensor<2xf32> {eff.shard_of = array<i64: 3>}
// F3-DAG: eff.parameter optimizer_state @optimizer.w.row_var : tensor<2xf32> {{.*}} {eff.shard_of = array<i64: 3, 1>}
// F3-DAG: eff.parameter optimizer_state @optimizer.w.col_var : tensor<1x4xf32> = dense<0.000000e+00> : tensor<1x4xf32>{{$}}
