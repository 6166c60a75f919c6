// RUN: effopt-opt %s --eff-expand-bf16-conversions --split-input-file | FileCheck %s

// f32 -> bf16 is PyTorch's integer rounding (nearest even on the upper 16
// bits; NaN -> 0x7fc0); bf16 -> f32 a 16-bit shift. No fptrunc to bf16 is
// left for LLVM (a libcall Debian's libgcc lacks, or AVX512-BF16).
// CHECK-LABEL: func.func @truncf
// CHECK-DAG: %[[BIAS:.*]] = arith.constant 32767 : i32
// CHECK-DAG: %[[QNAN:.*]] = arith.constant 32704 : i16
// CHECK: %[[ISNAN:.*]] = arith.cmpf une, %arg0, %arg0 : f32
// CHECK: %[[BITS:.*]] = arith.bitcast %arg0 : f32 to i32
// CHECK: arith.addi %{{.*}}, %[[BIAS]] : i32
// CHECK: %[[R:.*]] = arith.select %[[ISNAN]], %[[QNAN]], %{{.*}} : i16
// CHECK: arith.bitcast %[[R]] : i16 to bf16
// CHECK-NOT: arith.truncf
func.func @truncf(%x: f32) -> bf16 {
  %0 = arith.truncf %x : f32 to bf16
  return %0 : bf16
}

// -----

// CHECK-LABEL: func.func @extf
// CHECK: %[[B:.*]] = arith.bitcast %arg0 : bf16 to i16
// CHECK: %[[W:.*]] = arith.extui %[[B]] : i16 to i32
// CHECK: %[[S:.*]] = arith.shli %[[W]], %{{.*}} : i32
// CHECK: arith.bitcast %[[S]] : i32 to f32
// CHECK-NOT: arith.extf
func.func @extf(%x: bf16) -> f32 {
  %0 = arith.extf %x : bf16 to f32
  return %0 : f32
}

// -----

// Nothing else changes: f16 conversions stay (F16C or compiler-rt), and f32
// arithmetic such as maximumf is not expanded (arith-expand would).
// CHECK-LABEL: func.func @untouched
// CHECK: arith.truncf %arg0 : f32 to f16
// CHECK: arith.maximumf %arg0, %arg1 : f32
func.func @untouched(%x: f32, %y: f32) -> (f16, f32) {
  %0 = arith.truncf %x : f32 to f16
  %1 = arith.maximumf %x, %y : f32
  return %0, %1 : f16, f32
}
