// RUN: effopt-opt %s --eff-step-abi --effopt-cpu-lowering | FileCheck %s

// Large loop nests run on OpenMP threads: the SGD update of a 256x256
// parameter (65536 elements) is a kernel whose rows are shared out by an
// omp.wsloop, the columns staying a plain (vectorisable) loop; the small
// nests (the 2x256 loss reduction) stay sequential kernels.
// CHECK-LABEL: llvm.func @effx_step_kernel_
// CHECK: omp.parallel {
// CHECK-NEXT: omp.wsloop {
// CHECK-NEXT: omp.loop_nest (%{{.*}}) : i64 = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NOT: omp.
// CHECK: omp.yield
// CHECK-NOT: memref.
// CHECK-NOT: scf.
module {
  eff.parameter trainable @w : tensor<256x256xf32> = dense<0.5> : tensor<256x256xf32>
  eff.parameter optimizer_state @optimizer.step : tensor<i64> = dense<0> : tensor<i64>
  func.func @train_step(%w: tensor<256x256xf32> {eff.parameter = @w}, %x: tensor<2x256xf32> {eff.input = "x"},
                        %step: tensor<i64> {eff.parameter = @optimizer.step})
      -> (tensor<f32> {eff.output = "loss"}, tensor<256x256xf32> {eff.update = @w}, tensor<i64> {eff.update = @optimizer.step}) {
    %y = eff.linear %x, %w {transpose_b = true} : (tensor<2x256xf32>, tensor<256x256xf32>) -> tensor<2x256xf32>
    %l = eff.reduce_mean %y {axes = array<i64: 0, 1>} : tensor<2x256xf32> -> tensor<f32>
    %dy = eff.constant dense<0.0625> : tensor<2x256xf32>
    %g = eff.linear %dy, %x {transpose_a = true} : (tensor<2x256xf32>, tensor<2x256xf32>) -> tensor<256x256xf32>
    %lr = eff.lr_schedule %step {kind = "constant", lr = 0.1 : f64} : tensor<i64> -> tensor<f32>
    %w2 = eff.sgd_update %w, %g, %lr, %step : (tensor<256x256xf32>, tensor<256x256xf32>, tensor<f32>, tensor<i64>) -> tensor<256x256xf32>
    %one = eff.constant dense<1> : tensor<i64>
    %s2 = eff.add %step, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
    return %l, %w2, %s2 : tensor<f32>, tensor<256x256xf32>, tensor<i64>
  }
}
