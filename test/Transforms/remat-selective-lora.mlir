// RUN: effopt-opt %s --eff-lora="rank=2" --eff-autodiff --eff-remat=policy=selective | FileCheck %s

// LoRA adapters (eff-lora) on an MLP's up and down projections, with
// selective remat: only the base GEMM outputs (%[[H]], %[[O]]) and the
// adapters' rank-2 projections A x are kept. The adapters' expansions B (A x)
// are recomputed (2r FLOPs per element, not the cost of a GEMM), so the
// pre-GELU sum is recomputed from the kept base output instead of keeping
// both halves of it; and the GELU output, read by the base down GEMM and
// the down adapter's projection, is recomputed as it is without adapters
// (the projection is not a second reader).
// CHECK-LABEL: func.func @forward_backward
// CHECK:      %[[H:.*]] = eff.matmul %[[X:arg[0-9]+]], %{{.*}} : (tensor<16x8xf32>, tensor<8x64xf32>) -> tensor<16x64xf32>
// CHECK:      %[[AX:.*]] = eff.matmul %[[X]], %{{.*}} : (tensor<16x8xf32>, tensor<8x2xf32>) -> tensor<16x2xf32>
// CHECK:      %[[G:.*]] = eff.gelu
// CHECK:      %[[O:.*]] = eff.matmul %[[G]], %{{.*}} : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
// CHECK:      %[[AG:.*]] = eff.matmul %[[G]], %{{.*}} : (tensor<16x64xf32>, tensor<64x2xf32>) -> tensor<16x2xf32>
// CHECK-DAG:  %[[SO:.*]] = eff.save %[[O]]
// CHECK-DAG:  %[[SH:.*]] = eff.save %[[H]]
// CHECK-DAG:  %[[SAG:.*]] = eff.save %[[AG]]
// CHECK-DAG:  %[[SAX:.*]] = eff.save %[[AX]]
// CHECK-NOT:  eff.save
// CHECK:      eff.matmul %[[SAG]], %{{.*}} {eff.recomputed} : (tensor<16x2xf32>, tensor<2x16xf32>) -> tensor<16x16xf32>
// CHECK:      %[[BAX:.*]] = eff.matmul %[[SAX]], %{{.*}} {eff.recomputed} : (tensor<16x2xf32>, tensor<2x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT: %[[SBAX:.*]] = eff.mul %[[BAX]], %{{.*}} {eff.recomputed}
// CHECK-NEXT: %[[Y:.*]] = eff.add %[[SH]], %[[SBAX]] {eff.recomputed}
// CHECK-NEXT: eff.gelu %[[Y]] {eff.recomputed}
// CHECK:      eff.gelu_grad %[[Y]]
module {
  eff.parameter trainable @up.weight : tensor<64x8xf32>
  eff.parameter trainable @down.weight : tensor<16x64xf32>
  func.func @forward(%wup: tensor<64x8xf32> {eff.parameter = @up.weight},
                     %wdown: tensor<16x64xf32> {eff.parameter = @down.weight},
                     %x: tensor<16x8xf32> {eff.input = "x"}, %t: tensor<16xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %wupt = eff.transpose %wup {permutation = array<i64: 1, 0>} : tensor<64x8xf32> -> tensor<8x64xf32>
    %h = eff.matmul %x, %wupt : (tensor<16x8xf32>, tensor<8x64xf32>) -> tensor<16x64xf32>
    %g = eff.gelu %h : tensor<16x64xf32>
    %wdownt = eff.transpose %wdown {permutation = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %o = eff.matmul %g, %wdownt : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
    %loss = eff.softmax_cross_entropy mean, %o, %t : (tensor<16x16xf32>, tensor<16xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
