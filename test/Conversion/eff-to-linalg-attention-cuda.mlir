// RUN: effopt-opt %s --pass-pipeline="builtin.module(convert-eff-to-linalg{attention=cuda})" --split-input-file | FileCheck %s

// attention=cuda: eff.attention is one call of the CUDA runtime's kernel
// (effrt_cuda_attention_fwd_strided) on the operands' buffers, read in
// place (each followed by its B1, B2 and T strides), bf16 as they are
// (head size 64: tensor cores), the output with its strides (contiguous:
// 3 * 77 * 64, 77 * 64, 64), the lse f32; then the shape
// [B1, B2, Tq, Tk, D, Dv] = [2, 3, 77, 77, 64, 64], the scale, causal and
// the type code (2: bf16). No workspace, nothing Tq x Tk.
// CHECK: func.func private @effrt_cuda_attention_fwd_strided(!llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, i64, i64, i64, f32, i32, i32)
// CHECK-LABEL: func.func @forward_bf16
// CHECK-DAG: bufferization.to_buffer %arg0 read_only : tensor<2x3x77x64xbf16> to memref<2x3x77x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-DAG: memref.alloc() : memref<2x3x77x64xbf16>
// CHECK-DAG: memref.alloc() : memref<2x3x77xf32>
// CHECK-DAG: %[[B1:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[B2:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG: %[[CAUSAL:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[BF16:.*]] = arith.constant 2 : i32
// CHECK: call @effrt_cuda_attention_fwd_strided(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %c14784_i64, %c4928_i64, %c64_i64{{[_0-9]*}}, %{{[^,]*}}, %[[B1]], %[[B2]], %c77_i64{{[_0-9]*}}, %c77_i64{{[_0-9]*}}, %c64_i64{{[_0-9]*}}, %c64_i64{{[_0-9]*}}, %[[SCALE]], %[[CAUSAL]], %[[BF16]])
// CHECK-NOT: memref.alloc() {eff.workspace}
// CHECK-NOT: linalg.
// CHECK: return
func.func @forward_bf16(%q: tensor<2x3x77x64xbf16>, %k: tensor<2x3x77x64xbf16>, %v: tensor<2x3x77x64xbf16>) -> (tensor<2x3x77x64xbf16>, tensor<2x3x77xf32>) {
  %o, %lse = eff.attention %q, %k, %v {scale = 0.125 : f64, causal = true} : (tensor<2x3x77x64xbf16>, tensor<2x3x77x64xbf16>, tensor<2x3x77x64xbf16>) -> (tensor<2x3x77x64xbf16>, tensor<2x3x77xf32>)
  return %o, %lse : tensor<2x3x77x64xbf16>, tensor<2x3x77xf32>
}

// -----

// The backward: q, k, v, o, lse, dO in place, dq, dk, dv fresh, and a
// workspace of B1 * B2 * Tq floats (rowsum(dO * o)): 6 * 5 = 30. Rank 3:
// B1 = 1 (its strides 0). f16 of head size 128 (type code 1), not causal.
// CHECK-LABEL: func.func @backward_f16
// CHECK-DAG: memref.alloc() {eff.workspace} : memref<30xf32>
// CHECK-DAG: %[[NOT:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[F16:.*]] = arith.constant 1 : i32
// CHECK: call @effrt_cuda_attention_bwd_strided(
// CHECK-SAME: %[[NOT]], %[[F16]]) : (!llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, i64, i64, i64, f32, i32, i32) -> ()
// CHECK-NOT: linalg.
// CHECK: return
func.func @backward_f16(%q: tensor<6x5x128xf16>, %k: tensor<6x7x128xf16>, %v: tensor<6x7x128xf16>, %o: tensor<6x5x128xf16>, %lse: tensor<6x5xf32>, %do: tensor<6x5x128xf16>) -> (tensor<6x5x128xf16>, tensor<6x7x128xf16>, tensor<6x7x128xf16>) {
  %dq, %dk, %dv = eff.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.5 : f64} : (tensor<6x5x128xf16>, tensor<6x7x128xf16>, tensor<6x7x128xf16>, tensor<6x5x128xf16>, tensor<6x5xf32>, tensor<6x5x128xf16>) -> (tensor<6x5x128xf16>, tensor<6x7x128xf16>, tensor<6x7x128xf16>)
  return %dq, %dk, %dv : tensor<6x5x128xf16>, tensor<6x7x128xf16>, tensor<6x7x128xf16>
}

