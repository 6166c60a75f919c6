// RUN: effopt-opt %s --eff-schedule-memory --split-input-file | FileCheck %s

// Free early: the update of %w frees its gradient, so it runs as soon as the
// gradient is final, pulling the learning rate along; %v's update waits for
// its gradient. Each update writes its argument in place, after every other
// reader of that argument.
// CHECK-LABEL: func.func @update_when_gradient_final
// CHECK:      %[[GW:.*]] = eff.mul %arg2, %arg2
// CHECK-NEXT: %[[LR:.*]] = eff.lr_schedule %arg3
// CHECK-NEXT: %[[NW:.*]] = eff.sgd_update %arg0, %[[GW]], %[[LR]], %arg3
// CHECK-NEXT: %[[A:.*]] = eff.exp %arg2
// CHECK-NEXT: %[[B:.*]] = eff.exp %[[A]]
// CHECK-NEXT: %[[GV:.*]] = eff.mul %[[B]], %arg1
// CHECK-NEXT: %[[NV:.*]] = eff.sgd_update %arg1, %[[GV]], %[[LR]], %arg3
// CHECK-NEXT: bufferization.materialize_in_destination %[[NW]] in %arg0
// CHECK-NEXT: bufferization.materialize_in_destination %[[NV]] in %arg1
func.func @update_when_gradient_final(%w: tensor<64xf32>, %v: tensor<64xf32>,
                                      %x: tensor<64xf32>, %step: tensor<i64>)
    -> (tensor<64xf32>, tensor<64xf32>) {
  %gw = eff.mul %x, %x : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %a = eff.exp %x : tensor<64xf32>
  %b = eff.exp %a : tensor<64xf32>
  %gv = eff.mul %b, %v : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %lr = eff.lr_schedule %step {kind = "constant", lr = 0.1 : f64} : tensor<i64> -> tensor<f32>
  %nw = eff.sgd_update %w, %gw, %lr, %step : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>) -> tensor<64xf32>
  %nv = eff.sgd_update %v, %gv, %lr, %step : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>) -> tensor<64xf32>
  %r0 = bufferization.materialize_in_destination %nw in %w : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %r1 = bufferization.materialize_in_destination %nv in %v : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %r0, %r1 : tensor<64xf32>, tensor<64xf32>
}

// -----

// In place means after every other reader: %gv still reads %w, so the
// update of %w waits for it -- and %w's gradient, read by nothing else,
// sinks to just before the update.
// CHECK-LABEL: func.func @update_after_other_readers
// CHECK:      %[[A:.*]] = eff.exp %arg2
// CHECK-NEXT: %[[GV:.*]] = eff.mul %[[A]], %arg0
// CHECK-NEXT: %[[GW:.*]] = eff.mul %arg2, %arg2
// CHECK-NEXT: %[[LR:.*]] = eff.lr_schedule
// CHECK-NEXT: eff.sgd_update %arg0, %[[GW]], %[[LR]]
// CHECK-NEXT: eff.sgd_update %arg1, %[[GV]], %[[LR]]
func.func @update_after_other_readers(%w: tensor<64xf32>, %v: tensor<64xf32>,
                                      %x: tensor<64xf32>, %step: tensor<i64>)
    -> (tensor<64xf32>, tensor<64xf32>) {
  %gw = eff.mul %x, %x : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %a = eff.exp %x : tensor<64xf32>
  %gv = eff.mul %a, %w : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %lr = eff.lr_schedule %step {kind = "constant", lr = 0.1 : f64} : tensor<i64> -> tensor<f32>
  %nw = eff.sgd_update %w, %gw, %lr, %step : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>) -> tensor<64xf32>
  %nv = eff.sgd_update %v, %gv, %lr, %step : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>) -> tensor<64xf32>
  %r0 = bufferization.materialize_in_destination %nw in %w : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %r1 = bufferization.materialize_in_destination %nv in %v : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %r0, %r1 : tensor<64xf32>, tensor<64xf32>
}

// -----

