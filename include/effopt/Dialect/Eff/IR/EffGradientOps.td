//===- EffGradientOps.td - backward-only ops -----------------*- tablegen -*-===//
//
// Ops that only appear in the backward pass, where composing the gradient
// from forward ops would be slow or numerically poor. Each states its cost.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFGRADIENTOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFGRADIENTOPS_TD

def Eff_SaveOp : Eff_PureOp<"save", [SameOperandsAndResultType]> {
  let summary = "a forward value kept for the backward pass";
  let description = [{
    Marks a forward value that the backward pass reads. `eff-autodiff` routes
    every such read through exactly one `eff.save`, so the set of saved
    activations is explicit in the IR; `eff-remat` replaces a save by a
    recomputation in the backward, and the memory planner counts what
    remains as activation memory. Lowers to nothing.

    ```mlir
    %s = eff.save %h : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Eff_Tensor:$input);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() { return 0; }
    int64_t $cppClass::getBytesRead() { return 0; }
    int64_t $cppClass::getBytesWritten() { return 0; }
  }];
  let extraClassDeclaration = [{
    int64_t getBytesRead();
    int64_t getBytesWritten();
  }];
}

class Eff_SoftmaxGradLikeOp<string mnemonic, string formula> :
    Eff_PureOp<mnemonic, [AllTypesMatch<["output", "output_grad", "input_grad"]>]> {
  let summary = "gradient of " # !subst("_grad", "", mnemonic) # " from its output";
  let description = "`input_grad = " # formula # "` along `axis`, where `y` "
    # "is the forward output and `dy` its gradient: reads the saved output, "
    # "not the input.\n\n```mlir\n%dx = eff." # mnemonic
    # " %y, %dy {axis = 1 : i64} : tensor<8x10xf32>\n```";
  let arguments = (ins Eff_FloatTensor:$output, Eff_FloatTensor:$output_grad,
                       I64Attr:$axis);
  let results = (outs Eff_FloatTensor:$input_grad);
  let assemblyFormat = "$output `,` $output_grad attr-dict `:` type($input_grad)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return 4 * ::effopt::eff::detail::numElements(getType());
    }
  }];
}

def Eff_SoftmaxGradOp : Eff_SoftmaxGradLikeOp<"softmax_grad",
                                               "y * (dy - sum(dy * y))">;
def Eff_LogSoftmaxGradOp : Eff_SoftmaxGradLikeOp<"log_softmax_grad",
                                                  "dy - exp(y) * sum(dy)">;

