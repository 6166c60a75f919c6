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

    Trainable and frozen parameters have a floating-point element type. The
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

#endif // EFFOPT_DIALECT_EFF_IR_EFFMODELOPS_TD
