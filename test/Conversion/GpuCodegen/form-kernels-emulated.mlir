// Semantics of the kernels on a machine without a GPU: the step runs once
// lowered for the CPU as it is, once after eff-gpu-form-kernels with every
// launch emulated as host loops over blocks and threads (the block
// reductions' gpu.all_reduce combining threads in order); both print the
// same values. The data are small integers, so sums are exact in any order.

// RUN: effopt-opt %s --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.cpu
// RUN: effopt-opt %s --eff-gpu-form-kernels --eff-gpu-emulate-launches --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.gpu
// RUN: diff %t.cpu %t.gpu
// Blocks and threads in descending order: the same values (no race the
// ascending order hides).
// RUN: effopt-opt %s --eff-gpu-form-kernels --eff-gpu-emulate-launches=descending=true --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.desc
// RUN: diff %t.cpu %t.desc
// RUN: FileCheck %s < %t.gpu

// The f64 sum of squares, the any-flag, the copied table.
// CHECK: [24027]
// CHECK: [1]
// CHECK: [4,  1,  4,  1]

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
#s0 = affine_map<() -> ()>

memref.global "private" constant @table : memref<4xi64> = dense<[4, 1, 4, 1]>
memref.global "private" constant @zeros : memref<4x8xf32> = dense<0.0>

