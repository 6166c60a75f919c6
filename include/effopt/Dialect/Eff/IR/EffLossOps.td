//===- EffLossOps.td - losses --------------------------------*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFLOSSOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFLOSSOPS_TD

class Eff_ClassificationLossOp<string mnemonic> :
    Eff_PureOp<mnemonic, [InferTypeOpAdaptor]> {
  let results = (outs Eff_FloatTensor:$loss);
  let assemblyFormat = [{
    $reduction `,` $input `,` $labels (`weight` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Eff_SoftmaxCrossEntropyOp : Eff_ClassificationLossOp<"softmax_cross_entropy"> {
  let summary = "softmax cross-entropy with integer labels";
  let description = [{
    `torch.nn.functional.cross_entropy` / ONNX `SoftmaxCrossEntropyLoss`:
    `input` is `[N, C]` or `[N, C, d1, ...]` logits, `labels` is `[N]` or
    `[N, d1, ...]` class indices. Samples whose label equals `ignore_index`
    contribute nothing and are not counted by `mean`. With an optional
    per-class `weight`, `mean` divides by the summed weights of the counted
    samples. `reduction = none` yields the per-sample losses.

    ```mlir
    %loss = eff.softmax_cross_entropy mean, %logits, %labels {ignore_index = -100 : i64}
        : (tensor<256x256xf32>, tensor<256xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_IndexTensor:$labels,
                       Optional<Eff_FloatTensor>:$weight,
                       DefaultValuedAttr<Eff_LossReduction,
                           "::effopt::eff::LossReduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      // Stable log-softmax (5 per logit) plus the pick and reduction.
      return 5 * ::effopt::eff::detail::numElements(getInput().getType()) +
             2 * ::effopt::eff::detail::numElements(getLabels().getType());
    }
  }];
}

def Eff_NllLossOp : Eff_ClassificationLossOp<"nll_loss"> {
  let summary = "negative log-likelihood of log-probabilities";
  let description = [{
    `torch.nn.functional.nll_loss` / ONNX `NegativeLogLikelihoodLoss` on
    log-probabilities, with the same shapes, `weight`, `ignore_index` and
    `reduction` rules as `softmax_cross_entropy`.

    ```mlir
    %loss = eff.nll_loss mean, %logp, %labels
        : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_IndexTensor:$labels,
                       Optional<Eff_FloatTensor>:$weight,
                       DefaultValuedAttr<Eff_LossReduction,
                           "::effopt::eff::LossReduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return 2 * ::effopt::eff::detail::numElements(getLabels().getType());
    }
  }];
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFLOSSOPS_TD
