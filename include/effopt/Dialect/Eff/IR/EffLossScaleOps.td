//===- EffLossScaleOps.td - dynamic loss scaling ------------*- tablegen -*-===//
//
// The two steps of mixed-precision loss scaling that are not plain
// arithmetic: unscaling every gradient while checking it for inf/NaN, and
// GradScaler's scale update. Both run inside the compiled step, so the
// scale never makes a host round trip.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFLOSSSCALEOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFLOSSSCALEOPS_TD

def Eff_UnscaleGradientsOp : Eff_PureOp<"unscale_gradients"> {
  let summary = "divide every gradient by the loss scale; report inf/NaN";
  let description = [{
    Returns each gradient multiplied by `1 / scale` (computed once in f32, as
    `torch._amp_foreach_non_finite_check_and_unscale_`) and `found_inf`, true
    when any element of any gradient (before unscaling) is inf or NaN. One
    pass over each gradient does both.

    ```mlir
    %inf, %g0, %g1 = eff.unscale_gradients %scale, %a, %b
        : (tensor<f32>, tensor<64xf32>, tensor<8x64xf32>)
        -> (tensor<i1>, tensor<64xf32>, tensor<8x64xf32>)
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$scale,
                       Variadic<Eff_FloatTensor>:$gradients);
  let results = (outs 0DTensorOf<[I1]>:$found_inf,
                      Variadic<Eff_FloatTensor>:$unscaled);
  let assemblyFormat = [{
    $scale `,` $gradients attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      int64_t n = 0;
      for (::mlir::Value g : getGradients())
        n += 2 * ::effopt::eff::detail::numElements(g.getType());
      return n;
    }
  }];
}

def Eff_UpdateLossScaleOp : Eff_PureOp<"update_loss_scale"> {
  let summary = "GradScaler's scale update, with DeepSpeed's hysteresis";
  let description = [{
    With `found_inf` false: `growth_tracker + 1`; when that reaches
    `growth_interval` the scale is multiplied by `growth_factor` and the
    tracker restarts at 0; `hysteresis` is reset to the attribute's value.
    With `found_inf` true: the tracker restarts at 0 and `hysteresis`
    decreases by one; when it reaches 0 the scale is multiplied by
    `backoff_factor` (never below `min_scale`) and `hysteresis` is reset.
    With `hysteresis = 1` this is exactly `torch.cuda.amp.GradScaler.update`.
    The scale is computed in f32 like PyTorch's.

    ```mlir
    %s2, %t2, %h2 = eff.update_loss_scale %s, %t, %h, %inf
        {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64,
         growth_interval = 2000 : i64, hysteresis = 1 : i64, min_scale = 0.0 : f64}
        : (tensor<f32>, tensor<i64>, tensor<i64>, tensor<i1>)
        -> (tensor<f32>, tensor<i64>, tensor<i64>)
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$scale,
                       0DTensorOf<[I64]>:$growth_tracker,
                       0DTensorOf<[I64]>:$hysteresis_left,
                       0DTensorOf<[I1]>:$found_inf,
                       F64Attr:$growth_factor, F64Attr:$backoff_factor,
                       I64Attr:$growth_interval, I64Attr:$hysteresis,
                       F64Attr:$min_scale);
  let results = (outs 0DTensorOf<[F32]>:$new_scale,
                      0DTensorOf<[I64]>:$new_growth_tracker,
                      0DTensorOf<[I64]>:$new_hysteresis_left);
  let assemblyFormat = [{
    $scale `,` $growth_tracker `,` $hysteresis_left `,` $found_inf attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() { return 8; }
  }];
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFLOSSSCALEOPS_TD
