// Semantics of the vectorised elementwise kernels (16-byte loads and
// stores, the payload once per lane) on a machine without a GPU: the step
// runs once lowered for the CPU as it is and once after
// eff-gpu-form-kernels with every launch emulated as host loops; both print
// the same values. Covered: a broadcast operand indexed by the vector's
// dimension, one that is not (read once per thread), linalg.index of the
// vector's dimension, f32 (4 lanes), bf16 to f32 (4 lanes: the widest type
// decides) and bf16 alone (8 lanes).

// RUN: effopt-opt %s --eff-gpu-form-kernels | FileCheck %s --check-prefix=IR
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

// IR-LABEL: func.func @step
// IR: vector.load %{{.*}} {alignment = 16 : i64} : memref<16x32xf32>, vector<4xf32>
// IR: vector.load %{{.*}} {alignment = 16 : i64} : memref<32xf32>, vector<4xf32>
// IR: memref.load %{{.*}} : memref<16xf32>
// IR: vector.store %{{.*}} {alignment = 16 : i64} : memref<16x32xf32>, vector<4xf32>
// IR: vector.store %{{.*}} {alignment = 8 : i64} : memref<16x32xbf16>, vector<4xbf16>
// IR: vector.store %{{.*}} {alignment = 16 : i64} : memref<16x32xbf16>, vector<8xbf16>
// IR: vector.load %{{.*}} {alignment = 8 : i64} : memref<16x32xbf16>, vector<4xbf16>
// IR-LABEL: func.func @main

// With x[i, j] = j, b[j] = 1 - j, r[i] = i: y[i, j] = 2j + 1 + i (exact in
// bf16 too), z = f32(bf16(y)) = y, w = bf16(y) + bf16(y) = 2y. Row 0 and
// row 15 of each (FileCheck folds the printer's runs of spaces):
// CHECK: {{\[\[}}1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63],
// CHECK: [16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78]]
// CHECK: {{\[\[}}1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63],
// CHECK: [16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78]]
// CHECK: {{\[\[}}2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62, 66, 70, 74, 78, 82, 86, 90, 94, 98, 102, 106, 110, 114, 118, 122, 126],
// CHECK: [32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128, 132, 136, 140, 144, 148, 152, 156]]

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#rowv = affine_map<(d0, d1) -> (d0)>

func.func @step(%x: memref<16x32xf32>, %b: memref<32xf32>, %r: memref<16xf32>,
                %y: memref<16x32xf32>, %h: memref<16x32xbf16>,
                %z: memref<16x32xf32>, %w: memref<16x32xbf16>) attributes {eff.arena_arg = 0 : i64} {
  %two = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [#id, #col, #rowv, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b, %r : memref<16x32xf32>, memref<32xf32>, memref<16xf32>) outs(%y : memref<16x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %row: f32, %out: f32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %jf = arith.sitofp %ji : i32 to f32
    %t = arith.mulf %in, %two : f32
    %t1 = arith.addf %t, %bias : f32
    %t2 = arith.addf %t1, %jf : f32
    %t3 = arith.addf %t2, %row : f32
    linalg.yield %t3 : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<16x32xf32>) outs(%h : memref<16x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %h : memref<16x32xbf16>, memref<16x32xbf16>) outs(%w : memref<16x32xbf16>) {
  ^bb0(%a: bf16, %c: bf16, %out: bf16):
    %e = arith.extf %a : bf16 to f32
    %f = arith.extf %c : bf16 to f32
    %s = arith.addf %e, %f : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  }
  // z: f32 from bf16 (4 lanes)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : memref<16x32xbf16>) outs(%z : memref<16x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %t = arith.extf %in : bf16 to f32
    linalg.yield %t : f32
  }
  return
}

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %x = memref.alloc() : memref<16x32xf32>
  %b = memref.alloc() : memref<32xf32>
  %r = memref.alloc() : memref<16xf32>
  // x[i, j] = j, r[i] = i, b[j] = 1 - j.
  scf.for %i = %c0 to %c16 step %c1 {
    %ii = arith.index_cast %i : index to i32
    %if = arith.sitofp %ii : i32 to f32
    memref.store %if, %r[%i] : memref<16xf32>
    scf.for %j = %c0 to %c32 step %c1 {
      %ji = arith.index_cast %j : index to i32
      %jf = arith.sitofp %ji : i32 to f32
      memref.store %jf, %x[%i, %j] : memref<16x32xf32>
    }
  }
  %one = arith.constant 1.0 : f32
  %m1 = arith.constant -1.0 : f32
  scf.for %j = %c0 to %c32 step %c1 {
    %ji = arith.index_cast %j : index to i32
    %jf = arith.sitofp %ji : i32 to f32
    %nj = arith.mulf %jf, %m1 : f32
    %bj = arith.addf %nj, %one : f32
    memref.store %bj, %b[%j] : memref<32xf32>
  }
  %y = memref.alloc() : memref<16x32xf32>
  %h = memref.alloc() : memref<16x32xbf16>
  %z = memref.alloc() : memref<16x32xf32>
  %w = memref.alloc() : memref<16x32xbf16>
  func.call @step(%x, %b, %r, %y, %h, %z, %w) : (memref<16x32xf32>, memref<32xf32>, memref<16xf32>, memref<16x32xf32>, memref<16x32xbf16>, memref<16x32xf32>, memref<16x32xbf16>) -> ()
  %wf = memref.alloc() : memref<16x32xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      %v = memref.load %w[%i, %j] : memref<16x32xbf16>
      %e = arith.extf %v : bf16 to f32
      memref.store %e, %wf[%i, %j] : memref<16x32xf32>
    }
  }
  %y0 = memref.subview %y[0, 0] [1, 32] [1, 1] : memref<16x32xf32> to memref<32xf32, strided<[1]>>
  %z0 = memref.subview %z[0, 0] [1, 32] [1, 1] : memref<16x32xf32> to memref<32xf32, strided<[1]>>
  %w0 = memref.subview %wf[0, 0] [1, 32] [1, 1] : memref<16x32xf32> to memref<32xf32, strided<[1]>>
  %uy = memref.cast %y : memref<16x32xf32> to memref<*xf32>
  %uz = memref.cast %z : memref<16x32xf32> to memref<*xf32>
  %uw = memref.cast %wf : memref<16x32xf32> to memref<*xf32>
  func.call @printMemrefF32(%uy) : (memref<*xf32>) -> ()
  func.call @printMemrefF32(%uz) : (memref<*xf32>) -> ()
  func.call @printMemrefF32(%uw) : (memref<*xf32>) -> ()
  return
}
