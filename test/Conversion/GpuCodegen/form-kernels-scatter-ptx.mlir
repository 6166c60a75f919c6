// REQUIRES: cuda-toolkit
// The compacted scatters of GPT-2's embedding gradients (token table
// 50304 x 768 over 32 x 1024 tokens, position table 1024 x 768) lower to
// PTX with upstream MLIR alone, and ptxas assembles them for sm_80 and
// sm_90: the mask is set with shared-memory atomic ORs, chunks are
// separated by barriers, and no index division is by a run-time value (the
// delinearisations divide by constants).
// RUN: effopt-opt %s --eff-gpu-form-kernels | effopt-opt --pass-pipeline='builtin.module(gpu-launch-sink-index-computations,gpu-kernel-outlining,gpu.module(convert-scf-to-cf),nvvm-attach-target{chip=sm_90},gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})' -o %t.ptx.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx.mlir
// RUN: FileCheck %s --check-prefix=NODIV < %t.ptx.mlir
// RUN: effopt-opt %s --eff-gpu-form-kernels | effopt-opt --pass-pipeline='builtin.module(gpu-launch-sink-index-computations,gpu-kernel-outlining,gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,reconcile-unrealized-casts),eff-cuda-fatbin{archs=sm_80,sm_90 opt-level=3 compress=false})' | FileCheck %s --check-prefix=SASS

// PTX: gpu.binary @effx_compacted_scatter_0 {{.*}}.shared .align 4 .b8 __wg_effx_compacted_scatter_0_0[300]{{.*}}atom.shared.or.b32{{.*}}bar.sync
// PTX: gpu.binary @effx_compacted_scatter_1 {{.*}}atom.shared.or.b32{{.*}}bar.sync
// NODIV-NOT: {{(div|rem)\.[us]64}}
// SASS: gpu.binary @effx_kernels {{.*}}.text.effx_compacted_scatter_1{{.*}}.text.effx_compacted_scatter_0

func.func @step(%idx: memref<32x1024xi64>, %dy: memref<32x1024x768xf32>,
                %wte: memref<50304x768xf32>, %pos: memref<1024xi64>,
                %wpe: memref<1024x768xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c768 = arith.constant 768 : index
  %c1024 = arith.constant 1024 : index
  %c50304 = arith.constant 50304 : index
  scf.for %b = %c0 to %c32 step %c1 {
    scf.for %t = %c0 to %c1024 step %c1 {
      scf.for %f = %c0 to %c768 step %c1 {
        %i = memref.load %idx[%b, %t] : memref<32x1024xi64>
        %r = arith.index_cast %i : i64 to index
        %neg = arith.cmpi slt, %r, %c0 : index
        %wrapped = arith.addi %r, %c50304 : index
        %row = arith.select %neg, %wrapped, %r : index
        %old = memref.load %wte[%row, %f] : memref<50304x768xf32>
        %d = memref.load %dy[%b, %t, %f] : memref<32x1024x768xf32>
        %new = arith.addf %old, %d : f32
        memref.store %new, %wte[%row, %f] : memref<50304x768xf32>
      }
    }
  }
  // The position embedding, its ids an input (a Gather's indices).
  scf.for %b = %c0 to %c32 step %c1 {
    scf.for %t = %c0 to %c1024 step %c1 {
      scf.for %f = %c0 to %c768 step %c1 {
        %p = memref.load %pos[%t] : memref<1024xi64>
        %row = arith.index_cast %p : i64 to index
        %old = memref.load %wpe[%row, %f] : memref<1024x768xf32>
        %d = memref.load %dy[%b, %t, %f] : memref<32x1024x768xf32>
        %new = arith.addf %old, %d : f32
        memref.store %new, %wpe[%row, %f] : memref<1024x768xf32>
      }
    }
  }
  return
}
