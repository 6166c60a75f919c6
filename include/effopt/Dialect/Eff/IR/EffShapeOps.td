//===- EffShapeOps.td - data movement and shape ops ----------*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFSHAPEOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFSHAPEOPS_TD

/// A data-movement op: no arithmetic.
class Eff_MovementOp<string mnemonic, list<Trait> traits = []> :
    Eff_PureOp<mnemonic, traits> {
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() { return 0; }
  }];
}

// Reads only its operand's type, so it overrides the cost interface's
// default of reading every operand.
def Eff_ShapeOfOp : Eff_Op<"shape_of", [Pure,
    DeclareOpInterfaceMethods<Eff_CostOpInterface, ["getBytesRead"]>,
    InferTypeOpAdaptor]> {
  let summary = "the static shape of a tensor as an i64 tensor";
  let description = [{
    ONNX `Shape`. Shapes are static, so this always folds to a constant; it
    exists so that the shape-arithmetic chains exporters emit
    (`Shape → Gather → Unsqueeze → Concat → Reshape`) fold away step by step.
    It reads no tensor data.

    ```mlir
    %s = eff.shape_of %x : tensor<8x16xf32> -> tensor<2xi64>
    ```
  }];
  let arguments = (ins Eff_Tensor:$input);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Eff_ReshapeOp : Eff_MovementOp<"reshape"> {
  let summary = "reinterpret a tensor with another static shape";
  let description = [{
    Row-major reshape to the result type's shape; element counts must match.
    ONNX `Reshape`, `Flatten`, `Squeeze` and `Unsqueeze` all import as this.

    ```mlir
    %y = eff.reshape %x : tensor<8x4x16xf32> to tensor<32x16xf32>
    ```
  }];
  let arguments = (ins Eff_Tensor:$input);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Eff_TransposeOp : Eff_MovementOp<"transpose", [InferTypeOpAdaptor]> {
  let summary = "permute dimensions";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`.

    Canonicalization composes transposes, and folds a 2-D transpose of a
    single-use `eff.linear` into the product's operands,
    `(op(A) op(B))^T = op(B)^T op(A)^T` (through a single-use `eff.cast`
    between them), so a weight gradient is computed in the weight's layout.

    ```mlir
    %y = eff.transpose %x {permutation = array<i64: 0, 2, 1, 3>}
        : tensor<8x32x4x16xf32> -> tensor<8x4x32x16xf32>
    ```
  }];
  let arguments = (ins Eff_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Eff_BroadcastToOp : Eff_MovementOp<"broadcast_to"> {
  let summary = "numpy broadcast to the result shape";
  let description = [{
    ONNX `Expand` (with the target shape folded into the result type).

    ```mlir
    %y = eff.broadcast_to %x : tensor<1x16xf32> to tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Eff_Tensor:$input);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Eff_ConcatOp : Eff_MovementOp<"concat", [InferTypeOpAdaptor]> {
  let summary = "concatenate tensors along an axis";
  let description = [{
    The inputs share rank, element type and every dimension but `axis`
    (in `[-rank, rank)`).

    ```mlir
    %y = eff.concat %a, %b {axis = 1 : i64}
        : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<8x20xf32>
    ```
  }];
  let arguments = (ins Variadic<Eff_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Eff_SliceOp : Eff_MovementOp<"slice", [InferTypeOpAdaptor]> {
  let summary = "strided slice with one start, limit and stride per dimension";
  let description = [{
    Dimension `d` of the result takes input indices
    `starts[d] + i * strides[d]` for `i` in `[0, n)`, where
    `n = max(0, ceil((limits[d] - starts[d]) / strides[d]))`. Strides are
    non-zero and may be negative; starts and limits are already clamped
    (the importer normalises ONNX's negative and out-of-range indices), so
    with a negative stride `limits[d]` may be -1.

    ```mlir
    %y = eff.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 8, 16>,
                       strides = array<i64: 1, 2>} : tensor<8x32xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Eff_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Eff_SplitOp : Eff_MovementOp<"split"> {
  let summary = "split a tensor into consecutive pieces along an axis";
  let description = [{
    The sizes of the pieces are the results' sizes along `axis`; they add up
    to the input's size there. This is how a fused QKV projection is split.

    ```mlir
    %q, %k, %v = eff.split %qkv {axis = 2 : i64}
        : tensor<8x32x192xf32> -> tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Eff_Tensor:$input, I64Attr:$axis);
  let results = (outs Variadic<Eff_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def Eff_PadOp : Eff_MovementOp<"pad", [InferTypeOpAdaptor]> {
  let summary = "pad with a constant value";
  let description = [{
    Adds `low[d]` elements before and `high[d]` after dimension `d`, all equal
    to `value` (ONNX `Pad` in constant mode with non-negative pads). For an
    integer tensor, `value` must be an integer the element type can hold.

    ```mlir
    %y = eff.pad %x {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>,
                     value = 0.0 : f64} : tensor<8x16x4x4xf32> -> tensor<8x16x6x6xf32>
    ```
  }];
  let arguments = (ins Eff_Tensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Eff_GatherOp : Eff_MovementOp<"gather", [InferTypeOpAdaptor]> {
  let summary = "gather slices along an axis (embedding lookup)";
  let description = [{
    ONNX `Gather`: `result.shape = data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. Negative indices count from the end. An embedding
    lookup is `gather` on axis 0 of the table.

    ```mlir
    %e = eff.gather %table, %ids {axis = 0 : i64}
        : (tensor<256x64xf32>, tensor<8x32xi64>) -> tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Eff_Tensor:$data, Eff_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFSHAPEOPS_TD
