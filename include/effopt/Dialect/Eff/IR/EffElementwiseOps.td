//===- EffElementwiseOps.td - elementwise ops ---------------*- tablegen -*-===//
//
// Unary math, binary arithmetic with numpy broadcasting, comparisons,
// selection and casts.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFELEMENTWISEOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFELEMENTWISEOPS_TD

/// Unary elementwise op; `flopsPerElement` is its cost per output element.
class Eff_UnaryOp<string mnemonic, Type tensorType, int flopsPerElement,
                  list<Trait> traits = []> :
    Eff_PureOp<mnemonic, !listconcat([Elementwise, SameOperandsAndResultType],
                                     traits)> {
  let arguments = (ins tensorType:$input);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return ::effopt::eff::detail::numElements(getType()) * }]
      # flopsPerElement # [{;
    }
  }];
}

class Eff_UnaryFloatOp<string mnemonic, int flops, string math> :
    Eff_UnaryOp<mnemonic, Eff_FloatTensor, flops> {
  let summary = "elementwise " # math;
  let description = "Computes `" # math # "` for every element.\n\n"
    # "```mlir\n%y = eff." # mnemonic # " %x : tensor<4x8xf32>\n```";
}

def Eff_NegOp : Eff_UnaryOp<"neg", Eff_Tensor, 1> {
  let summary = "elementwise negation";
  let description = [{
    Computes `-x` for every element. On integers it wraps: the most negative
    value is its own negation.

    ```mlir
    %y = eff.neg %x : tensor<4xf32>
    ```
  }];
  let hasFolder = 1;
}
def Eff_AbsOp : Eff_UnaryOp<"abs", Eff_Tensor, 1> {
  let summary = "elementwise absolute value";
  let description = [{
    Computes `|x|` for every element.

    ```mlir
    %y = eff.abs %x : tensor<4xf32>
    ```
  }];
}
def Eff_ExpOp : Eff_UnaryFloatOp<"exp", 1, "exp(x)">;
def Eff_LogOp : Eff_UnaryFloatOp<"log", 1, "log(x)">;
def Eff_SqrtOp : Eff_UnaryFloatOp<"sqrt", 1, "sqrt(x)">;
def Eff_RsqrtOp : Eff_UnaryFloatOp<"rsqrt", 2, "1 / sqrt(x)">;
def Eff_ReciprocalOp : Eff_UnaryFloatOp<"reciprocal", 1, "1 / x">;
def Eff_TanhOp : Eff_UnaryFloatOp<"tanh", 1, "tanh(x)">;
def Eff_SigmoidOp : Eff_UnaryFloatOp<"sigmoid", 3, "1 / (1 + exp(-x))">;
def Eff_ReluOp : Eff_UnaryFloatOp<"relu", 1, "max(x, 0)">;
def Eff_ErfOp : Eff_UnaryFloatOp<"erf", 1, "erf(x)">;

