// Warp reductions (rows of at most 4096 elements, one warp per row) run on
// a machine without a GPU: the step runs once lowered for the CPU as it is,
// once after eff-gpu-form-kernels with every launch emulated as host loops
// over blocks and threads, the xor shuffles exchanging values between the
// lanes of each warp as the hardware does; both print the same values. The
// data are small integers, so sums are exact in any order.
// Rows of 100 (not a multiple of 32), of 7 (shorter than a warp), 20 rows
// (a partial last block), a dynamic number of rows, a 2-D reduction space,
// two and three outputs in one reduction (sum, max, min), i64 and bf16
// sums (64-bit and narrow shuffles), an i1 "any", initial values other
// than the identity; fills folded into the reductions after them, and
// elementwise ops run in a reduction's epilogue (in place, from two
// outputs, after a block reduction, whose threads load 4 floats at a time).

// RUN: effopt-opt %s --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.cpu
// RUN: effopt-opt %s --eff-gpu-form-kernels=row-groups=false --eff-gpu-emulate-launches --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.gpu
// RUN: diff %t.cpu %t.gpu
// Blocks and threads in descending order: the same values (no race the
// ascending order hides).
// RUN: effopt-opt %s --eff-gpu-form-kernels=row-groups=false --eff-gpu-emulate-launches=descending=true --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.desc
// RUN: diff %t.cpu %t.desc
// RUN: FileCheck %s < %t.gpu
// With row groups (the default): the reductions of x's rows run as one
// kernel, and so do those of w's; the same values.
// RUN: effopt-opt %s --eff-gpu-form-kernels --eff-gpu-emulate-launches --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.rows
// RUN: diff %t.cpu %t.rows
// The strategy of every reduction of the step.
// RUN: effopt-opt %s --eff-gpu-form-kernels="remarks=true row-groups=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// REMARK: warp reduction: one warp per output element, 8 per block; starts from the fill of output 0{{$}}
// REMARK: warp reduction: one warp per output element, 8 per block; starts from the fills of outputs 0, 1, 2{{$}}
// REMARK: warp reduction: one warp per output element, 8 per block; starts from the fills of outputs 0, 1{{$}}
// REMARK: warp reduction: one warp per output element, 6 per block; starts from the fill of output 0{{$}}
// REMARK: warp reduction: one warp per output element, 8 per block{{$}}
// REMARK: warp reduction: one warp per output element, 8 per block; starts from the fill of output 0{{$}}
// REMARK: warp reduction: one warp per output element, 8 per block; starts from the fill of output 0; the elementwise op after it runs in its epilogue
// REMARK: warp reduction: one warp per output element, 8 per block; starts from the fill of output 0; the elementwise op after it runs in its epilogue
// REMARK: warp reduction: one warp per output element, 8 per block; starts from the fill of output 0; the elementwise op after it runs in its epilogue
// REMARK: warp reduction: one warp per output element, 8 per block; starts from the fills of outputs 0, 1; the elementwise op after it runs in its epilogue
// REMARK: warp reduction: one warp per output element, 8 per block; starts from the fill of output 0{{$}}
// REMARK: block reduction: one block per output element; starts from the fill of output 0; the elementwise op after it runs in its epilogue

// Values computed with Python from the fill formulas: x[i][j] =
// ((7i + 13j) mod 17) - 8, w[i][j] = ((5i + 3j) mod 17) - 8.
// CHECK-LABEL: sum+3
// CHECK-NEXT: [7,  -7,  13,  -1,
// CHECK-LABEL: max(w)|7.5
// CHECK-NEXT: [7.5,  7.5,  8,  8,  7.5,  7.5,  8,  8,  7.5,  7.5,  8,  8,  7.5]
// CHECK-NEXT: [208,  147,  147,
// CHECK-LABEL: any(w > 6.5)
// CHECK-NEXT: [1,  0,  1,  1,  1,  0,  1,  1,  1,  0,  1,  1,  1]
// Row sums of x halved in place; sum(w^2) - sum(w)^2 per row of w; row
// sums of l (l[i][j] = ((i + 5j) mod 17) - 8, 5000 wide) doubled.
// CHECK-LABEL: epilogues
// CHECK-NEXT: [2,  -5,  5,  -2,
// CHECK-NEXT: [108,  66,  66,  108,
// CHECK-NEXT: [-22,  -18,  -14]
// CHECK-NEXT: [-8,  -2,  4,  -7,

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0)>
#v = affine_map<(d0) -> (d0)>

