// RUN: effopt-opt %s --convert-eff-to-linalg --canonicalize --eff-fuse-elementwise --canonicalize | FileCheck %s

// A batch norm's backward never stores the normalised input: each of its
// two readers (the sum of dy * xhat and dx) computes xhat from x itself,
// so the backward is three passes (the two sums, dx) that read x and dy.
// CHECK-LABEL: func.func @bn_grad
// CHECK: %[[DB:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%arg4 : tensor<2x3x4x4xf32>)
// CHECK: %[[DS:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%arg4, %arg0, {{.*}}) outs(%{{.*}} : tensor<3xf64>)
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg4, %arg0, {{.*}}) outs(%{{.*}} : tensor<2x3x4x4xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[DX]]
func.func @bn_grad(%x: tensor<2x3x4x4xf32>, %mean: tensor<3xf32>, %rstd: tensor<3xf32>, %scale: tensor<3xf32>, %dy: tensor<2x3x4x4xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %dx, %ds, %db = eff.batch_norm_train_grad %x, %mean, %rstd, %scale, %dy : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %dx, %ds, %db : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
}
