// RUN: effopt-opt %s --pass-pipeline="builtin.module(convert-eff-to-linalg{online-log-sum-exp=true})" --split-input-file | FileCheck %s
// RUN: effopt-opt %s --pass-pipeline="builtin.module(convert-eff-to-linalg)" --split-input-file | FileCheck %s --check-prefix=TWO

// online-log-sum-exp (the cuda target's policy): a cross-entropy over rows
// of more than 4096 classes takes each row's max m and sum s of exp(x - m)
// in one reduction with two f32 outputs, the sum rescaled whenever the max
// grows (eff-gpu-form-kernels runs it as one block reduction); the log-sum-
// exp is m + log(s). Without the option: a max, then a sum of exponentials.
// CHECK-LABEL: func.func @long_rows
// CHECK: %[[M:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<3x5000xbf16>) outs(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>)
// CHECK: ^bb0(%[[IN:.*]]: bf16, %[[MAX:.*]]: f32, %[[SUM:.*]]: f32):
// CHECK: %[[X:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK: %[[NEW:.*]] = arith.maximumf %[[MAX]], %[[X]] : f32
// CHECK: arith.cmpf oeq, %[[MAX]], %[[NEW]]
// CHECK: math.exp
// CHECK: math.exp
// CHECK: %[[SCALED:.*]] = arith.mulf %[[SUM]], %{{.*}} : f32
// CHECK: %[[NEWSUM:.*]] = arith.addf %[[SCALED]], %{{.*}} : f32
// CHECK: linalg.yield %[[NEW]], %[[NEWSUM]] : f32, f32
// CHECK: math.log
// TWO-LABEL: func.func @long_rows
// TWO: arith.maximumf
// TWO: linalg.yield
// TWO: math.exp
func.func @long_rows(%x: tensor<3x5000xbf16>, %y: tensor<3xi64>) -> tensor<bf16> {
  %l = eff.softmax_cross_entropy mean, %x, %y : (tensor<3x5000xbf16>, tensor<3xi64>) -> tensor<bf16>
  return %l : tensor<bf16>
}

// -----

// Rows of 4096 classes or fewer (a warp's reduction on cuda) stay two
// passes.
// CHECK-LABEL: func.func @short_rows
// CHECK-NOT: iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<3x4096xf32>) outs(%{{.*}}, %{{.*}} :
// CHECK: arith.maximumf
// CHECK: math.exp
func.func @short_rows(%x: tensor<3x4096xf32>, %y: tensor<3xi64>) -> tensor<f32> {
  %l = eff.softmax_cross_entropy mean, %x, %y : (tensor<3x4096xf32>, tensor<3xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
