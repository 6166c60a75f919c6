// RUN: effopt-opt %s --eff-fuse-attention=kernels=cuda --split-input-file | FileCheck %s
// RUN: effopt-opt %s --eff-fuse-attention --split-input-file | FileCheck %s --check-prefix=CPU
// RUN: echo "module {}" | not effopt-opt --eff-fuse-attention=kernels=rocm 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: eff-fuse-attention: kernels must be cpu or cuda, got 'rocm'

// kernels=cuda fuses only what effrt's CUDA kernels run: causal (or no
// mask), no dropout, one head size up to 128. GPT-2's causal attention:
// CHECK-LABEL: func.func @causal
// CHECK: eff.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 1.250000e-01 : f64}
// CHECK-NOT: eff.softmax
// CPU-LABEL: func.func @causal
// CPU: eff.attention
func.func @causal(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x4x64xf32>, %v: tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32> {
  %ninf = eff.constant dense<0xFF800000> : tensor<f32>
  %m = eff.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %c = eff.constant dense<0.125> : tensor<f32>
  %kt = eff.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x64xf32> -> tensor<1x2x64x4xf32>
  %s = eff.matmul %q, %kt : (tensor<1x2x4x64xf32>, tensor<1x2x64x4xf32>) -> tensor<1x2x4x4xf32>
  %d = eff.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %w = eff.where %m, %ninf, %d : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = eff.softmax %w {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = eff.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  return %o : tensor<1x2x4x64xf32>
}

// -----

// Dropout on the probabilities: left unfused for cuda.
// CHECK-LABEL: func.func @dropout
// CHECK-NOT: eff.attention
// CHECK: eff.softmax
// CPU-LABEL: func.func @dropout
// CPU: eff.attention
func.func @dropout(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x4x64xf32>, %v: tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32> {
  %c = eff.constant dense<0.125> : tensor<f32>
  %kt = eff.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x64xf32> -> tensor<1x2x64x4xf32>
  %s = eff.matmul %q, %kt : (tensor<1x2x4x64xf32>, tensor<1x2x64x4xf32>) -> tensor<1x2x4x4xf32>
  %d = eff.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = eff.softmax %d {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %pd, %keep = eff.dropout %p {ratio = 1.000000e-01 : f64, seed = 7 : i64} : tensor<1x2x4x4xf32> -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi1>)
  %o = eff.matmul %pd, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  return %o : tensor<1x2x4x64xf32>
}

// -----

// A padding mask (not the causal one): left unfused for cuda.
// CHECK-LABEL: func.func @padding
// CHECK-NOT: eff.attention
// CPU-LABEL: func.func @padding
// CPU: eff.attention {{.*}} mask
func.func @padding(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x4x64xf32>, %v: tensor<1x2x4x64xf32>, %pad: tensor<1x1x1x4xf32>) -> tensor<1x2x4x64xf32> {
  %c = eff.constant dense<0.125> : tensor<f32>
  %kt = eff.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x64xf32> -> tensor<1x2x64x4xf32>
  %s = eff.matmul %q, %kt : (tensor<1x2x4x64xf32>, tensor<1x2x64x4xf32>) -> tensor<1x2x4x4xf32>
  %d = eff.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %a = eff.add %d, %pad : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = eff.softmax %a {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = eff.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  return %o : tensor<1x2x4x64xf32>
}

// -----

// Head size 256: left unfused for cuda.
// CHECK-LABEL: func.func @head256
// CHECK-NOT: eff.attention
// CPU-LABEL: func.func @head256
// CPU: eff.attention
func.func @head256(%q: tensor<1x1x4x256xf32>, %k: tensor<1x1x4x256xf32>, %v: tensor<1x1x4x256xf32>) -> tensor<1x1x4x256xf32> {
  %kt = eff.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x256xf32> -> tensor<1x1x256x4xf32>
  %s = eff.matmul %q, %kt : (tensor<1x1x4x256xf32>, tensor<1x1x256x4xf32>) -> tensor<1x1x4x4xf32>
  %p = eff.softmax %s {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o = eff.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x256xf32>) -> tensor<1x1x4x256xf32>
  return %o : tensor<1x1x4x256xf32>
}
