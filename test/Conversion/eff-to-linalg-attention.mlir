// RUN: effopt-opt %s --convert-eff-to-linalg --split-input-file | FileCheck %s
// RUN: effopt-opt %s --convert-eff-to-linalg=threads=2 --split-input-file | FileCheck %s --check-prefix=THREADS
// RUN: effopt-opt %s --convert-eff-to-linalg --split-input-file | effopt-opt --split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --canonicalize | FileCheck %s --check-prefix=BUF

// eff.attention is one call of the runtime's tiled kernel on the operands'
// buffers (read in place, as they lie: each pointer is followed by the
// element strides of B1, B2 and T read from the buffer's metadata), with
// fresh buffers for the output, the log-sum-exp and the per-slot
// workspace: nothing Tq x Tk. Causal, Tq = Tk = 77: tiles of 16
// (effrt_attention_tile), passed before the workspace. B*H = 6 heads, 5
// query tiles each: 30 items; one slot per thread (threads=16, the pass's
// default), at most one per item: 16 slots of 16*16 + 2*16 floats (scores,
// row statistics) + 2*16*(16 + 16) (the key tile transposed, room to copy
// a strided query, value and output tile) = 1312. With threads=2, 2 slots.
// CHECK-LABEL: func.func @forward
// CHECK-DAG: bufferization.to_buffer %arg0 read_only : tensor<2x3x77x16xf32> to memref<2x3x77x16xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-DAG: bufferization.to_buffer %arg1 read_only
// CHECK-DAG: bufferization.to_buffer %arg2 read_only
// CHECK-DAG: %[[O:.*]] = memref.alloc() : memref<2x3x77x16xf32>
// CHECK-DAG: %[[LSE:.*]] = memref.alloc() : memref<2x3x77xf32>
// CHECK-DAG: %[[WS:.*]] = memref.alloc() {eff.workspace} : memref<20992xf32>
// CHECK-DAG: %[[C3696:.*]] = arith.constant 3696 : i64
// CHECK-DAG: %[[C1232:.*]] = arith.constant 1232 : i64
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}:4, %[[QS:.*]]:4 = memref.extract_strided_metadata
// CHECK: %[[QB1:.*]] = arith.index_cast %[[QS]]#0 : index to i64
// CHECK: %[[QB2:.*]] = arith.index_cast %[[QS]]#1 : index to i64
// CHECK: %[[QT:.*]] = arith.index_cast %[[QS]]#2 : index to i64
// CHECK: call @effrt_attention_fwd_tiled_f32(%{{[^,]*}}, %[[QB1]], %[[QB2]], %[[QT]], {{.*}}, %[[C3696]], %[[C1232]], %[[C16]], 
// CHECK-SAME: %c16_i64{{[_0-9]*}}, %{{[^,]*}}, %c16_i64{{[_0-9]*}}) : (
// THREADS-LABEL: func.func @forward
// THREADS: memref.alloc() {eff.workspace} : memref<2624xf32>
// THREADS: call @effrt_attention_fwd_tiled_f32(
// THREADS-SAME: %c16_i64{{[_0-9]*}}, %{{[^,]*}}, %c2_i64{{[_0-9]*}}) : (
// CHECK: bufferization.to_tensor %[[O]] restrict writable
// CHECK-NOT: linalg.
// CHECK: return
// BUF-LABEL: func.func @forward
// BUF-NOT: memref.alloc() : memref<{{.*}}77x77
// BUF: call @effrt_attention_fwd_tiled_f32(
func.func @forward(%q: tensor<2x3x77x16xf32>, %k: tensor<2x3x77x16xf32>, %v: tensor<2x3x77x16xf32>) -> tensor<2x3x77x16xf32> {
  %o, %lse = eff.attention %q, %k, %v {scale = 0.25 : f64, causal = true} : (tensor<2x3x77x16xf32>, tensor<2x3x77x16xf32>, tensor<2x3x77x16xf32>) -> (tensor<2x3x77x16xf32>, tensor<2x3x77xf32>)
  return %o : tensor<2x3x77x16xf32>
}

// -----

