// RUN: effopt-opt %s --eff-autocast="precision=bf16 low-precision-attention=true" | FileCheck %s --check-prefix=LOW
// RUN: effopt-opt %s --eff-autocast=precision=bf16 | FileCheck %s --check-prefix=F32

// low-precision-attention (cuda's kernels): q, k, v cast to bf16, the
// output bf16, the log-sum-exp f32. By default attention stays f32 (the
// CPU kernels): the bf16 products' results are cast back to f32 for it.
// LOW-LABEL: func.func @forward
// LOW: %[[Q:.*]] = eff.matmul {{.*}} -> tensor<1x2x8x64xbf16>
// LOW: %[[O:.*]], %[[LSE:.*]] = eff.attention %[[Q]], %[[Q]], %[[Q]] {causal = true, scale = 1.250000e-01 : f64} : (tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>) -> (tensor<1x2x8x64xbf16>, tensor<1x2x8xf32>)
// LOW: eff.cast %[[O]] : tensor<1x2x8x64xbf16> to tensor<1x2x8x64xf32>
// F32-LABEL: func.func @forward
// F32: %[[Q:.*]] = eff.matmul {{.*}} -> tensor<1x2x8x64xbf16>
// F32: %[[Q32:.*]] = eff.cast %[[Q]] : tensor<1x2x8x64xbf16> to tensor<1x2x8x64xf32>
// F32: eff.attention %[[Q32]], %[[Q32]], %[[Q32]] {{.*}} -> (tensor<1x2x8x64xf32>, tensor<1x2x8xf32>)
module {
  eff.parameter trainable @w : tensor<64x64xf32>
  func.func @forward(%x: tensor<1x2x8x64xf32> {eff.input = "x"}, %w: tensor<64x64xf32> {eff.parameter = @w}) -> tensor<1x2x8x64xf32> {
    %q = eff.matmul %x, %w : (tensor<1x2x8x64xf32>, tensor<64x64xf32>) -> tensor<1x2x8x64xf32>
    %o, %lse = eff.attention %q, %q, %q {scale = 0.125 : f64, causal = true} : (tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>) -> (tensor<1x2x8x64xf32>, tensor<1x2x8xf32>)
    return %o : tensor<1x2x8x64xf32>
  }
}
