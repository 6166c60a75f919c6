// RUN: effopt-opt %s --split-input-file --eff-overlap-collectives | FileCheck %s
// RUN: effopt-opt %s --split-input-file --eff-overlap-collectives="prefetch=0" | FileCheck %s --check-prefix=NOPREFETCH
// RUN: effopt-opt %s --split-input-file --eff-overlap-collectives="prefetch=2" | FileCheck %s --check-prefix=PREFETCH2
// RUN: not effopt-opt %s --split-input-file --eff-overlap-collectives="prefetch=-1" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: eff-overlap-collectives: prefetch must be at least 0, got -1

// Sums (a stage-0 backward after eff-zero and eff-schedule-memory): each
// bucket starts right after its gradient; its wait, with the update that
// reads the sum, moves past the next stretch of the backward to just after
// the next bucket's start.
// CHECK-LABEL: func.func @sums_overlap_backward(
// CHECK: %[[G1:.*]] = eff.mul %arg0, %arg1
// CHECK-NEXT: %[[F1:.*]] = eff.all_reduce_start %[[G1]] {world_size = 2 : i64}
// CHECK-NEXT: %[[H:.*]] = eff.add %arg0, %arg1
// CHECK-NEXT: %[[G2:.*]] = eff.mul %[[H]], %arg1
// CHECK-NEXT: %[[F2:.*]] = eff.all_reduce_start %[[G2]] {world_size = 2 : i64}
// CHECK-NEXT: %[[S1:.*]] = eff.wait %[[F1]] : tensor<4xf32>
// CHECK-NEXT: %[[U1:.*]] = eff.mul %[[S1]], %arg2
// CHECK-NEXT: %[[S2:.*]] = eff.wait %[[F2]] : tensor<4xf32>
// CHECK-NEXT: %[[U2:.*]] = eff.mul %[[S2]], %arg2
// CHECK-NEXT: return %[[U1]], %[[U2]]
func.func @sums_overlap_backward(%a: tensor<4xf32>, %b: tensor<4xf32>, %lr: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %g1 = eff.mul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s1 = eff.all_reduce %g1 {world_size = 2 : i64} : tensor<4xf32>
  %u1 = eff.mul %s1, %lr : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %h = eff.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g2 = eff.mul %h, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s2 = eff.all_reduce %g2 {world_size = 2 : i64} : tensor<4xf32>
  %u2 = eff.mul %s2, %lr : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %u1, %u2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A sum whose results the next start needs (the global count of targets
// that weighs the next bucket's gradient): its wait goes right before its
// first reader, which stays where it is (moved down to the next start with
// its readers, the weighting would wait there and keep the unweighted
// gradient live across the backward).
// CHECK-LABEL: func.func @count_feeds_next_start(
// CHECK: %[[F0:.*]] = eff.all_reduce_start %arg0 {world_size = 2 : i64} : tensor<f32>
// CHECK-NEXT: %[[G:.*]] = eff.mul %arg1, %arg1
// CHECK-NEXT: %[[T:.*]] = eff.exp %arg1
// CHECK-NEXT: %[[C:.*]] = eff.wait %[[F0]] : tensor<f32>
// CHECK-NEXT: %[[SHARE:.*]] = eff.div %arg0, %[[C]]
// CHECK-NEXT: %[[W:.*]] = eff.mul %[[G]], %[[SHARE]]
// CHECK-NEXT: %[[F1:.*]] = eff.all_reduce_start %[[W]] {world_size = 2 : i64} : tensor<4xf32>
// CHECK-NEXT: %[[H:.*]] = eff.add %[[T]], %arg1
// CHECK-NEXT: %[[S:.*]] = eff.wait %[[F1]]
// CHECK-NEXT: return %[[S]], %[[H]]
func.func @count_feeds_next_start(%count: tensor<f32>, %a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = eff.all_reduce %count {world_size = 2 : i64} : tensor<f32>
  %g = eff.mul %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = eff.exp %a : tensor<4xf32>
  %share = eff.div %count, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %w = eff.mul %g, %share : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %h = eff.add %t, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = eff.all_reduce %w {world_size = 2 : i64} : tensor<4xf32>
  return %s, %h : tensor<4xf32>, tensor<4xf32>
}

// -----

// A bucket of several tensors and a reduce-scatter (stage 2): one start
// each, right after the last tensor it takes (a start placed late, as
// eff-schedule-memory may leave it, moves up to its last producer); the
// waits, with nothing to read them before the end, go there.
// CHECK-LABEL: func.func @bucket_then_scatter(
// CHECK: %[[L:.*]] = eff.reduce_sum %arg0
// CHECK-NEXT: %[[G:.*]] = eff.mul %arg0, %arg0
// CHECK-NEXT: %[[F:.*]]:2 = eff.all_reduce_start %[[L]], %[[G]] {world_size = 2 : i64} : tensor<f32>, tensor<4xf32>
// CHECK-NEXT: %[[H:.*]] = eff.add %arg0, %arg0
// CHECK-NEXT: %[[RS:.*]] = eff.reduce_scatter_start %[[H]] {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[D:.*]] = eff.exp %arg0
// CHECK-NEXT: %[[S:.*]]:2 = eff.wait %[[F]]#0, %[[F]]#1 : tensor<f32>, tensor<4xf32>
// CHECK-NEXT: %[[R:.*]] = eff.wait %[[RS]] : tensor<2xf32>
// CHECK-NEXT: return %[[S]]#0, %[[S]]#1, %[[R]], %[[D]]
func.func @bucket_then_scatter(%a: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>) {
  %l = eff.reduce_sum %a {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  %g = eff.mul %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h = eff.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s:2 = eff.all_reduce %l, %g {world_size = 2 : i64} : tensor<f32>, tensor<4xf32>
  %d = eff.exp %a : tensor<4xf32>
  %r = eff.reduce_scatter %h {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
  return %s#0, %s#1, %r, %d : tensor<f32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>
}

// -----

// ZeRO-3 gathers of sharded parameters, each right before its layer: the
// first stays where it was; each next one starts right after the wait of
// the one before (prefetch=1), while that layer computes. prefetch=0
// starts each where it was; prefetch=2 two ahead. The backward copy
// (eff.recomputed) keeps its attribute.
// CHECK-LABEL: func.func @gathers_prefetch(
// CHECK: %[[F0:.*]] = eff.all_gather_start %arg0
// CHECK-NEXT: %[[W0:.*]] = eff.wait %[[F0]]
// CHECK-NEXT: %[[F1:.*]] = eff.all_gather_start %arg1
// CHECK-NEXT: %[[Y0:.*]] = eff.mul %arg3, %[[W0]]
// CHECK-NEXT: %[[W1:.*]] = eff.wait %[[F1]]
// CHECK-NEXT: %[[F2:.*]] = eff.all_gather_start %arg2 {eff.recomputed, world_size = 2 : i64}
// CHECK-NEXT: %[[Y1:.*]] = eff.mul %[[Y0]], %[[W1]]
// CHECK-NEXT: %[[W2:.*]] = eff.wait %[[F2]]
// CHECK-NEXT: %[[Y2:.*]] = eff.mul %[[Y1]], %[[W2]]
// NOPREFETCH-LABEL: func.func @gathers_prefetch(
// NOPREFETCH: eff.all_gather_start %arg0
// NOPREFETCH-NEXT: eff.wait
// NOPREFETCH-NEXT: eff.mul
// NOPREFETCH-NEXT: eff.all_gather_start %arg1
// NOPREFETCH-NEXT: eff.wait
// NOPREFETCH-NEXT: eff.mul
// NOPREFETCH-NEXT: eff.all_gather_start %arg2
// NOPREFETCH-NEXT: eff.wait
// NOPREFETCH-NEXT: eff.mul
// PREFETCH2-LABEL: func.func @gathers_prefetch(
// PREFETCH2: eff.all_gather_start %arg0
// PREFETCH2-NEXT: eff.all_gather_start %arg1
// PREFETCH2-NEXT: eff.wait
// PREFETCH2-NEXT: eff.all_gather_start %arg2
// PREFETCH2-NEXT: eff.mul
// PREFETCH2-NEXT: eff.wait
// PREFETCH2-NEXT: eff.mul
// PREFETCH2-NEXT: eff.wait
// PREFETCH2-NEXT: eff.mul
func.func @gathers_prefetch(%w0: tensor<2xf32>, %w1: tensor<2xf32>, %w2: tensor<2xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = eff.all_gather %w0 {world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
  %y0 = eff.mul %x, %a0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a1 = eff.all_gather %w1 {world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
  %y1 = eff.mul %y0, %a1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a2 = eff.all_gather %w2 {eff.recomputed, world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
  %y2 = eff.mul %y1, %a2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y2 : tensor<4xf32>
}

// -----

// The ops that read a sum move down with its wait, but not past an
// in-place write into a tensor one of them reads (the step counter): they
// would read the new value. The clip's sum waits before that write.
// CHECK-LABEL: func.func @wait_stops_at_write(
// CHECK: %[[F:.*]] = eff.all_reduce_start %arg0
// CHECK-NEXT: %[[N:.*]] = eff.add %arg1, %arg1
// CHECK-NEXT: %[[S:.*]] = eff.wait %[[F]]
// CHECK-NEXT: %[[U:.*]] = eff.mul %[[S]], %arg1
// CHECK-NEXT: bufferization.materialize_in_destination %[[N]] in %arg1
// CHECK-NEXT: eff.exp
func.func @wait_stops_at_write(%g: tensor<f32>, %step: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %s = eff.all_reduce %g {world_size = 2 : i64} : tensor<f32>
  %n = eff.add %step, %step : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %u = eff.mul %s, %step : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %w = bufferization.materialize_in_destination %n in %step : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %e = eff.exp %g : tensor<f32>
  return %u, %w, %e : tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// A micro-batch loop's body is a block of its own: the gathers in it
// overlap within one iteration; the loop is a fence for the sum after it.
// CHECK-LABEL: func.func @loop_body(
// CHECK: scf.for
// CHECK: eff.all_gather_start %arg0
// CHECK-NEXT: eff.wait
// CHECK-NEXT: eff.all_gather_start %arg1
// CHECK-NEXT: eff.mul
// CHECK-NEXT: eff.wait
// CHECK: scf.yield
// CHECK: eff.all_reduce_start
// CHECK-NEXT: eff.wait
// CHECK-NEXT: return
func.func @loop_body(%w0: tensor<2xf32>, %w1: tensor<2xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %x) -> tensor<4xf32> {
    %a0 = eff.all_gather %w0 {world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
    %y0 = eff.mul %acc, %a0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %a1 = eff.all_gather %w1 {world_size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
    %y1 = eff.mul %y0, %a1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %y1 : tensor<4xf32>
  }
  %s = eff.all_reduce %r {world_size = 2 : i64} : tensor<4xf32>
  return %s : tensor<4xf32>
}
