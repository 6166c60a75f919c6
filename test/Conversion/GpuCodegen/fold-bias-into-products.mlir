// RUN: effopt-opt %s --split-input-file --eff-gpu-fold-bias-into-products | FileCheck %s

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>

// GPT's query/key/value projection under bf16 autocast, after
// eff-gpu-narrow-products: a bf16 product (seen as [B, T, 3D]) whose only
// reader adds the bias rounded to bf16 and rounds the sum. The bias, rounded
// once per column, is broadcast over the rows as the product's init (what
// eff-linalg-to-blas makes cuBLASLt's bias epilogue); the reader is then a
// copy of the product and folds away.
// CHECK-DAG: #[[COL:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @qkv_bf16
// CHECK: %[[B:.*]] = linalg.generic {{{.*}} iterator_types = ["parallel"]} ins(%arg2 : tensor<12xf32>) outs(%{{.*}} : tensor<12xbf16>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[IN]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[COL]], #{{map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%[[B]] : tensor<12xbf16>) outs(%{{.*}} : tensor<8x12xbf16>)
// CHECK-NEXT: ^bb0(%[[E:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: linalg.yield %[[E]] : bf16
// CHECK: %[[P:.*]] = linalg.matmul {{.*}} ins(%arg0, %arg1 : tensor<8x4xbf16>, tensor<12x4xbf16>) outs(%[[INIT]] : tensor<8x12xbf16>)
// CHECK: %[[X:.*]] = tensor.expand_shape %[[P]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[X]]
func.func @qkv_bf16(%x: tensor<8x4xbf16>, %w: tensor<12x4xbf16>, %b: tensor<12xf32>) -> tensor<2x4x12xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8x12xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<8x12xbf16>) -> tensor<8x12xbf16>
  %p = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<8x4xbf16>, tensor<12x4xbf16>) outs(%f : tensor<8x12xbf16>) -> tensor<8x12xbf16>
  %p3 = tensor.expand_shape %p [[0, 1], [2]] output_shape [2, 4, 12] : tensor<8x12xbf16> into tensor<2x4x12xbf16>
  %e2 = tensor.empty() : tensor<2x4x12xbf16>
  %r = linalg.generic {indexing_maps = [#col3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%b, %p3 : tensor<12xf32>, tensor<2x4x12xbf16>) outs(%e2 : tensor<2x4x12xbf16>) {
  ^bb0(%bias: f32, %c: bf16, %out: bf16):
    %bb = arith.truncf %bias : f32 to bf16
    %bw = arith.extf %bb : bf16 to f32
    %cw = arith.extf %c : bf16 to f32
    %s = arith.addf %bw, %cw : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x4x12xbf16>
  return %r : tensor<2x4x12xbf16>
}

// -----

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// The MLP's first layer: the forward's GELU and its gradient both add the
// bias to the saved product (the same bias, the same rounding): both take
// the product as it is, and go on with the rest of their work; the
// gradient's other input (dy) stays.
// CHECK-LABEL: func.func @gelu_and_its_gradient
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<8x16xbf16>)
// CHECK-NEXT: ^bb0(%[[C:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[C]] : bf16 to f32
// CHECK-NEXT: math.erf
// CHECK-NOT: arith.addf %{{.*}}, %[[W]]
// CHECK: linalg.generic {{.*}} ins(%[[P]], %arg3 : tensor<8x16xbf16>, tensor<8x16xbf16>)
// CHECK-NEXT: ^bb0(%[[C2:.*]]: bf16, %[[DY:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[W2:.*]] = arith.extf %[[C2]] : bf16 to f32
// CHECK-NEXT: math.exp
func.func @gelu_and_its_gradient(%x: tensor<8x4xbf16>, %w: tensor<16x4xbf16>, %b: tensor<16xf32>, %dy: tensor<8x16xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8x16xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %p = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<8x4xbf16>, tensor<16x4xbf16>) outs(%f : tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %e2 = tensor.empty() : tensor<8x16xbf16>
  %g = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %p : tensor<16xf32>, tensor<8x16xbf16>) outs(%e2 : tensor<8x16xbf16>) {
  ^bb0(%bias: f32, %c: bf16, %out: bf16):
    %bb = arith.truncf %bias : f32 to bf16
    %bw = arith.extf %bb : bf16 to f32
    %cw = arith.extf %c : bf16 to f32
    %s = arith.addf %bw, %cw : f32
    %t = arith.truncf %s : f32 to bf16
    %h = arith.extf %t : bf16 to f32
    %y = math.erf %h : f32
    %yt = arith.truncf %y : f32 to bf16
    linalg.yield %yt : bf16
  } -> tensor<8x16xbf16>
  %e3 = tensor.empty() : tensor<8x16xbf16>
  %d = linalg.generic {indexing_maps = [#col, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %p, %dy : tensor<16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>) outs(%e3 : tensor<8x16xbf16>) {
  ^bb0(%bias: f32, %c: bf16, %g0: bf16, %out: bf16):
    %bb = arith.truncf %bias : f32 to bf16
    %bw = arith.extf %bb : bf16 to f32
    %cw = arith.extf %c : bf16 to f32
    %s = arith.addf %cw, %bw : f32
    %t = arith.truncf %s : f32 to bf16
    %h = arith.extf %t : bf16 to f32
    %dh = math.exp %h : f32
    %gw = arith.extf %g0 : bf16 to f32
    %m = arith.mulf %dh, %gw : f32
    %mt = arith.truncf %m : f32 to bf16
    linalg.yield %mt : bf16
  } -> tensor<8x16xbf16>
  return %g, %d : tensor<8x16xbf16>, tensor<8x16xbf16>
}

