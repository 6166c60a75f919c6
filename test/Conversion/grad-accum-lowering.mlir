// RUN: effopt-opt %s --eff-autodiff --eff-grad-accum=steps=2 --eff-optimizer --canonicalize --cse --eff-step-abi --convert-eff-to-linalg | FileCheck %s --check-prefix=DROPOUT
// RUN: effopt-opt %s --eff-autodiff --eff-grad-accum=steps=2 --eff-optimizer --canonicalize --cse --eff-step-abi --effopt-cpu-lowering | FileCheck %s --check-prefix=LOWER

// Dropout in eff-grad-accum's micro-batch loop draws its mask for step
// `step * K + k`: the hash mixes the iteration k into the step counter, so
// every micro-batch gets its own mask (and a recomputation in the same
// iteration the same one).
// DROPOUT: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// DROPOUT: %[[KI:.*]] = arith.index_cast %[[K]] : index to i64
// DROPOUT: linalg.generic
// DROPOUT: ^bb0(%{{.*}}: f32, %[[STEP:.*]]: i64,
// DROPOUT: %[[SK:.*]] = arith.muli %[[STEP]], %{{.*}} : i64
// DROPOUT: %[[EFF:.*]] = arith.addi %[[SK]], %[[KI]] : i64
// DROPOUT: arith.xori %{{.*}}, %[[EFF]] : i64
// DROPOUT: } {eff.accumulation}

// The loop stays in the step through the whole CPU lowering: the nests of
// its body become kernels called from it, every buffer (the accumulators
// across the loop, a micro-batch's temporaries within one iteration) is
// placed in the arena: no heap allocation is left.
// LOWER-NOT: llvm.func @malloc
// LOWER: llvm.func @effx_step(
// LOWER: llvm.icmp "slt"
// LOWER: llvm.call @effx_step_kernel_
// LOWER: llvm.call @effrt_sgemm
// LOWER: llvm.br ^bb
// LOWER: llvm.func @_mlir_ciface_effx_step({{.*}}eff.arena_bytes = {{[0-9]+}} : i64
// LOWER-NOT: llvm.func @malloc
module {
  eff.parameter trainable @w : tensor<5x8xf32> = dense<0.5> : tensor<5x8xf32>
  func.func @forward(%w: tensor<5x8xf32> {eff.parameter = @w},
                     %x: tensor<2x8xf32> {eff.input = "x"}, %t: tensor<2xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %xd, %m = eff.dropout %x {ratio = 0.5 : f64, seed = 7 : i64} : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
    %z = eff.linear %xd, %w {transpose_b = true} : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
    %loss = eff.softmax_cross_entropy mean, %z, %t {ignore_index = -100 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
