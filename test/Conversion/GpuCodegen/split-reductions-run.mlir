// Semantics of eff-gpu-split-reductions on a machine without a GPU: the
// same reductions run on the CPU once as written and once split (small
// targets, so these small shapes split, some twice), and print the same
// values. The data are small integers, so sums are exact in any order;
// the expected values were computed with numpy:
//   x[i,j,k] = (7i + 3j + k) % 11 over 32x64x8:  x.sum((0,1)) and
//   (x * ((64i + j) % 7)).sum((0,1)) and x.max((0,1)) after a -1 start;
//   v[n] = (5n) % 13 over 65536: v.sum().

// RUN: effopt-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.plain
// RUN: effopt-opt %s --eff-gpu-split-reductions="target-threads=64 target-blocks=16" -o %t.split.mlir
// RUN: FileCheck %s --check-prefix=SPLIT < %t.split.mlir
// RUN: effopt-opt %t.split.mlir --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.split
// RUN: diff %t.plain %t.split
// RUN: FileCheck %s < %t.split

// Every reduction was split (a partial and at least one combine each).
// SPLIT-COUNT-3: tensor.expand_shape %{{.*}} output_shape

// CHECK: [10240,  10242,  10233,  10235,  10237,  10239,  10241,  10243]
// CHECK: [30710,  30743,  30611,  30589,  30732,  30765,  30677,  30699]
// CHECK: [10,  10,  10,  10,  10,  10,  10,  10]
// CHECK: [393213]

#x3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#k3 = affine_map<(d0, d1, d2) -> (d2)>
#v1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @print(%t: tensor<?xf32>) {
  %m = bufferization.to_buffer %t : tensor<?xf32> to memref<?xf32>
  %u = memref.cast %m : memref<?xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %c7 = arith.constant 7 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c11 = arith.constant 11 : index
  %c13 = arith.constant 13 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %minus1 = arith.constant -1.0 : f32
  %e = tensor.empty() : tensor<32x64x8xf32>
  %x = linalg.generic {indexing_maps = [#x3], iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%e : tensor<32x64x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %a = arith.muli %i, %c7 : index
    %b = arith.muli %j, %c3 : index
    %ab = arith.addi %a, %b : index
    %abk = arith.addi %ab, %k : index
    %r = arith.remui %abk, %c11 : index
    %ri = arith.index_cast %r : index to i32
    %f = arith.sitofp %ri : i32 to f32
    linalg.yield %f : f32
  } -> tensor<32x64x8xf32>
  // Column sums, index-weighted sums and maxima: two reduction dims, three
  // outputs, linalg.index of a split dimension.
  %e8 = tensor.empty() : tensor<8xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %w0 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %m0 = linalg.fill ins(%minus1 : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %r:3 = linalg.generic {indexing_maps = [#x3, #k3, #k3, #k3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : tensor<32x64x8xf32>) outs(%s0, %w0, %m0 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%in: f32, %s: f32, %w: f32, %m: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i64 = arith.muli %i, %c64 : index
    %ij = arith.addi %i64, %j : index
    %ij7 = arith.remui %ij, %c7 : index
    %iji = arith.index_cast %ij7 : index to i32
    %ijf = arith.sitofp %iji : i32 to f32
    %weighted = arith.mulf %in, %ijf : f32
    %s1 = arith.addf %in, %s : f32
    %w1 = arith.addf %weighted, %w : f32
    %m1 = arith.maximumf %m, %in : f32
    linalg.yield %s1, %w1, %m1 : f32, f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  // A full sum (a row reduction to one output).
  %ev = tensor.empty() : tensor<65536xf32>
  %v = linalg.generic {indexing_maps = [#v1], iterator_types = ["parallel"]}
      outs(%ev : tensor<65536xf32>) {
  ^bb0(%out: f32):
    %n = linalg.index 0 : index
    %n5 = arith.muli %n, %c5 : index
    %q = arith.remui %n5, %c13 : index
    %qi = arith.index_cast %q : index to i32
    %qf = arith.sitofp %qi : i32 to f32
    linalg.yield %qf : f32
  } -> tensor<65536xf32>
  %e0 = tensor.empty() : tensor<f32>
  %t0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %total = linalg.generic {indexing_maps = [#v1, #s1], iterator_types = ["reduction"]}
      ins(%v : tensor<65536xf32>) outs(%t0 : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %r0 = tensor.cast %r#0 : tensor<8xf32> to tensor<?xf32>
  %r1 = tensor.cast %r#1 : tensor<8xf32> to tensor<?xf32>
  %r2 = tensor.cast %r#2 : tensor<8xf32> to tensor<?xf32>
  %tt = tensor.expand_shape %total [] output_shape [1] : tensor<f32> into tensor<1xf32>
  %t1 = tensor.cast %tt : tensor<1xf32> to tensor<?xf32>
  func.call @print(%r0) : (tensor<?xf32>) -> ()
  func.call @print(%r1) : (tensor<?xf32>) -> ()
  func.call @print(%r2) : (tensor<?xf32>) -> ()
  func.call @print(%t1) : (tensor<?xf32>) -> ()
  return
}
