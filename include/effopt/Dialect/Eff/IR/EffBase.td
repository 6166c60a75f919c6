//===- EffBase.td - eff dialect definition, base classes, enums -*- tablegen -*-===//
//
// The `eff` dialect represents a neural-network training graph at training
// granularity: ops on statically shaped tensors with value semantics whose
// gradient and cost rules are exact and readable.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFBASE_TD
#define EFFOPT_DIALECT_EFF_IR_EFFBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Eff_Dialect : Dialect {
  let name = "eff";
  let cppNamespace = "::effopt::eff";
  let summary = "Training graphs at training granularity";
  let description = [{
    The `eff` dialect holds the forward computation of a model together with
    its loss, and later the joint forward/backward training step that effopt's
    memory passes (rematerialization, autocast, loss scaling, accumulation,
    ZeRO) transform.

    Every op works on ranked tensors with static shapes and value semantics.
    Ops are chosen at the granularity of training (`layer_norm`, `softmax`,
    `softmax_cross_entropy`, `conv2d`, `batch_norm_train` are single ops), so
    that gradient rules, FLOP/byte costs and rematerialization decisions are
    exact. Every op reports its FLOPs and bytes through `CostOpInterface`.

    Trainable parameters, frozen parameters and buffers are module-level
    `eff.parameter` symbols named as the ONNX initializers; the `forward`
    function receives them as arguments tagged with `eff.parameter`.

    Function argument and result attributes of the dialect:

    - `eff.parameter = @name` on an argument: the argument is the value of
      that `eff.parameter`, and has its type;
    - `eff.input = "name"` on an argument: the ONNX graph input it binds;
    - `eff.output = "name"` on a result: the ONNX graph output it is;
    - `eff.buffer_update = @name` on a result: the new value of that
      `buffer` parameter, with its type.

    ```mlir
    eff.parameter trainable @"fc.weight" : tensor<4x8xf32>
    eff.parameter buffer @"bn.running_mean" : tensor<4xf32>
    func.func @forward(%w: tensor<4x8xf32> {eff.parameter = @"fc.weight"},
                       %x: tensor<2x8xf32> {eff.input = "x"})
        -> (tensor<f32> {eff.output = "loss"},
            tensor<4xf32> {eff.buffer_update = @"bn.running_mean"})
    ```
  }];
  let hasConstantMaterializer = 1;
  // #eff.nf4 (EffAttrs.td).
  let useDefaultAttributePrinterParser = 1;
  // The step ABI that eff-step-abi records and the lowering, the memory
  // plan and the .effx writer read (docs/Effx.md, "The step ABI"):
  // - on the module: `eff.step_kind` ("forward" for an inference function;
  //   absent for a training step), `eff.state_bytes` and `eff.io_bytes`
  //   (region sizes), `eff.loss_offset` (the loss in io), `eff.alignment`
  //   (the target's alignment of every offset and region size);
  // - on arguments of the step: `eff.region` ("state" or "io") and
  //   `eff.offset` (bytes into that region); on results: `eff.region`,
  //   `eff.offset` and `eff.updates_arg` (the argument a result updates);
  // - on the bufferized entry function: `eff.arena_arg` (which argument is
  //   the arena) and `eff.arena_bytes` (its planned size).
  let discardableAttrs = (ins
    "::mlir::StringAttr":$step_kind,
    "::mlir::IntegerAttr":$state_bytes,
    "::mlir::IntegerAttr":$io_bytes,
    "::mlir::IntegerAttr":$loss_offset,
    "::mlir::IntegerAttr":$alignment,
    "::mlir::StringAttr":$region,
    "::mlir::IntegerAttr":$offset,
    "::mlir::IntegerAttr":$updates_arg,
    "::mlir::IntegerAttr":$arena_arg,
    "::mlir::IntegerAttr":$arena_bytes
  );
  // The step ABI's attributes on operations; `eff.parameter`, `eff.input`,
  // `eff.output`, `eff.buffer_update` and the step ABI's on function
  // arguments and results.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Eff_ParamRole : I32EnumAttr<"ParamRole", "role of a model parameter", [
    I32EnumAttrCase<"Trainable", 0, "trainable">,
    I32EnumAttrCase<"Frozen", 1, "frozen">,
    I32EnumAttrCase<"Buffer", 2, "buffer">,
    I32EnumAttrCase<"OptimizerState", 3, "optimizer_state">
  ]> {
  let cppNamespace = "::effopt::eff";
}

def Eff_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "form of the GELU activation", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Tanh", 1, "tanh">
  ]> {
  let cppNamespace = "::effopt::eff";
}

def Eff_CmpPredicate : I32EnumAttr<"CmpPredicate",
    "elementwise comparison predicate", [
    I32EnumAttrCase<"eq", 0>,
    I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>,
    I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>,
    I32EnumAttrCase<"ge", 5>
  ]> {
  let cppNamespace = "::effopt::eff";
}

def Eff_LossReduction : I32EnumAttr<"LossReduction",
    "how a per-sample loss is reduced", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Mean", 1, "mean">,
    I32EnumAttrCase<"Sum", 2, "sum">
  ]> {
  let cppNamespace = "::effopt::eff";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Eff_AnyFloat : AnyTypeOf<[F16, BF16, F32, F64], "floating-point">;
def Eff_AnyInt : AnyTypeOf<[I1, I8, I16, I32, I64, UI8, UI16, UI32, UI64], "integer">;
def Eff_Numeric : AnyTypeOf<[Eff_AnyFloat, Eff_AnyInt], "numeric">;

def Eff_Tensor : StaticShapeTensorOf<[Eff_Numeric]>;
def Eff_FloatTensor : StaticShapeTensorOf<[Eff_AnyFloat]>;
def Eff_IntTensor : StaticShapeTensorOf<[Eff_AnyInt]>;
def Eff_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Eff_BoolTensor : StaticShapeTensorOf<[I1]>;
def Eff_ScalarFloatTensor : 0DTensorOf<[Eff_AnyFloat]>;

#endif // EFFOPT_DIALECT_EFF_IR_EFFBASE_TD
