// RUN: effopt-opt %s --eff-fuse-elementwise | FileCheck %s

// A rank-0 producer (a per-step scalar with pow) stays its own loop: fused,
// it would be computed once per element of the consumer.
#scalar = affine_map<() -> ()>
#bcast = affine_map<(d0) -> ()>
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @scalar_producer_not_fused
func.func @scalar_producer_not_fused(%step: tensor<f32>, %x: tensor<1024xf32>) -> tensor<1024xf32> {
  // CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = []
  // CHECK: math.powf
  %e0 = tensor.empty() : tensor<f32>
  %s = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%step : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%t: f32, %o: f32):
    %c = arith.constant 0.9 : f32
    %p = math.powf %c, %t : f32
    linalg.yield %p : f32
  } -> tensor<f32>
  // CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[S]] : tensor<1024xf32>, tensor<f32>)
  // CHECK-NOT: math.powf
  // CHECK: arith.mulf
  %e1 = tensor.empty() : tensor<1024xf32>
  %r = linalg.generic {indexing_maps = [#id, #bcast, #id], iterator_types = ["parallel"]}
      ins(%x, %s : tensor<1024xf32>, tensor<f32>) outs(%e1 : tensor<1024xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}

// CHECK-LABEL: func.func @elementwise_producer_fused
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
func.func @elementwise_producer_fused(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %e0 = tensor.empty() : tensor<1024xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<1024xf32>) outs(%e0 : tensor<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<1024xf32>
  %e1 = tensor.empty() : tensor<1024xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<1024xf32>) outs(%e1 : tensor<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %v : f32
    linalg.yield %m : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
