// The online log-sum-exp of a cross-entropy's long rows (LowerLoss with
// convert-eff-to-linalg online-log-sum-exp: the running max m and the sum
// s of exp(x - m), rescaled whenever m grows) runs as one block per row:
// each thread's pair over its share of the row, the block's max as one
// gpu.all_reduce, the threads' sums rescaled to it as a second. Emulated
// (the second all_reduce reads the first's result) it prints what the
// step lowered for the CPU prints, sequentially: 6 rows of 5000 f32, row
// r < 5 holding r at every (r + 2)-th element and r - 1000 elsewhere, so
// every exp is exactly 1 or 0 and the sums are counts in any order (a
// thread that saw only r - 1000 rescales its count by exp(-1000) = 0); row
// 5 all -inf gives m = -inf, s = 0. Both outputs' fills fold into
// the kernel.

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
// RUN: effopt-opt %s --eff-gpu-form-kernels=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: effopt-opt %s --eff-gpu-form-kernels -o - | FileCheck %s --check-prefix=KERNELS

// CHECK-LABEL: max
// CHECK-NEXT: [0,  1,  2,  3,  4,  -inf]
// CHECK-LABEL: sum
// CHECK-NEXT: [2500,  1667,  1250,  1000,  834,  0]

// REMARK: remark: online log-sum-exp: one block per row, its max and sum of exponentials in one pass; starts from the fills of outputs 0, 1

// KERNELS-LABEL: func.func @step
// KERNELS: gpu.launch
// KERNELS: vector.load {{.*}} : memref<6x5000xf32>, vector<4xf32>
// KERNELS: %[[M:.*]] = gpu.all_reduce maximumf
// KERNELS: math.exp
// KERNELS: gpu.all_reduce add
// KERNELS: } {eff.kernel = "block-reduction"}
// KERNELS-NOT: gpu.launch

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>

func.func @step(%arena: memref<64xi8>, %x: memref<6x5000xf32>, %m: memref<6xf32>, %s: memref<6xf32>) attributes {eff.arena_arg = 0 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%ninf : f32) outs(%m : memref<6xf32>)
  linalg.fill ins(%zero : f32) outs(%s : memref<6xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<6x5000xf32>) outs(%m, %s : memref<6xf32>, memref<6xf32>) {
  ^bb0(%a: f32, %mo: f32, %so: f32):
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

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printString(!llvm.ptr)

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c5000 = arith.constant 5000 : index
  %far = arith.constant -1000.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %x = memref.alloc() : memref<6x5000xf32>
  scf.for %r = %c0 to %c6 step %c1 {
    %ri = arith.index_cast %r : index to i64
    %rf = arith.sitofp %ri : i64 to f32
    %period = arith.addi %r, %c2 : index
    %last = arith.cmpi eq, %r, %c5 : index
    scf.for %j = %c0 to %c5000 step %c1 {
      %k = arith.remui %j, %period : index
      %hit = arith.cmpi eq, %k, %c0 : index
      %low = arith.addf %rf, %far : f32
      %v = arith.select %hit, %rf, %low : f32
      %w = arith.select %last, %ninf, %v : f32
      memref.store %w, %x[%r, %j] : memref<6x5000xf32>
    }
  }
  %m = memref.alloc() : memref<6xf32>
  %s = memref.alloc() : memref<6xf32>
  %arena = memref.alloc() : memref<64xi8>
  func.call @step(%arena, %x, %m, %s) : (memref<64xi8>, memref<6x5000xf32>, memref<6xf32>, memref<6xf32>) -> ()
  %n_m = llvm.mlir.addressof @n_m : !llvm.ptr
  func.call @printString(%n_m) : (!llvm.ptr) -> ()
  %um = memref.cast %m : memref<6xf32> to memref<*xf32>
  func.call @printMemrefF32(%um) : (memref<*xf32>) -> ()
  %n_s = llvm.mlir.addressof @n_s : !llvm.ptr
  func.call @printString(%n_s) : (!llvm.ptr) -> ()
  %us = memref.cast %s : memref<6xf32> to memref<*xf32>
  func.call @printMemrefF32(%us) : (memref<*xf32>) -> ()
  return
}

llvm.mlir.global private constant @n_m("max\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_s("sum\0A\00") {addr_space = 0 : i32}