// The backward: one call with q, k, v, o, lse, dO in place, dq, dk, dv
// contiguous (rank 3: B1's stride 0, then B2's and T's) and the mask's
// element strides against [B1, B2, Tq, Tk] = [1, 6, 5, 7] (a [6, 1, 7]
// mask: 7, 0, 1). Tiles of 8; 6 heads, 6 slots of 3*8*8 (probability,
// gradient, keep-factor tiles) + Tq (rowsum(dO * O)) + 8(D + Dv) (key and
// value tiles transposed) + 2(Tq + Tk)D + 2 Tk Dv + Tq Dv (room to copy a
// strided head's q, k, v, dO, dq, dk, dv) = 561 floats; with threads=2, 2.
// CHECK-LABEL: func.func @backward
// CHECK-DAG: memref.alloc() {eff.workspace} : memref<3366xf32>
// CHECK: call @effrt_attention_bwd_tiled_f32(
// CHECK-SAME: %c0_i64{{[_0-9]*}}, %c40_i64, %c8_i64, %{{[^,]*}}, %c0_i64{{[_0-9]*}}, %c56_i64, %c8_i64{{[_0-9]*}}, %{{[^,]*}}, %c0_i64{{[_0-9]*}}, %c28_i64, %c4_i64, %{{[^,]*}}, %c2_i32, %c0_i64{{[_0-9]*}}, %c7_i64, %c0_i64{{[_0-9]*}}, %c1_i64,
// CHECK-SAME: %c8_i64{{[_0-9]*}}, %{{[^,]*}}, %c6_i64{{[_0-9]*}}) : (
// THREADS-LABEL: func.func @backward
// THREADS: memref.alloc() {eff.workspace} : memref<1122xf32>
// THREADS: call @effrt_attention_bwd_tiled_f32(
// THREADS-SAME: %c8_i64{{[_0-9]*}}, %{{[^,]*}}, %c2_i64{{[_0-9]*}}) : (
func.func @backward(%q: tensor<6x5x8xf32>, %k: tensor<6x7x8xf32>, %v: tensor<6x7x4xf32>, %o: tensor<6x5x4xf32>, %lse: tensor<6x5xf32>, %do: tensor<6x5x4xf32>, %m: tensor<6x1x7xi1>) -> (tensor<6x5x8xf32>, tensor<6x7x8xf32>, tensor<6x7x4xf32>) {
  %dq, %dk, %dv = eff.attention_grad %q, %k, %v, %o, %lse, %do mask %m {scale = 0.5 : f64} : (tensor<6x5x8xf32>, tensor<6x7x8xf32>, tensor<6x7x4xf32>, tensor<6x5x4xf32>, tensor<6x5xf32>, tensor<6x5x4xf32>, tensor<6x1x7xi1>) -> (tensor<6x5x8xf32>, tensor<6x7x8xf32>, tensor<6x7x4xf32>)
  return %dq, %dk, %dv : tensor<6x5x8xf32>, tensor<6x7x8xf32>, tensor<6x7x4xf32>
}

// -----

// Dropout inside a training step: the kernel gets eff.dropout's key, mixed
// with the step counter, and its threshold (0.1 * 2^24 = 1677721).
// CHECK-LABEL: func.func @dropout
// CHECK: %[[STEP:.*]] = tensor.extract %arg3[] : tensor<i64>
// CHECK: call @effrt_attention_fwd_tiled_f32(
// CHECK-SAME: %c1677721_i64
module {
  eff.parameter optimizer_state @optimizer.step : tensor<i64> = dense<0> : tensor<i64>
  func.func @dropout(%q: tensor<1x2x9x4xf32>, %k: tensor<1x2x9x4xf32>, %v: tensor<1x2x9x4xf32>, %step: tensor<i64> {eff.parameter = @optimizer.step}) -> tensor<1x2x9x4xf32> {
    %o, %lse = eff.attention %q, %k, %v {scale = 0.5 : f64, dropout = 0.1 : f64, seed = 5 : i64} : (tensor<1x2x9x4xf32>, tensor<1x2x9x4xf32>, tensor<1x2x9x4xf32>) -> (tensor<1x2x9x4xf32>, tensor<1x2x9xf32>)
    return %o : tensor<1x2x9x4xf32>
  }
}

// -----

