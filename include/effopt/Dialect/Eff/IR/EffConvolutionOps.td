//===- EffConvolutionOps.td - convolution and pooling --------*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFCONVOLUTIONOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFCONVOLUTIONOPS_TD

def Eff_Conv2DOp : Eff_PureOp<"conv2d", [InferTypeOpAdaptor]> {
  let summary = "2-D convolution (NCHW input, OIHW filter)";
  let description = [{
    Cross-correlation as `torch.nn.Conv2d`. `padding` is
    `[top, left, bottom, right]` (ONNX `pads` order); `groups` divides the
    input and output channels (`groups == C` is depthwise), and the filter
    is `[O, C / groups, KH, KW]`. The optional `bias` has one value per
    output channel.

    ```mlir
    %y = eff.conv2d %x, %w, %b {strides = array<i64: 1, 1>,
        padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
        : (tensor<32x1x8x8xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>) -> tensor<32x16x8x8xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, Eff_FloatTensor:$filter,
                       Optional<Eff_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Eff_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class Eff_Pool2DOp<string mnemonic> : Eff_PureOp<mnemonic, [InferTypeOpAdaptor]> {
  let results = (outs Eff_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Eff_MaxPool2DOp : Eff_Pool2DOp<"max_pool2d"> {
  let summary = "2-D max pooling (NCHW)";
  let description = [{
    As `torch.nn.MaxPool2d`; padded positions never win. `padding` is
    `[top, left, bottom, right]`; `ceil_mode` rounds the output size up.

    ```mlir
    %y = eff.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
        : tensor<32x16x8x8xf32> -> tensor<32x16x4x4xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, DenseI64ArrayAttr:$kernel_size,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
}

def Eff_AvgPool2DOp : Eff_Pool2DOp<"avg_pool2d"> {
  let summary = "2-D average pooling (NCHW)";
  let description = [{
    As `torch.nn.AvgPool2d`. `padding` is `[top, left, bottom, right]`;
    `ceil_mode` rounds the output size up. With `count_include_pad`, padded
    zeros count in the divisor (PyTorch's default); otherwise only real
    elements do.

    ```mlir
    %y = eff.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>,
        padding = array<i64: 1, 1, 1, 1>, count_include_pad = true}
        : tensor<32x32x4x4xf32> -> tensor<32x32x2x2xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, DenseI64ArrayAttr:$kernel_size,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "true">:$count_include_pad);
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFCONVOLUTIONOPS_TD
