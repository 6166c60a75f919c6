// RUN: effopt-opt %s --eff-autocast=precision=bf16 --split-input-file | FileCheck %s --check-prefix=BF16
// RUN: effopt-opt %s --eff-autocast=precision=fp16 --split-input-file | FileCheck %s --check-prefix=FP16
// RUN: effopt-opt %s --eff-autocast=precision=fp32 --split-input-file | FileCheck %s --check-prefix=FP32
// RUN: effopt-opt %s --eff-autocast=precision=bf16 --split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// A GPT-style block: layer norm (fp32) -> linear as MatMul(x, W^T) + bias
// (low precision; the bias and the transposed weight adopt it) -> gelu
// (follows its input) -> residual add with the fp32 stream (promotes to
// fp32) -> cross entropy (fp32).
module {
  eff.parameter trainable @ln.weight : tensor<8xf32>
  eff.parameter trainable @ln.bias : tensor<8xf32>
  eff.parameter trainable @fc.weight : tensor<8x8xf32>
  eff.parameter trainable @fc.bias : tensor<8xf32>
  func.func @forward(%lnw: tensor<8xf32> {eff.parameter = @ln.weight},
                     %lnb: tensor<8xf32> {eff.parameter = @ln.bias},
                     %w: tensor<8x8xf32> {eff.parameter = @fc.weight},
                     %b: tensor<8xf32> {eff.parameter = @fc.bias},
                     %x: tensor<2x4x8xf32> {eff.input = "x"},
                     %labels: tensor<8xi64> {eff.input = "labels"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<2x4x8xf32> {eff.output = "h"}) {
    %ln, %mean, %rstd = eff.layer_norm %x scale %lnw bias %lnb {axis = 2 : i64}
        : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
    %wt = eff.transpose %w {permutation = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %mm = eff.matmul %ln, %wt : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %y = eff.add %mm, %b : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %scale = eff.constant dense<0.5> : tensor<f32>
    %s = eff.mul %y, %scale : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
    %g = eff.gelu %s : tensor<2x4x8xf32>
    %h = eff.add %x, %g : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %mm2 = eff.matmul %h, %wt : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %logits = eff.reshape %mm2 : tensor<2x4x8xf32> to tensor<8x8xf32>
    %loss = eff.softmax_cross_entropy mean, %logits, %labels
        : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
    return %loss, %h : tensor<f32>, tensor<2x4x8xf32>
  }
}

// BF16-LABEL: func.func @forward(
// BF16-SAME: %[[LNW:[a-z0-9]+]]: tensor<8xf32> {eff.parameter = @ln.weight}
// BF16-SAME: %[[W:[a-z0-9]+]]: tensor<8x8xf32> {eff.parameter = @fc.weight}
// BF16-SAME: %[[B:[a-z0-9]+]]: tensor<8xf32> {eff.parameter = @fc.bias}
// BF16-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {eff.input = "x"}
// BF16-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<2x4x8xf32> {eff.output = "h"})
// The layer norm and its fp32 weights are untouched.
// BF16: %[[LN:.*]], %{{.*}}, %{{.*}} = eff.layer_norm %[[X]] scale %[[LNW]] bias %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// BF16: %[[LNC:.*]] = eff.cast %[[LN]] : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// The weight is cast once, then transposed in bf16; both GEMMs share it.
// BF16: %[[WC:.*]] = eff.cast %[[W]] : tensor<8x8xf32> to tensor<8x8xbf16>
// BF16: %[[WT:.*]] = eff.transpose %[[WC]] {{.*}} : tensor<8x8xbf16> -> tensor<8x8xbf16>
// BF16: %[[MM:.*]] = eff.matmul %[[LNC]], %[[WT]] : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// BF16: %[[BC:.*]] = eff.cast %[[B]] : tensor<8xf32> to tensor<8xbf16>
// BF16: %[[Y:.*]] = eff.add %[[MM]], %[[BC]] : (tensor<2x4x8xbf16>, tensor<8xbf16>) -> tensor<2x4x8xbf16>
// The scalar constant is weak: the product stays bf16.
// BF16: %[[S:.*]] = eff.mul %[[Y]], %{{.*}} : (tensor<2x4x8xbf16>, tensor<bf16>) -> tensor<2x4x8xbf16>
// BF16: %[[G:.*]] = eff.gelu %[[S]] : tensor<2x4x8xbf16>
// Two activations of different precision promote to fp32.
// BF16: %[[GC:.*]] = eff.cast %[[G]] : tensor<2x4x8xbf16> to tensor<2x4x8xf32>
// BF16: %[[H:.*]] = eff.add %[[X]], %[[GC]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// BF16: %[[HC:.*]] = eff.cast %[[H]] : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// BF16-NOT: eff.cast %[[W]]
// BF16: %[[MM2:.*]] = eff.matmul %[[HC]], %[[WT]] : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// BF16: %[[L:.*]] = eff.reshape %[[MM2]] : tensor<2x4x8xbf16> to tensor<8x8xbf16>
// The loss runs in fp32.
// BF16: %[[LC:.*]] = eff.cast %[[L]] : tensor<8x8xbf16> to tensor<8x8xf32>
// BF16: %[[LOSS:.*]] = eff.softmax_cross_entropy mean, %[[LC]], %{{.*}} : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
// BF16: return %[[LOSS]], %[[H]] : tensor<f32>, tensor<2x4x8xf32>

// FP16-LABEL: func.func @forward(
// FP16: eff.matmul %{{.*}}, %{{.*}} : (tensor<2x4x8xf16>, tensor<8x8xf16>) -> tensor<2x4x8xf16>
// FP16: eff.gelu %{{.*}} : tensor<2x4x8xf16>

// FP32-LABEL: func.func @forward(
// FP32-NOT: eff.cast
// FP32-NOT: bf16

// -----

// An op that has no low-precision form stays fp32; an f64 computation is
// left alone; the casts carry their provenance.
module {
  eff.parameter trainable @w : tensor<4x4xf32>
  func.func @forward(%w: tensor<4x4xf32> {eff.parameter = @w},
                     %x: tensor<4x4xf32> {eff.input = "x"},
                     %d: tensor<4xf64> {eff.input = "d"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %y = eff.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %e = eff.exp %y : tensor<4x4xf32>
    %dd = eff.add %d, %d : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
    %loss = eff.reduce_sum %e {axes = array<i64: 0, 1>} : tensor<4x4xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// BF16-LABEL: func.func @forward(
// BF16: eff.cast %{{.*}} : tensor<4x4xf32> to tensor<4x4xbf16>
// BF16: %[[Y:.*]] = eff.matmul {{.*}} -> tensor<4x4xbf16>
// BF16: %[[YC:.*]] = eff.cast %[[Y]] : tensor<4x4xbf16> to tensor<4x4xf32>
// BF16: eff.exp %[[YC]] : tensor<4x4xf32>
// BF16: eff.add %{{.*}}, %{{.*}} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
// LOC: eff.cast {{.*}} loc(#[[CAST:[a-z0-9]+]])
// LOC: #[[CAST]] = loc(fused<"eff.cast">

// -----

// A parameter's cast carries its first user's node name (a block argument
// has none): the memory report attributes the low-precision copy to that
// layer, and eff-remat puts it in that layer's block.
module {
  eff.parameter trainable @layers.0.fc.weight : tensor<4x4xf32>
  func.func @forward(%w: tensor<4x4xf32> {eff.parameter = @layers.0.fc.weight},
                     %x: tensor<4x4xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %y = eff.linear %x, %w {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("/layers.0/fc/Gemm")
    %loss = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<4x4xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// BF16-LABEL: func.func @forward(
// BF16: eff.cast %{{.*}} : tensor<4x4xf32> to tensor<4x4xbf16>
// LOC-LABEL: eff.parameter trainable @layers.0.fc.weight
// LOC: eff.cast %arg0 {{.*}} loc(#[[WCAST:[a-z0-9]+]])
// LOC: #[[GEMM:[a-z0-9]+]] = loc("/layers.0/fc/Gemm")
// LOC: #[[WCAST]] = loc(fused<"eff.cast">{{\[}}#[[GEMM]]{{\]}})
