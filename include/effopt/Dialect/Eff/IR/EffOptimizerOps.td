//===- EffOptimizerOps.td - optimizer updates and schedules --*- tablegen -*-===//
//
// Fused per-parameter updates with exactly torch.optim's semantics, and the
// learning-rate schedule computed in the step from the step counter.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFOPTIMIZEROPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFOPTIMIZEROPS_TD

def Eff_LrScheduleOp : Eff_PureOp<"lr_schedule"> {
  let summary = "the learning rate of a step, from the step counter";
  let description = [{
    `step` counts optimizer steps from 0. With `t = step` and
    `w = warmup_steps`, `T = total_steps`:

    - `constant`: `lr`;
    - `linear_warmup`: `lr * min(1, (t + 1) / w)` (then constant);
    - `cosine`: warmup as above for `t < w`, then
      `min_lr + 0.5 * (lr - min_lr) * (1 + cos(pi * p))` with
      `p = min(1, (t - w) / max(1, T - w))`.

    ```mlir
    %lr = eff.lr_schedule %step {kind = "cosine", lr = 3.0e-4 : f64,
        warmup_steps = 100 : i64, total_steps = 1000 : i64, min_lr = 0.0 : f64}
        : tensor<i64> -> tensor<f32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$step, StrAttr:$kind, F64Attr:$lr,
                       DefaultValuedAttr<I64Attr, "0">:$warmup_steps,
                       DefaultValuedAttr<I64Attr, "0">:$total_steps,
                       DefaultValuedAttr<F64Attr, "0.0">:$min_lr);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = "$step attr-dict `:` type($step) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() { return 8; }
  }];
}

def Eff_SgdUpdateOp : Eff_PureOp<"sgd_update"> {
  let summary = "one torch.optim.SGD step for one parameter";
  let description = [{
    With `g = grad + weight_decay * param` (coupled decay):
    without momentum `param - lr * g`; with momentum the buffer is `g` at
    step 0 and `momentum * buf + (1 - dampening) * g` after, and the update
    uses `g + momentum * buf` (nesterov) or `buf`. Returns the new parameter
    and, with momentum, the new buffer.

    ```mlir
    %p2, %buf2 = eff.sgd_update %p, %g, %lr, %step momentum_buffer %buf
        {momentum = 0.9 : f64, weight_decay = 0.0 : f64}
        : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>, tensor<64xf32>)
        -> (tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$param, Eff_FloatTensor:$grad,
                       0DTensorOf<[F32]>:$lr, 0DTensorOf<[I64]>:$step,
                       Optional<Eff_FloatTensor>:$momentum_buffer,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs Eff_FloatTensor:$new_param,
                      Optional<Eff_FloatTensor>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $lr `,` $step (`momentum_buffer` $momentum_buffer^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return 6 * ::effopt::eff::detail::numElements(getParam().getType());
    }
  }];
}

