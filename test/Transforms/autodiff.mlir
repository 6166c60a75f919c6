// RUN: effopt-opt %s --eff-autodiff --split-input-file | FileCheck %s

// An MLP: gradients for every trainable parameter in argument order, the
// backward reads forward values only through eff.save, the batch input gets
// no gradient.
module {
  eff.parameter trainable @w1 : tensor<16x8xf32>
  eff.parameter trainable @b1 : tensor<16xf32>
  eff.parameter trainable @w2 : tensor<5x16xf32>
  // CHECK-LABEL: func.func @forward_backward(
  // CHECK-SAME: %[[W1:.*]]: tensor<16x8xf32> {eff.parameter = @w1}, %[[B1:.*]]: tensor<16xf32> {eff.parameter = @b1}, %[[W2:.*]]: tensor<5x16xf32> {eff.parameter = @w2}, %[[X:.*]]: tensor<4x8xf32> {eff.input = "x"}, %[[Y:.*]]: tensor<4xi64> {eff.input = "y"})
  // CHECK-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<16x8xf32> {eff.gradient = @w1}, tensor<16xf32> {eff.gradient = @b1}, tensor<5x16xf32> {eff.gradient = @w2})
  func.func @forward(%w1: tensor<16x8xf32> {eff.parameter = @w1}, %b1: tensor<16xf32> {eff.parameter = @b1},
                     %w2: tensor<5x16xf32> {eff.parameter = @w2},
                     %x: tensor<4x8xf32> {eff.input = "x"}, %y: tensor<4xi64> {eff.input = "y"})
      -> (tensor<f32> {eff.output = "loss"}) {
    // CHECK: %[[H:.*]] = eff.linear %[[X]], %[[W1]], %[[B1]]
    %h = eff.linear %x, %w1, %b1 {transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    // CHECK: %[[R:.*]] = eff.relu %[[H]]
    %r = eff.relu %h : tensor<4x16xf32>
    // CHECK: %[[Z:.*]] = eff.linear %[[R]], %[[W2]]
    %z = eff.linear %r, %w2 {transpose_b = true} : (tensor<4x16xf32>, tensor<5x16xf32>) -> tensor<4x5xf32>
    // CHECK: %[[LOSS:.*]] = eff.softmax_cross_entropy mean, %[[Z]], %[[Y]]
    %loss = eff.softmax_cross_entropy mean, %z, %y : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
    // CHECK-DAG: %[[SZ:.*]] = eff.save %[[Z]] : tensor<4x5xf32>
    // CHECK-DAG: %[[SR:.*]] = eff.save %[[R]] : tensor<4x16xf32>
    // CHECK: %[[ONE:.*]] = eff.constant {eff.loss_seed} dense<1.000000e+00> : tensor<f32>
    // CHECK: %[[DZ:.*]] = eff.softmax_cross_entropy_grad mean, %[[SZ]], %[[Y]], %[[ONE]]
    // CHECK: %[[DR:.*]] = eff.linear %[[DZ]], %[[W2]] : (tensor<4x5xf32>, tensor<5x16xf32>) -> tensor<4x16xf32>
    // CHECK: %[[DW2:.*]] = eff.linear %[[DZ]], %[[SR]] {transpose_a = true} : (tensor<4x5xf32>, tensor<4x16xf32>) -> tensor<5x16xf32>
    // CHECK: %[[POS:.*]] = eff.cmp gt, %[[SR]],
    // CHECK: %[[DH:.*]] = eff.where %[[POS]], %[[DR]],
    // CHECK: %[[DW1:.*]] = eff.linear %[[DH]], %[[X]] {transpose_a = true} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    // CHECK: %[[DB1:.*]] = eff.reduce_sum %[[DH]] {axes = array<i64: 0>} : tensor<4x16xf32> -> tensor<16xf32>
    // CHECK: return %[[LOSS]], %[[DW1]], %[[DB1]], %[[DW2]]
    return %loss : tensor<f32>
  }
}

// -----

// A tied embedding (gather + transposed matmul) gets the sum of both
// gradients; the ids get none.
module {
  eff.parameter trainable @emb : tensor<10x4xf32>
  // CHECK-LABEL: func.func @forward_backward(
  func.func @forward(%emb: tensor<10x4xf32> {eff.parameter = @emb},
                     %ids: tensor<2x3xi64> {eff.input = "ids"}) -> tensor<f32> {
    %e = eff.gather %emb, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %t = eff.transpose %emb {permutation = array<i64: 1, 0>} : tensor<10x4xf32> -> tensor<4x10xf32>
    %logits = eff.matmul %e, %t : (tensor<2x3x4xf32>, tensor<4x10xf32>) -> tensor<2x3x10xf32>
    %loss = eff.reduce_mean %logits {axes = array<i64: 0, 1, 2>} : tensor<2x3x10xf32> -> tensor<f32>
    // CHECK: %[[DT:.*]] = eff.linear {{.*}} {transpose_a = true} : (tensor<6x4xf32>, tensor<6x10xf32>) -> tensor<4x10xf32>
    // CHECK: %[[DHEAD:.*]] = eff.transpose %[[DT]] {permutation = array<i64: 1, 0>} : tensor<4x10xf32> -> tensor<10x4xf32>
    // CHECK: %[[DEMB:.*]] = eff.gather_grad %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3x4xf32>) -> tensor<10x4xf32>
    // CHECK: %[[SUM:.*]] = eff.add %[[DHEAD]], %[[DEMB]] : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
    // CHECK: return %{{.*}}, %[[SUM]] : tensor<f32>, tensor<10x4xf32>
    return %loss : tensor<f32>
  }
}

// -----

// Frozen parameters and buffers get no gradient; a trainable parameter the
// loss does not depend on is listed in eff.no_gradient.
module {
  eff.parameter trainable @w : tensor<4xf32>
  eff.parameter frozen @f : tensor<4xf32>
  eff.parameter buffer @mask : tensor<4xf32>
  eff.parameter trainable @unused : tensor<4xf32>
  // CHECK-LABEL: func.func @forward_backward(
  // CHECK-SAME: -> (tensor<f32>, tensor<4xf32>, tensor<4xf32> {eff.gradient = @w})
  // CHECK-SAME: attributes {eff.no_gradient = [@unused]}
  func.func @forward(%w: tensor<4xf32> {eff.parameter = @w}, %f: tensor<4xf32> {eff.parameter = @f},
                     %mask: tensor<4xf32> {eff.parameter = @mask},
                     %unused: tensor<4xf32> {eff.parameter = @unused}) -> (tensor<f32>, tensor<4xf32>) {
    %a = eff.mul %w, %f : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = eff.add %a, %mask : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %loss = eff.reduce_sum %b {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    %other = eff.exp %unused : tensor<4xf32>
    return %loss, %other : tensor<f32>, tensor<4xf32>
  }
}

// -----

// Broadcasting operands get gradients summed back to their shapes.
module {
  eff.parameter trainable @bias : tensor<3x1xf32>
  // CHECK-LABEL: func.func @forward_backward(
  func.func @forward(%bias: tensor<3x1xf32> {eff.parameter = @bias}, %x: tensor<2x3x4xf32>) -> tensor<f32> {
    %y = eff.add %x, %bias : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
    %loss = eff.reduce_mean %y {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
    // CHECK: %[[G:.*]] = eff.broadcast_to %{{.*}} : tensor<1x1x1xf32> to tensor<2x3x4xf32>
    // CHECK: %[[R:.*]] = eff.reduce_sum %[[G]] {axes = array<i64: 0, 2>} : tensor<2x3x4xf32> -> tensor<3xf32>
    // CHECK: %[[D:.*]] = eff.reshape %[[R]] : tensor<3xf32> to tensor<3x1xf32>
    // CHECK: return %{{.*}}, %[[D]]
    return %loss : tensor<f32>
  }
}

// -----

// layer_norm's gradient reads the saved statistics; dropout's reuses the mask.
module {
  eff.parameter trainable @g : tensor<8xf32>
  eff.parameter trainable @b : tensor<8xf32>
  // CHECK-LABEL: func.func @forward_backward(
  func.func @forward(%g: tensor<8xf32> {eff.parameter = @g}, %b: tensor<8xf32> {eff.parameter = @b},
                     %x: tensor<2x8xf32>) -> tensor<f32> {
    // CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = eff.layer_norm
    %y, %mean, %rstd = eff.layer_norm %x scale %g bias %b {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
    // CHECK: %[[D:.*]], %[[MASK:.*]] = eff.dropout %[[Y]]
    %d, %m = eff.dropout %y {ratio = 0.25 : f64, seed = 3 : i64} : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
    %loss = eff.reduce_sum %d {axes = array<i64: 0, 1>} : tensor<2x8xf32> -> tensor<f32>
    // CHECK-DAG: %[[SMASK:.*]] = eff.save %[[MASK]]
    // CHECK-DAG: %[[SMEAN:.*]] = eff.save %[[MEAN]]
    // CHECK-DAG: %[[SRSTD:.*]] = eff.save %[[RSTD]]
    // CHECK: %[[KEEP:.*]] = eff.cast %[[SMASK]] : tensor<2x8xi1> to tensor<2x8xf32>
    // CHECK: %[[SCALE:.*]] = eff.constant dense<1.3333333{{[0-9]*}}> : tensor<f32>
    // CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = eff.layer_norm_grad %{{.*}}, %[[SMEAN]], %[[SRSTD]], %{{.*}} scale %{{.*}} {axis = 1 : i64}
    // CHECK: return %{{.*}}, %[[DG]], %[[DB]]
    return %loss : tensor<f32>
  }
}