// -----

// bf16 of a head size the tensor-core kernels do not take (32): widened to
// f32 around the f32 kernel (type code 0), the output rounded back.
// CHECK-LABEL: func.func @bf16_head32
// CHECK: linalg.generic
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: memref.alloc() : memref<1x2x9x32xf32>
// CHECK: call @effrt_cuda_attention_fwd(
// CHECK-SAME: %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}) :
// CHECK: linalg.generic
// CHECK: arith.truncf {{.*}} : f32 to bf16
func.func @bf16_head32(%q: tensor<1x2x9x32xbf16>, %k: tensor<1x2x9x32xbf16>, %v: tensor<1x2x9x32xbf16>) -> tensor<1x2x9x32xbf16> {
  %o, %lse = eff.attention %q, %k, %v {scale = 0.5 : f64} : (tensor<1x2x9x32xbf16>, tensor<1x2x9x32xbf16>, tensor<1x2x9x32xbf16>) -> (tensor<1x2x9x32xbf16>, tensor<1x2x9xf32>)
  return %o : tensor<1x2x9x32xbf16>
}

// -----

// f32 as it is (type code 0).
// CHECK-LABEL: func.func @forward_f32
// CHECK-NOT: linalg.
// CHECK: call @effrt_cuda_attention_fwd_strided(
// CHECK-SAME: %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}) :
func.func @forward_f32(%q: tensor<1x4x16x64xf32>, %k: tensor<1x4x16x64xf32>, %v: tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32> {
  %o, %lse = eff.attention %q, %k, %v {scale = 0.125 : f64} : (tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>) -> (tensor<1x4x16x64xf32>, tensor<1x4x16xf32>)
  return %o : tensor<1x4x16x64xf32>
}

// -----

// The heads of a GPT's [B, T, 3 * H * D] projection, split, reshaped to
// [B, T, H, D] and transposed to [B, H, T, D] (as exporters write it): the
// kernel reads q, k and v in place through strides (B1, B2, T: the
// projection's dims 0, 2, 1 of each slice) and writes o in the layout of
// its transpose back, so no transpose is lowered (no linalg.generic); o's
// buffer is [2, 5, 3, 64] with strides 960, 64, 192.
// CHECK-LABEL: func.func @gpt_heads_folded
// CHECK-NOT: linalg.generic
// CHECK: %[[O:.*]] = memref.alloc() : memref<2x5x3x64xbf16>
// CHECK: call @effrt_cuda_attention_fwd_strided({{.*}}, %c960_i64, %c64_i64{{[_0-9]*}}, %c192_i64,
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[O]]
// CHECK-NOT: linalg.generic
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[T]]
// CHECK: return %[[R]]
func.func @gpt_heads_folded(%x: tensor<2x5x576xbf16>) -> tensor<2x5x192xbf16> {
  %qf = eff.slice %x {starts = array<i64: 0, 0, 0>, limits = array<i64: 2, 5, 192>, strides = array<i64: 1, 1, 1>} : tensor<2x5x576xbf16> -> tensor<2x5x192xbf16>
  %kf = eff.slice %x {starts = array<i64: 0, 0, 192>, limits = array<i64: 2, 5, 384>, strides = array<i64: 1, 1, 1>} : tensor<2x5x576xbf16> -> tensor<2x5x192xbf16>
  %vf = eff.slice %x {starts = array<i64: 0, 0, 384>, limits = array<i64: 2, 5, 576>, strides = array<i64: 1, 1, 1>} : tensor<2x5x576xbf16> -> tensor<2x5x192xbf16>
  %q4 = eff.reshape %qf : tensor<2x5x192xbf16> to tensor<2x5x3x64xbf16>
  %k4 = eff.reshape %kf : tensor<2x5x192xbf16> to tensor<2x5x3x64xbf16>
  %v4 = eff.reshape %vf : tensor<2x5x192xbf16> to tensor<2x5x3x64xbf16>
  %q = eff.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x64xbf16> -> tensor<2x3x5x64xbf16>
  %k = eff.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x64xbf16> -> tensor<2x3x5x64xbf16>
  %v = eff.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x64xbf16> -> tensor<2x3x5x64xbf16>
  %o, %lse = eff.attention %q, %k, %v {scale = 0.125 : f64, causal = true} : (tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>) -> (tensor<2x3x5x64xbf16>, tensor<2x3x5xf32>)
  %ot = eff.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x64xbf16> -> tensor<2x5x3x64xbf16>
  %r = eff.reshape %ot : tensor<2x5x3x64xbf16> to tensor<2x5x192xbf16>
  return %r : tensor<2x5x192xbf16>
}

