// RUN: effopt-opt %s --eff-vectorizable-math --split-input-file | FileCheck %s
// RUN: effopt-opt %s --eff-vectorizable-math=ops=erf --split-input-file | FileCheck %s --check-prefix=ERF
// RUN: not effopt-opt %s --eff-vectorizable-math=ops=sin 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: eff-vectorizable-math: 'sin' is not one of exp, erf, tanh

// f32 exp, erf and tanh become arithmetic (no math call LLVM would turn
// into a libm call); only the selected ones with ops=.
// CHECK-LABEL: func.func @f32_functions
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK-NOT: math.tanh
// CHECK-NOT: math.fma
// CHECK: llvm.intr.fma
// CHECK: return
// ERF-LABEL: func.func @f32_functions
// ERF: math.exp
// ERF-NOT: math.erf
// ERF: math.tanh
func.func @f32_functions(%x: f32) -> (f32, f32, f32) {
  %e = math.exp %x : f32
  %r = math.erf %x : f32
  %t = math.tanh %x : f32
  return %e, %r, %t : f32, f32, f32
}

// -----

// Vectors too (the same polynomial per lane).
// CHECK-LABEL: func.func @f32_vector
// CHECK-NOT: math.exp
// CHECK-NOT: math.floor
// CHECK: llvm.intr.floor({{.*}}) : (vector<8xf32>) -> vector<8xf32>
// CHECK: llvm.intr.fma({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
func.func @f32_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %x : vector<8xf32>
  return %e : vector<8xf32>
}

// -----

// f64 and the other functions stay libm calls.
// CHECK-LABEL: func.func @left_to_libm
// CHECK: math.exp %{{.*}} : f64
// CHECK: math.log %{{.*}} : f32
func.func @left_to_libm(%x: f64, %y: f32) -> (f64, f32) {
  %e = math.exp %x : f64
  %l = math.log %y : f32
  return %e, %l : f64, f32
}
