// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=fastest --verify-diagnostics
// RUN: not effopt-opt %s --eff-autodiff --eff-remat="policy=full boundary=(" 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not effopt-opt %s --eff-autodiff --eff-remat="policy=selective boundary=x" 2>&1 | FileCheck %s --check-prefix=SELBOUND

// A model without repeated blocks (no /layers.N/ scopes). Policy full finds
// its blocks from the dataflow (remat-structural.mlir); a forward with none
// is refused in remat-full-invalid.mlir.

// REGEX: eff-remat: invalid boundary regex '('
// SELBOUND: eff-remat: boundary applies to policy full only
// expected-error@below {{eff-remat: unknown policy 'fastest' (none, selective, full, sqrt or budget)}}
module {
  eff.parameter trainable @w : tensor<5x8xf32>
  func.func @forward(%w: tensor<5x8xf32> {eff.parameter = @w},
                     %x: tensor<4x8xf32> {eff.input = "x"}, %t: tensor<4xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %z = eff.linear %x, %w {transpose_b = true} : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x5xf32> loc("/head/Gemm")
    %r = eff.relu %z : tensor<4x5xf32> loc("/act/Relu")
    %loss = eff.softmax_cross_entropy mean, %r, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32> loc("/loss/SoftmaxCrossEntropyLoss")
    return %loss : tensor<f32>
  }
}