// -----

// The backward of the same fused projection: autodiff concatenates dq, dk
// and dv (each transposed back to [B, T, H, D] and reshaped to [B, T, HD])
// along the last axis, so the kernel writes each into its slice of one
// [B, T, 3HD] buffer (B and T strides of the whole row, 2880 and 576; the
// head stride 64), and neither the concatenation's copies nor separate
// gradient buffers remain. The slices are in the concatenation's order,
// whatever the order of the gradients' users.
// CHECK-LABEL: func.func @gpt_grads_into_concat
// CHECK-NOT: linalg.generic
// CHECK: %[[ALL:.*]] = memref.alloc() : memref<2x5x576xbf16>
// CHECK: %[[Q:.*]] = memref.subview %[[ALL]][0, 0, 0] [2, 5, 192] [1, 1, 1]
// CHECK: memref.expand_shape %[[Q]] {{.*}} into memref<2x5x3x64xbf16, strided<[2880, 576, 64, 1]>>
// CHECK: %[[K:.*]] = memref.subview %[[ALL]][0, 0, 192] [2, 5, 192] [1, 1, 1]
// CHECK: memref.expand_shape %[[K]] {{.*}} into memref<2x5x3x64xbf16, strided<[2880, 576, 64, 1], offset: 192>>
// CHECK: %[[V:.*]] = memref.subview %[[ALL]][0, 0, 384] [2, 5, 192] [1, 1, 1]
// CHECK: memref.expand_shape %[[V]] {{.*}} into memref<2x5x3x64xbf16, strided<[2880, 576, 64, 1], offset: 384>>
// CHECK-NOT: memref.alloc() : memref<2x5x3x64xbf16>
// CHECK: call @effrt_cuda_attention_bwd_strided(
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[ALL]]
// CHECK-NOT: linalg.generic
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[T]]
func.func @gpt_grads_into_concat(%x: tensor<2x5x576xbf16>, %o: tensor<2x3x5x64xbf16>, %lse: tensor<2x3x5xf32>, %do: tensor<2x3x5x64xbf16>) -> tensor<2x5x576xbf16> {
  %qf = eff.slice %x {starts = array<i64: 0, 0, 0>, limits = array<i64: 2, 5, 192>, strides = array<i64: 1, 1, 1>} : tensor<2x5x576xbf16> -> tensor<2x5x192xbf16>
  %kf = eff.slice %x {starts = array<i64: 0, 0, 192>, limits = array<i64: 2, 5, 384>, strides = array<i64: 1, 1, 1>} : tensor<2x5x576xbf16> -> tensor<2x5x192xbf16>
  %vf = eff.slice %x {starts = array<i64: 0, 0, 384>, limits = array<i64: 2, 5, 576>, strides = array<i64: 1, 1, 1>} : tensor<2x5x576xbf16> -> tensor<2x5x192xbf16>
  %q4 = eff.reshape %qf : tensor<2x5x192xbf16> to tensor<2x5x3x64xbf16>
  %k4 = eff.reshape %kf : tensor<2x5x192xbf16> to tensor<2x5x3x64xbf16>
  %v4 = eff.reshape %vf : tensor<2x5x192xbf16> to tensor<2x5x3x64xbf16>
  %q = eff.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x64xbf16> -> tensor<2x3x5x64xbf16>
  %k = eff.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x64xbf16> -> tensor<2x3x5x64xbf16>
  %v = eff.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x3x64xbf16> -> tensor<2x3x5x64xbf16>
  %dq, %dk, %dv = eff.attention_grad %q, %k, %v, %o, %lse, %do {causal = true, scale = 1.250000e-01 : f64} : (tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>, tensor<2x3x5xf32>, tensor<2x3x5x64xbf16>) -> (tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>)
  %tk = eff.transpose %dk {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x64xbf16> -> tensor<2x5x3x64xbf16>
  %tv = eff.transpose %dv {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x64xbf16> -> tensor<2x5x3x64xbf16>
  %rv = eff.reshape %tv : tensor<2x5x3x64xbf16> to tensor<2x5x192xbf16>
  %rk = eff.reshape %tk : tensor<2x5x3x64xbf16> to tensor<2x5x192xbf16>
  %tq = eff.transpose %dq {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x64xbf16> -> tensor<2x5x3x64xbf16>
  %rq = eff.reshape %tq : tensor<2x5x3x64xbf16> to tensor<2x5x192xbf16>
  %c = eff.concat %rq, %rk, %rv {axis = 2 : i64} : (tensor<2x5x192xbf16>, tensor<2x5x192xbf16>, tensor<2x5x192xbf16>) -> tensor<2x5x576xbf16>
  return %c : tensor<2x5x576xbf16>
}

// -----

// A gradient read by anything else than the concatenation (here dk itself
// is returned too) keeps its own buffer, and the concatenation copies.
// CHECK-LABEL: func.func @grad_also_used
// CHECK-COUNT-3: memref.alloc() : memref<2x5x3x64xbf16>
// CHECK: call @effrt_cuda_attention_bwd_strided(
func.func @grad_also_used(%q: tensor<2x3x5x64xbf16>, %k: tensor<2x3x5x64xbf16>, %v: tensor<2x3x5x64xbf16>, %o: tensor<2x3x5x64xbf16>, %lse: tensor<2x3x5xf32>, %do: tensor<2x3x5x64xbf16>) -> (tensor<2x5x576xbf16>, tensor<2x3x5x64xbf16>) {
  %dq, %dk, %dv = eff.attention_grad %q, %k, %v, %o, %lse, %do {causal = true, scale = 1.250000e-01 : f64} : (tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>, tensor<2x3x5xf32>, tensor<2x3x5x64xbf16>) -> (tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>, tensor<2x3x5x64xbf16>)
  %tq = eff.transpose %dq {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x64xbf16> -> tensor<2x5x3x64xbf16>
  %tk = eff.transpose %dk {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x64xbf16> -> tensor<2x5x3x64xbf16>
  %tv = eff.transpose %dv {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x5x64xbf16> -> tensor<2x5x3x64xbf16>
  %rq = eff.reshape %tq : tensor<2x5x3x64xbf16> to tensor<2x5x192xbf16>
  %rk = eff.reshape %tk : tensor<2x5x3x64xbf16> to tensor<2x5x192xbf16>
  %rv = eff.reshape %tv : tensor<2x5x3x64xbf16> to tensor<2x5x192xbf16>
  %c = eff.concat %rq, %rk, %rv {axis = 2 : i64} : (tensor<2x5x192xbf16>, tensor<2x5x192xbf16>, tensor<2x5x192xbf16>) -> tensor<2x5x576xbf16>
  return %c, %dk : tensor<2x5x576xbf16>, tensor<2x3x5x64xbf16>
}