func.func @step(%x: memref<20x100xf32>, %w: memref<13x7xf32>,
                %q: memref<6x4x5xf32>, %xd: memref<?x100xf32>,
                %sum3: memref<20xf32>, %sum: memref<20xf32>,
                %max: memref<20xf32>, %min: memref<20xf32>,
                %wmax: memref<13xf32>, %wsq: memref<13xf32>,
                %qsum: memref<6xf32>, %dsum: memref<?xf32>,
                %isum: memref<20xi64>, %hsum: memref<13xbf16>,
                %hsumf: memref<13xf32>, %any: memref<13xi1>,
                %anyf: memref<13xf32>, %half: memref<20xf32>,
                %wsum2: memref<13xf32>, %wsq2: memref<13xf32>,
                %wvar: memref<13xf32>, %l: memref<3x5000xf32>,
                %lsum: memref<3xf32>, %ldouble: memref<3xf32>,
                %xh: memref<20x64xbf16>, %hrow: memref<20xf32>) attributes {eff.arena_arg = 0 : i64} {
  %three = arith.constant 3.0 : f32
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %pinf = arith.constant 0x7F800000 : f32
  %five = arith.constant 7.5 : f32
  %izero = arith.constant 0 : i64
  %hzero = arith.constant 0.0 : bf16
  %false = arith.constant false
  %seven = arith.constant 6.5 : f32
  // A sum folded into an initial value of 3.
  linalg.fill ins(%three : f32) outs(%sum3 : memref<20xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<20x100xf32>) outs(%sum3 : memref<20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  // Three outputs: sum, max, min of the same rows.
  linalg.fill ins(%zero : f32) outs(%sum : memref<20xf32>)
  linalg.fill ins(%ninf : f32) outs(%max : memref<20xf32>)
  linalg.fill ins(%pinf : f32) outs(%min : memref<20xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<20x100xf32>) outs(%sum, %max, %min : memref<20xf32>, memref<20xf32>, memref<20xf32>) {
  ^bb0(%in: f32, %s: f32, %m: f32, %n: f32):
    %s1 = arith.addf %in, %s : f32
    %m1 = arith.maximumf %m, %in : f32
    %n1 = arith.minimumf %in, %n : f32
    linalg.yield %s1, %m1, %n1 : f32, f32, f32
  }
  // Rows of 7: max (from an initial 7.5, above some rows' maxima) and a
  // sum of squares.
  linalg.fill ins(%five : f32) outs(%wmax : memref<13xf32>)
  linalg.fill ins(%zero : f32) outs(%wsq : memref<13xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%w : memref<13x7xf32>) outs(%wmax, %wsq : memref<13xf32>, memref<13xf32>) {
  ^bb0(%in: f32, %m: f32, %s: f32):
    %m1 = arith.maximumf %in, %m : f32
    %sq = arith.mulf %in, %in : f32
    %s1 = arith.addf %sq, %s : f32
    linalg.yield %m1, %s1 : f32, f32
  }
  // A 2-D reduction space per row.
  linalg.fill ins(%zero : f32) outs(%qsum : memref<6xf32>)
  linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%q : memref<6x4x5xf32>) outs(%qsum : memref<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  // A dynamic number of rows.
  linalg.fill ins(%zero : f32) outs(%dsum : memref<?xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%xd : memref<?x100xf32>) outs(%dsum : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %zero : f32
    %p = arith.mulf %in, %e : f32
    %r = arith.addf %p, %out : f32
    linalg.yield %r : f32
  }
  // An i64 sum (64-bit shuffles).
  linalg.fill ins(%izero : i64) outs(%isum : memref<20xi64>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<20x100xf32>) outs(%isum : memref<20xi64>) {
  ^bb0(%in: f32, %out: i64):
    %i = arith.fptosi %in : f32 to i64
    %r = arith.addi %out, %i : i64
    linalg.yield %r : i64
  }
  // A bf16 sum (16-bit values through 32-bit shuffles).
  linalg.fill ins(%hzero : bf16) outs(%hsum : memref<13xbf16>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%w : memref<13x7xf32>) outs(%hsum : memref<13xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %h = arith.truncf %in : f32 to bf16
    %r = arith.addf %h, %out : bf16
    linalg.yield %r : bf16
  }
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%hsum : memref<13xbf16>) outs(%hsumf : memref<13xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  }
  // Whether a row holds a value above 6.5 (an i1 "or").
  linalg.fill ins(%false : i1) outs(%any : memref<13xi1>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%w : memref<13x7xf32>) outs(%any : memref<13xi1>) {
  ^bb0(%in: f32, %out: i1):
    %big = arith.cmpf ogt, %in, %seven : f32
    %r = arith.ori %big, %out : i1
    linalg.yield %r : i1
  }
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%any : memref<13xi1>) outs(%anyf : memref<13xf32>) {
  ^bb0(%in: i1, %out: f32):
    %e = arith.uitofp %in : i1 to f32
    linalg.yield %e : f32
  }
  // Epilogues: halve the row sums in place.
  %halff = arith.constant 0.5 : f32
  %two = arith.constant 2.0 : f32
  linalg.fill ins(%zero : f32) outs(%half : memref<20xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<20x100xf32>) outs(%half : memref<20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%half : memref<20xf32>) outs(%half : memref<20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %h = arith.mulf %in, %halff : f32
    linalg.yield %h : f32
  }
  // sum(w^2) - sum(w)^2 from a two-output reduction.
  linalg.fill ins(%zero : f32) outs(%wsum2 : memref<13xf32>)
  linalg.fill ins(%zero : f32) outs(%wsq2 : memref<13xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%w : memref<13x7xf32>) outs(%wsum2, %wsq2 : memref<13xf32>, memref<13xf32>) {
  ^bb0(%in: f32, %s: f32, %t: f32):
    %s1 = arith.addf %in, %s : f32
    %sq = arith.mulf %in, %in : f32
    %t1 = arith.addf %sq, %t : f32
    linalg.yield %s1, %t1 : f32, f32
  }
  linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%wsum2, %wsq2 : memref<13xf32>, memref<13xf32>) outs(%wvar : memref<13xf32>) {
  ^bb0(%s: f32, %t: f32, %out: f32):
    %ss = arith.mulf %s, %s : f32
    %d = arith.subf %t, %ss : f32
    linalg.yield %d : f32
  }
  // bf16 rows of 64 (8 elements a vector load), summed in f32.
  %x64 = memref.subview %x[0, 0] [20, 64] [1, 1] : memref<20x100xf32> to memref<20x64xf32, strided<[100, 1]>>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x64 : memref<20x64xf32, strided<[100, 1]>>) outs(%xh : memref<20x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %h = arith.truncf %in : f32 to bf16
    linalg.yield %h : bf16
  }
  linalg.fill ins(%zero : f32) outs(%hrow : memref<20xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%xh : memref<20x64xbf16>) outs(%hrow : memref<20xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    %r = arith.addf %e, %out : f32
    linalg.yield %r : f32
  }
  // Rows of 5000 (a block reduction), doubled into another buffer.
  linalg.fill ins(%zero : f32) outs(%lsum : memref<3xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%l : memref<3x5000xf32>) outs(%lsum : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%lsum : memref<3xf32>) outs(%ldouble : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.mulf %in, %two : f32
    linalg.yield %d : f32
  }
  return
}

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefI64(memref<*xi64>) attributes {llvm.emit_c_interface}
func.func private @printString(!llvm.ptr)

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

