// Row groups run on a machine without a GPU: the step runs once lowered for
// the CPU as it is, once after eff-gpu-form-kernels with every launch
// emulated (the xor shuffles exchange values between the lanes of each warp
// as the hardware does); both print the same values. A layer norm forward
// (a residual add, the mean and variance reductions in place in an arena,
// the sum of squares and variance planned over the residual add's input as
// GPT-2's plan does (per-row values only the group reads: not stored, so
// no race with the add's reads of other rows), rsqrt, the normalisation
// written over the residual add's input) and a layer-norm-like backward (elementwise
// ops writing the arena, two row reductions, a column reduction between
// them that reads a member's output and runs after the group, an in-place
// update of an argument, then a bf16 write over memory the group read,
// which must stay out of it), on 4 x 5 rows of 64 (16 bytes at a time);
// and softmax-like rows of 100 over 20 rows (a partial last block). The
// data are multiples of 1/2 in [-1, 1], so every sum is exact in any
// order.

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

// The forward and backward share a row space and form one group (its
// sums start from folded fills; the copies of per-row sums join it); the
// column reduction (a thread reduction starting from its folded fill) runs
// after it, then the bf16 write; the softmax rows form the second group.
// REMARK: remark: row group: one warp per row of 64 elements (4 at a time), 8 per block, runs this op and the 14 after it (4 reductions); 4 fills folded in; 7 per-row values kept in registers only; 1 op between them runs after it
// REMARK: remark: reduction over outer dimensions: one thread per output element; starts from the fill of output 0
// REMARK: remark: row group: one warp per row of 100 elements (4 at a time), 8 per block, runs this op and the 2 after it (2 reductions); 2 fills folded in
// KERNELS-LABEL: func.func @step
// KERNELS:       gpu.launch
// KERNELS-NOT:   gpu.barrier
// KERNELS:       } {eff.kernel = "row-group"}
// KERNELS:       } {eff.kernel = "thread-reduction"}
// KERNELS:       } {eff.kernel = "elementwise"}
// KERNELS:       } {eff.kernel = "row-group"}
// KERNELS-NOT:   gpu.launch

// Values from numpy (h = x + r, its row sums and sums of squared
// deviations, the backward's row sums).
// CHECK-LABEL: row sums
// CHECK-NEXT: {{\[\[}}-0.5,   -0.5,   -0.5,   -0.5,   2],
// CHECK-LABEL: squared deviations
// CHECK-NEXT: {{\[\[}}64.7461,   64.7461,   64.7461,   64.7461,   60.9375],
// CHECK-LABEL: backward sums
// CHECK-NEXT: {{\[\[}}15.75,   -16.5,   -16.25,   16.5,   0.5],
// CHECK-LABEL: softmax-like rows

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#bc3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>