def Eff_AdamUpdateOp : Eff_PureOp<"adam_update"> {
  let summary = "one torch.optim.Adam / AdamW step for one parameter";
  let description = [{
    With `t = step + 1`: Adam adds `weight_decay * param` to the gradient,
    AdamW (`decoupled`) multiplies the parameter by `1 - lr * weight_decay`;
    then `m = beta1 m + (1 - beta1) g`, `v = beta2 v + (1 - beta2) g^2`
    (with `amsgrad`, `vmax = max(vmax, v)` is used instead of `v`),
    `param -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)`.

    ```mlir
    %p2, %m2, %v2 = eff.adam_update %p, %g, %m, %v, %lr, %step
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64,
         weight_decay = 0.01 : f64, decoupled}
        : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>)
        -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$param, Eff_FloatTensor:$grad,
                       Eff_FloatTensor:$exp_avg, Eff_FloatTensor:$exp_avg_sq,
                       0DTensorOf<[F32]>:$lr, 0DTensorOf<[I64]>:$step,
                       Optional<Eff_FloatTensor>:$max_exp_avg_sq,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$decoupled);
  let results = (outs Eff_FloatTensor:$new_param, Eff_FloatTensor:$new_exp_avg,
                      Eff_FloatTensor:$new_exp_avg_sq,
                      Optional<Eff_FloatTensor>:$new_max_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step
    (`max_exp_avg_sq` $max_exp_avg_sq^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return 14 * ::effopt::eff::detail::numElements(getParam().getType());
    }
  }];
}

def Eff_Adam8bitUpdateOp : Eff_PureOp<"adam8bit_update"> {
  let summary = "one block-wise 8-bit Adam / AdamW step for one parameter";
  let description = [{
    The Adam/AdamW step of `eff.adam_update` (same scalars, same order of
    operations, fp32 arithmetic) with both moments stored block-wise
    quantized as in bitsandbytes' 8-bit optimizers (Dettmers et al. 2021,
    "8-bit Optimizers via Block-wise Quantization"). The parameter,
    flattened, is cut into blocks of `block_size` elements (the last may be
    shorter). A moment is one 8-bit code per element (`tensor<...xi8>` with
    the parameter's shape, the bits of an unsigned index 0..255 into a
    256-entry map) and one f32 absmax per block:
    `value = map[code] * absmax[block]`. `m` uses the signed dynamic map,
    `v` the unsigned one (bitsandbytes' `create_dynamic_map(signed)`).

    Per block: dequantize `m` and `v`, update them in fp32 as Adam does,
    take the new absmax of each (the largest magnitude in the block), update
    the parameter from the fp32 moments, and requantize each moment to the
    nearest code of `value * (1 / max(absmax, 1e-38))` (ties to the lower
    code: the count of code midpoints below the value). Returns the new
    parameter, then the new codes and absmax of `m`, then of `v`.

    ```mlir
    %p2, %mq2, %ma2, %vq2, %va2 = eff.adam8bit_update %p, %g, %mq, %ma, %vq, %va, %lr, %step
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64,
         weight_decay = 0.01 : f64, decoupled, block_size = 256 : i64}
        : (tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xi8>, tensor<32xf32>,
           tensor<64x128xi8>, tensor<32xf32>, tensor<f32>, tensor<i64>)
        -> (tensor<64x128xf32>, tensor<64x128xi8>, tensor<32xf32>, tensor<64x128xi8>, tensor<32xf32>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$param, Eff_FloatTensor:$grad,
                       StaticShapeTensorOf<[I8]>:$exp_avg_codes,
                       1DTensorOf<[F32]>:$exp_avg_absmax,
                       StaticShapeTensorOf<[I8]>:$exp_avg_sq_codes,
                       1DTensorOf<[F32]>:$exp_avg_sq_absmax,
                       0DTensorOf<[F32]>:$lr, 0DTensorOf<[I64]>:$step,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$decoupled,
                       DefaultValuedAttr<I64Attr, "256">:$block_size);
  let results = (outs Eff_FloatTensor:$new_param,
                      StaticShapeTensorOf<[I8]>:$new_exp_avg_codes,
                      1DTensorOf<[F32]>:$new_exp_avg_absmax,
                      StaticShapeTensorOf<[I8]>:$new_exp_avg_sq_codes,
                      1DTensorOf<[F32]>:$new_exp_avg_sq_absmax);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg_codes `,` $exp_avg_absmax `,`
    $exp_avg_sq_codes `,` $exp_avg_sq_absmax `,` $lr `,` $step
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of absmax blocks of a parameter with `numElements`
    /// elements.
    static int64_t getNumBlocks(int64_t numElements, int64_t blockSize) {
      return (numElements + blockSize - 1) / blockSize;
    }
  }];
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      // Adam's 14 plus two dequantizations, two absmax and two 8-step
      // code searches per element.
      return 40 * ::effopt::eff::detail::numElements(getParam().getType());
    }
  }];
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFOPTIMIZEROPS_TD
