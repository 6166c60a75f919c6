// RUN: effopt-opt %s --eff-optimizer="optimizer=adamw8bit lr=1e-3 weight-decay=0.1 no-weight-decay=.*bias" --split-input-file | FileCheck %s --check-prefix=ADAMW
// RUN: effopt-opt %s --eff-optimizer="optimizer=adam8bit weight-decay=0.01 quant-block-size=2048 min-8bit-size=16" --split-input-file | FileCheck %s --check-prefix=ADAM
// RUN: effopt-opt %s --eff-optimizer="optimizer=adamw8bit" --split-input-file | FileCheck %s --check-prefix=SKIP

// adamw8bit: the 64x80 weight (5120 elements >= 4096) gets 8-bit moments in
// blocks of 256 (20 blocks); the 64-element bias keeps fp32 moments and the
// ordinary AdamW update.
module {
  eff.parameter trainable @w : tensor<64x80xf32>
  eff.parameter trainable @bias : tensor<64xf32>
  func.func @forward_backward(%w: tensor<64x80xf32> {eff.parameter = @w}, %bias: tensor<64xf32> {eff.parameter = @bias},
                              %x: tensor<2xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<64x80xf32> {eff.gradient = @w}, tensor<64xf32> {eff.gradient = @bias}) {
    %loss = eff.reduce_sum %x {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %loss, %w, %bias : tensor<f32>, tensor<64x80xf32>, tensor<64xf32>
  }
}

// ADAMW-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_codes : tensor<64x80xi8> = dense<0> : tensor<64x80xi8>
// ADAMW-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_absmax : tensor<20xf32> = dense<0.000000e+00> : tensor<20xf32>
// ADAMW-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_sq_codes : tensor<64x80xi8>
// ADAMW-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_sq_absmax : tensor<20xf32>
// ADAMW-DAG: eff.parameter optimizer_state @optimizer.bias.exp_avg : tensor<64xf32>
// ADAMW-DAG: eff.parameter optimizer_state @optimizer.bias.exp_avg_sq : tensor<64xf32>
// ADAMW-NOT: @optimizer.w.exp_avg :
// ADAMW-NOT: @optimizer.bias.exp_avg_codes
// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: %[[W:[a-z0-9]+]]: tensor<64x80xf32> {eff.parameter = @w}
// ADAMW-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {eff.parameter = @optimizer.step}
// ADAMW-SAME: %[[MQ:[a-z0-9]+]]: tensor<64x80xi8> {eff.parameter = @optimizer.w.exp_avg_codes}
// ADAMW-SAME: %[[MA:[a-z0-9]+]]: tensor<20xf32> {eff.parameter = @optimizer.w.exp_avg_absmax}
// ADAMW-SAME: %[[VQ:[a-z0-9]+]]: tensor<64x80xi8> {eff.parameter = @optimizer.w.exp_avg_sq_codes}
// ADAMW-SAME: %[[VA:[a-z0-9]+]]: tensor<20xf32> {eff.parameter = @optimizer.w.exp_avg_sq_absmax}
// ADAMW-SAME: tensor<64x80xf32> {eff.update = @w}, tensor<64x80xi8> {eff.update = @optimizer.w.exp_avg_codes}, tensor<20xf32> {eff.update = @optimizer.w.exp_avg_absmax}, tensor<64x80xi8> {eff.update = @optimizer.w.exp_avg_sq_codes}, tensor<20xf32> {eff.update = @optimizer.w.exp_avg_sq_absmax}
// ADAMW: %[[LR:.*]] = eff.lr_schedule %[[STEP]]
// ADAMW: eff.adam8bit_update %[[W]], %[[W]], %[[MQ]], %[[MA]], %[[VQ]], %[[VA]], %[[LR]], %[[STEP]] {decoupled, weight_decay = 1.000000e-01 : f64}
// ADAMW-SAME: -> (tensor<64x80xf32>, tensor<64x80xi8>, tensor<20xf32>, tensor<64x80xi8>, tensor<20xf32>)
// ADAMW: eff.adam_update {{.*}} {decoupled} : (tensor<64xf32>

// adam8bit: coupled decay (no `decoupled`); min-8bit-size 16 quantizes the
// bias too; blocks of 2048 (3 blocks of 5120, the last one shorter).
// ADAM-DAG: eff.parameter optimizer_state @optimizer.w.exp_avg_absmax : tensor<3xf32>
// ADAM-DAG: eff.parameter optimizer_state @optimizer.bias.exp_avg_absmax : tensor<1xf32>
// ADAM-LABEL: func.func @train_step(
// ADAM: eff.adam8bit_update {{.*}} {block_size = 2048 : i64, weight_decay = 1.000000e-02 : f64} : (tensor<64x80xf32>
// ADAM: eff.adam8bit_update {{.*}} {block_size = 2048 : i64, weight_decay = 1.000000e-02 : f64} : (tensor<64xf32>
// ADAM-NOT: eff.adam_update

// -----

// A skipped step (eff-loss-scaling's eff.skip_step) keeps the old codes and
// absmax too.
module {
  eff.parameter trainable @w : tensor<64x80xf32>
  func.func @forward_backward(%w: tensor<64x80xf32> {eff.parameter = @w}, %skip: tensor<i1> {eff.input = "skip"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<64x80xf32> {eff.gradient = @w}, tensor<i1> {eff.skip_step}) {
    %loss = eff.constant dense<1.0> : tensor<f32>
    return %loss, %w, %skip : tensor<f32>, tensor<64x80xf32>, tensor<i1>
  }
}

// SKIP-LABEL: func.func @train_step(%{{.*}}: tensor<64x80xf32> {eff.parameter = @w}, %{{.*}}: tensor<i1> {eff.input = "skip"}
// SKIP: %[[P:.*]], %[[MQ:.*]], %[[MA:.*]], %[[VQ:.*]], %[[VA:.*]] = eff.adam8bit_update
// SKIP-DAG: eff.where %{{.*}}, %{{.*}}, %[[MQ]] : (tensor<i1>, tensor<64x80xi8>, tensor<64x80xi8>) -> tensor<64x80xi8>
// SKIP-DAG: eff.where %{{.*}}, %{{.*}}, %[[MA]] : (tensor<i1>, tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
// SKIP-DAG: eff.where %{{.*}}, %{{.*}}, %[[VQ]] : (tensor<i1>, tensor<64x80xi8>, tensor<64x80xi8>) -> tensor<64x80xi8>
// SKIP-DAG: eff.where %{{.*}}, %{{.*}}, %[[VA]] : (tensor<i1>, tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