def Eff_GeluOp : Eff_UnaryOp<"gelu", Eff_FloatTensor, 0> {
  let summary = "GELU activation, exact (erf) or tanh-approximated";
  let description = [{
    `approximate = none` computes `0.5 * x * (1 + erf(x / sqrt(2)))`, as
    `torch.nn.GELU()`; `approximate = tanh` computes
    `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`. The importer
    recognises the erf decomposition that exporters emit.

    ```mlir
    %y = eff.gelu %x approximate tanh : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input,
      DefaultValuedAttr<Eff_GeluApproximation,
                        "::effopt::eff::GeluApproximation::None">:$approximate);
  let assemblyFormat = [{
    $input (`approximate` $approximate^)? attr-dict `:` type($result)
  }];
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      // erf form: divide, erf, add, multiply twice. tanh form: cube (two
      // multiplies), scale, add, scale, tanh, add, multiply twice.
      int64_t perElement =
          getApproximate() == ::effopt::eff::GeluApproximation::Tanh ? 9 : 5;
      return perElement * ::effopt::eff::detail::numElements(getType());
    }
  }];
}

def Eff_LogicalNotOp : Eff_UnaryOp<"logical_not", Eff_BoolTensor, 1> {
  let summary = "elementwise boolean negation";
  let description = [{
    Computes `!m` for every element of an `i1` tensor.

    ```mlir
    %y = eff.logical_not %m : tensor<4xi1>
    ```
  }];
  let hasFolder = 1;
}

/// Binary elementwise op with numpy broadcasting; the result shape is the
/// broadcast of the operand shapes.
class Eff_BroadcastBinaryOp<string mnemonic, Type operandType, Type resultType,
                            int flopsPerElement, list<Trait> traits = []> :
    Eff_PureOp<mnemonic, !listconcat([InferTypeOpAdaptor], traits)> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return ::effopt::eff::detail::numElements(getType()) * }]
      # flopsPerElement # [{;
    }
  }];
}

/// `extra` is appended to the description: what is special about the op.
class Eff_ArithOp<string mnemonic, string math, int flops,
                  list<Trait> traits = [], string extra = ""> :
    Eff_BroadcastBinaryOp<mnemonic, Eff_Tensor, Eff_Tensor, flops, traits> {
  let summary = "elementwise " # math # " with numpy broadcasting";
  let description = "Computes `" # math # "` for every element. Both operands "
    # "have the same element type; shapes broadcast as in numpy. Integer "
    # "arithmetic wraps on overflow; `uiN` and `i1` compare and divide as "
    # "unsigned, other integers as signed." # extra # "\n\n"
    # "```mlir\n%z = eff." # mnemonic
    # " %x, %y : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>\n```";
  let hasFolder = 1;
}

def Eff_AddOp : Eff_ArithOp<"add", "x + y", 1, [Commutative]>;
def Eff_SubOp : Eff_ArithOp<"sub", "x - y", 1>;
def Eff_MulOp : Eff_ArithOp<"mul", "x * y", 1, [Commutative]>;
def Eff_DivOp : Eff_ArithOp<"div", "x / y", 1, [],
    " Integer division truncates toward zero; an integer divided by zero, "
    # "and the most negative signed value divided by -1, are undefined.">;
def Eff_PowOp : Eff_ArithOp<"pow", "x ^ y", 1, [],
    " An integer to a negative integer power is undefined.">;
def Eff_MaxOp : Eff_ArithOp<"max", "max(x, y)", 1, [Commutative],
    " A NaN operand gives NaN.">;
def Eff_MinOp : Eff_ArithOp<"min", "min(x, y)", 1, [Commutative],
    " A NaN operand gives NaN.">;

def Eff_LogicalAndOp : Eff_BroadcastBinaryOp<"logical_and", Eff_BoolTensor,
                                             Eff_BoolTensor, 1, [Commutative]> {
  let summary = "elementwise boolean and with broadcasting";
  let description = [{
    `a && b` on `i1` tensors whose shapes broadcast as in numpy.

    ```mlir
    %m = eff.logical_and %a, %b : (tensor<4x4xi1>, tensor<4xi1>) -> tensor<4x4xi1>
    ```
  }];
}
def Eff_LogicalOrOp : Eff_BroadcastBinaryOp<"logical_or", Eff_BoolTensor,
                                            Eff_BoolTensor, 1, [Commutative]> {
  let summary = "elementwise boolean or with broadcasting";
  let description = [{
    `a || b` on `i1` tensors whose shapes broadcast as in numpy.

    ```mlir
    %m = eff.logical_or %a, %b : (tensor<4x4xi1>, tensor<4xi1>) -> tensor<4x4xi1>
    ```
  }];
}

def Eff_CmpOp : Eff_PureOp<"cmp", [InferTypeOpAdaptor]> {
  let summary = "elementwise comparison with broadcasting";
  let description = [{
    Compares two tensors of the same element type and yields an `i1` tensor
    of the broadcast shape. `uiN` and `i1` compare as unsigned, other
    integers as signed; a NaN compares unordered (only `ne` holds).

    ```mlir
    %m = eff.cmp eq, %a, %b : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
    ```
  }];
  let arguments = (ins Eff_CmpPredicate:$predicate, Eff_Tensor:$lhs,
                       Eff_Tensor:$rhs);
  let results = (outs Eff_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Eff_WhereOp : Eff_PureOp<"where", [InferTypeOpAdaptor]> {
  let summary = "elementwise selection with broadcasting";
  let description = [{
    `result = condition ? true_value : false_value`, all three broadcast
    together (numpy `where`). This is how causal attention masks appear.

    ```mlir
    %s = eff.where %mask, %scores, %neg_inf
        : (tensor<1x1x32x32xi1>, tensor<8x4x32x32xf32>, tensor<f32>) -> tensor<8x4x32x32xf32>
    ```
  }];
  let arguments = (ins Eff_BoolTensor:$condition, Eff_Tensor:$true_value,
                       Eff_Tensor:$false_value);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Eff_CastOp : Eff_PureOp<"cast", [Elementwise]> {
  let summary = "elementwise conversion of the element type";
  let description = [{
    Converts every element to the result's element type, keeping the shape:
    floats round to nearest even; float to integer truncates toward zero
    (NaN and values outside the integer type's range are undefined);
    integer to integer wraps, extending by the source's signedness (`i1` and
    `uiN` are unsigned, other integers signed); anything to `i1` is `!= 0`.

    ```mlir
    %y = eff.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
    ```
  }];
  let arguments = (ins Eff_Tensor:$input);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def Eff_DropoutOp : Eff_PureOp<"dropout", [InferTypeOpAdaptor]> {
  let summary = "training-mode dropout with a reproducible mask";
  let description = [{
    Zeroes each element with probability `ratio` and scales the rest by
    `1 / (1 - ratio)`. Also returns the keep-mask, which the backward reuses.
    The mask is a pure function of `seed`, the training step and the element
    index, so recomputing it (rematerialization) gives the same mask.
    Inference-mode dropout is the identity and is not represented.

    ```mlir
    %y, %mask = eff.dropout %x {ratio = 1.000000e-01 : f64, seed = 7 : i64}
        : tensor<8x64xf32> -> (tensor<8x64xf32>, tensor<8x64xi1>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$input, F64Attr:$ratio, I64Attr:$seed);
  let results = (outs Eff_FloatTensor:$output, Eff_BoolTensor:$mask);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` `(` type($output) `,` type($mask) `)`
  }];
  let hasVerifier = 1;
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFELEMENTWISEOPS_TD
