//===- EffNormalizationOps.td - softmax and normalisation ----*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFNORMALIZATIONOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFNORMALIZATIONOPS_TD

class Eff_SoftmaxLikeOp<string mnemonic, string what> :
    Eff_PureOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = what # " along one axis";
  let description = "Numerically stable " # what # " along `axis` "
    # "(in `[-rank, rank)`).\n\n```mlir\n%p = eff." # mnemonic
    # " %x {axis = -1 : i64} : tensor<8x4x32x32xf32>\n```";
  let arguments = (ins Eff_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Eff_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      // max, subtract, exp, sum, normalise.
      return 5 * ::effopt::eff::detail::numElements(getType());
    }
  }];
}

def Eff_SoftmaxOp : Eff_SoftmaxLikeOp<"softmax", "softmax">;
def Eff_LogSoftmaxOp : Eff_SoftmaxLikeOp<"log_softmax", "log-softmax">;

def Eff_LayerNormOp : Eff_PureOp<"layer_norm",
    [InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "layer normalisation over the trailing dimensions";
  let description = [{
    Normalises over dimensions `[axis, rank)` with biased variance, then
    applies the optional `scale` and `bias` (shaped like those dimensions).
    Also yields the per-row `mean` and reciprocal standard deviation `rstd`
    (shaped like the input with the normalised dimensions set to 1, as ONNX
    `LayerNormalization`), which the backward reads instead of recomputing.

    ```mlir
    %y, %mean, %rstd = eff.layer_norm %x scale %g bias %b {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<8x32x64xf32>, tensor<8x32x1xf32>, tensor<8x32x1xf32>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input,
                       Optional<Eff_FloatTensor>:$scale,
                       Optional<Eff_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Eff_FloatTensor:$output, Eff_FloatTensor:$mean,
                      Eff_FloatTensor:$rstd);
  let assemblyFormat = [{
    $input (`scale` $scale^)? (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Eff_BatchNormTrainOp : Eff_PureOp<"batch_norm_train", [InferTypeOpAdaptor]> {
  let summary = "training-mode batch normalisation with running statistics";
  let description = [{
    Normalises each channel (dimension 1) with the batch mean and biased
    batch variance, then scales and shifts. Also yields the updated running
    statistics with PyTorch's semantics:
    `new_mean = (1 - momentum) * running_mean + momentum * batch_mean` and
    the same for the variance with the *unbiased* batch variance
    (`momentum = 0.1` is `torch.nn.BatchNorm2d`'s default; ONNX's
    `momentum` is `1 -` this). `saved_mean` and `saved_rstd` are what the
    backward reads.

    ```mlir
    %y, %rm, %rv, %m, %r = eff.batch_norm_train %x, %g, %b, %mean, %var
        {epsilon = 1.0e-05 : f64, momentum = 1.0e-01 : f64}
        : (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_FloatTensor:$scale,
                       Eff_FloatTensor:$bias, Eff_FloatTensor:$running_mean,
                       Eff_FloatTensor:$running_var, F64Attr:$epsilon,
                       F64Attr:$momentum);
  let results = (outs Eff_FloatTensor:$output,
                      Eff_FloatTensor:$new_running_mean,
                      Eff_FloatTensor:$new_running_var,
                      Eff_FloatTensor:$saved_mean, Eff_FloatTensor:$saved_rstd);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Eff_BatchNormOp : Eff_PureOp<"batch_norm", [InferTypeOpAdaptor]> {
  let summary = "inference-mode batch normalisation with given statistics";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias` per channel
    (dimension 1); the statistics are inputs and are not updated.

    ```mlir
    %y = eff.batch_norm %x, %g, %b, %mean, %var {epsilon = 1.0e-05 : f64}
        : (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> tensor<32x16x8x8xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_FloatTensor:$scale,
                       Eff_FloatTensor:$bias, Eff_FloatTensor:$mean,
                       Eff_FloatTensor:$variance, F64Attr:$epsilon);
  let results = (outs Eff_FloatTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFNORMALIZATIONOPS_TD
