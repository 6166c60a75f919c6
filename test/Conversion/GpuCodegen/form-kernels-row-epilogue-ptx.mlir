// REQUIRES: cuda-toolkit
// One GPT-2 loss chunk's log-sum-exp with its row epilogue (2048 rows of
// 50304 bf16 logits: each row's loss term with the label's logit gathered,
// lse, then the gradient in place) lowers to PTX with upstream MLIR alone
// and ptxas assembles it for sm_80 and sm_90: the two block reductions,
// the per-row values stored by thread 0, a barrier, then the row read
// again and the gradient stored 16 bytes at a time.
// RUN: effopt-opt %s --eff-gpu-form-kernels | effopt-opt --pass-pipeline='builtin.module(gpu-launch-sink-index-computations,gpu-kernel-outlining,gpu.module(convert-scf-to-cf),nvvm-attach-target{chip=sm_90},gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})' -o %t.ptx.mlir
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx.mlir
// RUN: effopt-opt %s --eff-gpu-form-kernels | effopt-opt --pass-pipeline='builtin.module(gpu-launch-sink-index-computations,gpu-kernel-outlining,gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,reconcile-unrealized-casts),eff-cuda-fatbin{archs=sm_80,sm_90 opt-level=3 compress=false})' | FileCheck %s --check-prefix=SASS

// PTX: gpu.binary @effx_block_reduction_0 {{.*}}ld.global.v4.b32{{.*}}shfl.sync.bfly{{.*}}bar.sync{{.*}}shfl.sync.bfly{{.*}}bar.sync{{.*}}ld.global.b16{{.*}}st.global.b32{{.*}}bar.sync{{.*}}ld.global.v4.b32{{.*}}st.global.v4.b32
// PTX-NOT: gpu.binary @effx_elementwise
// SASS: gpu.binary @effx_kernels {{.*}}.text.effx_block_reduction_0

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#bc = affine_map<(d0, d1) -> (d0, 0)>
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>

func.func @step(%arena: memref<64xi8>, %x: memref<2048x50304xbf16>, %labels: memref<2048xi64>, %w: memref<2048xf32>, %m: memref<2048xf32>, %s: memref<2048xf32>, %terms: memref<2048xf32>, %loss: memref<f32>) attributes {eff.arena_arg = 0 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %ignore = arith.constant -100 : i64
  linalg.fill ins(%zero : f32) outs(%loss : memref<f32>)
  linalg.fill ins(%ninf : f32) outs(%m : memref<2048xf32>)
  linalg.fill ins(%zero : f32) outs(%s : memref<2048xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<2048x50304xbf16>) outs(%m, %s : memref<2048xf32>, memref<2048xf32>) {
  ^bb0(%in: bf16, %mo: f32, %so: f32):
    %a = arith.extf %in : bf16 to f32
    %nm = arith.maximumf %mo, %a : f32
    %same = arith.cmpf oeq, %mo, %nm : f32
    %d = arith.subf %mo, %nm : f32
    %e = math.exp %d : f32
    %r = arith.select %same, %one, %e : f32
    %empty = arith.cmpf oeq, %nm, %ninf : f32
    %dx = arith.subf %a, %nm : f32
    %ex = math.exp %dx : f32
    %t = arith.select %empty, %zero, %ex : f32
    %sr = arith.mulf %so, %r : f32
    %ns = arith.addf %sr, %t : f32
    linalg.yield %nm, %ns : f32, f32
  }
  // Each row's loss term: w * (lse - x[label]), the label's logit gathered.
  linalg.generic {indexing_maps = [#v, #v, #v, #v, #v], iterator_types = ["parallel"]}
      ins(%labels, %w, %m, %s : memref<2048xi64>, memref<2048xf32>, memref<2048xf32>, memref<2048xf32>) outs(%terms : memref<2048xf32>) {
  ^bb0(%lab: i64, %wv: f32, %mv: f32, %sv: f32, %out: f32):
    %lg = math.log %sv : f32
    %lse = arith.addf %mv, %lg : f32
    %i = linalg.index 0 : index
    %valid = arith.cmpi ne, %lab, %ignore : i64
    %li = arith.index_cast %lab : i64 to index
    %idx = arith.select %valid, %li, %c0 : index
    %picked = memref.load %x[%i, %idx] : memref<2048x50304xbf16>
    %pf = arith.extf %picked : bf16 to f32
    %diff = arith.subf %lse, %pf : f32
    %term = arith.mulf %wv, %diff : f32
    linalg.yield %term : f32
  }
  // lse = m + log(s), over m (the plan puts it there: m is dead after).
  linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%m, %s : memref<2048xf32>, memref<2048xf32>) outs(%m : memref<2048xf32>) {
  ^bb0(%mv: f32, %sv: f32, %out: f32):
    %lg = math.log %sv : f32
    %r = arith.addf %mv, %lg : f32
    linalg.yield %r : f32
  }
  %lab2 = memref.expand_shape %labels [[0, 1]] output_shape [2048, 1] : memref<2048xi64> into memref<2048x1xi64>
  %w2 = memref.expand_shape %w [[0, 1]] output_shape [2048, 1] : memref<2048xf32> into memref<2048x1xf32>
  %lse2 = memref.expand_shape %m [[0, 1]] output_shape [2048, 1] : memref<2048xf32> into memref<2048x1xf32>
  // The gradient, in place over the logits.
  linalg.generic {indexing_maps = [#id2, #bc, #bc, #bc, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %lab2, %w2, %lse2 : memref<2048x50304xbf16>, memref<2048x1xi64>, memref<2048x1xf32>, memref<2048x1xf32>) outs(%x : memref<2048x50304xbf16>) {
  ^bb0(%in: bf16, %lab: i64, %wv: f32, %l: f32, %out: bf16):
    %xf = arith.extf %in : bf16 to f32
    %j = linalg.index 1 : index
    %valid = arith.cmpi ne, %lab, %ignore : i64
    %li = arith.index_cast %lab : i64 to index
    %idx = arith.select %valid, %li, %c0 : index
    %is = arith.cmpi eq, %j, %idx : index
    %oh = arith.select %is, %one, %zero : f32
    %t = arith.subf %xf, %l : f32
    %p = math.exp %t : f32
    %dl = arith.subf %p, %oh : f32
    %g = arith.mulf %dl, %wv : f32
    %gb = arith.truncf %g : f32 to bf16
    linalg.yield %gb : bf16
  }
  // The loss: the terms' sum (the combine after the gradient).
  linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
      ins(%terms : memref<2048xf32>) outs(%loss : memref<f32>) {
  ^bb0(%t: f32, %acc: f32):
    %r = arith.addf %t, %acc : f32
    linalg.yield %r : f32
  }
  return
}