// The heads of a [B, T, H*D] projection: exporters reshape to [B, T, H, D]
// and transpose to [B, H, T, D]; the output goes back the same way. The
// kernel reads q, k, v and writes o through strides in the projection's
// layout, so neither transpose is lowered (no linalg.generic): q's B1, B2, T
// strides are its [B, T, H, D] buffer's dims 0, 2, 1; the output buffer is
// [2, 5, 3, 8] with strides 120, 8, 24, and replaces the output's
// transpose; the reshape around it is a view (collapse_shape).
// CHECK-LABEL: func.func @heads_folded
// CHECK-NOT: linalg.generic
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0
// CHECK: bufferization.to_buffer %[[X]] read_only : tensor<2x5x3x8xf32> to memref<2x5x3x8xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK: %[[O:.*]] = memref.alloc() : memref<2x5x3x8xf32>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}:4, %[[QS:.*]]:4 = memref.extract_strided_metadata
// CHECK: arith.index_cast %[[QS]]#0
// CHECK-NEXT: arith.index_cast %[[QS]]#2
// CHECK-NEXT: arith.index_cast %[[QS]]#1
// CHECK: call @effrt_attention_fwd_tiled_f32({{.*}}, %c120_i64, %c8_i64, %c24_i64,
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[O]]
// CHECK-NOT: linalg.generic
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[T]]
// CHECK: return %[[R]]
func.func @heads_folded(%x: tensor<2x5x24xf32>, %y: tensor<2x5x3x8xf32>) -> tensor<2x5x24xf32> {
  %q4 = eff.reshape %x : tensor<2x5x24xf32> to tensor<2x5x3x8xf32>
  %q = eff.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x8xf32> -> tensor<2x3x5x8xf32>
  %v = eff.transpose %y {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x8xf32> -> tensor<2x3x5x8xf32>
  %o, %lse = eff.attention %q, %q, %v {scale = 0.25 : f64, causal = true} : (tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>) -> (tensor<2x3x5x8xf32>, tensor<2x3x5xf32>)
  %ot = eff.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x8xf32> -> tensor<2x5x3x8xf32>
  %r = eff.reshape %ot : tensor<2x5x3x8xf32> to tensor<2x5x24xf32>
  return %r : tensor<2x5x24xf32>
}

// -----

// A training step's attention: the forward's output is saved for the
// backward (eff.save) and transposed for the next layer; the backward reads
// the saved output through the same buffer, dO from its [B, T, H, D]
// gradient, and writes dq, dk, dv straight into the layout their
// transposes ask for. Only the output that is returned as [B, H, T, D]
// itself (%o) is materialised: one transpose in all.
// CHECK-LABEL: func.func @step_folded
// CHECK: %[[O:.*]] = memref.alloc() : memref<2x5x3x8xf32>
// CHECK: call @effrt_attention_fwd_tiled_f32(
// CHECK: %[[OT:.*]] = bufferization.to_tensor %[[O]]
// CHECK: %[[OLOG:.*]] = linalg.generic {{.*}} ins(%[[OT]] :
// CHECK: bufferization.to_buffer %[[OT]] read_only
// CHECK: %[[DQ:.*]] = memref.alloc() : memref<2x5x3x8xf32>
// CHECK: %[[DK:.*]] = memref.alloc() : memref<2x5x3x8xf32>
// CHECK: %[[DV:.*]] = memref.alloc() : memref<2x5x3x8xf32>
// CHECK: call @effrt_attention_bwd_tiled_f32(
// CHECK-SAME: %c120_i64{{[_0-9]*}}, %c8_i64{{[_0-9]*}}, %c24_i64{{[_0-9]*}}, %{{[^,]*}}, %c120_i64{{[_0-9]*}}, %c8_i64{{[_0-9]*}}, %c24_i64{{[_0-9]*}}, %{{[^,]*}}, %c120_i64{{[_0-9]*}}, %c8_i64{{[_0-9]*}}, %c24_i64{{[_0-9]*}}, %{{[^,]*}}, %c0_i32
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @step_folded(%q4: tensor<2x5x3x8xf32>, %do4: tensor<2x5x3x8xf32>) -> (tensor<2x5x3x8xf32>, tensor<2x3x5x8xf32>, tensor<2x5x3x8xf32>, tensor<2x5x3x8xf32>, tensor<2x5x3x8xf32>) {
  %q = eff.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x8xf32> -> tensor<2x3x5x8xf32>
  %o, %lse = eff.attention %q, %q, %q {scale = 0.25 : f64} : (tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>) -> (tensor<2x3x5x8xf32>, tensor<2x3x5xf32>)
  %ot = eff.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x8xf32> -> tensor<2x5x3x8xf32>
  %qs = eff.save %q : tensor<2x3x5x8xf32>
  %os = eff.save %o : tensor<2x3x5x8xf32>
  %ls = eff.save %lse : tensor<2x3x5xf32>
  %do = eff.transpose %do4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x8xf32> -> tensor<2x3x5x8xf32>
  %dq, %dk, %dv = eff.attention_grad %qs, %qs, %qs, %os, %ls, %do {scale = 0.25 : f64} : (tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5xf32>, tensor<2x3x5x8xf32>) -> (tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>)
  %dqt = eff.transpose %dq {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x8xf32> -> tensor<2x5x3x8xf32>
  %dkt = eff.transpose %dk {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x8xf32> -> tensor<2x5x3x8xf32>
  %dvt = eff.transpose %dv {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x8xf32> -> tensor<2x5x3x8xf32>
  return %ot, %o, %dqt, %dkt, %dvt : tensor<2x5x3x8xf32>, tensor<2x3x5x8xf32>, tensor<2x5x3x8xf32>, tensor<2x5x3x8xf32>, tensor<2x5x3x8xf32>
}

// -----

// nn.MultiheadAttention's rank-3 heads: [T, B*H, D] transposed to
// [B*H, T, D]; B1's stride is 0, B2's and T's come from the buffer's dims 1
// and 0. q, k, v split from one [T, B*H, 3*D] projection (views with an
// offset): after bufferization the kernel reads the projection itself, no
// copy.
// CHECK-LABEL: func.func @mha_folded
// CHECK-NOT: linalg.generic
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}:3, %[[QS:.*]]:3 = memref.extract_strided_metadata
// CHECK: arith.index_cast %[[QS]]#1
// CHECK-NEXT: arith.index_cast %[[QS]]#0
// CHECK: call @effrt_attention_fwd_tiled_f32(%{{[^,]*}}, %c0_i64{{[_0-9]*}}, %{{[^,]*}}, %{{[^,]*}},
// BUF-LABEL: func.func @mha_folded
// BUF-NOT: memref.copy
// BUF-NOT: linalg.generic
// BUF: memref.subview %arg0[0, 0, 0] [7, 6, 4] [1, 1, 1] : memref<7x6x12xf32> to memref<7x6x4xf32, strided<[72, 12, 1]>>
// BUF: call @effrt_attention_fwd_tiled_f32(%{{[^,]*}}, %c0_i64, %c12_i64, %c72_i64,
func.func @mha_folded(%qkv: tensor<7x6x12xf32>) -> tensor<7x6x4xf32> {
  %p:3 = eff.split %qkv {axis = 2 : i64} : tensor<7x6x12xf32> -> tensor<7x6x4xf32>, tensor<7x6x4xf32>, tensor<7x6x4xf32>
  %q = eff.transpose %p#0 {permutation = array<i64: 1, 0, 2>} : tensor<7x6x4xf32> -> tensor<6x7x4xf32>
  %k = eff.transpose %p#1 {permutation = array<i64: 1, 0, 2>} : tensor<7x6x4xf32> -> tensor<6x7x4xf32>
  %v = eff.transpose %p#2 {permutation = array<i64: 1, 0, 2>} : tensor<7x6x4xf32> -> tensor<6x7x4xf32>
  %o, %lse = eff.attention %q, %k, %v {scale = 0.5 : f64} : (tensor<6x7x4xf32>, tensor<6x7x4xf32>, tensor<6x7x4xf32>) -> (tensor<6x7x4xf32>, tensor<6x7xf32>)
  %ot = eff.transpose %o {permutation = array<i64: 1, 0, 2>} : tensor<6x7x4xf32> -> tensor<7x6x4xf32>
  return %ot : tensor<7x6x4xf32>
}
