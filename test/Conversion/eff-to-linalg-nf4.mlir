// RUN: effopt-opt %s --convert-eff-to-linalg --split-input-file | FileCheck %s

// A product reading an NF4 weight: the type converter turns eff.nf4_pack's
// value into its four storage tensors, and eff.linear becomes a loop over
// tiles of its output columns. Each iteration dequantizes one tile of the
// weight (here 30 of its 60 rows: never the whole weight) into a workspace,
// NF4[code] * (DYN[absmax] * nested + offset), codes read from the high
// nibble for even elements, then multiplies into its slice of the output,
// which starts as the bias.
// CHECK-LABEL: func.func @nf4_linear_transposed
// CHECK-SAME: (%[[CODES:[^:]*]]: tensor<1200xi8>, %[[ABSMAX:[^:]*]]: tensor<38xi8>, %[[NESTED:[^:]*]]: tensor<1xf32>, %[[OFFSET:[^:]*]]: tensor<f32>, %[[X:[^:]*]]: tensor<4x40xf32>
// CHECK-NOT: eff.
// CHECK-DAG: %[[NF4:.*]] = arith.constant dense<[-1.000000e+00, -0.6961928, {{.*}}, 1.000000e+00]> : tensor<16xf32>
// CHECK-DAG: %[[DYN:.*]] = arith.constant dense<"0x{{.*}}"> : tensor<256xf32>
// CHECK: %[[BIAS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<60xf32>) outs(%{{.*}} : tensor<4x60xf32>)
// CHECK: scf.for %[[C0:.*]] = %c0 to %c60 step %c30 iter_args(%[[ACC:.*]] = %[[BIAS]]) -> (tensor<4x60xf32>)
// CHECK: %[[WS:.*]] = tensor.empty() : tensor<30x40xf32>
// CHECK: %[[TILE:.*]] = linalg.generic {{.*}} outs(%[[WS]] : tensor<30x40xf32>)
// CHECK: tensor.extract %[[CODES]]
// CHECK: arith.shrui
// CHECK: tensor.extract %[[NF4]]
// CHECK: tensor.extract %[[ABSMAX]]
// CHECK: %[[D:.*]] = tensor.extract %[[DYN]]
// CHECK: %[[S:.*]] = tensor.extract %[[NESTED]]
// CHECK: %[[O:.*]] = tensor.extract %[[OFFSET]][]
// CHECK: %[[DS:.*]] = arith.mulf %[[D]], %[[S]] : f32
// CHECK: %[[A:.*]] = arith.addf %[[DS]], %[[O]] : f32
// CHECK: arith.mulf %{{.*}}, %[[A]] : f32
// CHECK: %[[SLICE:.*]] = tensor.extract_slice %[[ACC]][0, %[[C0]]] [4, 30] [1, 1]
// CHECK: %[[P:.*]] = linalg.matmul {{.*}} ins(%[[X]], %[[TILE]] : tensor<4x40xf32>, tensor<30x40xf32>) outs(%[[SLICE]] : tensor<4x30xf32>)
// CHECK: tensor.insert_slice %[[P]] into %[[ACC]][0, %[[C0]]] [4, 30] [1, 1]
func.func @nf4_linear_transposed(%c: tensor<1200xi8>, %a: tensor<38xi8>, %n: tensor<1xf32>, %o: tensor<f32>,
                                 %x: tensor<4x40xf32>, %b: tensor<60xf32>) -> tensor<4x60xf32> {
  %w = eff.nf4_pack %c, %a, %n, %o : tensor<1200xi8>, tensor<38xi8>, tensor<1xf32>, tensor<f32>
      -> tensor<60x40xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
  %y = eff.linear %x, %w, %b {transpose_b = true}
      : (tensor<4x40xf32>, tensor<60x40xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>, tensor<60xf32>) -> tensor<4x60xf32>
  return %y : tensor<4x60xf32>
}

// -----

// Untransposed (the backward's dx = dy W): the tiles are column slices of the
// weight, 13 of its 25 columns, then a tail of 12 outside the loop; the
// output starts as zeros.
// CHECK-LABEL: func.func @nf4_linear_columns
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: %[[LOOP:.*]] = scf.for %{{.*}} = %c0 to %c13 step %c13{{.*}} iter_args(%{{.*}} = %[[ZERO]])
// CHECK: tensor.empty() : tensor<8x13xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<3x8xf32>, tensor<8x13xf32>) outs(%{{.*}} : tensor<3x13xf32>)
// CHECK: scf.yield
// CHECK: tensor.empty() : tensor<8x12xf32>
// CHECK: %[[TAIL:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<3x8xf32>, tensor<8x12xf32>) outs(%{{.*}} : tensor<3x12xf32>)
// CHECK: %[[R:.*]] = tensor.insert_slice %[[TAIL]] into %[[LOOP]][0, 13] [3, 12] [1, 1]
// CHECK: return %[[R]]
func.func @nf4_linear_columns(%c: tensor<100xi8>, %a: tensor<4xi8>, %n: tensor<1xf32>, %o: tensor<f32>,
                              %dy: tensor<3x8xf32>) -> tensor<3x25xf32> {
  %w = eff.nf4_pack %c, %a, %n, %o : tensor<100xi8>, tensor<4xi8>, tensor<1xf32>, tensor<f32>
      -> tensor<8x25xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
  %dx = eff.linear %dy, %w
      : (tensor<3x8xf32>, tensor<8x25xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>) -> tensor<3x25xf32>
  return %dx : tensor<3x25xf32>
}