class Eff_ClassificationLossGradOp<string mnemonic, string what> :
    Eff_PureOp<mnemonic> {
  let summary = "gradient of " # what # " with respect to its input";
  let results = (outs Eff_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $reduction `,` $input `,` $labels `,` $loss_grad (`weight` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Eff_SoftmaxCrossEntropyGradOp :
    Eff_ClassificationLossGradOp<"softmax_cross_entropy_grad",
                                 "softmax cross-entropy"> {
  let description = [{
    `(softmax(input) - onehot(labels)) * w * loss_grad / norm` per sample,
    zero for ignored samples, where `norm` is the number (or summed class
    weight) of counted samples for `mean` and 1 otherwise; computed stably
    from the logits in one pass.

    ```mlir
    %dx = eff.softmax_cross_entropy_grad mean, %logits, %labels, %dloss {ignore_index = -100 : i64}
        : (tensor<32x10xf32>, tensor<32xi64>, tensor<f32>) -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_IndexTensor:$labels,
                       Eff_FloatTensor:$loss_grad,
                       Optional<Eff_FloatTensor>:$weight,
                       Eff_LossReduction:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return 6 * ::effopt::eff::detail::numElements(getType());
    }
  }];
}

def Eff_NllLossGradOp :
    Eff_ClassificationLossGradOp<"nll_loss_grad", "negative log-likelihood"> {
  let description = [{
    `-w * loss_grad / norm` at each sample's label, zero elsewhere (and for
    ignored samples); `input` only gives the shape.

    ```mlir
    %dx = eff.nll_loss_grad mean, %logp, %labels, %dloss
        : (tensor<32x10xf32>, tensor<32xi64>, tensor<f32>) -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_IndexTensor:$labels,
                       Eff_FloatTensor:$loss_grad,
                       Optional<Eff_FloatTensor>:$weight,
                       Eff_LossReduction:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return 2 * ::effopt::eff::detail::numElements(getLabels().getType());
    }
    int64_t $cppClass::getBytesRead() {
      return ::effopt::eff::detail::tensorBytes(getLabels().getType()) +
             ::effopt::eff::detail::tensorBytes(getLossGrad().getType());
    }
  }];
  let extraClassDeclaration = [{
    int64_t getBytesRead();
  }];
}

def Eff_LayerNormGradOp : Eff_PureOp<"layer_norm_grad"> {
  let summary = "gradient of layer_norm from the saved statistics";
  let description = [{
    Reads the forward input and the `mean` / `rstd` that `eff.layer_norm`
    returned (never recomputing them) and yields the gradients of the input,
    the scale and the bias (the last two shaped like the normalised
    dimensions; without a scale the input gradient uses scale 1).

    ```mlir
    %dx, %dg, %db = eff.layer_norm_grad %x, %mean, %rstd, %dy scale %g {axis = 2 : i64}
        : (tensor<8x32x64xf32>, tensor<8x32x1xf32>, tensor<8x32x1xf32>, tensor<8x32x64xf32>, tensor<64xf32>)
        -> (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_FloatTensor:$mean,
                       Eff_FloatTensor:$rstd, Eff_FloatTensor:$output_grad,
                       Optional<Eff_FloatTensor>:$scale, I64Attr:$axis);
  let results = (outs Eff_FloatTensor:$input_grad,
                      Eff_FloatTensor:$scale_grad,
                      Eff_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $mean `,` $rstd `,` $output_grad (`scale` $scale^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return 10 * ::effopt::eff::detail::numElements(getInput().getType());
    }
  }];
}

def Eff_BatchNormTrainGradOp : Eff_PureOp<"batch_norm_train_grad"> {
  let summary = "gradient of training-mode batch_norm from the saved statistics";
  let description = [{
    Reads the forward input and the batch `saved_mean` / `saved_rstd` and
    yields the gradients of the input, the scale and the bias.

    ```mlir
    %dx, %dg, %db = eff.batch_norm_train_grad %x, %m, %r, %g, %dy
        : (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<32x16x8x8xf32>)
        -> (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_FloatTensor:$saved_mean,
                       Eff_FloatTensor:$saved_rstd, Eff_FloatTensor:$scale,
                       Eff_FloatTensor:$output_grad);
  let results = (outs Eff_FloatTensor:$input_grad,
                      Eff_FloatTensor:$scale_grad,
                      Eff_FloatTensor:$bias_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return 10 * ::effopt::eff::detail::numElements(getInput().getType());
    }
  }];
}

def Eff_Conv2DInputGradOp : Eff_PureOp<"conv2d_input_grad"> {
  let summary = "gradient of conv2d with respect to its input";
  let description = [{
    The transposed convolution of `output_grad` with `filter`, producing the
    result type (the forward input's type), with the forward op's window
    attributes.

    ```mlir
    %dx = eff.conv2d_input_grad %dy, %w {strides = array<i64: 1, 1>,
        padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
        : (tensor<32x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<32x1x8x8xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$output_grad, Eff_FloatTensor:$filter,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Eff_FloatTensor:$input_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Eff_Conv2DFilterGradOp : Eff_PureOp<"conv2d_filter_grad"> {
  let summary = "gradient of conv2d with respect to its filter";
  let description = [{
    Correlates the forward input with `output_grad`, producing the result
    type (the filter's type), with the forward op's window attributes.

    ```mlir
    %dw = eff.conv2d_filter_grad %x, %dy {strides = array<i64: 1, 1>,
        padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
        : (tensor<32x1x8x8xf32>, tensor<32x16x8x8xf32>) -> tensor<16x1x3x3xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_FloatTensor:$output_grad,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Eff_FloatTensor:$filter_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Eff_MaxPool2DGradOp : Eff_PureOp<"max_pool2d_grad"> {
  let summary = "gradient of max_pool2d";
  let description = [{
    Routes each output gradient to the position of its window's maximum in
    the forward input (the first one, as PyTorch, on ties).

    ```mlir
    %dx = eff.max_pool2d_grad %x, %dy {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
        : (tensor<32x16x8x8xf32>, tensor<32x16x4x4xf32>) -> tensor<32x16x8x8xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_FloatTensor:$output_grad,
                       DenseI64ArrayAttr:$kernel_size,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Eff_FloatTensor:$input_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Eff_AvgPool2DGradOp : Eff_PureOp<"avg_pool2d_grad"> {
  let summary = "gradient of avg_pool2d";
  let description = [{
    Spreads each output gradient evenly over its window (with the forward
    op's divisor rule), producing the result type (the forward input's).

    ```mlir
    %dx = eff.avg_pool2d_grad %dy {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        padding = array<i64: 0, 0, 0, 0>} : (tensor<32x16x4x4xf32>) -> tensor<32x16x8x8xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$output_grad,
                       DenseI64ArrayAttr:$kernel_size,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "true">:$count_include_pad);
  let results = (outs Eff_FloatTensor:$input_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Eff_GatherGradOp : Eff_PureOp<"gather_grad"> {
  let summary = "scatter-add of a gather's output gradient (embedding gradient)";
  let description = [{
    A zero tensor of the result type (the gathered data's type) into which
    each slice of `output_grad` is added at its index along `axis`; repeated
    indices accumulate.

    ```mlir
    %dtable = eff.gather_grad %ids, %de {axis = 0 : i64}
        : (tensor<8x32xi64>, tensor<8x32x64xf32>) -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Eff_IndexTensor:$indices, Eff_FloatTensor:$output_grad,
                       I64Attr:$axis);
  let results = (outs Eff_FloatTensor:$data_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return ::effopt::eff::detail::numElements(getOutputGrad().getType());
    }
  }];
}

def Eff_GeluGradOp : Eff_PureOp<"gelu_grad",
    [AllTypesMatch<["input", "output_grad", "input_grad"]>]> {
  let summary = "gradient of gelu from its input";
  let description = [{
    `dy * gelu'(x)` for the same `approximate` form as the forward op.

    ```mlir
    %dx = eff.gelu_grad %x, %dy : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_FloatTensor:$output_grad,
      DefaultValuedAttr<Eff_GeluApproximation,
                        "::effopt::eff::GeluApproximation::None">:$approximate);
  let results = (outs Eff_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $input `,` $output_grad (`approximate` $approximate^)? attr-dict `:` type($input_grad)
  }];
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return 12 * ::effopt::eff::detail::numElements(getType());
    }
  }];
}

def Eff_SliceGradOp : Eff_PureOp<"slice_grad"> {
  let summary = "gradient of slice: the output gradient placed in zeros";
  let description = [{
    A zero tensor of the result type (the sliced input's type) with
    `output_grad` written at the positions the forward `eff.slice` with the
    same `starts`, `limits` and `strides` read.

    ```mlir
    %dx = eff.slice_grad %dy {starts = array<i64: 0, 0>, limits = array<i64: 8, 16>,
        strides = array<i64: 1, 2>} : (tensor<8x8xf32>) -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$output_grad, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Eff_FloatTensor:$input_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() { return 0; }
  }];
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFGRADIENTOPS_TD
