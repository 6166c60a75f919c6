// RUN: effopt-opt %s --eff-step-abi --effopt-cpu-lowering | FileCheck %s

// The whole CPU lowering of a one-layer training step: the entry point with
// its C interface, the GEMMs as runtime calls, every loop nest in its own
// kernel, and no heap allocation left (all temporaries live in the arena).
// CHECK-NOT: llvm.func @malloc
// CHECK-DAG: llvm.func @effrt_sgemm(
// CHECK-DAG: llvm.func @effx_step(
// CHECK-DAG: llvm.func @_mlir_ciface_effx_step(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) attributes {eff.arena_arg = 1 : i64, eff.arena_bytes = {{[0-9]+}} : i64, llvm.emit_c_interface}
// CHECK-DAG: llvm.func @effx_step_kernel_0(
// CHECK-NOT: eff.parameter
// CHECK-NOT: memref.
// CHECK-NOT: linalg.
module {
  eff.parameter trainable @w : tensor<8x4xf32> = dense<0.5> : tensor<8x4xf32>
  eff.parameter optimizer_state @optimizer.step : tensor<i64> = dense<0> : tensor<i64>
  func.func @train_step(%w: tensor<8x4xf32> {eff.parameter = @w}, %x: tensor<2x4xf32> {eff.input = "x"},
                        %step: tensor<i64> {eff.parameter = @optimizer.step})
      -> (tensor<f32> {eff.output = "loss"}, tensor<8x4xf32> {eff.update = @w}, tensor<i64> {eff.update = @optimizer.step}) {
    %y = eff.linear %x, %w {transpose_b = true} : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %l = eff.reduce_mean %y {axes = array<i64: 0, 1>} : tensor<2x8xf32> -> tensor<f32>
    %dy = eff.constant dense<0.0625> : tensor<2x8xf32>
    %g = eff.linear %dy, %x {transpose_a = true} : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
    %lr = eff.lr_schedule %step {kind = "constant", lr = 0.1 : f64} : tensor<i64> -> tensor<f32>
    %w2 = eff.sgd_update %w, %g, %lr, %step : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<i64>) -> tensor<8x4xf32>
    %one = eff.constant dense<1> : tensor<i64>
    %s2 = eff.add %step, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
    return %l, %w2, %s2 : tensor<f32>, tensor<8x4xf32>, tensor<i64>
  }
}
