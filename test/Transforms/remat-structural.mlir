// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=none | FileCheck %s --check-prefix=NONE
// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=full | FileCheck %s --check-prefix=FULL
// RUN: effopt-opt %s --eff-autodiff --eff-remat="policy=budget free-bytes=100000" | FileCheck %s --check-prefix=BUDGETALL

// A DenseNet in miniature whose node names have no repeated scopes
// (torchvision names its blocks denseblock1, denselayer2, ... without an
// index of their own): policy full takes its blocks from the dataflow. The
// separators (test/Analysis/forward-blocks.mlir) are the stem's outputs,
// the dense block's last concatenation and the transition after it;
// nothing inside the dense block separates, since every layer reads the
// stem's output. One boundary at the concatenation, and, the dense block
// being large, one after layer 2's bottleneck (where only the stem's
// output, layer 1's output and the bottleneck cross): four values kept
// (none keeps seven), each block recomputed in its backward.

// NONE-LABEL: func.func @forward_backward
// NONE-COUNT-7: eff.save
// NONE-NOT: eff.save

// FULL-LABEL: func.func @forward_backward
// FULL: %[[LB:.*]] = eff.linear %{{.*}}, %arg2
// FULL: %[[C2:.*]] = eff.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64}
// FULL: %[[SLB:.*]] = eff.save %[[LB]]
// FULL-NEXT: %[[SC2:.*]] = eff.save %[[C2]]
// FULL-COUNT-2: eff.save
// FULL-NOT: eff.save
// FULL: eff.linear %[[SC2]], %arg3 {eff.recomputed
// FULL: eff.softmax_cross_entropy_grad
// FULL: eff.relu %[[SLB]] {eff.recomputed}
// FULL: eff.linear %arg5, %arg0 {eff.recomputed
// FULL: eff.concat {{.*}}eff.recomputed
// FULL: return

// A budget no plan meets recomputes every block as a whole: what stays
// inside one (the bottleneck, read in the next block, is recomputed with
// it from the kept stem and layer 1 outputs).
// BUDGETALL-LABEL: func.func @forward_backward
// BUDGETALL-COUNT-3: eff.save
// BUDGETALL-NOT: eff.save
// BUDGETALL: eff.linear %{{.*}}, %arg3 {eff.recomputed
// BUDGETALL: eff.concat {{.*}}eff.recomputed

module {
  eff.parameter trainable @w0 : tensor<8x8xf32>
  eff.parameter trainable @w1 : tensor<8x8xf32>
  eff.parameter trainable @w2 : tensor<8x16xf32>
  eff.parameter trainable @w3 : tensor<8x24xf32>
  eff.parameter trainable @wh : tensor<5x8xf32>
  func.func @forward(%w0: tensor<8x8xf32> {eff.parameter = @w0},
                   %w1: tensor<8x8xf32> {eff.parameter = @w1},
                   %w2: tensor<8x16xf32> {eff.parameter = @w2},
                   %w3: tensor<8x24xf32> {eff.parameter = @w3},
                   %wh: tensor<5x8xf32> {eff.parameter = @wh},
                   %x: tensor<4x8xf32> {eff.input = "x"}, %t: tensor<4xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %s = eff.linear %x, %w0 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/conv0/Gemm")
    %rs = eff.relu %s : tensor<4x8xf32> loc("/relu0/Relu")
    %la = eff.linear %rs, %w1 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/denseblock1/denselayer1/Gemm")
    %a = eff.relu %la : tensor<4x8xf32> loc("/denseblock1/denselayer1/Relu")
    %c1 = eff.concat %rs, %a {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32> loc("/denseblock1/denselayer2/Concat")
    %lb = eff.linear %c1, %w2 {transpose_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32> loc("/denseblock1/denselayer2/Gemm")
    %b = eff.relu %lb : tensor<4x8xf32> loc("/denseblock1/denselayer2/Relu")
    %c2 = eff.concat %rs, %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x24xf32> loc("/denseblock1/Concat")
    %t1 = eff.linear %c2, %w3 {transpose_b = true} : (tensor<4x24xf32>, tensor<8x24xf32>) -> tensor<4x8xf32> loc("/transition1/Gemm")
    %r1 = eff.relu %t1 : tensor<4x8xf32> loc("/transition1/Relu")
    %z = eff.linear %r1, %wh {transpose_b = true} : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x5xf32> loc("/classifier/Gemm")
    %loss = eff.softmax_cross_entropy mean, %z, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32> loc("/loss/SoftmaxCrossEntropyLoss")
    return %loss : tensor<f32>
  }
}
