// RUN: effopt-opt %s --split-input-file --eff-gpu-form-kernels=remarks=true -o /dev/null 2>&1 | FileCheck %s

// A gather (a memref.load in a payload: a cross-entropy's target logit)
// reads memory no operand shows. The fusions that reason from operands
// leave such ops alone: a row group ends before one (else the loss below,
// between its members, would be deferred past the gradient that
// overwrites the logits it gathers), a fill does not fold past one that
// reads its buffer, and small batches do not take one in.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#bc = affine_map<(d0, d1) -> (d0, 0)>
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>

// CHECK: remark: row group: one warp per row of 256 elements (4 at a time), 8 per block, runs this op and the 1 after it (2 reductions); 2 fills folded in
// CHECK-NOT: runs after it
// CHECK: remark: block reduction: one block per output element; starts from the fill of output 0
func.func @loss_between(%arena: memref<64xi8>, %x: memref<128x256xf32>, %labels: memref<128xi64>, %m: memref<128xf32>, %s: memref<128xf32>, %loss: memref<f32>) attributes {eff.arena_arg = 0 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  linalg.fill ins(%ninf : f32) outs(%m : memref<128xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<128x256xf32>) outs(%m : memref<128xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  }
  %m2 = memref.expand_shape %m [[0, 1]] output_shape [128, 1] : memref<128xf32> into memref<128x1xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<128xf32>)
  linalg.generic {indexing_maps = [#id2, #bc, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m2 : memref<128x256xf32>, memref<128x1xf32>) outs(%s : memref<128xf32>) {
  ^bb0(%a: f32, %mv: f32, %o: f32):
    %d = arith.subf %a, %mv : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %o : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%loss : memref<f32>)
  linalg.generic {indexing_maps = [#v, #v, #v, #s], iterator_types = ["reduction"]}
      ins(%labels, %m, %s : memref<128xi64>, memref<128xf32>, memref<128xf32>) outs(%loss : memref<f32>) {
  ^bb0(%lab: i64, %mv: f32, %sv: f32, %o: f32):
    %lg = math.log %sv : f32
    %lse = arith.addf %mv, %lg : f32
    %i = linalg.index 0 : index
    %li = arith.index_cast %lab : i64 to index
    %picked = memref.load %x[%i, %li] : memref<128x256xf32>
    %d = arith.subf %lse, %picked : f32
    %r = arith.addf %d, %o : f32
    linalg.yield %r : f32
  }
  %s2 = memref.expand_shape %s [[0, 1]] output_shape [128, 1] : memref<128xf32> into memref<128x1xf32>
  linalg.generic {indexing_maps = [#id2, #bc, #bc, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m2, %s2 : memref<128x256xf32>, memref<128x1xf32>, memref<128x1xf32>) outs(%x : memref<128x256xf32>) {
  ^bb0(%a: f32, %mv: f32, %sv: f32, %o: f32):
    %d = arith.subf %a, %mv : f32
    %e = math.exp %d : f32
    %p = arith.divf %e, %sv : f32
    linalg.yield %p : f32
  }
  return
}

// -----

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>

// The fill of %b does not fold into the sum over %b: the op between
// gathers from %b (it must see the zeros).
// CHECK: remark: block reduction: one block per output element{{$}}
func.func @fill_read_by_gather(%arena: memref<64xi8>, %b: memref<f32>, %idx: memref<64xi64>, %out: memref<64xf32>, %c: memref<64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%b : memref<f32>)
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%idx : memref<64xi64>) outs(%out : memref<64xf32>) {
  ^bb0(%i: i64, %o: f32):
    %g = memref.load %b[] : memref<f32>
    %f = arith.sitofp %i : i64 to f32
    %r = arith.addf %g, %f : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
      ins(%c : memref<64xf32>) outs(%b : memref<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  return
}
