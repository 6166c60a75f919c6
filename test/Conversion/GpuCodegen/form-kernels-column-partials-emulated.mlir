// Column partial sums inside a row group, on a machine without a GPU: a
// layer-norm-like backward over 4 x 16 rows of 64 (g = dy * gamma, its row
// sums and those of g * x, dres updated in place) and the weight and bias
// gradients' partial sums over chunks of 8 rows (two outputs, as
// eff-gpu-split-reductions and eff-merge-sibling-reductions leave them),
// which join the group: each lane computes what its elements add, the
// block's threads combine the 8 warps' values after a barrier. A partial
// sum over chunks of 16 rows (not one block's) stays out. The step runs
// once lowered for the CPU as it is, once after eff-gpu-form-kernels with
// every launch emulated (shuffles, then the barrier and workgroup memory);
// both print the same values. The data are multiples of 1/2 in [-1, 1],
// so every sum is exact in any order.

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

// REMARK: remark: row group: one warp per row of 64 elements (4 at a time), 8 per block, runs this op and the 4 after it (2 reductions); 1 column partial sum over each block's rows, combined through workgroup memory; 4 fills folded in
// KERNELS-LABEL: func.func @step
// KERNELS:       gpu.launch {{.*}} workgroup(%[[W0:.*]] : memref<512xf32, #gpu.address_space<workgroup>>, %[[W1:.*]] : memref<512xf32, #gpu.address_space<workgroup>>)
// KERNELS-COUNT-4: memref.store {{.*}}, %[[W0]]
// KERNELS-COUNT-4: memref.store {{.*}}, %[[W1]]
// KERNELS:       gpu.barrier
// KERNELS-COUNT-8: memref.load %[[W0]]
// KERNELS-COUNT-8: memref.load %[[W1]]
// KERNELS:       } {eff.kernel = "row-group"}
// KERNELS:       } {eff.kernel = "thread-reduction"}
// KERNELS:       } {eff.kernel = "thread-reduction"}
// KERNELS:       } {eff.kernel = "thread-reduction"}
// KERNELS-NOT:   gpu.launch

// Values from numpy (the column sums of dy * x and dy, of dres after the
// update).
// CHECK-LABEL: weight gradient
// CHECK-NEXT: [16.25, 16.25, 16.5, 15.75, 15.25, 16.25,
// CHECK-LABEL: bias gradient
// CHECK-NEXT: [0.5, 0, -0.5, -1, 1, 0.5,
// CHECK-LABEL: chunks of 16
// CHECK-NEXT: [16.75, -202.625, 284.625, 85.0625, -181.312, 16.75,
// CHECK-LABEL: dres
// CHECK-NEXT: {{\[\[\[}}38.875, -15.25, -7.875, -34.9375, 20.4375, 38.875,

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#bc3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#part4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#comb3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out3 = affine_map<(d0, d1, d2) -> (d2)>