func.func @print(%name: !llvm.ptr, %buf: memref<*xf32>) {
  func.call @printString(%name) : (!llvm.ptr) -> ()
  func.call @printMemrefF32(%buf) : (memref<*xf32>) -> ()
  return
}

llvm.mlir.global private constant @n_sum3("sum+3\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_wmax("max(w)|7.5, sum(w^2)\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_any("any(w > 6.5)\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_epi("epilogues\0A\00") {addr_space = 0 : i32}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c11 = arith.constant 11 : index
  %c13 = arith.constant 13 : index
  %c20 = arith.constant 20 : index
  %x = memref.alloc() : memref<20x100xf32>
  %w = memref.alloc() : memref<13x7xf32>
  %q = memref.alloc() : memref<6x20xf32>
  %xd = memref.alloc(%c20) : memref<?x100xf32>
  %xdd = memref.cast %xd : memref<?x100xf32> to memref<?x?xf32>
  func.call @fill2(%xdd, %c7, %c13) : (memref<?x?xf32>, index, index) -> ()
  memref.copy %xd, %x : memref<?x100xf32> to memref<20x100xf32>
  %wd = memref.cast %w : memref<13x7xf32> to memref<?x?xf32>
  func.call @fill2(%wd, %c5, %c3) : (memref<?x?xf32>, index, index) -> ()
  %qd = memref.cast %q : memref<6x20xf32> to memref<?x?xf32>
  func.call @fill2(%qd, %c11, %c1) : (memref<?x?xf32>, index, index) -> ()
  %q3 = memref.expand_shape %q [[0], [1, 2]] output_shape [6, 4, 5] : memref<6x20xf32> into memref<6x4x5xf32>
  %sum3 = memref.alloc() : memref<20xf32>
  %sum = memref.alloc() : memref<20xf32>
  %max = memref.alloc() : memref<20xf32>
  %min = memref.alloc() : memref<20xf32>
  %wmax = memref.alloc() : memref<13xf32>
  %wsq = memref.alloc() : memref<13xf32>
  %qsum = memref.alloc() : memref<6xf32>
  %dsum = memref.alloc(%c20) : memref<?xf32>
  %isum = memref.alloc() : memref<20xi64>
  %hsum = memref.alloc() : memref<13xbf16>
  %hsumf = memref.alloc() : memref<13xf32>
  %any = memref.alloc() : memref<13xi1>
  %anyf = memref.alloc() : memref<13xf32>
  %half = memref.alloc() : memref<20xf32>
  %wsum2 = memref.alloc() : memref<13xf32>
  %wsq2 = memref.alloc() : memref<13xf32>
  %wvar = memref.alloc() : memref<13xf32>
  %l = memref.alloc() : memref<3x5000xf32>
  %ld = memref.cast %l : memref<3x5000xf32> to memref<?x?xf32>
  func.call @fill2(%ld, %c1, %c5) : (memref<?x?xf32>, index, index) -> ()
  %lsum = memref.alloc() : memref<3xf32>
  %ldouble = memref.alloc() : memref<3xf32>
  %xh = memref.alloc() : memref<20x64xbf16>
  %hrow = memref.alloc() : memref<20xf32>
  func.call @step(%x, %w, %q3, %xd, %sum3, %sum, %max, %min, %wmax, %wsq, %qsum, %dsum, %isum, %hsum, %hsumf, %any, %anyf, %half, %wsum2, %wsq2, %wvar, %l, %lsum, %ldouble, %xh, %hrow)
    : (memref<20x100xf32>, memref<13x7xf32>, memref<6x4x5xf32>, memref<?x100xf32>, memref<20xf32>, memref<20xf32>, memref<20xf32>, memref<20xf32>, memref<13xf32>, memref<13xf32>, memref<6xf32>, memref<?xf32>, memref<20xi64>, memref<13xbf16>, memref<13xf32>, memref<13xi1>, memref<13xf32>, memref<20xf32>, memref<13xf32>, memref<13xf32>, memref<13xf32>, memref<3x5000xf32>, memref<3xf32>, memref<3xf32>, memref<20x64xbf16>, memref<20xf32>) -> ()
  %n_sum3 = llvm.mlir.addressof @n_sum3 : !llvm.ptr
  %u0 = memref.cast %sum3 : memref<20xf32> to memref<*xf32>
  func.call @print(%n_sum3, %u0) : (!llvm.ptr, memref<*xf32>) -> ()
  %u1 = memref.cast %sum : memref<20xf32> to memref<*xf32>
  func.call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %max : memref<20xf32> to memref<*xf32>
  func.call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %u3 = memref.cast %min : memref<20xf32> to memref<*xf32>
  func.call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %n_wmax = llvm.mlir.addressof @n_wmax : !llvm.ptr
  %u4 = memref.cast %wmax : memref<13xf32> to memref<*xf32>
  func.call @print(%n_wmax, %u4) : (!llvm.ptr, memref<*xf32>) -> ()
  %u5 = memref.cast %wsq : memref<13xf32> to memref<*xf32>
  func.call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  %u6 = memref.cast %qsum : memref<6xf32> to memref<*xf32>
  func.call @printMemrefF32(%u6) : (memref<*xf32>) -> ()
  %u7 = memref.cast %dsum : memref<?xf32> to memref<*xf32>
  func.call @printMemrefF32(%u7) : (memref<*xf32>) -> ()
  %u8 = memref.cast %isum : memref<20xi64> to memref<*xi64>
  func.call @printMemrefI64(%u8) : (memref<*xi64>) -> ()
  %u9 = memref.cast %hsumf : memref<13xf32> to memref<*xf32>
  func.call @printMemrefF32(%u9) : (memref<*xf32>) -> ()
  %n_any = llvm.mlir.addressof @n_any : !llvm.ptr
  %u10 = memref.cast %anyf : memref<13xf32> to memref<*xf32>
  func.call @print(%n_any, %u10) : (!llvm.ptr, memref<*xf32>) -> ()
  %n_epi = llvm.mlir.addressof @n_epi : !llvm.ptr
  %u11 = memref.cast %half : memref<20xf32> to memref<*xf32>
  func.call @print(%n_epi, %u11) : (!llvm.ptr, memref<*xf32>) -> ()
  %u12 = memref.cast %wvar : memref<13xf32> to memref<*xf32>
  func.call @printMemrefF32(%u12) : (memref<*xf32>) -> ()
  %u13 = memref.cast %ldouble : memref<3xf32> to memref<*xf32>
  func.call @printMemrefF32(%u13) : (memref<*xf32>) -> ()
  %u14 = memref.cast %hrow : memref<20xf32> to memref<*xf32>
  func.call @printMemrefF32(%u14) : (memref<*xf32>) -> ()
  return
}
