// RUN: effopt-opt %s --pass-pipeline="builtin.module(convert-eff-to-linalg{attention=cuda})" --split-input-file --verify-diagnostics
// RUN: echo "module {}" | not effopt-opt --pass-pipeline="builtin.module(convert-eff-to-linalg{attention=rocm})" 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: convert-eff-to-linalg: attention must be cpu or cuda, got 'rocm'

// What the CUDA attention kernels do not take is an error naming it
// (eff-fuse-attention kernels=cuda fuses none of it).
func.func @mask(%q: tensor<1x2x8x64xbf16>, %k: tensor<1x2x8x64xbf16>, %v: tensor<1x2x8x64xbf16>, %m: tensor<8x8xi1>) -> tensor<1x2x8x64xbf16> {
  // expected-error @+1 {{'eff.attention' op the CUDA attention kernels take no mask other than the causal one}}
  %o, %lse = eff.attention %q, %k, %v mask %m {scale = 0.125 : f64} : (tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<8x8xi1>) -> (tensor<1x2x8x64xbf16>, tensor<1x2x8xf32>)
  return %o : tensor<1x2x8x64xbf16>
}

// -----

func.func @dropout(%q: tensor<1x2x8x64xbf16>, %k: tensor<1x2x8x64xbf16>, %v: tensor<1x2x8x64xbf16>) -> tensor<1x2x8x64xbf16> {
  // expected-error @+1 {{'eff.attention' op the CUDA attention kernels take no dropout}}
  %o, %lse = eff.attention %q, %k, %v {scale = 0.125 : f64, dropout = 0.1 : f64, seed = 3 : i64} : (tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>) -> (tensor<1x2x8x64xbf16>, tensor<1x2x8xf32>)
  return %o : tensor<1x2x8x64xbf16>
}

// -----

func.func @head256(%q: tensor<1x2x8x256xf32>, %k: tensor<1x2x8x256xf32>, %v: tensor<1x2x8x256xf32>) -> tensor<1x2x8x256xf32> {
  // expected-error @+1 {{'eff.attention' op the CUDA attention kernels take no head size above 128}}
  %o, %lse = eff.attention %q, %k, %v {scale = 0.125 : f64} : (tensor<1x2x8x256xf32>, tensor<1x2x8x256xf32>, tensor<1x2x8x256xf32>) -> (tensor<1x2x8x256xf32>, tensor<1x2x8xf32>)
  return %o : tensor<1x2x8x256xf32>
}

// -----

func.func @head_sizes(%q: tensor<6x5x64xf32>, %k: tensor<6x7x64xf32>, %v: tensor<6x7x32xf32>, %o: tensor<6x5x32xf32>, %lse: tensor<6x5xf32>, %do: tensor<6x5x32xf32>) -> tensor<6x5x64xf32> {
  // expected-error @+1 {{'eff.attention_grad' op the CUDA attention kernels take no values of another head size than the queries'}}
  %dq, %dk, %dv = eff.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.5 : f64} : (tensor<6x5x64xf32>, tensor<6x7x64xf32>, tensor<6x7x32xf32>, tensor<6x5x32xf32>, tensor<6x5xf32>, tensor<6x5x32xf32>) -> (tensor<6x5x64xf32>, tensor<6x7x64xf32>, tensor<6x7x32xf32>)
  return %dq : tensor<6x5x64xf32>
}