func.func @step(%arena: memref<65536xi8>, %x: memref<4x5x64xf32>,
                %gamma: memref<64xf32>, %beta: memref<64xf32>,
                %dy: memref<4x5x64xf32>, %dres: memref<4x5x64xf32>,
                %colsum: memref<64xf32>, %z: memref<20x100xf32>,
                %zout: memref<20x100xf32>, %rowsums: memref<4x5xf32>,
                %sqdev: memref<4x5xf32>, %bsums: memref<4x5xf32>,
                %zmax: memref<20xf32>, %zsum: memref<20xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %n = arith.constant 64.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %c8192 = arith.constant 8192 : index
  %c8448 = arith.constant 8448 : index
  %c8704 = arith.constant 8704 : index
  %c16384 = arith.constant 16384 : index
  %c24576 = arith.constant 24576 : index
  %c32768 = arith.constant 32768 : index
  %c33024 = arith.constant 33024 : index
  %c40960 = arith.constant 40960 : index
  // r in the arena; the normalised rows are written over it (the same
  // layout: the lane that read r's element writes y's).
  %r = memref.view %arena[%c40960][] : memref<65536xi8> to memref<4x5x64xf32>
  %y = memref.view %arena[%c40960][] : memref<65536xi8> to memref<4x5x64xf32>
  // Layer norm forward over h = x + r.
  %h = memref.view %arena[%c0][] : memref<65536xi8> to memref<4x5x64xf32>
  linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %r : memref<4x5x64xf32>, memref<4x5x64xf32>) outs(%h : memref<4x5x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  %s = memref.view %arena[%c8192][] : memref<65536xi8> to memref<4x5xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<4x5xf32>)
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h : memref<4x5x64xf32>) outs(%s : memref<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  }
  linalg.copy ins(%s : memref<4x5xf32>) outs(%rowsums : memref<4x5xf32>)
  %mean = memref.view %arena[%c8192][] : memref<65536xi8> to memref<4x5xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<4x5xf32>) outs(%mean : memref<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.divf %a, %n : f32
    linalg.yield %t : f32
  }
  %mean3 = memref.expand_shape %mean [[0], [1, 2]] output_shape [4, 5, 1] : memref<4x5xf32> into memref<4x5x1xf32>
  %q = memref.view %arena[%c40960][] : memref<65536xi8> to memref<4x5xf32>
  linalg.fill ins(%zero : f32) outs(%q : memref<4x5xf32>)
  linalg.generic {indexing_maps = [#id3, #bc3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h, %mean3 : memref<4x5x64xf32>, memref<4x5x1xf32>) outs(%q : memref<4x5xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %t = arith.addf %d2, %o : f32
    linalg.yield %t : f32
  }
  linalg.copy ins(%q : memref<4x5xf32>) outs(%sqdev : memref<4x5xf32>)
  %var = memref.view %arena[%c40960][] : memref<65536xi8> to memref<4x5xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%q : memref<4x5xf32>) outs(%var : memref<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.divf %a, %n : f32
    linalg.yield %t : f32
  }
  %var3 = memref.expand_shape %var [[0], [1, 2]] output_shape [4, 5, 1] : memref<4x5xf32> into memref<4x5x1xf32>
  %rstd = memref.view %arena[%c8704][] : memref<65536xi8> to memref<4x5x1xf32>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%var3 : memref<4x5x1xf32>) outs(%rstd : memref<4x5x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = arith.addf %a, %one : f32
    %t = math.rsqrt %e : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [#id3, #bc3, #bc3, #col3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%h, %mean3, %rstd, %gamma, %beta : memref<4x5x64xf32>, memref<4x5x1xf32>, memref<4x5x1xf32>, memref<64xf32>, memref<64xf32>) outs(%y : memref<4x5x64xf32>) {
  ^bb0(%a: f32, %m: f32, %rs: f32, %g: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %t = arith.mulf %d, %rs : f32
    %u = arith.mulf %t, %g : f32
    %w = arith.addf %u, %b : f32
    linalg.yield %w : f32
  }
  // A backward: xh = 2 (h - mean), g = dy * gamma into the arena; row sums
  // of g and g * xh; the column sum of dy * xh (a thread reduction, which
  // runs after the group); dres += 64 g - sa - xh sb in place; then a bf16
  // copy of dres over g's memory (read by the group: it stays out).
  %xh = memref.view %arena[%c16384][] : memref<65536xi8> to memref<4x5x64xf32>
  linalg.generic {indexing_maps = [#id3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%h, %mean3 : memref<4x5x64xf32>, memref<4x5x1xf32>) outs(%xh : memref<4x5x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %t = arith.addf %d, %d : f32
    linalg.yield %t : f32
  }
  %g = memref.view %arena[%c24576][] : memref<65536xi8> to memref<4x5x64xf32>
  linalg.generic {indexing_maps = [#id3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dy, %gamma : memref<4x5x64xf32>, memref<64xf32>) outs(%g : memref<4x5x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.mulf %a, %b : f32
    linalg.yield %t : f32
  }
  %sa = memref.view %arena[%c32768][] : memref<65536xi8> to memref<4x5xf32>
  linalg.fill ins(%zero : f32) outs(%sa : memref<4x5xf32>)
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g : memref<4x5x64xf32>) outs(%sa : memref<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  }
  %sb = memref.view %arena[%c33024][] : memref<65536xi8> to memref<4x5xf32>
  linalg.fill ins(%zero : f32) outs(%sb : memref<4x5xf32>)
  linalg.generic {indexing_maps = [#id3, #id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g, %xh : memref<4x5x64xf32>, memref<4x5x64xf32>) outs(%sb : memref<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %p, %o : f32
    linalg.yield %t : f32
  }
  linalg.fill ins(%zero : f32) outs(%colsum : memref<64xf32>)
  linalg.generic {indexing_maps = [#id3, #id3, #col3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy, %xh : memref<4x5x64xf32>, memref<4x5x64xf32>) outs(%colsum : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %p, %o : f32
    linalg.yield %t : f32
  }
  %sa3 = memref.expand_shape %sa [[0], [1, 2]] output_shape [4, 5, 1] : memref<4x5xf32> into memref<4x5x1xf32>
  %sb3 = memref.expand_shape %sb [[0], [1, 2]] output_shape [4, 5, 1] : memref<4x5xf32> into memref<4x5x1xf32>
  linalg.generic {indexing_maps = [#id3, #id3, #id3, #bc3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dres, %g, %xh, %sa3, %sb3 : memref<4x5x64xf32>, memref<4x5x64xf32>, memref<4x5x64xf32>, memref<4x5x1xf32>, memref<4x5x1xf32>) outs(%dres : memref<4x5x64xf32>) {
  ^bb0(%d: f32, %gg: f32, %xx: f32, %a: f32, %b: f32, %o: f32):
    %g64 = arith.mulf %gg, %n : f32
    %t0 = arith.addf %d, %g64 : f32
    %t1 = arith.subf %t0, %a : f32
    %xb = arith.mulf %xx, %b : f32
    %t2 = arith.subf %t1, %xb : f32
    linalg.yield %t2 : f32
  }
  linalg.copy ins(%sa : memref<4x5xf32>) outs(%bsums : memref<4x5xf32>)
  %d16 = memref.view %arena[%c24576][] : memref<65536xi8> to memref<4x5x64xbf16>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dres : memref<4x5x64xf32>) outs(%d16 : memref<4x5x64xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  }
  // Softmax-like rows of 100: the max, the sum of (z - max), and
  // (z - max) * sum.
  linalg.fill ins(%ninf : f32) outs(%zmax : memref<20xf32>)
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%z : memref<20x100xf32>) outs(%zmax : memref<20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.maximumf %a, %o : f32
    linalg.yield %t : f32
  }
  linalg.fill ins(%zero : f32) outs(%zsum : memref<20xf32>)
  linalg.generic {indexing_maps = [#id2, #rows, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%z, %zmax : memref<20x100xf32>, memref<20xf32>) outs(%zsum : memref<20xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %t = arith.addf %d, %o : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows, #rows, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%z, %zmax, %zsum : memref<20x100xf32>, memref<20xf32>, memref<20xf32>) outs(%zout : memref<20x100xf32>) {
  ^bb0(%a: f32, %m: f32, %sm: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %t = arith.mulf %d, %sm : f32
    linalg.yield %t : f32
  }
  return
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printString(!llvm.ptr)

// buf[i] = (((a * i) mod 5) - 2) / 2 over the flattened buffer.
func.func @fill(%buf: memref<?xf32>, %a: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c2 = arith.constant 2 : index
  %half = arith.constant 0.5 : f32
  %n = memref.dim %buf, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %ai = arith.muli %a, %i : index
    %r = arith.remui %ai, %c5 : index
    %v = arith.subi %r, %c2 : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    %h = arith.mulf %vf, %half : f32
    memref.store %h, %buf[%i] : memref<?xf32>
  }
  return
}

func.func @print(%name: !llvm.ptr, %buf: memref<*xf32>) {
  func.call @printString(%name) : (!llvm.ptr) -> ()
  func.call @printMemrefF32(%buf) : (memref<*xf32>) -> ()
  return
}

llvm.mlir.global private constant @n_sums("row sums\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_sq("squared deviations\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_y("normalised\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_b("backward sums\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_z("softmax-like rows\0A\00") {addr_space = 0 : i32}

func.func @main() {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c11 = arith.constant 11 : index
  %c13 = arith.constant 13 : index
  %arena = memref.alloc() : memref<65536xi8>
  %x = memref.alloc() : memref<1280xf32>
  %dy = memref.alloc() : memref<1280xf32>
  %dres = memref.alloc() : memref<1280xf32>
  %gamma = memref.alloc() : memref<64xf32>
  %beta = memref.alloc() : memref<64xf32>
  %z = memref.alloc() : memref<2000xf32>
  %xd = memref.cast %x : memref<1280xf32> to memref<?xf32>
  func.call @fill(%xd, %c7) : (memref<?xf32>, index) -> ()
  %c40960 = arith.constant 40960 : index
  %r = memref.view %arena[%c40960][] : memref<65536xi8> to memref<1280xf32>
  %rd = memref.cast %r : memref<1280xf32> to memref<?xf32>
  func.call @fill(%rd, %c3) : (memref<?xf32>, index) -> ()
  %dyd = memref.cast %dy : memref<1280xf32> to memref<?xf32>
  func.call @fill(%dyd, %c11) : (memref<?xf32>, index) -> ()
  %dresd = memref.cast %dres : memref<1280xf32> to memref<?xf32>
  func.call @fill(%dresd, %c13) : (memref<?xf32>, index) -> ()
  %gd = memref.cast %gamma : memref<64xf32> to memref<?xf32>
  func.call @fill(%gd, %c2) : (memref<?xf32>, index) -> ()
  %bd = memref.cast %beta : memref<64xf32> to memref<?xf32>
  func.call @fill(%bd, %c3) : (memref<?xf32>, index) -> ()
  %zd = memref.cast %z : memref<2000xf32> to memref<?xf32>
  func.call @fill(%zd, %c7) : (memref<?xf32>, index) -> ()
  %x3 = memref.expand_shape %x [[0, 1, 2]] output_shape [4, 5, 64] : memref<1280xf32> into memref<4x5x64xf32>
  %dy3 = memref.expand_shape %dy [[0, 1, 2]] output_shape [4, 5, 64] : memref<1280xf32> into memref<4x5x64xf32>
  %dres3 = memref.expand_shape %dres [[0, 1, 2]] output_shape [4, 5, 64] : memref<1280xf32> into memref<4x5x64xf32>
  %z2 = memref.expand_shape %z [[0, 1]] output_shape [20, 100] : memref<2000xf32> into memref<20x100xf32>
  %y = memref.view %arena[%c40960][] : memref<65536xi8> to memref<4x5x64xf32>
  %colsum = memref.alloc() : memref<64xf32>
  %zout = memref.alloc() : memref<20x100xf32>
  %rowsums = memref.alloc() : memref<4x5xf32>
  %sqdev = memref.alloc() : memref<4x5xf32>
  %bsums = memref.alloc() : memref<4x5xf32>
  %zmax = memref.alloc() : memref<20xf32>
  %zsum = memref.alloc() : memref<20xf32>
  func.call @step(%arena, %x3, %gamma, %beta, %dy3, %dres3, %colsum, %z2, %zout, %rowsums, %sqdev, %bsums, %zmax, %zsum)
    : (memref<65536xi8>, memref<4x5x64xf32>, memref<64xf32>, memref<64xf32>, memref<4x5x64xf32>, memref<4x5x64xf32>, memref<64xf32>, memref<20x100xf32>, memref<20x100xf32>, memref<4x5xf32>, memref<4x5xf32>, memref<4x5xf32>, memref<20xf32>, memref<20xf32>) -> ()
  %n_sums = llvm.mlir.addressof @n_sums : !llvm.ptr
  %u0 = memref.cast %rowsums : memref<4x5xf32> to memref<*xf32>
  func.call @print(%n_sums, %u0) : (!llvm.ptr, memref<*xf32>) -> ()
  %n_sq = llvm.mlir.addressof @n_sq : !llvm.ptr
  %u1 = memref.cast %sqdev : memref<4x5xf32> to memref<*xf32>
  func.call @print(%n_sq, %u1) : (!llvm.ptr, memref<*xf32>) -> ()
  %n_y = llvm.mlir.addressof @n_y : !llvm.ptr
  %u2 = memref.cast %y : memref<4x5x64xf32> to memref<*xf32>
  func.call @print(%n_y, %u2) : (!llvm.ptr, memref<*xf32>) -> ()
  %n_b = llvm.mlir.addressof @n_b : !llvm.ptr
  %u3 = memref.cast %bsums : memref<4x5xf32> to memref<*xf32>
  func.call @print(%n_b, %u3) : (!llvm.ptr, memref<*xf32>) -> ()
  %u4 = memref.cast %colsum : memref<64xf32> to memref<*xf32>
  func.call @printMemrefF32(%u4) : (memref<*xf32>) -> ()
  %u5 = memref.cast %dres3 : memref<4x5x64xf32> to memref<*xf32>
  func.call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  %n_z = llvm.mlir.addressof @n_z : !llvm.ptr
  %u6 = memref.cast %zout : memref<20x100xf32> to memref<*xf32>
  func.call @print(%n_z, %u6) : (!llvm.ptr, memref<*xf32>) -> ()
  return
}
