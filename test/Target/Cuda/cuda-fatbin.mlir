// REQUIRES: cuda-toolkit
// RUN: effopt-opt %s --pass-pipeline='builtin.module(gpu-kernel-outlining,gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),eff-cuda-fatbin{archs=sm_80,sm_90 opt-level=1 compress=false})' | FileCheck %s
// RUN: effopt-opt %s --pass-pipeline='builtin.module(gpu-kernel-outlining,gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),eff-cuda-fatbin{archs=sm_80,sm_90 opt-level=1})' | FileCheck %s --check-prefix=COMPRESSED
// RUN: not effopt-opt %s --pass-pipeline='builtin.module(gpu-kernel-outlining,gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),eff-cuda-fatbin{toolkit=/no/such/cuda})' 2>&1 | FileCheck %s --check-prefix=TOOLKIT
// RUN: effopt-opt %s --pass-pipeline='builtin.module(gpu-kernel-outlining,gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),eff-cuda-fatbin{archs=sm_90 opt-level=0},gpu-to-llvm)' | FileCheck %s --check-prefix=HOST
// RUN: not effopt-opt %s --pass-pipeline='builtin.module(gpu-kernel-outlining,gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),eff-cuda-fatbin{archs=sm_75,sm_10 opt-level=0})' 2>&1 | FileCheck %s --check-prefix=PTXAS

// Two launches: outlining names both kernels @step_kernel, in modules
// @step_kernel and @step_kernel_0. eff-cuda-fatbin merges them into one
// gpu.binary (one fatbin object) whose kernels take their module's names,
// and points each launch at its own kernel; the SASS in the fatbin has both
// entry points.
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @step
// CHECK: gpu.launch_func @effx_kernels::@step_kernel blocks
// CHECK: gpu.launch_func @effx_kernels::@step_kernel_0 blocks
// CHECK: gpu.binary @effx_kernels [#gpu.object<#nvvm.target<O = 1, chip = "sm_90">, "P\EDU\BA{{.*}}.text.step_kernel_0{{.*}}.text.step_kernel\00
// CHECK-NOT: gpu.object

// By default every image is compressed (zstd: magic 28 B5 2F FD after each
// 64-byte entry header), so no entry point name is readable.
// COMPRESSED: gpu.binary @effx_kernels [#gpu.object<#nvvm.target<O = 1, chip = "sm_90">, "P\EDU\BA{{.*}}(\B5/\FD
// COMPRESSED-NOT: .text.step_kernel

// An arch ptxas does not know: its first line, once.
// PTXAS: error: ptxas failed: ptxas fatal {{ *}}: Value 'sm_10' is not defined for option 'gpu-name'
// PTXAS-NOT: error:

// TOOLKIT: error: CUDA toolkit not found: /no/such/cuda/bin/ptxas is missing (set EFFOPT_CUDA_TOOLKIT to the toolkit's directory)

// gpu-to-llvm takes the launches to LLVM types; the LLVM translation then
// embeds the fatbin and calls the MLIR GPU runtime ABI (mgpuModuleLoad,
// mgpuLaunchKernel: test/Target/Cuda/effc-cuda.test checks the imports).
// HOST: llvm.func @step
// HOST: gpu.launch_func @effx_kernels::@step_kernel blocks in ({{.*}}) : i64 args
// HOST: gpu.launch_func @effx_kernels::@step_kernel_0 blocks in ({{.*}}) : i64 args
// HOST: gpu.binary @effx_kernels [#gpu.object<#nvvm.target<O = 0, chip = "sm_90">, "P\EDU\BA
module attributes {gpu.container_module} {
  func.func @step(%a: memref<256xf32>, %b: memref<256xf32>) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
               threads(%tx, %ty, %tz) in (%u = %c256, %v = %c1, %w = %c1) {
      %v0 = memref.load %a[%tx] : memref<256xf32>
      %e = math.exp %v0 : f32
      memref.store %e, %a[%tx] : memref<256xf32>
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
               threads(%tx, %ty, %tz) in (%u = %c256, %v = %c1, %w = %c1) {
      %v0 = memref.load %b[%tx] : memref<256xf32>
      %e = arith.addf %v0, %v0 : f32
      memref.store %e, %b[%tx] : memref<256xf32>
      gpu.terminator
    }
    return
  }
}
