// A layer-norm-backward-like row group as GPT-2's plan lays it out, run on
// a machine without a GPU (the step lowered for the CPU as it is, and
// after eff-gpu-form-kernels with every launch emulated; both print the
// same values): the row sums of dy * gamma and of dy * gamma * xh (per-row
// values only the group reads: not stored); between them the weight
// gradient's column sum of dy * xh, which reads dy (it runs before the
// kernel); dx = dres + 64 g - sa - xh sb in f32; then dx's bf16 copy
// written over dy, which both reductions read (the same lane reads each
// element before it writes it, and no reduction follows). 6 x 7 rows of
// 64, six blocks of 8 warps (a partial last block); data are multiples of
// 1/2 in [-1, 1], so every sum is exact in any order.

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

// REMARK: remark: row group: one warp per row of 64 elements (4 at a time), 8 per block, runs this op and the 3 after it (2 reductions); 2 fills folded in; 2 per-row values kept in registers only; 1 op between them runs before it{{$}}
// REMARK: remark: reduction over outer dimensions: one thread per output element; starts from the fill of output 0
// KERNELS-LABEL: func.func @step
// KERNELS:       } {eff.kernel = "thread-reduction"}
// KERNELS:       } {eff.kernel = "row-group"}
// KERNELS-NOT:   gpu.launch

// Values from numpy (the column sums of dy * xh; dx's first row; the bf16
// copy's first row).
// CHECK-LABEL: column sums
// CHECK-NEXT: [11,  10.75,  9.75,  10.5,  10.5,  11,
// CHECK-LABEL: dx
// CHECK-NEXT: {{\[\[\[}}31,    -7.125,    -24.375,    -14.5,    16.25,
// CHECK-LABEL: dx in bf16
// CHECK-NEXT: [31,  -7.125,  -24.375,  -14.5,  16.25,

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#bc3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#v = affine_map<(d0) -> (d0)>