// Something global over all gradients (here a norm for clipping) makes every
// update wait for every gradient through the data flow: the updates stay
// after the norm. (Each gradient's square sum moves up to its gradient.)
// CHECK-LABEL: func.func @global_norm_waits_for_all
// CHECK:      %[[GW:.*]] = eff.mul %arg2, %arg2
// CHECK-NEXT: %[[SW:.*]] = eff.reduce_sum %[[GW]]
// CHECK-NEXT: %[[GV:.*]] = eff.exp %arg2
// CHECK-NEXT: %[[SV:.*]] = eff.reduce_sum %[[GV]]
// CHECK-NEXT: eff.add %[[SW]], %[[SV]]
// CHECK-NEXT: %[[NORM:.*]] = eff.sqrt
// CHECK-NEXT: %[[CW:.*]] = eff.mul %[[GW]], %[[NORM]]
// CHECK-NEXT: %[[CV:.*]] = eff.mul %[[GV]], %[[NORM]]
// CHECK-NEXT: eff.lr_schedule
// CHECK-NEXT: eff.sgd_update %arg0, %[[CW]]
// CHECK-NEXT: eff.sgd_update %arg1, %[[CV]]
func.func @global_norm_waits_for_all(%w: tensor<64xf32>, %v: tensor<64xf32>,
                                     %x: tensor<64xf32>, %step: tensor<i64>)
    -> (tensor<64xf32>, tensor<64xf32>) {
  %gw = eff.mul %x, %x : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %gv = eff.exp %x : tensor<64xf32>
  %sw = eff.reduce_sum %gw {axes = array<i64: 0>} : tensor<64xf32> -> tensor<f32>
  %sv = eff.reduce_sum %gv {axes = array<i64: 0>} : tensor<64xf32> -> tensor<f32>
  %s = eff.add %sw, %sv : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %norm = eff.sqrt %s : tensor<f32>
  %cw = eff.mul %gw, %norm : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
  %cv = eff.mul %gv, %norm : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
  %lr = eff.lr_schedule %step {kind = "constant", lr = 0.1 : f64} : tensor<i64> -> tensor<f32>
  %nw = eff.sgd_update %w, %cw, %lr, %step : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>) -> tensor<64xf32>
  %nv = eff.sgd_update %v, %cv, %lr, %step : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>) -> tensor<64xf32>
  %r0 = bufferization.materialize_in_destination %nw in %w : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %r1 = bufferization.materialize_in_destination %nv in %v : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %r0, %r1 : tensor<64xf32>, tensor<64xf32>
}

// -----

// Sink: %big (256 B from a 4-byte argument) is read only by the last op:
// computed there, it is not alive while %e and %f are. %s (4 B) sinks to its
// reader, the return. %f does not move: it frees %e.
// CHECK-LABEL: func.func @sink_to_first_reader
// CHECK:      %[[E:.*]] = eff.exp %arg1
// CHECK-NEXT: %[[F:.*]] = eff.exp %[[E]]
// CHECK-NEXT: %[[BIG:.*]] = eff.broadcast_to %arg2
// CHECK-NEXT: %[[M:.*]] = eff.mul %[[F]], %[[BIG]]
// CHECK-NEXT: %[[S:.*]] = eff.reduce_sum %arg0
// CHECK-NEXT: return %[[M]], %[[S]]
func.func @sink_to_first_reader(%x: tensor<64xf32>, %y: tensor<64xf32>, %c: tensor<f32>)
    -> (tensor<64xf32>, tensor<f32>) {
  %big = eff.broadcast_to %c : tensor<f32> to tensor<64xf32>
  %s = eff.reduce_sum %x {axes = array<i64: 0>} : tensor<64xf32> -> tensor<f32>
  %e = eff.exp %y : tensor<64xf32>
  %f = eff.exp %e : tensor<64xf32>
  %m = eff.mul %f, %big : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %m, %s : tensor<64xf32>, tensor<f32>
}

// -----

// A region op (a loop over micro-batches) is one unit that stays where it
// is, and nothing moves across it: %early would sink to its reader after the
// loop without it.
// CHECK-LABEL: func.func @regions_are_barriers
// CHECK:      %[[EARLY:.*]] = eff.broadcast_to %arg1
// CHECK-NEXT: scf.for
// CHECK-NEXT: eff.add
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: eff.exp
// CHECK-NEXT: eff.mul %{{.*}}, %[[EARLY]]
func.func @regions_are_barriers(%x: tensor<64xf32>, %c: tensor<f32>) -> tensor<64xf32> {
  %early = eff.broadcast_to %c : tensor<f32> to tensor<64xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %x) -> (tensor<64xf32>) {
    %next = eff.add %acc, %x : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    scf.yield %next : tensor<64xf32>
  }
  %e = eff.exp %sum : tensor<64xf32>
  %m = eff.mul %e, %early : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %m : tensor<64xf32>
}

// -----

