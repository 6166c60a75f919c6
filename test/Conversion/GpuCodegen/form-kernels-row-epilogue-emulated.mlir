// A cross-entropy chunk as eff-gpu-split-reductions orders it (the online
// log-sum-exp, each row's loss term with the label's logit gathered, lse =
// m + log s written over m, the gradient in place over the bf16 logits,
// then the loss: the terms' sum) runs as one block per row: the
// log-sum-exp's totals, the per-row terms and lse from them in every
// thread (lse forwarded, not reloaded; thread 0 stores), a barrier, then
// the gradient over the row again. Emulated, it prints what the step
// lowered for the CPU prints: 6 rows of 5000, row r holding r at every
// (r + 2)-th element and about r - 1000 elsewhere (every exp exactly 1 or
// 0 in f32, so the sums are counts in any order); labels 0, 7, 3, 9, 4 and
// -100 (ignored: weight 0), weights 1/5. The values below are PyTorch's
// (torch.nn.functional.cross_entropy on the same bf16 logits: the summed
// loss / 5, logsumexp, and the mean loss's gradient rounded to bf16).

// RUN: effopt-opt %s --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.cpu
// RUN: effopt-opt %s --eff-gpu-form-kernels --eff-gpu-emulate-launches --convert-linalg-to-loops --convert-vector-to-scf --convert-vector-to-llvm --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.gpu
// RUN: diff %t.cpu %t.gpu
// Blocks and threads in descending order: the same values (no race the
// ascending order hides).
// RUN: effopt-opt %s --eff-gpu-form-kernels --eff-gpu-emulate-launches=descending=true --convert-linalg-to-loops --convert-vector-to-scf --convert-vector-to-llvm --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.desc
// RUN: diff %t.cpu %t.desc
// RUN: FileCheck %s < %t.gpu
// RUN: effopt-opt %s --eff-gpu-form-kernels=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: effopt-opt %s --eff-gpu-form-kernels -o - | FileCheck %s --check-prefix=KERNELS
// RUN: effopt-opt %s --eff-gpu-form-kernels=row-epilogues=false -o - | FileCheck %s --check-prefix=SEPARATE

// CHECK-LABEL: loss
// CHECK-NEXT: [807.602]
// CHECK-LABEL: lse
// CHECK-NEXT: [7.82405,  8.41878,  9.1309,  9.90775,  10.7262,  11.5723]
// CHECK-LABEL: gradient
// CHECK-NEXT: {{\[\[}}-0.200195,   0,   8.01086e-05,   0,   8.01086e-05,   0,   8.01086e-05,   0,   8.01086e-05,   0],
// CHECK-NEXT: [0.000120163,   0,   0,   0.000120163,   0,   0,   0.000120163,   -0.200195,   0,   0.000120163],
// CHECK-NEXT: [0.000160217,   0,   0,   -0.200195,   0.000160217,   0,   0,   0,   0.000160217,   0],
// CHECK-NEXT: [0.000200272,   0,   0,   0,   0,   0.000200272,   0,   0,   0,   -0.200195],
// CHECK-NEXT: [0.000239372,   0,   0,   0,   -0.200195,   0,   0.000239372,   0,   0,   0],
// CHECK-NEXT: [-0,   0,   0,   0,   0,   0,   0,   0,   0,   0]]

// REMARK: remark: online log-sum-exp: one block per row, its max and sum of exponentials in one pass; starts from the fills of outputs 0, 1; 2 per-row op(s) and the elementwise op over its rows run in its blocks (row epilogue)

// KERNELS-LABEL: func.func @step
// KERNELS:       gpu.launch
// KERNELS:       gpu.all_reduce maximumf
// KERNELS:       gpu.all_reduce add
// KERNELS:       memref.load %arg1[%{{.*}}, %{{.*}}] : memref<6x5000xbf16>
// KERNELS:       scf.if
// KERNELS-COUNT-4: memref.store
// KERNELS:       gpu.barrier
// KERNELS:       vector.load %arg1{{.*}} : memref<6x5000xbf16>, vector<8xbf16>
// KERNELS:       memref.load {{.*}} : memref<6x1xi64>
// KERNELS:       memref.load {{.*}} : memref<6x1xf32>
// KERNELS-NOT:   memref.load
// KERNELS:       vector.store {{.*}}, %arg1{{.*}} : memref<6x5000xbf16>, vector<8xbf16>
// KERNELS:       } {eff.kernel = "block-reduction"}
// KERNELS:       } {eff.kernel = "block-reduction"}
// KERNELS-NOT:   gpu.launch