// -----

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// f32: the sum itself is what the reader used; the f32 bias is the vector.
// CHECK-LABEL: func.func @f32_bias_then_relu
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<6xf32>) outs(%{{.*}} : tensor<3x6xf32>)
// CHECK: %[[P:.*]] = linalg.matmul {{.*}} outs(%[[INIT]] : tensor<3x6xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<3x6xf32>)
// CHECK-NEXT: ^bb0(%[[C:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.maximumf %[[C]]
func.func @f32_bias_then_relu(%x: tensor<3x5xf32>, %w: tensor<6x5xf32>, %b: tensor<6xf32>) -> tensor<3x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x6xf32>) -> tensor<3x6xf32>
  %p = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<3x5xf32>, tensor<6x5xf32>) outs(%f : tensor<3x6xf32>) -> tensor<3x6xf32>
  %e2 = tensor.empty() : tensor<3x6xf32>
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %b : tensor<3x6xf32>, tensor<6xf32>) outs(%e2 : tensor<3x6xf32>) {
  ^bb0(%c: f32, %bias: f32, %out: f32):
    %s = arith.addf %c, %bias : f32
    %y = arith.maximumf %s, %zero : f32
    linalg.yield %y : f32
  } -> tensor<3x6xf32>
  return %r : tensor<3x6xf32>
}

