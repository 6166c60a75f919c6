// RUN: effopt-opt %s --split-input-file --eff-gpu-split-reductions | FileCheck %s

// A cross-entropy chunk as the lowering leaves it: the online log-sum-exp
// over 16 rows of 8192 bf16 logits, the loss (a sum over the rows of
// w * (lse - x[label]), the label's logit gathered), 1 / count and the
// rows' weights (which do not use the log-sum-exp), lse, the gradient
// over the logits. Afterwards: the ops that do not use the log-sum-exp
// before it (1 / count), but for the rows' weights, a per-row op the
// gradient needs; right after it the loss's per-row terms (no fill: each
// from the identity, 0), the weights and lse; then the gradient; the
// loss's combine (a sum of the 16 terms into the loss's fill) last.

// CHECK-LABEL: func.func @chunk
// CHECK:       %[[LOSS0:.*]] = linalg.fill {{.*}} -> tensor<f32>
// CHECK:       %[[RECIP:.*]] = linalg.generic {{.*}} iterator_types = []} ins(%arg2
// CHECK:       %[[MS:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0
// CHECK-NEXT:  ^bb0
// CHECK:       %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:  %[[TERMS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%arg1, %[[MS]]#0, %[[MS]]#1 : {{.*}}) outs(%{{.*}} : tensor<16xf32>)
// CHECK:         tensor.extract %arg0
// CHECK:         %[[TERM:.*]] = arith.mulf
// CHECK-NEXT:    %[[ACC:.*]] = arith.addf %[[TERM]], %[[ZERO]] : f32
// CHECK-NEXT:    linalg.yield %[[ACC]]
// CHECK:       %[[W:.*]] = linalg.generic {{.*}} ins(%arg1, %[[RECIP]]
// CHECK:       %[[LSE:.*]] = linalg.generic {{.*}} ins(%[[MS]]#0, %[[MS]]#1
// CHECK:       %[[GRAD:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%arg0
// CHECK:       %[[LOSS:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[TERMS]] : tensor<16xf32>) outs(%[[LOSS0]] : tensor<f32>)
// CHECK-NEXT:  ^bb0(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT:    arith.addf %[[IN]], %[[OUT]] : f32
// CHECK:       return %[[GRAD]], %[[LOSS]]

// CHECK-LABEL: func.func @other_op_between
// CHECK:       linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CHECK:       linalg.fill
// CHECK:       linalg.generic {{.*}} iterator_types = ["reduction"]}
// CHECK:       linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]}

// CHECK-LABEL: func.func @mean_loss
// CHECK:       %[[COUNT:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[W0:.*]]#0
// CHECK:       %[[MS:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CHECK:       %[[SCALE:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%arg1, %[[COUNT]]
// CHECK:       %[[LSE:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[MS]]#0, %[[MS]]#1
// CHECK:       %[[GRAD:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]}
// CHECK-NEXT:  ^bb0
// CHECK:       %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[W0]]#0, %[[W0]]#1, %[[MS]]#0, %[[MS]]#1
// CHECK:       %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]], %[[COUNT]]
// CHECK:       return %[[GRAD]], %[[MEAN]]

