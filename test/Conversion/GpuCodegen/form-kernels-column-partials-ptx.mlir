// REQUIRES: cuda-toolkit
// A GPT-2 layer norm backward (32 x 1024 rows of 768) with its weight and
// bias gradients' partial sums over each block's 8 rows lowers to PTX
// with upstream MLIR alone, and ptxas assembles it for sm_80 and sm_90:
// the row group's shuffles, then the two 8 x 768 f32 workgroup buffers
// (48 KiB, CUDA's static shared memory limit; aligned to 16 bytes by
// eff-gpu-align-workgroup-memory, as NVPTX merges each lane's four f32
// stores into one 16-byte store), a barrier and the block's combine.
// RUN: effopt-opt %s --eff-gpu-form-kernels | effopt-opt --pass-pipeline='builtin.module(gpu-launch-sink-index-computations,gpu-kernel-outlining,eff-gpu-align-workgroup-memory,gpu.module(convert-scf-to-cf),nvvm-attach-target{chip=sm_90},gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})' -o %t.ptx.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx.mlir
// RUN: effopt-opt %s --eff-gpu-form-kernels | effopt-opt --pass-pipeline='builtin.module(gpu-launch-sink-index-computations,gpu-kernel-outlining,eff-gpu-align-workgroup-memory,gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,reconcile-unrealized-casts),eff-cuda-fatbin{archs=sm_80,sm_90 opt-level=3 compress=false})' | FileCheck %s --check-prefix=SASS

// PTX: gpu.binary @effx_row_group_0 {{.*}}.shared .align 16 .b8 {{.*}}[24576]{{.*}}.shared .align 16 .b8 {{.*}}[24576]{{.*}}shfl.sync.bfly{{.*}}st.shared.v4.b32{{.*}}bar.sync{{.*}}ld.shared.b32
// SASS: gpu.binary @effx_kernels {{.*}}.text.effx_row_group_0

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#bc3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#part4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#comb3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out3 = affine_map<(d0, d1, d2) -> (d2)>

func.func @step(%arena: memref<?xi8>, %x: memref<32x1024x768xf32>,
                %dy: memref<32x1024x768xbf16>, %gamma: memref<768xf32>,
                %dres: memref<32x1024x768xf32>, %wgrad: memref<768xf32>,
                %bgrad: memref<768xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 768.0 : f32
  %c0 = arith.constant 0 : index
  %c16384 = arith.constant 100663296 : index
  %c16640 = arith.constant 100794368 : index
  %c32768 = arith.constant 100925440 : index
  %c34816 = arith.constant 113508352 : index
  %g = memref.view %arena[%c0][] : memref<?xi8> to memref<32x1024x768xf32>
  linalg.generic {indexing_maps = [#id3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dy, %gamma : memref<32x1024x768xbf16>, memref<768xf32>) outs(%g : memref<32x1024x768xf32>) {
  ^bb0(%a: bf16, %b: f32, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %t = arith.mulf %e, %b : f32
    linalg.yield %t : f32
  }
  %sa = memref.view %arena[%c16384][] : memref<?xi8> to memref<32x1024xf32>
  linalg.fill ins(%zero : f32) outs(%sa : memref<32x1024xf32>)
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g : memref<32x1024x768xf32>) outs(%sa : memref<32x1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  }
  %sb = memref.view %arena[%c16640][] : memref<?xi8> to memref<32x1024xf32>
  linalg.fill ins(%zero : f32) outs(%sb : memref<32x1024xf32>)
  linalg.generic {indexing_maps = [#id3, #id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g, %x : memref<32x1024x768xf32>, memref<32x1024x768xf32>) outs(%sb : memref<32x1024xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %p, %o : f32
    linalg.yield %t : f32
  }
  %sa3 = memref.expand_shape %sa [[0], [1, 2]] output_shape [32, 1024, 1] : memref<32x1024xf32> into memref<32x1024x1xf32>
  %sb3 = memref.expand_shape %sb [[0], [1, 2]] output_shape [32, 1024, 1] : memref<32x1024xf32> into memref<32x1024x1xf32>
  linalg.generic {indexing_maps = [#id3, #id3, #id3, #bc3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dres, %g, %x, %sa3, %sb3 : memref<32x1024x768xf32>, memref<32x1024x768xf32>, memref<32x1024x768xf32>, memref<32x1024x1xf32>, memref<32x1024x1xf32>) outs(%dres : memref<32x1024x768xf32>) {
  ^bb0(%d: f32, %gg: f32, %xx: f32, %a: f32, %b: f32, %o: f32):
    %g64 = arith.mulf %gg, %n : f32
    %t0 = arith.addf %d, %g64 : f32
    %t1 = arith.subf %t0, %a : f32
    %xb = arith.mulf %xx, %b : f32
    %t2 = arith.subf %t1, %xb : f32
    linalg.yield %t2 : f32
  }
  // The weight and bias gradients' partial sums over chunks of 8 rows (as
  // eff-gpu-split-reductions writes them), then their combine.
  %p0 = memref.view %arena[%c32768][] : memref<?xi8> to memref<32x128x768xf32>
  %p1 = memref.view %arena[%c34816][] : memref<?xi8> to memref<32x128x768xf32>
  linalg.fill ins(%zero : f32) outs(%p0 : memref<32x128x768xf32>)
  linalg.fill ins(%zero : f32) outs(%p1 : memref<32x128x768xf32>)
  %x4 = memref.expand_shape %x [[0], [1, 2], [3]] output_shape [32, 128, 8, 768] : memref<32x1024x768xf32> into memref<32x128x8x768xf32>
  %dy4 = memref.expand_shape %dy [[0], [1, 2], [3]] output_shape [32, 128, 8, 768] : memref<32x1024x768xbf16> into memref<32x128x8x768xbf16>
  linalg.generic {indexing_maps = [#id4, #id4, #part4, #part4], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x4, %dy4 : memref<32x128x8x768xf32>, memref<32x128x8x768xbf16>) outs(%p0, %p1 : memref<32x128x768xf32>, memref<32x128x768xf32>) {
  ^bb0(%a: f32, %b: bf16, %o0: f32, %o1: f32):
    %e = arith.extf %b : bf16 to f32
    %p = arith.mulf %e, %a : f32
    %t0 = arith.addf %p, %o0 : f32
    %t1 = arith.addf %e, %o1 : f32
    linalg.yield %t0, %t1 : f32, f32
  }
  linalg.fill ins(%zero : f32) outs(%wgrad : memref<768xf32>)
  linalg.fill ins(%zero : f32) outs(%bgrad : memref<768xf32>)
  linalg.generic {indexing_maps = [#comb3, #comb3, #out3, #out3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%p0, %p1 : memref<32x128x768xf32>, memref<32x128x768xf32>) outs(%wgrad, %bgrad : memref<768xf32>, memref<768xf32>) {
  ^bb0(%a: f32, %b: f32, %o0: f32, %o1: f32):
    %t0 = arith.addf %a, %o0 : f32
    %t1 = arith.addf %b, %o1 : f32
    linalg.yield %t0, %t1 : f32, f32
  }
  return
}
