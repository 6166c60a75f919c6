// RUN: effopt-opt %s --eff-outline-kernels | FileCheck %s

// Each top-level loop nest of the step becomes a private kernel function
// called in its place; a nest with a name location (the importer gives
// every op its ONNX node's name) carries that name in the kernel's, its
// symbol-safe characters, at most the last 48 from a word start, so a
// profile says what each kernel is.
// CHECK-LABEL: func.func @effx_step(
// CHECK: call @effx_step_kernel_0_features_features.1_conv_conv.0_conv.0.2_Clip(%arg0, %arg1)
// CHECK: call @effx_step_kernel_1(%arg1)
// CHECK: call @effx_step_kernel_2_a_very_long_name_that_goes_on_and_on_and_on_Mul(%arg1)
// CHECK: func.func private @effx_step_kernel_0_features_features.1_conv_conv.0_conv.0.2_Clip(%{{.*}}: memref<16xf32>, %{{.*}}: memref<16xf32>)
// CHECK: scf.for
// CHECK: func.func private @effx_step_kernel_1(
// CHECK: func.func private @effx_step_kernel_2_a_very_long_name_that_goes_on_and_on_and_on_Mul(
module {
  func.func @effx_step(%a: memref<16xf32>, %b: memref<16xf32>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %six = arith.constant 6.0 : f32
    scf.for %i = %c0 to %c16 step %c1 {
      %v = memref.load %a[%i] : memref<16xf32>
      %m = arith.minimumf %v, %six : f32
      memref.store %m, %b[%i] : memref<16xf32>
    } loc("/features/features.1/conv/conv.0/conv.0.2/Clip")
    scf.for %i = %c0 to %c16 step %c1 {
      memref.store %six, %b[%i] : memref<16xf32>
    }
    scf.for %i = %c0 to %c16 step %c1 {
      %v = memref.load %b[%i] : memref<16xf32>
      %m = arith.mulf %v, %six : f32
      memref.store %m, %b[%i] : memref<16xf32>
    } loc(fused["/model/a/very/long/name/that/goes/on/and/on/and/on/Mul", "other"])
    return
  }
}
