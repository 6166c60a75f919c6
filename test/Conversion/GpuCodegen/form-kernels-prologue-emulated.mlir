// An activation's backward run in the threads of the bias gradient's
// partial sums (eff-gpu-form-kernels, "the elementwise op before it runs in
// its threads"): the step runs once lowered for the CPU as it is, once
// after eff-gpu-form-kernels with every launch emulated; both print the
// same gradient and the same partial sums. The partial sums read the
// gradient through a view of its bytes in another shape (the split's
// expand_shape), in another order than the activation wrote it. Small
// integers: sums are exact in any order.

// RUN: effopt-opt %s --eff-gpu-form-kernels | FileCheck %s --check-prefix=FORMED
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

// One launch for the activation's backward and the partial sums, one for
// the combine (whose fill is folded).
// FORMED-LABEL: func.func @step
// FORMED: gpu.launch
// FORMED: eff.kernel = "thread-reduction"
// FORMED-NOT: eff.kernel = "elementwise"
// FORMED: gpu.launch
// FORMED: eff.kernel = "thread-reduction"
// FORMED-NOT: gpu.launch

// The gradient's first row, then the bias gradient (sums of 12 rows).
// CHECK: {{\[}}{{\[}}[0, -2, 0, 4, 0, -1],
// CHECK: [0, -15, -8, 21, 6, -9]

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#part = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#all = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col = affine_map<(d0, d1, d2) -> (d2)>

func.func @step(%arena: memref<4096xi8>, %dy: memref<2x6x6xf32>,
                %pre: memref<2x6x6xf32>, %bias: memref<6xf32>)
    attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c512 = arith.constant 512 : index
  %c1024 = arith.constant 1024 : index
  %partial = memref.view %arena[%c1024][] : memref<4096xi8> to memref<2x2x6xf32>
  linalg.fill ins(%zero : f32) outs(%partial : memref<2x2x6xf32>)
  // dx = dy where pre > 0 (a ReLU's backward), into the arena.
  %dx = memref.view %arena[%c0][] : memref<4096xi8> to memref<2x6x6xf32>
  linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dy, %pre : memref<2x6x6xf32>, memref<2x6x6xf32>) outs(%dx : memref<2x6x6xf32>) {
  ^bb0(%g: f32, %p: f32, %o: f32):
    %pos = arith.cmpf ogt, %p, %zero : f32
    %r = arith.select %pos, %g, %zero : f32
    linalg.yield %r : f32
  }
  // Partial column sums over chunks of 3 rows, read through [2, 2, 3, 6].
  %rows = memref.expand_shape %dx [[0], [1, 2], [3]] output_shape [2, 2, 3, 6] : memref<2x6x6xf32> into memref<2x2x3x6xf32>
  linalg.generic {indexing_maps = [#id4, #part], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%rows : memref<2x2x3x6xf32>) outs(%partial : memref<2x2x6xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%bias : memref<6xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%partial : memref<2x2x6xf32>) outs(%bias : memref<6xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c11 = arith.constant 11 : index
  %c5 = arith.constant 5 : index
  %c3 = arith.constant 3 : index
  %arena = memref.alloc() : memref<4096xi8>
  %dy = memref.alloc() : memref<2x6x6xf32>
  %pre = memref.alloc() : memref<2x6x6xf32>
  %bias = memref.alloc() : memref<6xf32>
  // dy = (7i + 5j + 3k) mod 11 - 5; pre = (i + j + k) mod 2 - 0.5
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c6 step %c1 {
      scf.for %k = %c0 to %c6 step %c1 {
        %a = arith.muli %i, %c7 : index
        %b = arith.muli %j, %c5 : index
        %c = arith.muli %k, %c3 : index
        %ab = arith.addi %a, %b : index
        %abc = arith.addi %ab, %c : index
        %r = arith.remui %abc, %c11 : index
        %v = arith.subi %r, %c5 : index
        %vi = arith.index_cast %v : index to i64
        %vf = arith.sitofp %vi : i64 to f32
        memref.store %vf, %dy[%i, %j, %k] : memref<2x6x6xf32>
        %ij = arith.addi %i, %j : index
        %ijk = arith.addi %ij, %k : index
        %parity = arith.remui %ijk, %c2 : index
        %pi = arith.index_cast %parity : index to i64
        %pf = arith.sitofp %pi : i64 to f32
        %half = arith.constant 0.5 : f32
        %p = arith.subf %pf, %half : f32
        memref.store %p, %pre[%i, %j, %k] : memref<2x6x6xf32>
      }
    }
  }
  func.call @step(%arena, %dy, %pre, %bias) : (memref<4096xi8>, memref<2x6x6xf32>, memref<2x6x6xf32>, memref<6xf32>) -> ()
  %dx = memref.view %arena[%c0][] : memref<4096xi8> to memref<2x6x6xf32>
  %u0 = memref.cast %dx : memref<2x6x6xf32> to memref<*xf32>
  func.call @printMemrefF32(%u0) : (memref<*xf32>) -> ()
  %u1 = memref.cast %bias : memref<6xf32> to memref<*xf32>
  func.call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  return
}