// -----

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Left alone: two readers adding different vectors; a vector per row; a
// bf16 sum with an f32 vector not of bf16 values (the epilogue reads it in
// bf16); the product's value used twice in its reader; a bias computed
// after the product.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: ins(%{{[^,]*}} : tensor<4xbf16>) outs(%{{.*}} : tensor<4x4xbf16>)
// CHECK-COUNT-5: linalg.fill
// CHECK-NOT: ins(%{{[^,]*}} : tensor<4xbf16>) outs(%{{.*}} : tensor<4x4xbf16>)
// CHECK: return
func.func @left_alone(%x: tensor<4x3xbf16>, %w: tensor<4x3xbf16>, %b1: tensor<4xbf16>, %b2: tensor<4xbf16>, %bf: tensor<4xf32>) -> (tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x4xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  // Two readers, two biases.
  %p1 = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<4x3xbf16>, tensor<4x3xbf16>) outs(%f : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %r1 = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b1, %p1 : tensor<4xbf16>, tensor<4x4xbf16>) outs(%e : tensor<4x4xbf16>) {
  ^bb0(%bias: bf16, %c: bf16, %out: bf16):
    %bw = arith.extf %bias : bf16 to f32
    %cw = arith.extf %c : bf16 to f32
    %s = arith.addf %cw, %bw : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  %r2 = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b2, %p1 : tensor<4xbf16>, tensor<4x4xbf16>) outs(%e : tensor<4x4xbf16>) {
  ^bb0(%bias: bf16, %c: bf16, %out: bf16):
    %bw = arith.extf %bias : bf16 to f32
    %cw = arith.extf %c : bf16 to f32
    %s = arith.addf %cw, %bw : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  // A vector per row.
  %f2 = linalg.fill ins(%zero : bf16) outs(%e : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %p2 = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<4x3xbf16>, tensor<4x3xbf16>) outs(%f2 : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %r3 = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b1, %p2 : tensor<4xbf16>, tensor<4x4xbf16>) outs(%e : tensor<4x4xbf16>) {
  ^bb0(%bias: bf16, %c: bf16, %out: bf16):
    %bw = arith.extf %bias : bf16 to f32
    %cw = arith.extf %c : bf16 to f32
    %s = arith.addf %cw, %bw : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  // An f32 vector added unrounded to a bf16 product.
  %f3 = linalg.fill ins(%zero : bf16) outs(%e : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %p3 = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<4x3xbf16>, tensor<4x3xbf16>) outs(%f3 : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %r4 = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%bf, %p3 : tensor<4xf32>, tensor<4x4xbf16>) outs(%e : tensor<4x4xbf16>) {
  ^bb0(%bias: f32, %c: bf16, %out: bf16):
    %cw = arith.extf %c : bf16 to f32
    %s = arith.addf %cw, %bias : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  // The product's value used twice.
  %f4 = linalg.fill ins(%zero : bf16) outs(%e : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %p4 = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<4x3xbf16>, tensor<4x3xbf16>) outs(%f4 : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %r5 = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b1, %p4 : tensor<4xbf16>, tensor<4x4xbf16>) outs(%e : tensor<4x4xbf16>) {
  ^bb0(%bias: bf16, %c: bf16, %out: bf16):
    %bw = arith.extf %bias : bf16 to f32
    %cw = arith.extf %c : bf16 to f32
    %s = arith.addf %cw, %bw : f32
    %s2 = arith.mulf %s, %cw : f32
    %t = arith.truncf %s2 : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  // A bias computed after the product.
  %f5 = linalg.fill ins(%zero : bf16) outs(%e : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %p5 = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<4x3xbf16>, tensor<4x3xbf16>) outs(%f5 : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %late = tensor.empty() : tensor<4xbf16>
  %lb = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b1 : tensor<4xbf16>) outs(%late : tensor<4xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %n = arith.negf %in : bf16
    linalg.yield %n : bf16
  } -> tensor<4xbf16>
  %r6 = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%lb, %p5 : tensor<4xbf16>, tensor<4x4xbf16>) outs(%e : tensor<4x4xbf16>) {
  ^bb0(%bias: bf16, %c: bf16, %out: bf16):
    %bw = arith.extf %bias : bf16 to f32
    %cw = arith.extf %c : bf16 to f32
    %s = arith.addf %cw, %bw : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  return %r1, %r2, %r3, %r4, %r5, %r6 : tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4x4xbf16>
}

// -----

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// The vector's computation may use a constant from outside the reader,
// defined after the product: it is cloned in front of the product with the
// rest (a scaled bias, as LoRA-style `alpha * b` would be).
// CHECK-LABEL: func.func @scaled_bias
// CHECK: linalg.generic {{.*}} ins(%arg2 : tensor<6xf32>) outs(%{{.*}} : tensor<6xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[K:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[S:.*]] = arith.mulf %[[IN]], %[[K]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK: linalg.matmul
func.func @scaled_bias(%x: tensor<3x5xf32>, %w: tensor<6x5xf32>, %b: tensor<6xf32>) -> tensor<3x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x6xf32>) -> tensor<3x6xf32>
  %p = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<3x5xf32>, tensor<6x5xf32>) outs(%f : tensor<3x6xf32>) -> tensor<3x6xf32>
  %half = arith.constant 0.5 : f32
  %e2 = tensor.empty() : tensor<3x6xf32>
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %b : tensor<3x6xf32>, tensor<6xf32>) outs(%e2 : tensor<3x6xf32>) {
  ^bb0(%c: f32, %bias: f32, %out: f32):
    %sb = arith.mulf %bias, %half : f32
    %s = arith.addf %c, %sb : f32
    %y = arith.maximumf %s, %zero : f32
    linalg.yield %y : f32
  } -> tensor<3x6xf32>
  return %r : tensor<3x6xf32>
}
