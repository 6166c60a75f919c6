// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=fastest --verify-diagnostics
// RUN: not effopt-opt %s --eff-autodiff --eff-remat="policy=full boundary=(" 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not effopt-opt %s --eff-autodiff --eff-remat=policy=full 2>&1 | FileCheck %s --check-prefix=NOBLOCKS
// RUN: not effopt-opt %s --eff-autodiff --eff-remat="policy=selective boundary=x" 2>&1 | FileCheck %s --check-prefix=SELBOUND

// A model without repeated blocks (no /layers.N/ scopes).

// REGEX: eff-remat: invalid boundary regex '('
// NOBLOCKS: eff-remat: policy full found no repeated blocks in the ONNX node names (like /layers.3/...); give boundary=REGEX
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
