// RUN: effopt-opt %s --eff-optimizer="optimizer=adafactor lr=0.01" --split-input-file | FileCheck %s
// RUN: effopt-opt %s --eff-optimizer="optimizer=adafactor lr=0.05 weight-decay=0.1 no-weight-decay=bias beta2-decay=-0.5 eps1=1e-6 eps2=0.01 clip-threshold=2.0" --split-input-file | FileCheck %s --check-prefix=OPTS

// torch.optim.Adafactor's state: a matrix and a 4-D tensor get a row and a
// column factor over their last two dimensions (torch's shapes), a vector
// and a scalar a full second moment.
module {
  eff.parameter trainable @w : tensor<4x3xf32>
  eff.parameter trainable @conv : tensor<2x3x5x6xf32>
  eff.parameter trainable @bias : tensor<4xf32>
  eff.parameter trainable @scale : tensor<f32>
  func.func @forward_backward(%w: tensor<4x3xf32> {eff.parameter = @w}, %conv: tensor<2x3x5x6xf32> {eff.parameter = @conv},
                              %bias: tensor<4xf32> {eff.parameter = @bias}, %scale: tensor<f32> {eff.parameter = @scale},
                              %x: tensor<2xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4x3xf32> {eff.gradient = @w}, tensor<2x3x5x6xf32> {eff.gradient = @conv},
          tensor<4xf32> {eff.gradient = @bias}, tensor<f32> {eff.gradient = @scale}) {
    %loss = eff.reduce_sum %x {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    return %loss, %w, %conv, %bias, %scale : tensor<f32>, tensor<4x3xf32>, tensor<2x3x5x6xf32>, tensor<4xf32>, tensor<f32>
  }
}

// CHECK-DAG: eff.parameter optimizer_state @optimizer.w.row_var : tensor<4x1xf32> = dense<0.000000e+00>
// CHECK-DAG: eff.parameter optimizer_state @optimizer.w.col_var : tensor<1x3xf32> = dense<0.000000e+00>
// CHECK-DAG: eff.parameter optimizer_state @optimizer.conv.row_var : tensor<2x3x5x1xf32>
// CHECK-DAG: eff.parameter optimizer_state @optimizer.conv.col_var : tensor<2x3x1x6xf32>
// CHECK-DAG: eff.parameter optimizer_state @optimizer.bias.variance : tensor<4xf32>
// CHECK-DAG: eff.parameter optimizer_state @optimizer.scale.variance : tensor<f32>
// CHECK-NOT: @optimizer.w.variance
// CHECK-NOT: exp_avg
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4x3xf32> {eff.parameter = @w}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {eff.parameter = @optimizer.step}
// CHECK-SAME: %[[ROW:[a-z0-9]+]]: tensor<4x1xf32> {eff.parameter = @optimizer.w.row_var}
// CHECK-SAME: %[[COL:[a-z0-9]+]]: tensor<1x3xf32> {eff.parameter = @optimizer.w.col_var}
// CHECK-SAME: %[[BVAR:[a-z0-9]+]]: tensor<4xf32> {eff.parameter = @optimizer.bias.variance}
// CHECK-SAME: -> (tensor<f32> {eff.output = "loss"}, tensor<4x3xf32> {eff.update = @w}, tensor<4x1xf32> {eff.update = @optimizer.w.row_var}, tensor<1x3xf32> {eff.update = @optimizer.w.col_var}, tensor<2x3x5x6xf32> {eff.update = @conv}, tensor<2x3x5x1xf32> {eff.update = @optimizer.conv.row_var}, tensor<2x3x1x6xf32> {eff.update = @optimizer.conv.col_var}, tensor<4xf32> {eff.update = @bias}, tensor<4xf32> {eff.update = @optimizer.bias.variance}, tensor<f32> {eff.update = @scale}, tensor<f32> {eff.update = @optimizer.scale.variance}, tensor<i64> {eff.update = @optimizer.step})
// The step's scalars: t = step + 1, t^beta2_decay, rho_t = min(lr, 1/sqrt(t)).
// CHECK: %[[LR:.*]] = eff.lr_schedule %[[STEP]] {kind = "constant", lr = 1.000000e-02 : f64}
// CHECK: %[[STEPF:.*]] = eff.cast %[[STEP]] : tensor<i64> to tensor<f32>
// CHECK: %[[T:.*]] = eff.add %[[STEPF]], %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: %[[DECAY:.*]] = eff.constant dense<-8.000000e-01> : tensor<f32>
// CHECK: %[[AVG:.*]] = eff.pow %[[T]], %[[DECAY]]
// CHECK: %[[RSQRT:.*]] = eff.rsqrt %[[T]] : tensor<f32>
// CHECK: %[[RHO:.*]] = eff.min %[[LR]], %[[RSQRT]]
// alpha = max(eps2, RMS(w)) * rho_t, from w before any decay.
// CHECK: %[[WSQ:.*]] = eff.mul %[[W]], %[[W]]
// CHECK: %[[WMS:.*]] = eff.reduce_mean %[[WSQ]] {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
// CHECK: %[[WRMS:.*]] = eff.sqrt %[[WMS]]
// CHECK: %[[EPS2:.*]] = eff.constant dense<1.000000e-03> : tensor<f32>
// CHECK: %[[FLOOR:.*]] = eff.max %[[WRMS]], %[[EPS2]]
// CHECK: %[[ALPHA:.*]] = eff.mul %[[FLOOR]], %[[RHO]]
// No weight decay: w itself is updated.
// CHECK-NOT: eff.sub %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>)
// The factors: means of g^2 over the last and the second-to-last dimension,
// averaged with weight t^beta2_decay (the gradient here is w).
// CHECK: %[[G2:.*]] = eff.mul %[[W]], %[[W]]
// CHECK: %[[RMEAN:.*]] = eff.reduce_mean %[[G2]] {axes = array<i64: 1>, keep_dims = true} : tensor<4x3xf32> -> tensor<4x1xf32>
// CHECK: %[[RD:.*]] = eff.sub %[[RMEAN]], %[[ROW]]
// CHECK: %[[RW:.*]] = eff.mul %[[RD]], %[[AVG]]
// CHECK: %[[NEWROW:.*]] = eff.add %[[ROW]], %[[RW]] : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
// CHECK: %[[CMEAN:.*]] = eff.reduce_mean %[[G2]] {axes = array<i64: 0>, keep_dims = true} : tensor<4x3xf32> -> tensor<1x3xf32>
// CHECK: %[[CD:.*]] = eff.sub %[[CMEAN]], %[[COL]]
// CHECK: %[[CW:.*]] = eff.mul %[[CD]], %[[AVG]]
// CHECK: %[[NEWCOL:.*]] = eff.add %[[COL]], %[[CW]] : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
// V = row * col / max(mean of row over the rows, eps1), eps1 = finfo(f32).eps.
// CHECK: %[[RROW:.*]] = eff.reduce_mean %[[NEWROW]] {axes = array<i64: 0>, keep_dims = true} : tensor<4x1xf32> -> tensor<1x1xf32>
// CHECK: %[[EPS1:.*]] = eff.constant dense<1.1920929E-7> : tensor<f32>
// CHECK: %[[RFLOOR:.*]] = eff.max %[[RROW]], %[[EPS1]]
// CHECK: %[[OUTER:.*]] = eff.mul %[[NEWROW]], %[[NEWCOL]] : (tensor<4x1xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[V:.*]] = eff.div %[[OUTER]], %[[RFLOOR]] : (tensor<4x3xf32>, tensor<1x1xf32>) -> tensor<4x3xf32>
// U = g / sqrt(max(V, eps1^2)), clipped to RMS 1.
// CHECK: %[[EPS1SQ:.*]] = eff.constant dense<1.42108547E-14> : tensor<f32>
// CHECK: %[[VF:.*]] = eff.max %[[V]], %[[EPS1SQ]]
// CHECK: %[[R:.*]] = eff.rsqrt %[[VF]]
// CHECK: %[[U:.*]] = eff.mul %[[R]], %[[W]]
// CHECK: %[[U2:.*]] = eff.mul %[[U]], %[[U]]
// CHECK: %[[UMS:.*]] = eff.reduce_mean %[[U2]] {axes = array<i64: 0, 1>}
// CHECK: %[[URMS:.*]] = eff.sqrt %[[UMS]]
// CHECK: %[[ONE:.*]] = eff.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DENOM:.*]] = eff.max %[[URMS]], %[[ONE]]
// CHECK: %[[SCALE:.*]] = eff.div %[[ALPHA]], %[[DENOM]]
// CHECK: %[[STEPU:.*]] = eff.mul %[[U]], %[[SCALE]]
// CHECK: %[[NEWW:.*]] = eff.sub %[[W]], %[[STEPU]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// The 4-D weight: factors over dimensions 3 and 2.
// CHECK: eff.reduce_mean %{{.*}} {axes = array<i64: 3>, keep_dims = true} : tensor<2x3x5x6xf32> -> tensor<2x3x5x1xf32>
// CHECK: eff.reduce_mean %{{.*}} {axes = array<i64: 2>, keep_dims = true} : tensor<2x3x5x6xf32> -> tensor<2x3x1x6xf32>
// CHECK: eff.reduce_mean %{{.*}} {axes = array<i64: 2>, keep_dims = true} : tensor<2x3x5x1xf32> -> tensor<2x3x1x1xf32>
// CHECK: eff.mul %{{.*}}, %{{.*}} : (tensor<2x3x5x1xf32>, tensor<2x3x1x6xf32>) -> tensor<2x3x5x6xf32>
// The vector: a full second moment, no factor means.
// CHECK: %[[BD:.*]] = eff.sub %{{.*}}, %[[BVAR]] : (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[BW:.*]] = eff.mul %[[BD]], %[[AVG]]
// CHECK-NEXT: %[[NEWBVAR:.*]] = eff.add %[[BVAR]], %[[BW]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: eff.constant dense<1.42108547E-14>
// CHECK-NEXT: eff.max %[[NEWBVAR]]
// CHECK: return %{{.*}}, %[[NEWW]], %[[NEWROW]], %[[NEWCOL]], {{.*}}, %[[NEWBVAR]], {{.*}}

// Options: decoupled decay w *= 1 - lr * wd (not for the no-decay group),
// beta2-decay, eps1 (and eps1^2), eps2 and clip-threshold d (RMS(U) / d).
// OPTS-LABEL: func.func @train_step(
// OPTS-SAME: %[[B:[a-z0-9]+]]: tensor<4xf32> {eff.parameter = @bias}
// OPTS: %[[LR:.*]] = eff.lr_schedule
// OPTS: eff.constant dense<-5.000000e-01> : tensor<f32>
// OPTS: eff.constant dense<0.00999999977> : tensor<f32>
// OPTS: %[[WD:.*]] = eff.constant dense<1.000000e-01> : tensor<f32>
// OPTS: %[[LRWD:.*]] = eff.mul %[[LR]], %[[WD]]
// OPTS: %[[KEEP:.*]] = eff.sub %{{.*}}, %[[LRWD]]
// OPTS: %[[DECAYED:.*]] = eff.mul %{{.*}}, %[[KEEP]] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
// OPTS: eff.constant dense<9.99999997E-7> : tensor<f32>
// OPTS: eff.constant dense<9.99999996E-13> : tensor<f32>
// OPTS: %[[D:.*]] = eff.constant dense<2.000000e+00> : tensor<f32>
// OPTS: eff.div %{{.*}}, %[[D]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// OPTS: eff.sub %[[DECAYED]], %{{.*}} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// OPTS: eff.mul %{{.*}}, %{{.*}} : (tensor<2x3x5x6xf32>, tensor<f32>) -> tensor<2x3x5x6xf32>
// OPTS-NOT: eff.mul %[[B]], %{{.*}} : (tensor<4xf32>, tensor<f32>)
// OPTS: return

// -----

// A skipped step (eff-loss-scaling's overflow flag) keeps the parameter,
// both factors and the step counter.
module {
  eff.parameter trainable @w : tensor<4x3xf32>
  func.func @forward_backward(%w: tensor<4x3xf32> {eff.parameter = @w}, %x: tensor<2xf32> {eff.input = "x"})
      -> (tensor<f32> {eff.output = "loss"}, tensor<4x3xf32> {eff.gradient = @w}, tensor<i1> {eff.skip_step}) {
    %loss = eff.reduce_sum %x {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
    %zero = eff.constant dense<0.0> : tensor<f32>
    %skip = eff.cmp gt, %loss, %zero : (tensor<f32>, tensor<f32>) -> tensor<i1>
    return %loss, %w, %skip : tensor<f32>, tensor<4x3xf32>, tensor<i1>
  }
}

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4x3xf32> {eff.parameter = @w}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {eff.parameter = @optimizer.step}
// CHECK-SAME: %[[ROW:[a-z0-9]+]]: tensor<4x1xf32> {eff.parameter = @optimizer.w.row_var}
// CHECK-SAME: %[[COL:[a-z0-9]+]]: tensor<1x3xf32> {eff.parameter = @optimizer.w.col_var}
// CHECK: %[[SKIP:.*]] = eff.cmp gt
// CHECK-DAG: %[[KW:.*]] = eff.where %[[SKIP]], %[[W]], %{{.*}} : (tensor<i1>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-DAG: %[[KROW:.*]] = eff.where %[[SKIP]], %[[ROW]], %{{.*}} : (tensor<i1>, tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
// CHECK-DAG: %[[KCOL:.*]] = eff.where %[[SKIP]], %[[COL]], %{{.*}} : (tensor<i1>, tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
// CHECK-DAG: %[[KSTEP:.*]] = eff.where %[[SKIP]], %[[STEP]], %{{.*}} : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK: return %{{.*}}, %[[KW]], %[[KROW]], %[[KCOL]], %[[KSTEP]]
