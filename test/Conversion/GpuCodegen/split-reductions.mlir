// RUN: effopt-opt %s --split-input-file --eff-gpu-split-reductions | FileCheck %s
// RUN: effopt-opt %s --split-input-file --eff-gpu-split-reductions="target-threads=1024" | FileCheck %s --check-prefix=SMALL
// RUN: not effopt-opt %s --eff-gpu-split-reductions="target-threads=0" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: eff-gpu-split-reductions: target-threads and target-blocks must be positive

// A bias gradient: 768 column sums over 32x1024 rows (the contiguous
// dimension is parallel). With the default 2^19 target threads (683
// partials per column at most): the batch dimension (32) becomes parallel
// whole and the 1024 rows split by 16 (1024's largest divisor <= 683 / 32);
// partials [32, 16, 768] from 0.0, each thread walking 64 rows. The
// combine (512 partials per column) is split again, into [32, 768] (16
// each), and a last combine of 32.

#x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2], [3]] output_shape [32, 16, 64, 768] : tensor<32x1024x768xf32> into tensor<32x16x64x768xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[P0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<32x16x768xf32>)
// CHECK: %[[S0:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%[[X]] : tensor<32x16x64x768xf32>) outs(%[[P0]] : tensor<32x16x768xf32>)
// CHECK:   arith.addf
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<32x768xf32>)
// CHECK: %[[S1:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[S0]] : tensor<32x16x768xf32>) outs(%{{.*}} : tensor<32x768xf32>)
// CHECK: %[[S2:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[S1]] : tensor<32x768xf32>) outs(%arg1 : tensor<768xf32>)
// CHECK:   arith.addf
// CHECK: return %[[S2]]
func.func @bias_grad(%x: tensor<32x1024x768xf32>, %init: tensor<768xf32>) -> tensor<768xf32> {
  %r = linalg.generic {indexing_maps = [#x, #col], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : tensor<32x1024x768xf32>) outs(%init : tensor<768xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<768xf32>
  return %r : tensor<768xf32>
}

// -----

// Two outputs (a LayerNorm's weight and bias gradients in one op) with
// their own combiners; linalg.index of the split dimension is rebuilt as
// outer * 64 + inner. target-threads=1024: 1024 / 8 = 128 partials per
// output; their combine (128 long) is split again into 8 x 16.

#x2 = affine_map<(d0, d1) -> (d0, d1)>
#c2 = affine_map<(d0, d1) -> (d1)>
// SMALL-LABEL: func.func @two_outputs
// SMALL: tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [128, 64, 8]
// SMALL: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// SMALL: linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<128x8xf32>)
// SMALL: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// SMALL: linalg.fill ins(%[[NINF]] : f32) outs(%{{.*}} : tensor<128x8xf32>)
// SMALL: %[[P:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]}
// SMALL:   %[[OUTER:.*]] = linalg.index 0 : index
// SMALL:   %[[INNER:.*]] = linalg.index 1 : index
// SMALL:   %[[MUL:.*]] = arith.muli %[[OUTER]], %c64
// SMALL:   arith.addi %[[MUL]], %[[INNER]]
// SMALL:   arith.addf
// SMALL:   arith.maximumf
// SMALL: %[[E0:.*]] = tensor.expand_shape %[[P]]#0 {{\[\[}}0, 1], [2]] output_shape [8, 16, 8]
// SMALL: %[[E1:.*]] = tensor.expand_shape %[[P]]#1 {{\[\[}}0, 1], [2]] output_shape [8, 16, 8]
// SMALL: %[[Q:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[E0]], %[[E1]] : tensor<8x16x8xf32>, tensor<8x16x8xf32>)
// SMALL: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[Q]]#0, %[[Q]]#1 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%arg1, %arg2 : tensor<8xf32>, tensor<8xf32>)
// SMALL:   arith.addf
// SMALL:   arith.maximumf
func.func @two_outputs(%x: tensor<8192x8xf32>, %s: tensor<8xf32>, %m: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %r:2 = linalg.generic {indexing_maps = [#x2, #c2, #c2], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<8192x8xf32>) outs(%s, %m : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32, %mx: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %v = arith.mulf %in, %fi : f32
    %a = arith.addf %v, %acc : f32
    %b = arith.maximumf %mx, %in : f32
    linalg.yield %a, %b : f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>)
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// A full sum of 65536 elements (a row reduction to rank 0: one block) is
// spread over 16 blocks of 4096 (65536 / 4096), then their 16 partials.

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @full_sum
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0, 1]] output_shape [16, 4096]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} {{.*}} outs(%{{.*}} : tensor<16xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} {{.*}} outs(%arg1 : tensor<f32>)
func.func @full_sum(%x: tensor<65536xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
      ins(%x : tensor<65536xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Left alone: enough outputs already (a softmax row max over 4096 rows of
// 1024), a short reduction (32 rows), a dynamic shape, and a combiner that
// is not recognised (the output is read twice).

#a2 = affine_map<(d0, d1) -> (d0, d1)>
#b2 = affine_map<(d0, d1) -> (d1)>
#r2 = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: tensor.expand_shape
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @left_alone(%rows: tensor<4096x1024xf32>, %m: tensor<4096xf32>,
                      %short: tensor<32x768xf32>, %c: tensor<768xf32>,
                      %dyn: tensor<?x8xf32>, %c8: tensor<8xf32>,
                      %big: tensor<65536x8xf32>) -> (tensor<4096xf32>, tensor<768xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = linalg.generic {indexing_maps = [#a2, #r2], iterator_types = ["parallel", "reduction"]}
      ins(%rows : tensor<4096x1024xf32>) outs(%m : tensor<4096xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.maximumf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4096xf32>
  %1 = linalg.generic {indexing_maps = [#a2, #b2], iterator_types = ["reduction", "parallel"]}
      ins(%short : tensor<32x768xf32>) outs(%c : tensor<768xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<768xf32>
  %2 = linalg.generic {indexing_maps = [#a2, #b2], iterator_types = ["reduction", "parallel"]}
      ins(%dyn : tensor<?x8xf32>) outs(%c8 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  %3 = linalg.generic {indexing_maps = [#a2, #b2], iterator_types = ["reduction", "parallel"]}
      ins(%big : tensor<65536x8xf32>) outs(%c8 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %out, %out : f32
    %a = arith.addf %in, %sq : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  return %0, %1, %2, %3 : tensor<4096xf32>, tensor<768xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A bias gradient summed from an activation's backward, with a product
// reading the same gradient between them: the first partial sums move
// right after the activation's backward (their fill before it, so the
// memory plan keeps their buffer apart from its operands); the combines
// stay after the product.
#xp = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#colp = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @bias_grad_after_its_producer
// CHECK: %[[P0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<32x16x768xf32>)
// CHECK: %[[G:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %arg1 : tensor<32x1024x768xf32>, tensor<32x1024x768xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: linalg.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[X:.*]] = tensor.expand_shape %[[G]]
// CHECK-NEXT: %[[S0:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<32x16x64x768xf32>) outs(%[[P0]] : tensor<32x16x768xf32>)
// CHECK: linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%[[S0]] : tensor<32x16x768xf32>)
func.func @bias_grad_after_its_producer(%dy: tensor<32x1024x768xf32>, %mask: tensor<32x1024x768xf32>, %w: tensor<768x768xf32>, %init: tensor<768xf32>, %out: tensor<32768x768xf32>) -> (tensor<768xf32>, tensor<32768x768xf32>) {
  %e = tensor.empty() : tensor<32x1024x768xf32>
  %g = linalg.generic {indexing_maps = [#xp, #xp, #xp], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dy, %mask : tensor<32x1024x768xf32>, tensor<32x1024x768xf32>) outs(%e : tensor<32x1024x768xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %p = arith.mulf %a, %m : f32
    linalg.yield %p : f32
  } -> tensor<32x1024x768xf32>
  %flat = tensor.collapse_shape %g [[0, 1], [2]] : tensor<32x1024x768xf32> into tensor<32768x768xf32>
  %dx = linalg.matmul ins(%flat, %w : tensor<32768x768xf32>, tensor<768x768xf32>) outs(%out : tensor<32768x768xf32>) -> tensor<32768x768xf32>
  %r = linalg.generic {indexing_maps = [#xp, #colp], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%g : tensor<32x1024x768xf32>) outs(%init : tensor<768xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<768xf32>
  return %r, %dx : tensor<768xf32>, tensor<32768x768xf32>
}

// -----

// A layer norm backward's weight and bias gradients (two outputs) over
// rows a row reduction also reads (dy, through a reshape): chunks of
// block-rows = 8 rows, one row group block's (eff-gpu-form-kernels runs
// them inside the group): the batch parallel, 1024 rows as 128 x 8. The
// combine (4096 partials per column) splits as usual. With 3 outputs of
// 768 f32 columns the chunk's values would not fit 48 KiB of workgroup
// memory (3 x 8 x 768 x 4 = 72 KiB): the usual split. A column sum whose
// rows no row reduction reads keeps the usual split (bias_grad above).

#r3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rr = affine_map<(d0, d1, d2) -> (d0, d1)>
#rc = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @block_rows
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] output_shape [32, 128, 8, 768] : tensor<32x1024x768xf32> into tensor<32x128x8x768xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<32x128x8x768xf32>, tensor<32x128x8x768xf32>) outs(%{{.*}}, %{{.*}} : tensor<32x128x768xf32>, tensor<32x128x768xf32>)
// CHECK-LABEL: func.func @three_outputs
// CHECK: output_shape [32, 16, 64, 768]
// CHECK-NOT: output_shape [32, 128, 8, 768]
func.func @block_rows(%x: tensor<32x1024x768xf32>, %dy2: tensor<32768x768xf32>,
                      %rows: tensor<32x1024xf32>, %init: tensor<768xf32>)
    -> (tensor<32x1024xf32>, tensor<768xf32>, tensor<768xf32>) {
  %dy = tensor.expand_shape %dy2 [[0, 1], [2]] output_shape [32, 1024, 768] : tensor<32768x768xf32> into tensor<32x1024x768xf32>
  %s = linalg.generic {indexing_maps = [#r3, #r3, #rr], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %x : tensor<32x1024x768xf32>, tensor<32x1024x768xf32>) outs(%rows : tensor<32x1024xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %p, %o : f32
    linalg.yield %t : f32
  } -> tensor<32x1024xf32>
  %g:2 = linalg.generic {indexing_maps = [#r3, #r3, #rc, #rc], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy, %x : tensor<32x1024x768xf32>, tensor<32x1024x768xf32>) outs(%init, %init : tensor<768xf32>, tensor<768xf32>) {
  ^bb0(%a: f32, %b: f32, %o0: f32, %o1: f32):
    %p = arith.mulf %a, %b : f32
    %t0 = arith.addf %p, %o0 : f32
    %t1 = arith.addf %a, %o1 : f32
    linalg.yield %t0, %t1 : f32, f32
  } -> (tensor<768xf32>, tensor<768xf32>)
  return %s, %g#0, %g#1 : tensor<32x1024xf32>, tensor<768xf32>, tensor<768xf32>
}

func.func @three_outputs(%x: tensor<32x1024x768xf32>, %rows: tensor<32x1024xf32>,
                         %init: tensor<768xf32>)
    -> (tensor<32x1024xf32>, tensor<768xf32>, tensor<768xf32>, tensor<768xf32>) {
  %s = linalg.generic {indexing_maps = [#r3, #rr], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<32x1024x768xf32>) outs(%rows : tensor<32x1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<32x1024xf32>
  %g:3 = linalg.generic {indexing_maps = [#r3, #rc, #rc, #rc], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : tensor<32x1024x768xf32>) outs(%init, %init, %init : tensor<768xf32>, tensor<768xf32>, tensor<768xf32>) {
  ^bb0(%a: f32, %o0: f32, %o1: f32, %o2: f32):
    %t0 = arith.addf %a, %o0 : f32
    %t1 = arith.addf %a, %o1 : f32
    %t2 = arith.addf %a, %o2 : f32
    linalg.yield %t0, %t1, %t2 : f32, f32, f32
  } -> (tensor<768xf32>, tensor<768xf32>, tensor<768xf32>)
  return %s, %g#0, %g#1, %g#2 : tensor<32x1024xf32>, tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
}
