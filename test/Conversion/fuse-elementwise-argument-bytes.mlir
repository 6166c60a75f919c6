// RUN: effopt-opt %s --eff-fuse-elementwise | FileCheck %s --check-prefix=ALL
// RUN: effopt-opt %s --eff-fuse-elementwise=max-kernel-argument-bytes=96 | FileCheck %s --check-prefix=CAPPED
// RUN: effopt-opt %s --eff-fuse-elementwise=max-kernel-argument-bytes=95 | FileCheck %s --check-prefix=TIGHT

// fp16 loss scaling ORs every gradient's "found inf" flag into one: a
// chain of rank-0 ORs. Unbounded, fusion makes one op reading every flag
// (a CUDA kernel's parameters hold 4352 bytes: about 180 flags of 24-byte
// descriptors). With max-kernel-argument-bytes, no fused op takes more: a
// rank-0 tensor is a 24-byte descriptor, so 96 bytes are three inputs and
// the output; at 95, two inputs and the output, the ORs as they were.
#s = affine_map<() -> ()>

// ALL-LABEL: func.func @found_inf
// ALL: linalg.generic
// ALL-SAME: ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<i1>, tensor<i1>, tensor<i1>, tensor<i1>, tensor<i1>)
// ALL-NOT: linalg.generic

// CAPPED-LABEL: func.func @found_inf
// CAPPED-COUNT-2: linalg.generic {{.*}} ins(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}} : tensor<i1>, tensor<i1>, tensor<i1>)
// CAPPED-NOT: linalg.generic

// TIGHT-LABEL: func.func @found_inf
// TIGHT-COUNT-4: linalg.generic {{.*}} ins(%{{[^,]*}}, %{{[^,]*}} : tensor<i1>, tensor<i1>)
// TIGHT-NOT: linalg.generic
func.func @found_inf(%f0: tensor<i1>, %f1: tensor<i1>, %f2: tensor<i1>,
                     %f3: tensor<i1>, %f4: tensor<i1>) -> tensor<i1> {
  %e0 = tensor.empty() : tensor<i1>
  %o1 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []}
      ins(%f0, %f1 : tensor<i1>, tensor<i1>) outs(%e0 : tensor<i1>) {
  ^bb0(%a: i1, %b: i1, %o: i1):
    %r = arith.ori %a, %b : i1
    linalg.yield %r : i1
  } -> tensor<i1>
  %e1 = tensor.empty() : tensor<i1>
  %o2 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []}
      ins(%o1, %f2 : tensor<i1>, tensor<i1>) outs(%e1 : tensor<i1>) {
  ^bb0(%a: i1, %b: i1, %o: i1):
    %r = arith.ori %a, %b : i1
    linalg.yield %r : i1
  } -> tensor<i1>
  %e2 = tensor.empty() : tensor<i1>
  %o3 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []}
      ins(%o2, %f3 : tensor<i1>, tensor<i1>) outs(%e2 : tensor<i1>) {
  ^bb0(%a: i1, %b: i1, %o: i1):
    %r = arith.ori %a, %b : i1
    linalg.yield %r : i1
  } -> tensor<i1>
  %e3 = tensor.empty() : tensor<i1>
  %o4 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []}
      ins(%o3, %f4 : tensor<i1>, tensor<i1>) outs(%e3 : tensor<i1>) {
  ^bb0(%a: i1, %b: i1, %o: i1):
    %r = arith.ori %a, %b : i1
    linalg.yield %r : i1
  } -> tensor<i1>
  return %o4 : tensor<i1>
}

// A producer whose result has another user stays an output of the op
// fusion first makes (upstream's getPreservedProducerResults): its
// descriptor counts too. A widening fuses into every reader; fusing %w into
// %m reads %x and writes %m and %w: 3 x 40 bytes (rank 1), made at 120 and
// refused at 119.
#id = affine_map<(d0) -> (d0)>
// RUN: effopt-opt %s --eff-fuse-elementwise=max-kernel-argument-bytes=120 | FileCheck %s --check-prefix=WIDEN
// RUN: effopt-opt %s --eff-fuse-elementwise=max-kernel-argument-bytes=119 | FileCheck %s --check-prefix=KEEP
// Bounds the -NOT checks of @found_inf.
// ALL-LABEL: func.func @kept_result
// CAPPED-LABEL: func.func @kept_result
// TIGHT-LABEL: func.func @kept_result
// WIDEN-LABEL: func.func @kept_result
// WIDEN: linalg.generic {{.*}} ins(%arg0 : tensor<4xbf16>)
// WIDEN: linalg.generic {{.*}} ins(%arg0 : tensor<4xbf16>)
// WIDEN-NEXT: ^bb0
// WIDEN-NEXT: arith.extf
// WIDEN-NEXT: arith.mulf
// KEEP-LABEL: func.func @kept_result
// KEEP: %[[W:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4xbf16>)
// KEEP: linalg.generic {{.*}} ins(%[[W]] : tensor<4xf32>)
func.func @kept_result(%x: tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e0 = tensor.empty() : tensor<4xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xbf16>) outs(%e0 : tensor<4xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %r = arith.extf %a : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%w : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %w, %m : tensor<4xf32>, tensor<4xf32>
}
