// RUN: effopt-opt %s --eff-step-abi --effopt-cpu-lowering > %t
// RUN: FileCheck %s < %t
// RUN: FileCheck %s --check-prefix=NOBF16 < %t

// A bf16 training step through the whole CPU lowering: f32 master weight
// cast to bf16, a bf16 linear and its gradient products. Every product is
// an f32 sgemm on widened operands (no loop GEMM with a bf16 accumulator is
// left), the widened copies are arena temporaries (no malloc), and no
// conversion to bf16 is left for LLVM (no fptrunc to bf16: integer
// rounding instead, see eff-expand-bf16-conversions).
// CHECK-NOT: llvm.func @malloc
// CHECK-DAG: llvm.func @effrt_sgemm(
// CHECK-DAG: llvm.func @_mlir_ciface_effx_step(
// bf16 only as storage: loads, stores, bitcasts.
// NOBF16-NOT: {{llvm.(fptrunc|fpext|fadd|fsub|fmul|fdiv|fcmp|select|intr).*bf16}}
module {
  eff.parameter trainable @w : tensor<8x4xf32> = dense<0.5> : tensor<8x4xf32>
  eff.parameter optimizer_state @optimizer.step : tensor<i64> = dense<0> : tensor<i64>
  func.func @train_step(%w: tensor<8x4xf32> {eff.parameter = @w}, %x: tensor<2x4xf32> {eff.input = "x"},
                        %step: tensor<i64> {eff.parameter = @optimizer.step})
      -> (tensor<f32> {eff.output = "loss"}, tensor<8x4xf32> {eff.update = @w}, tensor<i64> {eff.update = @optimizer.step}) {
    %xl = eff.cast %x : tensor<2x4xf32> to tensor<2x4xbf16>
    %wl = eff.cast %w : tensor<8x4xf32> to tensor<8x4xbf16>
    %y = eff.linear %xl, %wl {transpose_b = true} : (tensor<2x4xbf16>, tensor<8x4xbf16>) -> tensor<2x8xbf16>
    %r = eff.relu %y : tensor<2x8xbf16>
    %yf = eff.cast %r : tensor<2x8xbf16> to tensor<2x8xf32>
    %l = eff.reduce_mean %yf {axes = array<i64: 0, 1>} : tensor<2x8xf32> -> tensor<f32>
    %dy = eff.constant dense<0.0625> : tensor<2x8xbf16>
    %gl = eff.linear %dy, %xl {transpose_a = true} : (tensor<2x8xbf16>, tensor<2x4xbf16>) -> tensor<8x4xbf16>
    %g = eff.cast %gl : tensor<8x4xbf16> to tensor<8x4xf32>
    %lr = eff.lr_schedule %step {kind = "constant", lr = 0.1 : f64} : tensor<i64> -> tensor<f32>
    %w2 = eff.sgd_update %w, %g, %lr, %step : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<i64>) -> tensor<8x4xf32>
    %one = eff.constant dense<1> : tensor<i64>
    %s2 = eff.add %step, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
    return %l, %w2, %s2 : tensor<f32>, tensor<8x4xf32>, tensor<i64>
  }
}
