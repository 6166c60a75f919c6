// RUN: effopt-opt %s --eff-autodiff --split-input-file | FileCheck %s
//
// One case per gradient rule: the backward ops each op's rule emits.
// Keep one behaviour per module.

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.neg %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.neg
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.abs %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.cmp gt
    // CHECK: eff.where
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.exp %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: %[[Y:.*]] = eff.exp
    // CHECK: %[[S:.*]] = eff.save %[[Y]]
    // CHECK: eff.mul %{{.*}}, %[[S]]
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.log %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.div %{{.*}}, %arg0
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.sqrt %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: %[[S:.*]] = eff.save
    // CHECK: eff.div
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.rsqrt %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.save
    // CHECK: eff.mul
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.reciprocal %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.save
    // CHECK: eff.neg
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.tanh %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.save
    // CHECK: eff.sub
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.sigmoid %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.save
    // CHECK: eff.sub
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.relu %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: %[[S:.*]] = eff.save
    // CHECK: eff.cmp gt, %[[S]]
    // CHECK: eff.where
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.erf %x : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.exp
    // CHECK: eff.mul
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.gelu %x approximate tanh : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.gelu_grad %arg0, %{{.*}} approximate tanh : tensor<2x3xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.softmax %x {axis = 1 : i64} : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: %[[Y:.*]] = eff.softmax
    // CHECK: %[[S:.*]] = eff.save %[[Y]]
    // CHECK: eff.softmax_grad %[[S]], %{{.*}} {axis = 1 : i64}
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.log_softmax %x {axis = 1 : i64} : tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.log_softmax_grad
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  eff.parameter trainable @s : tensor<3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}, %s: tensor<3xf32> {eff.parameter = @s}) -> tensor<f32> {
    %y = eff.mul %x, %s : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.mul %{{.*}}, %arg1
    // CHECK: eff.mul %{{.*}}, %arg0
    // CHECK: eff.reduce_sum %{{.*}} {axes = array<i64: 0>} : tensor<2x3xf32> -> tensor<3xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  eff.parameter trainable @d : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}, %d: tensor<2x3xf32> {eff.parameter = @d}) -> tensor<f32> {
    %y = eff.div %x, %d : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.div %{{.*}}, %arg1
    // CHECK: eff.neg
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %two = eff.constant dense<2.0> : tensor<f32>
    %y = eff.pow %x, %two : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.pow %arg0
    // CHECK: eff.where
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  eff.parameter trainable @m : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}, %m: tensor<2x3xf32> {eff.parameter = @m}) -> tensor<f32> {
    %y = eff.max %x, %m : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.cmp eq
    // CHECK: eff.cmp gt
    // CHECK: eff.sub
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %c = eff.constant dense<true> : tensor<2x3xi1>
    %z = eff.constant dense<0.0> : tensor<f32>
    %y = eff.where %c, %x, %z : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>)
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.cast %x : tensor<2x3xf32> to tensor<2x3xbf16>
    %z = eff.cast %y : tensor<2x3xbf16> to tensor<2x3xf32>
    %l = eff.reduce_sum %z {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.cast %{{.*}} : tensor<2x3xf32> to tensor<2x3xbf16>
    // CHECK: eff.cast %{{.*}} : tensor<2x3xbf16> to tensor<2x3xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3x4xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3x4xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3x4xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.transpose %x {permutation = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1, 2>} : tensor<3x4x2xf32> -> tensor<f32>
    // CHECK: eff.transpose %{{.*}} {permutation = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.reshape %x : tensor<2x3xf32> to tensor<6xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0>} : tensor<6xf32> -> tensor<f32>
    // CHECK: eff.reshape %{{.*}} : tensor<6xf32> to tensor<2x3xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  eff.parameter trainable @z : tensor<2x1xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}, %z: tensor<2x1xf32> {eff.parameter = @z}) -> tensor<f32> {
    %y = eff.concat %x, %z {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32>
    // CHECK: eff.slice %{{.*}} {limits = array<i64: 2, 3>, starts = array<i64: 0, 0>, strides = array<i64: 1, 1>}
    // CHECK: eff.slice %{{.*}} {limits = array<i64: 2, 4>, starts = array<i64: 0, 3>, strides = array<i64: 1, 1>}
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.slice %x {starts = array<i64: 0, 2>, limits = array<i64: 2, -1>, strides = array<i64: 1, -2>} : tensor<2x3xf32> -> tensor<2x2xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<f32>
    // CHECK: eff.slice_grad %{{.*}} {limits = array<i64: 2, -1>, starts = array<i64: 0, 2>, strides = array<i64: 1, -2>} : (tensor<2x2xf32>) -> tensor<2x3xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x4xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x4xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x4xf32> {eff.parameter = @x}) -> tensor<f32> {
    %a, %b = eff.split %x {axis = 1 : i64} : tensor<2x4xf32> -> tensor<2x1xf32>, tensor<2x3xf32>
    %l = eff.reduce_sum %b {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: %[[Z:.*]] = eff.constant dense<0.000000e+00> : tensor<2x1xf32>
    // CHECK: eff.concat %[[Z]], %{{.*}} {axis = 1 : i64}
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.pad %x {low = array<i64: 1, 0>, high = array<i64: 0, 2>} : tensor<2x3xf32> -> tensor<3x5xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<3x5xf32> -> tensor<f32>
    // CHECK: eff.slice %{{.*}} {limits = array<i64: 3, 3>, starts = array<i64: 1, 0>, strides = array<i64: 1, 1>} : tensor<3x5xf32> -> tensor<2x3xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %l = eff.reduce_mean %x {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.constant dense<0.1666{{[0-9]*}}> : tensor<f32>
    // CHECK: eff.broadcast_to %{{.*}} : tensor<1x1xf32> to tensor<2x3xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x3xf32> {eff.parameter = @x}) -> tensor<f32> {
    %l = eff.reduce_max %x {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    // CHECK: eff.cmp eq, %arg0
    // CHECK: eff.reduce_sum %{{.*}} {axes = array<i64: 0, 1>, keep_dims = true}
    // CHECK: eff.div
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @a : tensor<4x2x3xf32>
  eff.parameter trainable @b : tensor<3x5xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<4x2x3xf32> {eff.parameter = @a}
  func.func @forward(%a: tensor<4x2x3xf32> {eff.parameter = @a}, %b: tensor<3x5xf32> {eff.parameter = @b}) -> tensor<f32> {
    %y = eff.matmul %a, %b : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1, 2>} : tensor<4x2x5xf32> -> tensor<f32>
    // CHECK: eff.transpose %arg1 {permutation = array<i64: 1, 0>}
    // CHECK: eff.matmul %{{.*}}, %{{.*}} : (tensor<4x2x5xf32>, tensor<5x3xf32>) -> tensor<4x2x3xf32>
    // CHECK: eff.reshape %arg0 : tensor<4x2x3xf32> to tensor<8x3xf32>
    // CHECK: eff.linear %{{.*}}, %{{.*}} {transpose_a = true} : (tensor<8x3xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @a : tensor<3x2xf32>
  eff.parameter trainable @b : tensor<5x3xf32>
  eff.parameter trainable @c : tensor<5xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<3x2xf32> {eff.parameter = @a}
  func.func @forward(%a: tensor<3x2xf32> {eff.parameter = @a}, %b: tensor<5x3xf32> {eff.parameter = @b}, %c: tensor<5xf32> {eff.parameter = @c}) -> tensor<f32> {
    %y = eff.linear %a, %b, %c {transpose_a = true, transpose_b = true, alpha = 2.0 : f64, beta = 0.5 : f64} : (tensor<3x2xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<2x5xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<2x5xf32> -> tensor<f32>
    // CHECK: eff.linear %arg1, %{{.*}} {alpha = 2.000000e+00 : f64, transpose_a = true, transpose_b = true} : (tensor<5x3xf32>, tensor<2x5xf32>) -> tensor<3x2xf32>
    // CHECK: eff.linear %{{.*}}, %arg0 {alpha = 2.000000e+00 : f64, transpose_a = true, transpose_b = true} : (tensor<2x5xf32>, tensor<3x2xf32>) -> tensor<5x3xf32>
    // CHECK: eff.constant dense<5.000000e-01>
    // CHECK: eff.reduce_sum %{{.*}} {axes = array<i64: 0>} : tensor<2x5xf32> -> tensor<5xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<2x4x5x5xf32>
  eff.parameter trainable @w : tensor<6x2x3x3xf32>
  eff.parameter trainable @b : tensor<6xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<2x4x5x5xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<2x4x5x5xf32> {eff.parameter = @x}, %w: tensor<6x2x3x3xf32> {eff.parameter = @w}, %b: tensor<6xf32> {eff.parameter = @b}) -> tensor<f32> {
    %y = eff.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x4x5x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x3x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>} : tensor<2x6x3x3xf32> -> tensor<f32>
    // CHECK: eff.conv2d_input_grad %{{.*}}, %arg1 {dilations = array<i64: 1, 1>, groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x6x3x3xf32>, tensor<6x2x3x3xf32>) -> tensor<2x4x5x5xf32>
    // CHECK: eff.conv2d_filter_grad %arg0, %{{.*}} {{.*}} : (tensor<2x4x5x5xf32>, tensor<2x6x3x3xf32>) -> tensor<6x2x3x3xf32>
    // CHECK: eff.reduce_sum %{{.*}} {axes = array<i64: 0, 2, 3>} : tensor<2x6x3x3xf32> -> tensor<6xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<1x2x4x4xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<1x2x4x4xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<1x2x4x4xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>} : tensor<1x2x2x2xf32> -> tensor<f32>
    // CHECK: eff.max_pool2d_grad %arg0, %{{.*}} {{.*}} : (tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<1x2x4x4xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<1x2x4x4xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<1x2x4x4xf32> {eff.parameter = @x}) -> tensor<f32> {
    %y = eff.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>} : tensor<1x2x2x2xf32> -> tensor<f32>
    // CHECK: eff.avg_pool2d_grad %{{.*}} {count_include_pad = false, {{.*}}} : (tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<4x3x2x2xf32>
  eff.parameter trainable @g : tensor<3xf32>
  eff.parameter trainable @b : tensor<3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<4x3x2x2xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<4x3x2x2xf32> {eff.parameter = @x}, %g: tensor<3xf32> {eff.parameter = @g}, %b: tensor<3xf32> {eff.parameter = @b}) -> tensor<f32> {
    %m = eff.constant dense<0.0> : tensor<3xf32>
    %v = eff.constant dense<1.0> : tensor<3xf32>
    %y, %rm, %rv, %sm, %sr = eff.batch_norm_train %x, %g, %b, %m, %v {epsilon = 1.0e-5 : f64, momentum = 0.1 : f64} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>} : tensor<4x3x2x2xf32> -> tensor<f32>
    // CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %[[SM:.*]], %[[SR:.*]] = eff.batch_norm_train
    // CHECK: %[[A:.*]] = eff.save %[[SM]]
    // CHECK: %[[B:.*]] = eff.save %[[SR]]
    // CHECK: eff.batch_norm_train_grad %arg0, %[[A]], %[[B]], %arg1, %{{.*}} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x3x2x2xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<4x3xf32>
  eff.parameter trainable @g : tensor<3xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<4x3xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<4x3xf32> {eff.parameter = @x}, %g: tensor<3xf32> {eff.parameter = @g}) -> tensor<f32> {
    %b = eff.constant dense<0.0> : tensor<3xf32>
    %m = eff.constant dense<0.0> : tensor<3xf32>
    %v = eff.constant dense<1.0> : tensor<3xf32>
    %y = eff.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-5 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
    // CHECK: eff.rsqrt
    // CHECK: eff.reduce_sum %{{.*}} {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @t : tensor<10x4xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<10x4xf32> {eff.parameter = @t}
  func.func @forward(%t: tensor<10x4xf32> {eff.parameter = @t}) -> tensor<f32> {
    %i = eff.constant dense<[[1, 2], [3, 1]]> : tensor<2x2xi64>
    %y = eff.gather %t, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x2xi64>) -> tensor<2x2x4xf32>
    %l = eff.reduce_sum %y {axes = array<i64: 0, 1, 2>} : tensor<2x2x4xf32> -> tensor<f32>
    // CHECK: eff.gather_grad %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x2xi64>, tensor<2x2x4xf32>) -> tensor<10x4xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<3x5xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<3x5xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<3x5xf32> {eff.parameter = @x}) -> tensor<f32> {
    %t = eff.constant dense<[1, 0, 4]> : tensor<3xi64>
    %l = eff.nll_loss sum, %x, %t {ignore_index = 0 : i64} : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<f32>
    // CHECK: eff.nll_loss_grad sum, %arg0, %{{.*}}, %{{.*}} {ignore_index = 0 : i64} : (tensor<3x5xf32>, tensor<3xi64>, tensor<f32>) -> tensor<3x5xf32>
    return %l : tensor<f32>
  }
}

// -----

module {
  eff.parameter trainable @x : tensor<3x5xf32>
  // CHECK-LABEL: func.func @forward_backward(%arg0: tensor<3x5xf32> {eff.parameter = @x}
  func.func @forward(%x: tensor<3x5xf32> {eff.parameter = @x}) -> tensor<f32> {
    %t = eff.constant dense<[1, 0, 4]> : tensor<3xi64>
    %w = eff.constant dense<[1.0, 2.0, 1.0, 1.0, 0.5]> : tensor<5xf32>
    %l = eff.softmax_cross_entropy mean, %x, %t weight %w : (tensor<3x5xf32>, tensor<3xi64>, tensor<5xf32>) -> tensor<f32>
    // CHECK: eff.softmax_cross_entropy_grad mean, %arg0, %{{.*}}, %{{.*}} weight %{{.*}} : (tensor<3x5xf32>, tensor<3xi64>, tensor<f32>, tensor<5xf32>) -> tensor<3x5xf32>
    return %l : tensor<f32>
  }
}

// -----

// The ranks' losses add up: all_gather's gradient is the reduce-scatter of
// the result's gradient, and reduce_scatter's the all-gather.
module {
  eff.parameter trainable @x : tensor<4xf32>
  // CHECK-LABEL: func.func @forward_backward(
  func.func @forward(%x: tensor<4xf32> {eff.parameter = @x}) -> tensor<f32> {
    %g = eff.all_gather %x {world_size = 2 : i64} : tensor<4xf32> -> tensor<8xf32>
    %s = eff.reduce_scatter %g {world_size = 2 : i64} : tensor<8xf32> -> tensor<4xf32>
    %l = eff.reduce_sum %s {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    // CHECK: %[[DG:.*]] = eff.all_gather %{{.*}} {world_size = 2 : i64} : tensor<4xf32> -> tensor<8xf32>
    // CHECK: eff.reduce_scatter %[[DG]] {world_size = 2 : i64} : tensor<8xf32> -> tensor<4xf32>
    return %l : tensor<f32>
  }
}
