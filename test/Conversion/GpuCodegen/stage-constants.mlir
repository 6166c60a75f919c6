// RUN: effopt-opt %s --split-input-file --eff-gpu-stage-constants | FileCheck %s
// RUN: effopt-opt %s --split-input-file --eff-gpu-stage-constants --eff-memory-plan=print=true 2>&1 | FileCheck %s --check-prefix=PLAN

// A GEMM operand that is a constant (bilinear Resize's interpolation
// matrix) is read through a device copy made right before its address is
// taken; the view the read went through is re-created on the copy.

memref.global "private" constant @interp : memref<8x4xf32> = dense<0.25>
func.func private @effrt_cuda_gemm(!llvm.ptr, !llvm.ptr) -> ()
// CHECK-LABEL: func.func @gemm_operand
// CHECK: %[[A:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<2x8xf32>
// CHECK: %[[G:.*]] = memref.get_global @interp : memref<8x4xf32>
// CHECK: %[[COPY:.*]] = memref.alloc() : memref<8x4xf32>
// CHECK: memref.copy %[[G]], %[[COPY]] : memref<8x4xf32> to memref<8x4xf32>
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[COPY]] {{\[}}[0, 1]] : memref<8x4xf32> into memref<32xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[FLAT]]
// CHECK: call @effrt_cuda_gemm
func.func @gemm_operand(%arena: memref<?xi8>, %v: f32) attributes {eff.arena_arg = 0 : i64} {
  %g = memref.get_global @interp : memref<8x4xf32>
  %flat = memref.collapse_shape %g [[0, 1]] : memref<8x4xf32> into memref<32xf32>
  %a = memref.alloc() : memref<2x8xf32>
  linalg.fill ins(%v : f32) outs(%a : memref<2x8xf32>)
  %pa = memref.extract_aligned_pointer_as_index %a : memref<2x8xf32> -> index
  %pg = memref.extract_aligned_pointer_as_index %flat : memref<32xf32> -> index
  %ia = arith.index_cast %pa : index to i64
  %ig = arith.index_cast %pg : index to i64
  %qa = llvm.inttoptr %ia : i64 to !llvm.ptr
  %qg = llvm.inttoptr %ig : i64 to !llvm.ptr
  call @effrt_cuda_gemm(%qa, %qg) : (!llvm.ptr, !llvm.ptr) -> ()
  return
}

// The copy is placed after the other operand's address was taken, but that
// operand is read by the call: the plan keeps the two apart.
// PLAN-LABEL: memory plan of @gemm_operand: 2 buffers, arena 192 bytes, peak 192 bytes
// PLAN-NEXT: offset
// PLAN-NEXT: {{^ +}}128{{ +}}64{{ +}}1{{ +}}13  memref<2x8xf32>
// PLAN-NEXT: {{^ +}}0{{ +}}128{{ +}}5{{ +}}13  memref<8x4xf32>

// -----

// A kernel reads the constant itself (eff-gpu-form-kernels takes it into
// the kernel): nothing is staged.

memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK-LABEL: func.func @kernel_read
// CHECK-NOT: memref.alloc
// CHECK: memref.copy %{{.*}}, %arg1
func.func @kernel_read(%arena: memref<?xi8>, %out: memref<4xf32>) attributes {eff.arena_arg = 0 : i64} {
  %g = memref.get_global @table : memref<4xf32>
  memref.copy %g, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A call that takes the constant's memref: one copy per call, each made
// right before it.

memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func private @effrt_use(memref<4xf32>) -> ()
// CHECK-LABEL: func.func @two_calls
// CHECK: memref.copy %{{.*}}, %[[C1:.*]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT: call @effrt_use(%[[C1]])
// CHECK: memref.copy %{{.*}}, %[[C2:.*]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT: call @effrt_use(%[[C2]])
func.func @two_calls(%arena: memref<?xi8>) attributes {eff.arena_arg = 0 : i64} {
  %g = memref.get_global @table : memref<4xf32>
  call @effrt_use(%g) : (memref<4xf32>) -> ()
  call @effrt_use(%g) : (memref<4xf32>) -> ()
  return
}