func.func @step(%arena: memref<65536xi8>, %xh: memref<6x7x64xf32>,
                %gamma: memref<64xf32>, %dres: memref<6x7x64xf32>,
                %colsum: memref<64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 64.0 : f32
  %c0 = arith.constant 0 : index
  %c8192 = arith.constant 8192 : index
  %c8448 = arith.constant 8448 : index
  %c16384 = arith.constant 16384 : index
  // dy (bf16) in the arena; dx's bf16 copy goes over it.
  %dy = memref.view %arena[%c0][] : memref<65536xi8> to memref<6x7x64xbf16>
  %sa = memref.view %arena[%c8192][] : memref<65536xi8> to memref<6x7xf32>
  linalg.fill ins(%zero : f32) outs(%sa : memref<6x7xf32>)
  linalg.generic {indexing_maps = [#id3, #col3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %gamma : memref<6x7x64xbf16>, memref<64xf32>) outs(%sa : memref<6x7xf32>) {
  ^bb0(%a: bf16, %g: f32, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %p = arith.mulf %e, %g : f32
    %t = arith.addf %p, %o : f32
    linalg.yield %t : f32
  }
  %sb = memref.view %arena[%c8448][] : memref<65536xi8> to memref<6x7xf32>
  linalg.fill ins(%zero : f32) outs(%sb : memref<6x7xf32>)
  linalg.generic {indexing_maps = [#id3, #col3, #id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %gamma, %xh : memref<6x7x64xbf16>, memref<64xf32>, memref<6x7x64xf32>) outs(%sb : memref<6x7xf32>) {
  ^bb0(%a: bf16, %g: f32, %x: f32, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %p = arith.mulf %e, %g : f32
    %q = arith.mulf %p, %x : f32
    %t = arith.addf %q, %o : f32
    linalg.yield %t : f32
  }
  linalg.fill ins(%zero : f32) outs(%colsum : memref<64xf32>)
  linalg.generic {indexing_maps = [#id3, #id3, #col3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy, %xh : memref<6x7x64xbf16>, memref<6x7x64xf32>) outs(%colsum : memref<64xf32>) {
  ^bb0(%a: bf16, %x: f32, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %p = arith.mulf %e, %x : f32
    %t = arith.addf %p, %o : f32
    linalg.yield %t : f32
  }
  %sa3 = memref.expand_shape %sa [[0], [1, 2]] output_shape [6, 7, 1] : memref<6x7xf32> into memref<6x7x1xf32>
  %sb3 = memref.expand_shape %sb [[0], [1, 2]] output_shape [6, 7, 1] : memref<6x7xf32> into memref<6x7x1xf32>
  %dx = memref.view %arena[%c16384][] : memref<65536xi8> to memref<6x7x64xf32>
  linalg.generic {indexing_maps = [#id3, #id3, #col3, #id3, #bc3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dres, %dy, %gamma, %xh, %sa3, %sb3 : memref<6x7x64xf32>, memref<6x7x64xbf16>, memref<64xf32>, memref<6x7x64xf32>, memref<6x7x1xf32>, memref<6x7x1xf32>) outs(%dx : memref<6x7x64xf32>) {
  ^bb0(%d: f32, %a: bf16, %g: f32, %x: f32, %s1: f32, %s2: f32, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %gg = arith.mulf %e, %g : f32
    %g64 = arith.mulf %gg, %n : f32
    %t0 = arith.addf %d, %g64 : f32
    %t1 = arith.subf %t0, %s1 : f32
    %xb = arith.mulf %x, %s2 : f32
    %t2 = arith.subf %t1, %xb : f32
    linalg.yield %t2 : f32
  }
  %d16 = memref.view %arena[%c0][] : memref<65536xi8> to memref<6x7x64xbf16>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dx : memref<6x7x64xf32>) outs(%d16 : memref<6x7x64xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
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

llvm.mlir.global private constant @n_col("column sums\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_dx("dx\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_d16("dx in bf16\0A\00") {addr_space = 0 : i32}

func.func @main() {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c11 = arith.constant 11 : index
  %c13 = arith.constant 13 : index
  %c0 = arith.constant 0 : index
  %c16384 = arith.constant 16384 : index
  %arena = memref.alloc() : memref<65536xi8>
  %dyf = memref.alloc() : memref<2688xf32>
  %xh = memref.alloc() : memref<2688xf32>
  %dres = memref.alloc() : memref<2688xf32>
  %gamma = memref.alloc() : memref<64xf32>
  %dyd = memref.cast %dyf : memref<2688xf32> to memref<?xf32>
  func.call @fill(%dyd, %c11) : (memref<?xf32>, index) -> ()
  %xhd = memref.cast %xh : memref<2688xf32> to memref<?xf32>
  func.call @fill(%xhd, %c3) : (memref<?xf32>, index) -> ()
  %dresd = memref.cast %dres : memref<2688xf32> to memref<?xf32>
  func.call @fill(%dresd, %c13) : (memref<?xf32>, index) -> ()
  %gd = memref.cast %gamma : memref<64xf32> to memref<?xf32>
  func.call @fill(%gd, %c2) : (memref<?xf32>, index) -> ()
  // dy into the arena as bf16 (exact: multiples of 1/2).
  %dy16 = memref.view %arena[%c0][] : memref<65536xi8> to memref<2688xbf16>
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%dyf : memref<2688xf32>) outs(%dy16 : memref<2688xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  }
  %xh3 = memref.expand_shape %xh [[0, 1, 2]] output_shape [6, 7, 64] : memref<2688xf32> into memref<6x7x64xf32>
  %dres3 = memref.expand_shape %dres [[0, 1, 2]] output_shape [6, 7, 64] : memref<2688xf32> into memref<6x7x64xf32>
  %colsum = memref.alloc() : memref<64xf32>
  func.call @step(%arena, %xh3, %gamma, %dres3, %colsum)
    : (memref<65536xi8>, memref<6x7x64xf32>, memref<64xf32>, memref<6x7x64xf32>, memref<64xf32>) -> ()
  %n_col = llvm.mlir.addressof @n_col : !llvm.ptr
  %u0 = memref.cast %colsum : memref<64xf32> to memref<*xf32>
  func.call @print(%n_col, %u0) : (!llvm.ptr, memref<*xf32>) -> ()
  %n_dx = llvm.mlir.addressof @n_dx : !llvm.ptr
  %dx = memref.view %arena[%c16384][] : memref<65536xi8> to memref<6x7x64xf32>
  %u1 = memref.cast %dx : memref<6x7x64xf32> to memref<*xf32>
  func.call @print(%n_dx, %u1) : (!llvm.ptr, memref<*xf32>) -> ()
  // The bf16 copy, widened to print it.
  %d16 = memref.view %arena[%c0][] : memref<65536xi8> to memref<2688xbf16>
  %wide = memref.alloc() : memref<2688xf32>
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%d16 : memref<2688xbf16>) outs(%wide : memref<2688xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %t = arith.extf %a : bf16 to f32
    linalg.yield %t : f32
  }
  %n_d16 = llvm.mlir.addressof @n_d16 : !llvm.ptr
  %u2 = memref.cast %wide : memref<2688xf32> to memref<*xf32>
  func.call @print(%n_d16, %u2) : (!llvm.ptr, memref<*xf32>) -> ()
  return
}