// SEPARATE-NOT: gpu.barrier
// SEPARATE:     eff.kernel = "block-reduction"
// SEPARATE-NOT: gpu.barrier
// SEPARATE-COUNT-3: eff.kernel = "elementwise"
// SEPARATE:     eff.kernel = "block-reduction"
// SEPARATE-NOT:  gpu.barrier

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#bc = affine_map<(d0, d1) -> (d0, 0)>
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>

func.func @step(%arena: memref<64xi8>, %x: memref<6x5000xbf16>, %labels: memref<6xi64>, %w: memref<6xf32>, %m: memref<6xf32>, %s: memref<6xf32>, %terms: memref<6xf32>, %loss: memref<f32>) attributes {eff.arena_arg = 0 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %ignore = arith.constant -100 : i64
  linalg.fill ins(%zero : f32) outs(%loss : memref<f32>)
  linalg.fill ins(%ninf : f32) outs(%m : memref<6xf32>)
  linalg.fill ins(%zero : f32) outs(%s : memref<6xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<6x5000xbf16>) outs(%m, %s : memref<6xf32>, memref<6xf32>) {
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
      ins(%labels, %w, %m, %s : memref<6xi64>, memref<6xf32>, memref<6xf32>, memref<6xf32>) outs(%terms : memref<6xf32>) {
  ^bb0(%lab: i64, %wv: f32, %mv: f32, %sv: f32, %out: f32):
    %lg = math.log %sv : f32
    %lse = arith.addf %mv, %lg : f32
    %i = linalg.index 0 : index
    %valid = arith.cmpi ne, %lab, %ignore : i64
    %li = arith.index_cast %lab : i64 to index
    %idx = arith.select %valid, %li, %c0 : index
    %picked = memref.load %x[%i, %idx] : memref<6x5000xbf16>
    %pf = arith.extf %picked : bf16 to f32
    %diff = arith.subf %lse, %pf : f32
    %term = arith.mulf %wv, %diff : f32
    linalg.yield %term : f32
  }
  // lse = m + log(s), over m (the plan puts it there: m is dead after).
  linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%m, %s : memref<6xf32>, memref<6xf32>) outs(%m : memref<6xf32>) {
  ^bb0(%mv: f32, %sv: f32, %out: f32):
    %lg = math.log %sv : f32
    %r = arith.addf %mv, %lg : f32
    linalg.yield %r : f32
  }
  %lab2 = memref.expand_shape %labels [[0, 1]] output_shape [6, 1] : memref<6xi64> into memref<6x1xi64>
  %w2 = memref.expand_shape %w [[0, 1]] output_shape [6, 1] : memref<6xf32> into memref<6x1xf32>
  %lse2 = memref.expand_shape %m [[0, 1]] output_shape [6, 1] : memref<6xf32> into memref<6x1xf32>
  // The gradient, in place over the logits.
  linalg.generic {indexing_maps = [#id2, #bc, #bc, #bc, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %lab2, %w2, %lse2 : memref<6x5000xbf16>, memref<6x1xi64>, memref<6x1xf32>, memref<6x1xf32>) outs(%x : memref<6x5000xbf16>) {
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
      ins(%terms : memref<6xf32>) outs(%loss : memref<f32>) {
  ^bb0(%t: f32, %acc: f32):
    %r = arith.addf %t, %acc : f32
    linalg.yield %r : f32
  }
  return
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printString(!llvm.ptr)

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c5000 = arith.constant 5000 : index
  %far = arith.constant -1000.0 : f32
  %fifth = arith.constant 0.2 : f32
  %zero = arith.constant 0.0 : f32
  %x = memref.alloc() : memref<6x5000xbf16>
  scf.for %r = %c0 to %c6 step %c1 {
    %ri = arith.index_cast %r : index to i64
    %rf = arith.sitofp %ri : i64 to f32
    %period = arith.addi %r, %c2 : index
    scf.for %j = %c0 to %c5000 step %c1 {
      %k = arith.remui %j, %period : index
      %hit = arith.cmpi eq, %k, %c0 : index
      %low = arith.addf %rf, %far : f32
      %v = arith.select %hit, %rf, %low : f32
      %b = arith.truncf %v : f32 to bf16
      memref.store %b, %x[%r, %j] : memref<6x5000xbf16>
    }
  }
  // Labels 0, 7, 3, 9, 4 and one ignored (-100); weights 1/5 and 0.
  %labels = memref.alloc() : memref<6xi64>
  %w = memref.alloc() : memref<6xf32>
  %l0 = arith.constant 0 : i64
  %l1 = arith.constant 7 : i64
  %l2 = arith.constant 3 : i64
  %l3 = arith.constant 9 : i64
  %l4 = arith.constant 4 : i64
  %l5 = arith.constant -100 : i64
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  memref.store %l0, %labels[%c0] : memref<6xi64>
  memref.store %l1, %labels[%c1] : memref<6xi64>
  memref.store %l2, %labels[%c2] : memref<6xi64>
  memref.store %l3, %labels[%c3] : memref<6xi64>
  memref.store %l4, %labels[%c4] : memref<6xi64>
  memref.store %l5, %labels[%c5] : memref<6xi64>
  scf.for %r = %c0 to %c5 step %c1 {
    memref.store %fifth, %w[%r] : memref<6xf32>
  }
  memref.store %zero, %w[%c5] : memref<6xf32>
  %m = memref.alloc() : memref<6xf32>
  %s = memref.alloc() : memref<6xf32>
  %terms = memref.alloc() : memref<6xf32>
  %loss = memref.alloc() : memref<f32>
  %arena = memref.alloc() : memref<64xi8>
  func.call @step(%arena, %x, %labels, %w, %m, %s, %terms, %loss) : (memref<64xi8>, memref<6x5000xbf16>, memref<6xi64>, memref<6xf32>, memref<6xf32>, memref<6xf32>, memref<6xf32>, memref<f32>) -> ()
  // The first 10 columns of the gradient, as f32.
  %g = memref.alloc() : memref<6x10xf32>
  %c10 = arith.constant 10 : index
  scf.for %r = %c0 to %c6 step %c1 {
    scf.for %j = %c0 to %c10 step %c1 {
      %b = memref.load %x[%r, %j] : memref<6x5000xbf16>
      %f = arith.extf %b : bf16 to f32
      memref.store %f, %g[%r, %j] : memref<6x10xf32>
    }
  }
  %n_l = llvm.mlir.addressof @n_l : !llvm.ptr
  func.call @printString(%n_l) : (!llvm.ptr) -> ()
  %ul = memref.cast %loss : memref<f32> to memref<*xf32>
  func.call @printMemrefF32(%ul) : (memref<*xf32>) -> ()
  %n_m = llvm.mlir.addressof @n_m : !llvm.ptr
  func.call @printString(%n_m) : (!llvm.ptr) -> ()
  %um = memref.cast %m : memref<6xf32> to memref<*xf32>
  func.call @printMemrefF32(%um) : (memref<*xf32>) -> ()
  %n_t = llvm.mlir.addressof @n_t : !llvm.ptr
  func.call @printString(%n_t) : (!llvm.ptr) -> ()
  %ut = memref.cast %terms : memref<6xf32> to memref<*xf32>
  func.call @printMemrefF32(%ut) : (memref<*xf32>) -> ()
  %n_g = llvm.mlir.addressof @n_g : !llvm.ptr
  func.call @printString(%n_g) : (!llvm.ptr) -> ()
  %ug = memref.cast %g : memref<6x10xf32> to memref<*xf32>
  func.call @printMemrefF32(%ug) : (memref<*xf32>) -> ()
  return
}

llvm.mlir.global private constant @n_l("loss\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_m("lse\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_t("terms\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_g("gradient\0A\00") {addr_space = 0 : i32}
