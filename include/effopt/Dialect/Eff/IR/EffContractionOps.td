//===- EffContractionOps.td - matrix products ---------------*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFCONTRACTIONOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFCONTRACTIONOPS_TD

def Eff_MatmulOp : Eff_PureOp<"matmul", [InferTypeOpAdaptor]> {
  let summary = "batched matrix product with broadcasting batch dimensions";
  let description = [{
    numpy `matmul` on operands of rank >= 2: the last two dimensions are
    multiplied (`[.., M, K] x [.., K, N] -> [.., M, N]`), the leading ones
    broadcast. Rank-1 operands of ONNX `MatMul` are reshaped by the importer.

    ```mlir
    %s = eff.matmul %q, %kt : (tensor<8x4x32x16xf32>, tensor<8x4x16x32xf32>) -> tensor<8x4x32x32xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$lhs, Eff_FloatTensor:$rhs);
  let results = (outs Eff_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Eff_LinearOp : Eff_PureOp<"linear", [InferTypeOpAdaptor]> {
  let summary = "GEMM-style linear layer: alpha * op(A) op(B) + beta * C";
  let description = [{
    ONNX `Gemm` on rank-2 operands: `op(X)` is `X` or its transpose as the
    flags say, and the optional `bias` broadcasts to `[M, N]`.
    `torch.nn.Linear` exports as `transpose_b = true`.

    The result has the operands' element type, except that f16/bf16
    operands with an f32 `bias` give an f32 result: the product, accumulated
    in f32, is added to the bias without rounding (a GEMM with an f32 C).
    `eff-chunk-cross-entropy` sums a weight gradient's partial products this
    way.

    ```mlir
    %y = eff.linear %x, %w, %b {transpose_b = true}
        : (tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$a, Eff_FloatTensor:$b,
                       Optional<Eff_FloatTensor>:$bias,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta);
  let results = (outs Eff_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFCONTRACTIONOPS_TD
