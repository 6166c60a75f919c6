// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=none | FileCheck %s --check-prefix=NONE
// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=selective | FileCheck %s --check-prefix=SEL
// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=full | FileCheck %s --check-prefix=FULL
// RUN: effopt-opt %s --eff-autodiff --eff-remat="policy=full boundary=Gemm$" | FileCheck %s --check-prefix=BOUND
// RUN: effopt-opt %s --eff-autodiff --eff-remat=policy=sqrt | FileCheck %s --check-prefix=SQRT
// RUN: effopt-opt %s --eff-autodiff --eff-remat="policy=budget free-bytes=100" | FileCheck %s --check-prefix=BUDGET1
// RUN: effopt-opt %s --eff-autodiff --eff-remat="policy=budget free-bytes=300" | FileCheck %s --check-prefix=BUDGET3
// RUN: effopt-opt %s --eff-autodiff --eff-remat="policy=budget free-bytes=100000" | FileCheck %s --check-prefix=BUDGETALL

// Two residual blocks (linear -> gelu -> add) and a head. Without remat the
// backward keeps h0, y0, h1, y1 (linear inputs and gelu inputs) and z.

// NONE-LABEL: func.func @forward_backward
// NONE-COUNT-5: eff.save
// NONE-NOT: eff.save
// NONE-NOT: eff.recomputed

// selective keeps GEMM outputs (h0, h1, z) and y0, which two forward ops
// read (the residual stream: chains stop there), and recomputes y1 with the
// gelu before it in the backward.
// SEL-LABEL: func.func @forward_backward
// SEL: %[[H0:.*]] = eff.linear %{{.*}}, %arg0
// SEL: %[[Y0:.*]] = eff.add
// SEL: %[[H1:.*]] = eff.linear
// SEL: %[[Z:.*]] = eff.linear
// SEL-DAG: %[[SZ:.*]] = eff.save %[[Z]]
// SEL-DAG: %[[SH1:.*]] = eff.save %[[H1]]
// SEL-DAG: %[[SY0:.*]] = eff.save %[[Y0]]
// SEL-DAG: %[[SH0:.*]] = eff.save %[[H0]]
// SEL-NOT: eff.save
// SEL: eff.softmax_cross_entropy_grad
// SEL: %[[RG1:.*]] = eff.gelu %[[SH1]] {eff.recomputed}
// SEL: %[[RY1:.*]] = eff.add %[[RG1]], %[[SY0]] {eff.recomputed}
// SEL: eff.linear %{{.*}}, %[[RY1]] {transpose_a = true}
// SEL: eff.gelu_grad %[[SH1]]
// SEL: eff.linear %{{.*}}, %[[SY0]] {transpose_a = true}
// SEL: eff.gelu_grad %[[SH0]]
// SEL-NOT: eff.recomputed

// full keeps what crosses a block boundary (y0, y1) and the head's z, and
// recomputes each block's linear in its backward.
// FULL-LABEL: func.func @forward_backward
// FULL-COUNT-3: eff.save
// FULL-NOT: eff.save
// FULL: eff.linear %{{.*}}, %arg1 {eff.recomputed, transpose_b = true}
// FULL: eff.gelu_grad
// FULL: eff.linear %arg3, %arg0 {eff.recomputed, transpose_b = true}
// FULL: eff.gelu_grad

// A boundary regex makes each Gemm start a block: the head is a block of its
// own, so z is recomputed too.
// BOUND-LABEL: func.func @forward_backward
// BOUND-COUNT-2: eff.save
// BOUND-NOT: eff.save
// BOUND-COUNT-3: {eff.recomputed

// sqrt: 8 forward ops in 3 segments of 3.
// SQRT-LABEL: func.func @forward_backward
// SQRT: eff.recomputed

// budget: each saved value is a candidate recomputed through its unsaved
// producers: y0 and y1 (128 B each) through gelu + add, cheap; h0, h1 (128 B)
// and z (80 B) through a linear. 100 B: one residual sum; 300 B: both sums
// and the cheapest linear, z (320 FLOPs against 512 for h0 or h1).
// BUDGET1-LABEL: func.func @forward_backward
// BUDGET1-COUNT-4: eff.save
// BUDGET1-NOT: eff.save
// BUDGET1: eff.gelu {{.*}} {eff.recomputed}
// BUDGET1-NEXT: eff.add {{.*}} {eff.recomputed}
// BUDGET1-NOT: {eff.recomputed
// BUDGET3-LABEL: func.func @forward_backward
// BUDGET3-COUNT-2: eff.save
// BUDGET3-NOT: eff.save
// BUDGET3-COUNT-2: eff.gelu {{.*}} {eff.recomputed}
// BUDGET3-COUNT-2: eff.add {{.*}} {eff.recomputed}
// BUDGET3-NEXT: eff.linear {{.*}}, %arg2 {eff.recomputed
// BUDGET3-NOT: {eff.recomputed

// budget that no plan meets: every block recomputed as a whole from what
// enters it -- full checkpointing's choice (y0, y1 and z kept) -- not every
// value through chains across blocks.
// BUDGETALL-LABEL: func.func @forward_backward
// BUDGETALL-COUNT-3: eff.save
// BUDGETALL-NOT: eff.save
// BUDGETALL: eff.linear {{.*}}, %arg1 {eff.recomputed, transpose_b = true}
// BUDGETALL: eff.linear %arg3, %arg0 {eff.recomputed, transpose_b = true}
// BUDGETALL-NOT: {eff.recomputed

module {
  eff.parameter trainable @w0 : tensor<8x8xf32>
  eff.parameter trainable @w1 : tensor<8x8xf32>
  eff.parameter trainable @wh : tensor<5x8xf32>
  func.func @forward(%w0: tensor<8x8xf32> {eff.parameter = @w0},
                     %w1: tensor<8x8xf32> {eff.parameter = @w1},
                     %wh: tensor<5x8xf32> {eff.parameter = @wh},
                     %x: tensor<4x8xf32> {eff.input = "x"}, %t: tensor<4xi64> {eff.input = "t"})
      -> (tensor<f32> {eff.output = "loss"}) {
    %h0 = eff.linear %x, %w0 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/fc/Gemm")
    %g0 = eff.gelu %h0 : tensor<4x8xf32> loc("/blocks.0/act/Gelu")
    %y0 = eff.add %g0, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/Add")
    %h1 = eff.linear %y0, %w1 {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/blocks.1/fc/Gemm")
    %g1 = eff.gelu %h1 : tensor<4x8xf32> loc("/blocks.1/act/Gelu")
    %y1 = eff.add %g1, %y0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/blocks.1/Add")
    %z = eff.linear %y1, %wh {transpose_b = true} : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x5xf32> loc("/head/Gemm")
    %loss = eff.softmax_cross_entropy mean, %z, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32> loc("/loss/SoftmaxCrossEntropyLoss")
    return %loss : tensor<f32>
  }
}