func.func @step(%arena: memref<65536xi8>, %x: memref<4x16x64xf32>,
                %dy: memref<4x16x64xbf16>, %gamma: memref<64xf32>,
                %dres: memref<4x16x64xf32>, %wgrad: memref<64xf32>,
                %bgrad: memref<64xf32>, %other: memref<64xf32>) attributes {eff.arena_arg = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 64.0 : f32
  %c0 = arith.constant 0 : index
  %c16384 = arith.constant 16384 : index
  %c16640 = arith.constant 16640 : index
  %c32768 = arith.constant 32768 : index
  %c34816 = arith.constant 34816 : index
  %c36864 = arith.constant 36864 : index
  %g = memref.view %arena[%c0][] : memref<65536xi8> to memref<4x16x64xf32>
  linalg.generic {indexing_maps = [#id3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dy, %gamma : memref<4x16x64xbf16>, memref<64xf32>) outs(%g : memref<4x16x64xf32>) {
  ^bb0(%a: bf16, %b: f32, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %t = arith.mulf %e, %b : f32
    linalg.yield %t : f32
  }
  %sa = memref.view %arena[%c16384][] : memref<65536xi8> to memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%sa : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g : memref<4x16x64xf32>) outs(%sa : memref<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  }
  %sb = memref.view %arena[%c16640][] : memref<65536xi8> to memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%sb : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#id3, #id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g, %x : memref<4x16x64xf32>, memref<4x16x64xf32>) outs(%sb : memref<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %p, %o : f32
    linalg.yield %t : f32
  }
  %sa3 = memref.expand_shape %sa [[0], [1, 2]] output_shape [4, 16, 1] : memref<4x16xf32> into memref<4x16x1xf32>
  %sb3 = memref.expand_shape %sb [[0], [1, 2]] output_shape [4, 16, 1] : memref<4x16xf32> into memref<4x16x1xf32>
  linalg.generic {indexing_maps = [#id3, #id3, #id3, #bc3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dres, %g, %x, %sa3, %sb3 : memref<4x16x64xf32>, memref<4x16x64xf32>, memref<4x16x64xf32>, memref<4x16x1xf32>, memref<4x16x1xf32>) outs(%dres : memref<4x16x64xf32>) {
  ^bb0(%d: f32, %gg: f32, %xx: f32, %a: f32, %b: f32, %o: f32):
    %g64 = arith.mulf %gg, %n : f32
    %t0 = arith.addf %d, %g64 : f32
    %t1 = arith.subf %t0, %a : f32
    %xb = arith.mulf %xx, %b : f32
    %t2 = arith.subf %t1, %xb : f32
    linalg.yield %t2 : f32
  }
  // The weight and bias gradients' partial sums over chunks of 8 rows (as
  // eff-gpu-split-reductions writes them), then their combine.
  %p0 = memref.view %arena[%c32768][] : memref<65536xi8> to memref<4x2x64xf32>
  %p1 = memref.view %arena[%c34816][] : memref<65536xi8> to memref<4x2x64xf32>
  linalg.fill ins(%zero : f32) outs(%p0 : memref<4x2x64xf32>)
  linalg.fill ins(%zero : f32) outs(%p1 : memref<4x2x64xf32>)
  %x4 = memref.expand_shape %x [[0], [1, 2], [3]] output_shape [4, 2, 8, 64] : memref<4x16x64xf32> into memref<4x2x8x64xf32>
  %dy4 = memref.expand_shape %dy [[0], [1, 2], [3]] output_shape [4, 2, 8, 64] : memref<4x16x64xbf16> into memref<4x2x8x64xbf16>
  linalg.generic {indexing_maps = [#id4, #id4, #part4, #part4], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x4, %dy4 : memref<4x2x8x64xf32>, memref<4x2x8x64xbf16>) outs(%p0, %p1 : memref<4x2x64xf32>, memref<4x2x64xf32>) {
  ^bb0(%a: f32, %b: bf16, %o0: f32, %o1: f32):
    %e = arith.extf %b : bf16 to f32
    %p = arith.mulf %e, %a : f32
    %t0 = arith.addf %p, %o0 : f32
    %t1 = arith.addf %e, %o1 : f32
    linalg.yield %t0, %t1 : f32, f32
  }
  linalg.fill ins(%zero : f32) outs(%wgrad : memref<64xf32>)
  linalg.fill ins(%zero : f32) outs(%bgrad : memref<64xf32>)
  linalg.generic {indexing_maps = [#comb3, #comb3, #out3, #out3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%p0, %p1 : memref<4x2x64xf32>, memref<4x2x64xf32>) outs(%wgrad, %bgrad : memref<64xf32>, memref<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o0: f32, %o1: f32):
    %t0 = arith.addf %a, %o0 : f32
    %t1 = arith.addf %b, %o1 : f32
    linalg.yield %t0, %t1 : f32, f32
  }
  // Chunks of 16 rows (two blocks' worth): not a block's partial sums, so it
  // stays out of the group (and reads dres, which the group writes: after).
  %q = memref.view %arena[%c36864][] : memref<65536xi8> to memref<4x1x64xf32>
  linalg.fill ins(%zero : f32) outs(%q : memref<4x1x64xf32>)
  %dres4 = memref.expand_shape %dres [[0], [1, 2], [3]] output_shape [4, 1, 16, 64] : memref<4x16x64xf32> into memref<4x1x16x64xf32>
  linalg.generic {indexing_maps = [#id4, #part4], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%dres4 : memref<4x1x16x64xf32>) outs(%q : memref<4x1x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  }
  linalg.fill ins(%zero : f32) outs(%other : memref<64xf32>)
  linalg.generic {indexing_maps = [#comb3, #out3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%q : memref<4x1x64xf32>) outs(%other : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
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

llvm.mlir.global private constant @n_w("weight gradient\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_b("bias gradient\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_o("chunks of 16\0A\00") {addr_space = 0 : i32}
llvm.mlir.global private constant @n_d("dres\0A\00") {addr_space = 0 : i32}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4096 = arith.constant 4096 : index
  %c7 = arith.constant 7 : index
  %c11 = arith.constant 11 : index
  %c13 = arith.constant 13 : index
  %arena = memref.alloc() : memref<65536xi8>
  %x = memref.alloc() : memref<4096xf32>
  %dyf = memref.alloc() : memref<4096xf32>
  %dy = memref.alloc() : memref<4096xbf16>
  %dres = memref.alloc() : memref<4096xf32>
  %gamma = memref.alloc() : memref<64xf32>
  %xd = memref.cast %x : memref<4096xf32> to memref<?xf32>
  func.call @fill(%xd, %c7) : (memref<?xf32>, index) -> ()
  %dyd = memref.cast %dyf : memref<4096xf32> to memref<?xf32>
  func.call @fill(%dyd, %c11) : (memref<?xf32>, index) -> ()
  scf.for %i = %c0 to %c4096 step %c1 {
    %v = memref.load %dyf[%i] : memref<4096xf32>
    %t = arith.truncf %v : f32 to bf16
    memref.store %t, %dy[%i] : memref<4096xbf16>
  }
  %dresd = memref.cast %dres : memref<4096xf32> to memref<?xf32>
  func.call @fill(%dresd, %c13) : (memref<?xf32>, index) -> ()
  %gd = memref.cast %gamma : memref<64xf32> to memref<?xf32>
  func.call @fill(%gd, %c2) : (memref<?xf32>, index) -> ()
  %x3 = memref.expand_shape %x [[0, 1, 2]] output_shape [4, 16, 64] : memref<4096xf32> into memref<4x16x64xf32>
  %dy3 = memref.expand_shape %dy [[0, 1, 2]] output_shape [4, 16, 64] : memref<4096xbf16> into memref<4x16x64xbf16>
  %dres3 = memref.expand_shape %dres [[0, 1, 2]] output_shape [4, 16, 64] : memref<4096xf32> into memref<4x16x64xf32>
  %wgrad = memref.alloc() : memref<64xf32>
  %bgrad = memref.alloc() : memref<64xf32>
  %other = memref.alloc() : memref<64xf32>
  func.call @step(%arena, %x3, %dy3, %gamma, %dres3, %wgrad, %bgrad, %other)
    : (memref<65536xi8>, memref<4x16x64xf32>, memref<4x16x64xbf16>, memref<64xf32>, memref<4x16x64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>) -> ()
  %n_w = llvm.mlir.addressof @n_w : !llvm.ptr
  %u0 = memref.cast %wgrad : memref<64xf32> to memref<*xf32>
  func.call @print(%n_w, %u0) : (!llvm.ptr, memref<*xf32>) -> ()
  %n_b = llvm.mlir.addressof @n_b : !llvm.ptr
  %u1 = memref.cast %bgrad : memref<64xf32> to memref<*xf32>
  func.call @print(%n_b, %u1) : (!llvm.ptr, memref<*xf32>) -> ()
  %n_o = llvm.mlir.addressof @n_o : !llvm.ptr
  %u2 = memref.cast %other : memref<64xf32> to memref<*xf32>
  func.call @print(%n_o, %u2) : (!llvm.ptr, memref<*xf32>) -> ()
  %n_d = llvm.mlir.addressof @n_d : !llvm.ptr
  %u3 = memref.cast %dres3 : memref<4x16x64xf32> to memref<*xf32>
  func.call @print(%n_d, %u3) : (!llvm.ptr, memref<*xf32>) -> ()
  return
}
