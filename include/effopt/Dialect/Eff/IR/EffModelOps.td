//===- EffModelOps.td - parameters and constants -----------*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFMODELOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFMODELOPS_TD

def Eff_ParameterOp : Eff_Op<"parameter", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a named model parameter or buffer with its initial value";
  let description = [{
    Declares one piece of persistent model state, named exactly as the ONNX
    initializer it came from (torch's `state_dict` name when exported with
    `do_constant_folding=False`). The role says how training treats it:

    - `trainable`: receives a gradient and is updated by the optimizer;
    - `frozen`: read-only (matched by `--freeze REGEX`);
    - `buffer`: not trained, but updated by the forward pass itself
      (BatchNorm running statistics); the `forward` function returns its new
      value in a result tagged `eff.buffer_update = @name`.

    Trainable and frozen parameters have a floating-point element type
    (frozen ones may also be `i8` storage: the packed parts of an NF4
    weight, `eff-quantize-frozen`). The
    initial value, when present, has exactly the declared type; it is
    usually a `dense_resource` blob so that large weights are neither copied
    nor printed inline, and no folder ever reads it.

    ```mlir
    eff.parameter trainable @"fc1.weight" : tensor<128x64xf32>
        = dense_resource<fc1.weight> : tensor<128x64xf32>
    ```

    The `forward` function takes every parameter as an argument tagged
    `{eff.parameter = @"fc1.weight"}`.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Eff_ParamRole:$role,
                       TypeAttrOf<Eff_Tensor>:$type,
                       OptionalAttr<ElementsAttr>:$initial_value);
  let assemblyFormat = [{
    $role $sym_name `:` $type (`=` $initial_value^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Eff_ConstantOp : Eff_PureOp<"constant", [ConstantLike, InferTypeOpAdaptor]> {
  let summary = "a constant tensor";
  let description = [{
    A constant. Non-float ONNX initializers (shapes, indices, masks) and
    `Constant` nodes import as `eff.constant`; float initializers become
    parameters instead.

    ```mlir
    %shape = eff.constant dense<[8, -1]> : tensor<2xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Eff_NF4PackOp : Eff_PureOp<"nf4_pack"> {
  let summary = "a frozen weight stored as NF4, from its four storage tensors";
  let description = [{
    Views the storage of a 4-bit NormalFloat weight (`#eff.nf4`: packed
    codes, 8-bit block absmax, nested scales, offset -- frozen parameters
    that `eff-quantize-frozen` made) as one logical tensor of the weight's
    shape and element type with the `#eff.nf4` encoding. Nothing is computed
    or stored: the only reader is the weight operand of `eff.linear`, whose
    lowering dequantizes tile by tile into a small workspace, so no
    full-precision copy of the weight ever exists.

    ```mlir
    %w = eff.nf4_pack %codes, %absmax, %nested, %offset
        : tensor<4096xi8>, tensor<128xi8>, tensor<1xf32>, tensor<f32>
        -> tensor<64x128xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[I8]>:$codes,
                       StaticShapeTensorOf<[I8]>:$absmax,
                       StaticShapeTensorOf<[F32]>:$nested_absmax,
                       0DTensorOf<[F32]>:$nested_offset);
  let results = (outs Eff_FloatTensor:$result);
  let assemblyFormat = [{
    $codes `,` $absmax `,` $nested_absmax `,` $nested_offset attr-dict `:`
    type($codes) `,` type($absmax) `,` type($nested_absmax) `,`
    type($nested_offset) `->` type($result)
  }];
  let hasVerifier = 1;
  // A view: nothing is read or written.
  let extraClassDefinition = [{
    int64_t $cppClass::getBytesRead() { return 0; }
    int64_t $cppClass::getBytesWritten() { return 0; }
  }];
  let extraClassDeclaration = [{
    int64_t getBytesRead();
    int64_t getBytesWritten();
    ::effopt::eff::NF4EncodingAttr getEncoding() {
      return ::llvm::cast<::effopt::eff::NF4EncodingAttr>(
          getResult().getType().getEncoding());
    }
  }];
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFMODELOPS_TD