func.func @step(%x: memref<32x10xf32>, %b: memref<10xf32>, %y: memref<32x10xf32>,
                %m: memref<32xf32>, %lse: memref<32xf32>,
                %v: memref<1000xf32>, %sum: memref<f64>, %sq: memref<f64>,
                %g: memref<10xf32>, %flag: memref<i1>, %flagf: memref<f32>,
                %idx: memref<32xi64>, %table: memref<8x10xf32>,
                %t: memref<4xi64>, %z: memref<4x8xf32>,
                %amax: memref<32xf32>, %aidx: memref<32xi64>) attributes {eff.arena_arg = 0 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %zero64 = arith.constant 0.0 : f64
  %false = arith.constant false
  %big = arith.constant 7.5 : f32
  // Elementwise with a broadcast bias.
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<32x10xf32>, memref<10xf32>) outs(%y : memref<32x10xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %r = arith.addf %in, %bias : f32
    linalg.yield %r : f32
  }
  // Row max after its fill, then a row sum of (x - max) (a block reduction
  // reading two inputs).
  linalg.fill ins(%ninf : f32) outs(%m : memref<32xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<32x10xf32>) outs(%m : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%lse : memref<32xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%y, %m : memref<32x10xf32>, memref<32xf32>) outs(%lse : memref<32xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = arith.addf %d, %out : f32
    linalg.yield %r : f32
  }
  // Two f64 sums to rank 0 in one generic.
  linalg.fill ins(%zero64 : f64) outs(%sum : memref<f64>)
  linalg.fill ins(%zero64 : f64) outs(%sq : memref<f64>)
  linalg.generic {indexing_maps = [#v, #s, #s], iterator_types = ["reduction"]}
      ins(%v : memref<1000xf32>) outs(%sum, %sq : memref<f64>, memref<f64>) {
  ^bb0(%in: f32, %a: f64, %q: f64):
    %e = arith.extf %in : f32 to f64
    %a1 = arith.addf %e, %a : f64
    %e2 = arith.mulf %e, %e : f64
    %q1 = arith.addf %e2, %q : f64
    linalg.yield %a1, %q1 : f64, f64
  }
  // A column sum (bias gradient).
  linalg.fill ins(%zero : f32) outs(%g : memref<10xf32>)
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["reduction", "parallel"]}
      ins(%y : memref<32x10xf32>) outs(%g : memref<10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  // An i1 "any" flag, then read back as f32.
  linalg.fill ins(%false : i1) outs(%flag : memref<i1>)
  linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
      ins(%v : memref<1000xf32>) outs(%flag : memref<i1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf ogt, %in, %big : f32
    %r = arith.ori %c, %out : i1
    linalg.yield %r : i1
  }
  linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []}
      ins(%flag : memref<i1>) outs(%flagf : memref<f32>) {
  ^bb0(%in: i1, %out: f32):
    %r = arith.uitofp %in : i1 to f32
    linalg.yield %r : f32
  }
  // Constant copies: a splat fill and a table.
  %zg = memref.get_global @zeros : memref<4x8xf32>
  memref.copy %zg, %z : memref<4x8xf32> to memref<4x8xf32>
  %tg = memref.get_global @table : memref<4xi64>
  memref.copy %tg, %t : memref<4xi64> to memref<4xi64>
  // An embedding gradient's scatter-add with repeated rows.
  linalg.fill ins(%zero : f32) outs(%table : memref<8x10xf32>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %c32 = arith.constant 32 : index
  scf.for %i = %c0 to %c32 step %c1 {
    scf.for %f = %c0 to %c10 step %c1 {
      %k = memref.load %idx[%i] : memref<32xi64>
      %row = arith.index_cast %k : i64 to index
      %old = memref.load %table[%row, %f] : memref<8x10xf32>
      %d = memref.load %y[%i, %f] : memref<32x10xf32>
      %new = arith.addf %old, %d : f32
      memref.store %new, %table[%row, %f] : memref<8x10xf32>
    }
  }
  // An argmax (unrecognised combiner: one thread per row).
  linalg.fill ins(%ninf : f32) outs(%amax : memref<32xf32>)
  %cm1 = arith.constant -1 : i64
  linalg.fill ins(%cm1 : i64) outs(%aidx : memref<32xi64>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<32x10xf32>) outs(%amax, %aidx : memref<32xf32>, memref<32xi64>) {
  ^bb0(%in: f32, %best: f32, %arg: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %in, %best : f32
    %bb = arith.select %gt, %in, %best : f32
    %aa = arith.select %gt, %ji, %arg : i64
    linalg.yield %bb, %aa : f32, i64
  }
  return
}

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefF64(memref<*xf64>) attributes {llvm.emit_c_interface}
func.func private @printMemrefI64(memref<*xi64>) attributes {llvm.emit_c_interface}

/// Small integers: (a*i + b*j) mod 17 - 8.
func.func @fill2(%buf: memref<?x?xf32>, %a: index, %b: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %buf, %c0 : memref<?x?xf32>
  %m = memref.dim %buf, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      %ai = arith.muli %a, %i : index
      %bj = arith.muli %b, %j : index
      %s = arith.addi %ai, %bj : index
      %r = arith.remui %s, %c17 : index
      %v = arith.subi %r, %c8 : index
      %vi = arith.index_cast %v : index to i64
      %vf = arith.sitofp %vi : i64 to f32
      memref.store %vf, %buf[%i, %j] : memref<?x?xf32>
    }
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c13 = arith.constant 13 : index
  %c32 = arith.constant 32 : index
  %x = memref.alloc() : memref<32x10xf32>
  %b = memref.alloc() : memref<1x10xf32>
  %v = memref.alloc() : memref<1x1000xf32>
  %xd = memref.cast %x : memref<32x10xf32> to memref<?x?xf32>
  %bd = memref.cast %b : memref<1x10xf32> to memref<?x?xf32>
  %vd = memref.cast %v : memref<1x1000xf32> to memref<?x?xf32>
  func.call @fill2(%xd, %c7, %c13) : (memref<?x?xf32>, index, index) -> ()
  func.call @fill2(%bd, %c1, %c5) : (memref<?x?xf32>, index, index) -> ()
  func.call @fill2(%vd, %c1, %c3) : (memref<?x?xf32>, index, index) -> ()
  %b1 = memref.collapse_shape %b [[0, 1]] : memref<1x10xf32> into memref<10xf32>
  %v1 = memref.collapse_shape %v [[0, 1]] : memref<1x1000xf32> into memref<1000xf32>
  %idx = memref.alloc() : memref<32xi64>
  scf.for %i = %c0 to %c32 step %c1 {
    %k = arith.remui %i, %c8 : index
    %kk = arith.muli %k, %k : index
    %r = arith.remui %kk, %c8 : index
    %ri = arith.index_cast %r : index to i64
    memref.store %ri, %idx[%i] : memref<32xi64>
  }
  %y = memref.alloc() : memref<32x10xf32>
  %m = memref.alloc() : memref<32xf32>
  %lse = memref.alloc() : memref<32xf32>
  %sum = memref.alloc() : memref<f64>
  %sq = memref.alloc() : memref<f64>
  %g = memref.alloc() : memref<10xf32>
  %flag = memref.alloc() : memref<i1>
  %flagf = memref.alloc() : memref<f32>
  %table = memref.alloc() : memref<8x10xf32>
  %t = memref.alloc() : memref<4xi64>
  %z = memref.alloc() : memref<4x8xf32>
  %amax = memref.alloc() : memref<32xf32>
  %aidx = memref.alloc() : memref<32xi64>
  func.call @step(%x, %b1, %y, %m, %lse, %v1, %sum, %sq, %g, %flag, %flagf, %idx, %table, %t, %z, %amax, %aidx)
    : (memref<32x10xf32>, memref<10xf32>, memref<32x10xf32>, memref<32xf32>, memref<32xf32>, memref<1000xf32>, memref<f64>, memref<f64>, memref<10xf32>, memref<i1>, memref<f32>, memref<32xi64>, memref<8x10xf32>, memref<4xi64>, memref<4x8xf32>, memref<32xf32>, memref<32xi64>) -> ()
  %u0 = memref.cast %y : memref<32x10xf32> to memref<*xf32>
  func.call @printMemrefF32(%u0) : (memref<*xf32>) -> ()
  %u1 = memref.cast %m : memref<32xf32> to memref<*xf32>
  func.call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<32xf32> to memref<*xf32>
  func.call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %u3 = memref.cast %sum : memref<f64> to memref<*xf64>
  func.call @printMemrefF64(%u3) : (memref<*xf64>) -> ()
  %u4 = memref.cast %sq : memref<f64> to memref<*xf64>
  func.call @printMemrefF64(%u4) : (memref<*xf64>) -> ()
  %u5 = memref.cast %g : memref<10xf32> to memref<*xf32>
  func.call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  %u6 = memref.cast %flagf : memref<f32> to memref<*xf32>
  func.call @printMemrefF32(%u6) : (memref<*xf32>) -> ()
  %u7 = memref.cast %table : memref<8x10xf32> to memref<*xf32>
  func.call @printMemrefF32(%u7) : (memref<*xf32>) -> ()
  %u8 = memref.cast %z : memref<4x8xf32> to memref<*xf32>
  func.call @printMemrefF32(%u8) : (memref<*xf32>) -> ()
  %u9 = memref.cast %amax : memref<32xf32> to memref<*xf32>
  func.call @printMemrefF32(%u9) : (memref<*xf32>) -> ()
  %u10 = memref.cast %aidx : memref<32xi64> to memref<*xi64>
  func.call @printMemrefI64(%u10) : (memref<*xi64>) -> ()
  %u11 = memref.cast %t : memref<4xi64> to memref<*xi64>
  func.call @printMemrefI64(%u11) : (memref<*xi64>) -> ()
  return
}
