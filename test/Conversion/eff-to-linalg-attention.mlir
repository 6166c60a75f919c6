// RUN: effopt-opt %s --convert-eff-to-linalg --split-input-file | FileCheck %s
// RUN: effopt-opt %s --convert-eff-to-linalg --split-input-file | effopt-opt --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --canonicalize | FileCheck %s --check-prefix=BUF

// eff.attention is one call of the runtime's tiled kernel on the operands'
// buffers (read in place), with fresh buffers for the output, the
// log-sum-exp and the per-slot tile workspace: nothing Tq x Tk.
// B*H = 6 heads, Tq = 77: 2 query tiles each, 12 items, 12 slots of
// 64*64 + 128 floats.
// CHECK-LABEL: func.func @forward
// CHECK-DAG: bufferization.to_buffer %arg0 read_only : tensor<2x3x77x16xf32> to memref<2x3x77x16xf32>
// CHECK-DAG: bufferization.to_buffer %arg1 read_only
// CHECK-DAG: bufferization.to_buffer %arg2 read_only
// CHECK-DAG: %[[O:.*]] = memref.alloc() : memref<2x3x77x16xf32>
// CHECK-DAG: %[[LSE:.*]] = memref.alloc() : memref<2x3x77xf32>
// CHECK-DAG: memref.alloc() {eff.workspace} : memref<50688xf32>
// CHECK: call @effrt_attention_fwd_f32(
// CHECK: bufferization.to_tensor %[[O]] restrict writable
// CHECK-NOT: linalg.
// CHECK: return
// BUF-LABEL: func.func @forward
// BUF-NOT: memref.alloc() : memref<{{.*}}77x77
// BUF: call @effrt_attention_fwd_f32(
func.func @forward(%q: tensor<2x3x77x16xf32>, %k: tensor<2x3x77x16xf32>, %v: tensor<2x3x77x16xf32>) -> tensor<2x3x77x16xf32> {
  %o, %lse = eff.attention %q, %k, %v {scale = 0.25 : f64, causal = true} : (tensor<2x3x77x16xf32>, tensor<2x3x77x16xf32>, tensor<2x3x77x16xf32>) -> (tensor<2x3x77x16xf32>, tensor<2x3x77xf32>)
  return %o : tensor<2x3x77x16xf32>
}

// -----

// The backward: one call with q, k, v, o, lse, dO in place and the mask's
// element strides against [B1, B2, Tq, Tk] = [1, 6, 5, 7] (a [6, 1, 7] mask:
// 7, 0, 1); 6 heads, 6 slots of 3*64*64 + Tq floats.
// CHECK-LABEL: func.func @backward
// CHECK-DAG: %[[C7:.*]] = arith.constant 7 : i64
// CHECK-DAG: memref.alloc() {eff.workspace} : memref<73758xf32>
// CHECK: call @effrt_attention_bwd_f32(
// CHECK-SAME: %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %c2_i32
func.func @backward(%q: tensor<6x5x8xf32>, %k: tensor<6x7x8xf32>, %v: tensor<6x7x4xf32>, %o: tensor<6x5x4xf32>, %lse: tensor<6x5xf32>, %do: tensor<6x5x4xf32>, %m: tensor<6x1x7xi1>) -> (tensor<6x5x8xf32>, tensor<6x7x8xf32>, tensor<6x7x4xf32>) {
  %dq, %dk, %dv = eff.attention_grad %q, %k, %v, %o, %lse, %do mask %m {scale = 0.5 : f64} : (tensor<6x5x8xf32>, tensor<6x7x8xf32>, tensor<6x7x4xf32>, tensor<6x5x4xf32>, tensor<6x5xf32>, tensor<6x5x4xf32>, tensor<6x1x7xi1>) -> (tensor<6x5x8xf32>, tensor<6x7x8xf32>, tensor<6x7x4xf32>)
  return %dq, %dk, %dv : tensor<6x5x8xf32>, tensor<6x7x8xf32>, tensor<6x7x4xf32>
}

// -----

// Dropout inside a training step: the kernel gets eff.dropout's key, mixed
// with the step counter, and its threshold (0.1 * 2^24 = 1677721).
// CHECK-LABEL: func.func @dropout
// CHECK: %[[STEP:.*]] = tensor.extract %arg3[] : tensor<i64>
// CHECK: call @effrt_attention_fwd_f32(
// CHECK-SAME: %c1677721_i64
module {
  eff.parameter optimizer_state @optimizer.step : tensor<i64> = dense<0> : tensor<i64>
  func.func @dropout(%q: tensor<1x2x9x4xf32>, %k: tensor<1x2x9x4xf32>, %v: tensor<1x2x9x4xf32>, %step: tensor<i64> {eff.parameter = @optimizer.step}) -> tensor<1x2x9x4xf32> {
    %o, %lse = eff.attention %q, %k, %v {scale = 0.5 : f64, dropout = 0.1 : f64, seed = 5 : i64} : (tensor<1x2x9x4xf32>, tensor<1x2x9x4xf32>, tensor<1x2x9x4xf32>) -> (tensor<1x2x9x4xf32>, tensor<1x2x9xf32>)
    return %o : tensor<1x2x9x4xf32>
  }
}