#rows2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
#s0 = affine_map<() -> ()>
#bc = affine_map<(d0, d1) -> (d0, 0)>
func.func @chunk(%x: tensor<16x8192xbf16>, %labels: tensor<16xi64>, %count: tensor<f32>) -> (tensor<16x8192xbf16>, tensor<f32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %ignore = arith.constant -100 : i64
  %e0 = tensor.empty() : tensor<16xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<16xf32>) -> tensor<16xf32>
  %e1 = tensor.empty() : tensor<16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %ms:2 = linalg.generic {indexing_maps = [#rows2, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<16x8192xbf16>) outs(%m0, %s0 : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%in: bf16, %m: f32, %s: f32):
    %xf = arith.extf %in : bf16 to f32
    %nm = arith.maximumf %m, %xf : f32
    %same = arith.cmpf oeq, %m, %nm : f32
    %d = arith.subf %m, %nm : f32
    %ed = math.exp %d : f32
    %r = arith.select %same, %one, %ed : f32
    %empty = arith.cmpf oeq, %nm, %ninf : f32
    %t = arith.subf %xf, %nm : f32
    %et = math.exp %t : f32
    %term = arith.select %empty, %zero, %et : f32
    %sc = arith.mulf %s, %r : f32
    %ns = arith.addf %sc, %term : f32
    linalg.yield %nm, %ns : f32, f32
  } -> (tensor<16xf32>, tensor<16xf32>)
  %le = tensor.empty() : tensor<f32>
  %l0 = linalg.fill ins(%zero : f32) outs(%le : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#v, #v, #v, #s], iterator_types = ["reduction"]} ins(%labels, %ms#0, %ms#1 : tensor<16xi64>, tensor<16xf32>, tensor<16xf32>) outs(%l0 : tensor<f32>) {
  ^bb0(%lab: i64, %m: f32, %s: f32, %out: f32):
    %lg = math.log %s : f32
    %lse = arith.addf %m, %lg : f32
    %i = linalg.index 0 : index
    %valid = arith.cmpi ne, %lab, %ignore : i64
    %li = arith.index_cast %lab : i64 to index
    %idx = arith.select %valid, %li, %c0 : index
    %picked = tensor.extract %x[%i, %idx] : tensor<16x8192xbf16>
    %pf = arith.extf %picked : bf16 to f32
    %w = arith.select %valid, %one, %zero : f32
    %diff = arith.subf %lse, %pf : f32
    %term = arith.mulf %w, %diff : f32
    %acc = arith.addf %term, %out : f32
    linalg.yield %acc : f32
  } -> tensor<f32>
  %re = tensor.empty() : tensor<f32>
  %recip = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []} ins(%count : tensor<f32>) outs(%re : tensor<f32>) {
  ^bb0(%c: f32, %out: f32):
    %q = arith.divf %one, %c : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  %we = tensor.empty() : tensor<16xf32>
  %w = linalg.generic {indexing_maps = [#v, #s, #v], iterator_types = ["parallel"]} ins(%labels, %recip : tensor<16xi64>, tensor<f32>) outs(%we : tensor<16xf32>) {
  ^bb0(%lab: i64, %r: f32, %out: f32):
    %valid = arith.cmpi ne, %lab, %ignore : i64
    %v = arith.select %valid, %one, %zero : f32
    %wv = arith.mulf %v, %r : f32
    linalg.yield %wv : f32
  } -> tensor<16xf32>
  %lab2 = tensor.expand_shape %labels [[0, 1]] output_shape [16, 1] : tensor<16xi64> into tensor<16x1xi64>
  %w2 = tensor.expand_shape %w [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
  %lsee = tensor.empty() : tensor<16xf32>
  %lse = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%ms#0, %ms#1 : tensor<16xf32>, tensor<16xf32>) outs(%lsee : tensor<16xf32>) {
  ^bb0(%m: f32, %s: f32, %out: f32):
    %lg = math.log %s : f32
    %r = arith.addf %m, %lg : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %lse2 = tensor.expand_shape %lse [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
  %ge = tensor.empty() : tensor<16x8192xbf16>
  %grad = linalg.generic {indexing_maps = [#rows2, #bc, #bc, #bc, #rows2], iterator_types = ["parallel", "parallel"]} ins(%x, %lab2, %w2, %lse2 : tensor<16x8192xbf16>, tensor<16x1xi64>, tensor<16x1xf32>, tensor<16x1xf32>) outs(%ge : tensor<16x8192xbf16>) {
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
  } -> tensor<16x8192xbf16>
  return %grad, %loss : tensor<16x8192xbf16>, tensor<f32>
}

// -----

// A row reduction (a max over the rows, not per row) uses the
// log-sum-exp's results between it and the gradient: nothing moves, the
// loss stays whole.

#rows2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
#bc = affine_map<(d0, d1) -> (d0, 0)>
#sc = affine_map<(d0, d1) -> ()>
func.func @other_op_between(%x: tensor<16x8192xf32>) -> (tensor<16x8192xf32>, tensor<f32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e0 = tensor.empty() : tensor<16xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<16xf32>) -> tensor<16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16xf32>) -> tensor<16xf32>
  %ms:2 = linalg.generic {indexing_maps = [#rows2, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<16x8192xf32>) outs(%m0, %s0 : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%xf: f32, %m: f32, %s: f32):
    %nm = arith.maximumf %m, %xf : f32
    %same = arith.cmpf oeq, %m, %nm : f32
    %d = arith.subf %m, %nm : f32
    %ed = math.exp %d : f32
    %r = arith.select %same, %one, %ed : f32
    %empty = arith.cmpf oeq, %nm, %ninf : f32
    %t = arith.subf %xf, %nm : f32
    %et = math.exp %t : f32
    %term = arith.select %empty, %zero, %et : f32
    %sc = arith.mulf %s, %r : f32
    %ns = arith.addf %sc, %term : f32
    linalg.yield %nm, %ns : f32, f32
  } -> (tensor<16xf32>, tensor<16xf32>)
  %le = tensor.empty() : tensor<f32>
  %l0 = linalg.fill ins(%ninf : f32) outs(%le : tensor<f32>) -> tensor<f32>
  %top = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%ms#0 : tensor<16xf32>) outs(%l0 : tensor<f32>) {
  ^bb0(%m: f32, %out: f32):
    %r = arith.maximumf %m, %out : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %m2 = tensor.expand_shape %ms#0 [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
  %ge = tensor.empty() : tensor<16x8192xf32>
  %grad = linalg.generic {indexing_maps = [#rows2, #bc, #sc, #rows2], iterator_types = ["parallel", "parallel"]} ins(%x, %m2, %top : tensor<16x8192xf32>, tensor<16x1xf32>, tensor<f32>) outs(%ge : tensor<16x8192xf32>) {
  ^bb0(%xf: f32, %m: f32, %t: f32, %out: f32):
    %a = arith.subf %xf, %m : f32
    %b = arith.subf %a, %t : f32
    linalg.yield %b : f32
  } -> tensor<16x8192xf32>
  return %grad, %top : tensor<16x8192xf32>, tensor<f32>
}

// -----

// A mean loss as the unchunked lowering leaves it: each row's weight and
// picked logit before the log-sum-exp (they do not use it); between it
// and the gradient the loss's sum over the rows (of per-row values only),
// the weights' sum, the mean, the gradient's scale and lse. The sum and
// the mean move after the gradient (it does not need them and they do
// not read the logits), the weights' sum before the log-sum-exp; the
// scale and lse (per-row ops the gradient needs) stay.

#rows2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
#s0 = affine_map<() -> ()>
#bc = affine_map<(d0, d1) -> (d0, 0)>
func.func @mean_loss(%x: tensor<16x8192xf32>, %labels: tensor<16xi64>) -> (tensor<16x8192xf32>, tensor<f32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %ignore = arith.constant -100 : i64
  %e = tensor.empty() : tensor<16xf32>
  %wp:2 = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%labels : tensor<16xi64>) outs(%e, %e : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%lab: i64, %o0: f32, %o1: f32):
    %valid = arith.cmpi ne, %lab, %ignore : i64
    %li = arith.index_cast %lab : i64 to index
    %idx = arith.select %valid, %li, %c0 : index
    %i = linalg.index 0 : index
    %picked = tensor.extract %x[%i, %idx] : tensor<16x8192xf32>
    %w = arith.select %valid, %one, %zero : f32
    linalg.yield %w, %picked : f32, f32
  } -> (tensor<16xf32>, tensor<16xf32>)
  %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %ms:2 = linalg.generic {indexing_maps = [#rows2, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<16x8192xf32>) outs(%m0, %s0 : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%xf: f32, %m: f32, %s: f32):
    %nm = arith.maximumf %m, %xf : f32
    %same = arith.cmpf oeq, %m, %nm : f32
    %d = arith.subf %m, %nm : f32
    %ed = math.exp %d : f32
    %r = arith.select %same, %one, %ed : f32
    %empty = arith.cmpf oeq, %nm, %ninf : f32
    %t = arith.subf %xf, %nm : f32
    %et = math.exp %t : f32
    %term = arith.select %empty, %zero, %et : f32
    %sc = arith.mulf %s, %r : f32
    %ns = arith.addf %sc, %term : f32
    linalg.yield %nm, %ns : f32, f32
  } -> (tensor<16xf32>, tensor<16xf32>)
  %se = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%se : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#v, #v, #v, #v, #s], iterator_types = ["reduction"]} ins(%wp#0, %wp#1, %ms#0, %ms#1 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) outs(%z : tensor<f32>) {
  ^bb0(%w: f32, %p: f32, %m: f32, %s: f32, %out: f32):
    %lg = math.log %s : f32
    %lse = arith.addf %m, %lg : f32
    %d = arith.subf %lse, %p : f32
    %t = arith.mulf %w, %d : f32
    %acc = arith.addf %t, %out : f32
    linalg.yield %acc : f32
  } -> tensor<f32>
  %count = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%wp#0 : tensor<16xf32>) outs(%z : tensor<f32>) {
  ^bb0(%w: f32, %out: f32):
    %acc = arith.addf %w, %out : f32
    linalg.yield %acc : f32
  } -> tensor<f32>
  %mean = linalg.generic {indexing_maps = [#s0, #s0, #s0], iterator_types = []} ins(%sum, %count : tensor<f32>, tensor<f32>) outs(%se : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  %scale = linalg.generic {indexing_maps = [#v, #s, #v], iterator_types = ["parallel"]} ins(%labels, %count : tensor<16xi64>, tensor<f32>) outs(%e : tensor<16xf32>) {
  ^bb0(%lab: i64, %c: f32, %out: f32):
    %valid = arith.cmpi ne, %lab, %ignore : i64
    %w = arith.select %valid, %one, %zero : f32
    %q = arith.divf %w, %c : f32
    linalg.yield %q : f32
  } -> tensor<16xf32>
  %scale2 = tensor.expand_shape %scale [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
  %lse = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%ms#0, %ms#1 : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%m: f32, %s: f32, %out: f32):
    %lg = math.log %s : f32
    %r = arith.addf %m, %lg : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %lse2 = tensor.expand_shape %lse [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
  %ge = tensor.empty() : tensor<16x8192xf32>
  %grad = linalg.generic {indexing_maps = [#rows2, #bc, #bc, #rows2], iterator_types = ["parallel", "parallel"]} ins(%x, %scale2, %lse2 : tensor<16x8192xf32>, tensor<16x1xf32>, tensor<16x1xf32>) outs(%ge : tensor<16x8192xf32>) {
  ^bb0(%xf: f32, %sc: f32, %l: f32, %out: f32):
    %t = arith.subf %xf, %l : f32
    %p = math.exp %t : f32
    %g = arith.mulf %p, %sc : f32
    linalg.yield %g : f32
  } -> tensor<16x8192xf32>
  return %grad, %mean : tensor<16x8192xf32>, tensor<f32>
}
