// REQUIRES: cuda-toolkit
// The online log-sum-exp of one GPT-2 loss chunk (2048 rows of 50304 bf16
// logits) lowers to PTX with upstream MLIR alone and ptxas assembles it
// for sm_80 and sm_90: one block per row reading the logits 16 bytes at a
// time, two block reductions (shuffles, shared memory, barriers) and the
// exponentials through libdevice.
// RUN: effopt-opt %s --eff-gpu-form-kernels | effopt-opt --pass-pipeline='builtin.module(gpu-launch-sink-index-computations,gpu-kernel-outlining,gpu.module(convert-scf-to-cf),nvvm-attach-target{chip=sm_90},gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})' -o %t.ptx.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx.mlir
// RUN: effopt-opt %s --eff-gpu-form-kernels | effopt-opt --pass-pipeline='builtin.module(gpu-launch-sink-index-computations,gpu-kernel-outlining,gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,reconcile-unrealized-casts),eff-cuda-fatbin{archs=sm_80,sm_90 opt-level=3 compress=false})' | FileCheck %s --check-prefix=SASS

// PTX: gpu.binary @effx_block_reduction_0 {{.*}}ld.global.v4.b32{{.*}}__nv_expf{{.*}}shfl.sync.bfly{{.*}}bar.sync{{.*}}__nv_expf{{.*}}shfl.sync.bfly{{.*}}bar.sync
// SASS: gpu.binary @effx_kernels {{.*}}.text.effx_block_reduction_0

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>

func.func @step(%arena: memref<64xi8>, %x: memref<2048x50304xbf16>, %m: memref<2048xf32>, %s: memref<2048xf32>) attributes {eff.arena_arg = 0 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%ninf : f32) outs(%m : memref<2048xf32>)
  linalg.fill ins(%zero : f32) outs(%s : memref<2048xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<2048x50304xbf16>) outs(%m, %s : memref<2048xf32>, memref<2048xf32>) {
  ^bb0(%ab: bf16, %mo: f32, %so: f32):
    %a = arith.extf %ab : bf16 to f32
    %one = arith.constant 1.0 : f32
    %z = arith.constant 0.0 : f32
    %ni = arith.constant 0xFF800000 : f32
    %nm = arith.maximumf %mo, %a : f32
    %same = arith.cmpf oeq, %mo, %nm : f32
    %d = arith.subf %mo, %nm : f32
    %e = math.exp %d : f32
    %r = arith.select %same, %one, %e : f32
    %empty = arith.cmpf oeq, %nm, %ni : f32
    %dx = arith.subf %a, %nm : f32
    %ex = math.exp %dx : f32
    %t = arith.select %empty, %z, %ex : f32
    %sr = arith.mulf %so, %r : f32
    %ns = arith.addf %sr, %t : f32
    linalg.yield %nm, %ns : f32, f32
  }
  return
}

