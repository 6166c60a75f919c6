// RUN: effopt-opt %s --split-input-file --eff-gpu-emulated-library-calls --verify-diagnostics | FileCheck %s

// The cuda step's library calls go to the CPU runtime's stand-ins (the
// cuda-emulated target): declarations and calls renamed, arguments kept;
// other functions untouched.

// CHECK-LABEL: func.func private @effrt_emulated_cuda_gemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64, i32, i32)
// CHECK-LABEL: func.func private @effrt_emulated_cuda_attention_fwd_strided
// CHECK-LABEL: func.func private @effrt_emulated_cuda_allreduce_sum_f32
// CHECK-LABEL: func.func private @helper
// CHECK-LABEL: func.func @step
// CHECK:       call @effrt_emulated_cuda_gemm(
// CHECK:       call @effrt_emulated_cuda_allreduce_sum_f32(
// CHECK:       call @helper()
// CHECK-NOT:   @effrt_cuda_
func.func private @effrt_cuda_gemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64, i32, i32)
func.func private @effrt_cuda_attention_fwd_strided(!llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, i64, i64, i64, f32, i32, i32)
func.func private @effrt_cuda_allreduce_sum_f32(!llvm.ptr, i64)
func.func private @helper()
func.func @step(%p: !llvm.ptr, %n: i64, %i: i32, %f: f32) {
  call @effrt_cuda_gemm(%i, %i, %n, %n, %n, %f, %p, %n, %p, %n, %f, %p, %n, %i, %i) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64, i32, i32) -> ()
  call @effrt_cuda_allreduce_sum_f32(%p, %n) : (!llvm.ptr, i64) -> ()
  call @helper() : () -> ()
  return
}

// -----

// expected-error @+1 {{cuda-emulated: the CPU runtime has no stand-in for @effrt_cuda_host_task_copy}}
func.func private @effrt_cuda_host_task_copy(i32, i32, i64, i64, i64)
func.func @step(%i: i32, %n: i64) {
  call @effrt_cuda_host_task_copy(%i, %i, %n, %n, %n) : (i32, i32, i64, i64, i64) -> ()
  return
}