// Two candidate orders. Hoisting %h (it frees the large %act) would pull
// %g and %d up with it, ahead of %w, which frees %ln: %ln, %act, %g and %d
// would then be live together, above the old order's peak (%ln and %act
// are the forward's, read there first, so nothing sinks them). The order
// that pulls up only scalars keeps that chain as it was and still runs the
// update right after its gradient (with the learning rate): the same peak,
// fewer live bytes over the step, so it wins. Before, the higher peak of
// the first order discarded every move.
// CHECK-LABEL: func.func @pulled_chain_above_peak
// CHECK:      %[[GP:.*]] = eff.mul %arg0, %arg0
// CHECK-NEXT: %[[LR:.*]] = eff.lr_schedule
// CHECK-NEXT: eff.sgd_update %arg0, %[[GP]], %[[LR]]
// CHECK:      %[[LN:.*]] = eff.exp %arg1
// CHECK:      %[[ACT:.*]] = eff.exp %arg2
// CHECK:      %[[G:.*]] = eff.mul %arg3
// CHECK-NEXT: eff.linear %[[LN]], %[[G]]
// CHECK-NEXT: %[[D:.*]] = eff.exp %[[G]]
// CHECK-NEXT: eff.linear %[[ACT]], %[[D]]
func.func @pulled_chain_above_peak(%p: tensor<64xf32>, %x1: tensor<256x4xf32>,
                                   %x2: tensor<256x16xf32>, %x3: tensor<256x4xf32>,
                                   %step: tensor<i64>)
    -> (tensor<64xf32>, tensor<4x4xf32>, tensor<16x4xf32>) {
  %gp = eff.mul %p, %p : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %ln = eff.exp %x1 : tensor<256x4xf32>
  %yl = eff.reduce_sum %ln {axes = array<i64: 0, 1>} : tensor<256x4xf32> -> tensor<f32>
  %act = eff.exp %x2 : tensor<256x16xf32>
  %ya = eff.reduce_sum %act {axes = array<i64: 0, 1>} : tensor<256x16xf32> -> tensor<f32>
  %loss = eff.add %yl, %ya : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %g = eff.mul %x3, %loss : (tensor<256x4xf32>, tensor<f32>) -> tensor<256x4xf32>
  %w = eff.linear %ln, %g {transpose_a = true} : (tensor<256x4xf32>, tensor<256x4xf32>) -> tensor<4x4xf32>
  %d = eff.exp %g : tensor<256x4xf32>
  %h = eff.linear %act, %d {transpose_a = true} : (tensor<256x16xf32>, tensor<256x4xf32>) -> tensor<16x4xf32>
  %lr = eff.lr_schedule %step {kind = "constant", lr = 0.1 : f64} : tensor<i64> -> tensor<f32>
  %np = eff.sgd_update %p, %gp, %lr, %step : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>) -> tensor<64xf32>
  %r = bufferization.materialize_in_destination %np in %p : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %r, %w, %h : tensor<64xf32>, tensor<4x4xf32>, tensor<16x4xf32>
}

// -----

// Pulled up together with an op that frees memory, the ops it waits for
// keep every edge among them: %r reads %d before %p, written into %d, is
// computed (a reader-before-write edge, which points back from a later op
// to an earlier one), so %r runs first even though %p came first. Placed
// in their old order, the edge was broken and %p became ready a second
// time (torchvision's ResNet-18 with --remat selective and bf16: a
// recomputed batch norm reading the running statistics the forward's
// writes).
// CHECK-LABEL: func.func @pulled_reader_before_write
// CHECK:      %[[R:.*]] = eff.mul %arg0, %arg1
// CHECK-NEXT: %[[P:.*]] = eff.mul %arg1, %arg1
// CHECK-NEXT: %[[BIG:.*]] = eff.exp %arg2
// CHECK-NEXT: %[[O:.*]] = eff.matmul %[[BIG]], %[[P]]
// CHECK-NEXT: %[[W:.*]] = bufferization.materialize_in_destination %[[P]] in %arg0
// CHECK-NEXT: return %[[O]], %[[R]], %[[W]]
func.func @pulled_reader_before_write(%d: tensor<16x1xf32>, %q: tensor<16x1xf32>,
                                      %x: tensor<256x16xf32>)
    -> (tensor<256x1xf32>, tensor<16x1xf32>, tensor<16x1xf32>) {
  %big = eff.exp %x : tensor<256x16xf32>
  %p = eff.mul %q, %q : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
  %r = eff.mul %d, %q : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
  %o = eff.matmul %big, %p : (tensor<256x16xf32>, tensor<16x1xf32>) -> tensor<256x1xf32>
  %w = bufferization.materialize_in_destination %p in %d : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
  return %o, %r, %w : tensor<256x1xf32>, tensor<16x1xf32>, tensor<16x1xf32>
}
