// RUN: effopt-opt %s --eff-outline-kernels | FileCheck %s

// Nests with identical bodies share one kernel, the first outlined, each
// call passing its own buffers (here the second nest reads %b and writes
// %a: its arguments come in use order, so the body is the first's). A
// different constant, a different buffer type or operands swapped in the
// use-def structure make a kernel of its own.
// CHECK-LABEL: func.func @effx_step(
// CHECK: call @effx_step_kernel_0_first(%arg0, %arg1)
// CHECK: call @effx_step_kernel_0_first(%arg1, %arg0)
// CHECK: call @effx_step_kernel_2_other_constant(%arg0, %arg1)
// CHECK: call @effx_step_kernel_3_other_type(%arg2, %arg1)
// CHECK: call @effx_step_kernel_4_subtract(%arg0, %arg1)
// CHECK: call @effx_step_kernel_5_subtract_swapped(%arg0, %arg1)
// CHECK: call @effx_step_kernel_4_subtract(%arg1, %arg0)
// CHECK-NOT: call
// CHECK: func.func private @effx_step_kernel_0_first(
// CHECK-NOT: func.func private @effx_step_kernel_1
// CHECK: func.func private @effx_step_kernel_2_other_constant(
// CHECK: func.func private @effx_step_kernel_3_other_type(
// CHECK: func.func private @effx_step_kernel_4_subtract(
// CHECK: func.func private @effx_step_kernel_5_subtract_swapped(
// CHECK-NOT: func.func private @effx_step_kernel_6
module {
  func.func @effx_step(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<8xf32>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %six = arith.constant 6.0 : f32
    %three = arith.constant 3.0 : f32
    scf.for %i = %c0 to %c16 step %c1 {
      %v = memref.load %a[%i] : memref<16xf32>
      %m = arith.minimumf %v, %six : f32
      memref.store %m, %b[%i] : memref<16xf32>
    } loc("first")
    scf.for %i = %c0 to %c16 step %c1 {
      %v = memref.load %b[%i] : memref<16xf32>
      %m = arith.minimumf %v, %six : f32
      memref.store %m, %a[%i] : memref<16xf32>
    } loc("second")
    scf.for %i = %c0 to %c16 step %c1 {
      %v = memref.load %a[%i] : memref<16xf32>
      %m = arith.minimumf %v, %three : f32
      memref.store %m, %b[%i] : memref<16xf32>
    } loc("other_constant")
    scf.for %i = %c0 to %c8 step %c1 {
      %v = memref.load %c[%i] : memref<8xf32>
      %m = arith.minimumf %v, %six : f32
      memref.store %m, %b[%i] : memref<16xf32>
    } loc("other_type")
    scf.for %i = %c0 to %c16 step %c1 {
      %x = memref.load %a[%i] : memref<16xf32>
      %y = memref.load %b[%i] : memref<16xf32>
      %d = arith.subf %x, %y : f32
      memref.store %d, %b[%i] : memref<16xf32>
    } loc("subtract")
    scf.for %i = %c0 to %c16 step %c1 {
      %x = memref.load %a[%i] : memref<16xf32>
      %y = memref.load %b[%i] : memref<16xf32>
      %d = arith.subf %y, %x : f32
      memref.store %d, %b[%i] : memref<16xf32>
    } loc("subtract_swapped")
    scf.for %i = %c0 to %c16 step %c1 {
      %x = memref.load %b[%i] : memref<16xf32>
      %y = memref.load %a[%i] : memref<16xf32>
      %d = arith.subf %x, %y : f32
      memref.store %d, %a[%i] : memref<16xf32>
    } loc("subtract_again")
    return
  }
}
