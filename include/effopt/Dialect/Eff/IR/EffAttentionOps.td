//===- EffAttentionOps.td - scaled dot-product attention -----*- tablegen -*-===//
//
// Attention is one op so that its gradient, cost and remat rules are those
// of the whole softmax(Q K^T) V, and so that a target can lower it without
// materialising the Tq x Tk scores (FlashAttention: the forward keeps only
// the output and each row's log-sum-exp, the backward recomputes the
// probabilities tile by tile).
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFATTENTIONOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFATTENTIONOPS_TD

def Eff_AttentionOp : Eff_PureOp<"attention"> {
  let summary = "scaled dot-product attention with optional mask and dropout";
  let description = [{
    `output = dropout(softmax(scale * query key^T + mask)) value` on
    `query [.., Tq, D]`, `key [.., Tk, D]`, `value [.., Tk, Dv]` with the same
    leading (batch, head) dimensions, rank 3 or 4. Also yields `lse [.., Tq]`
    (f32), each row's log-sum-exp of the masked scores, which the backward
    reads instead of the probabilities.

    - `causal`: query row `i` sees key columns `j <= i` (PyTorch's
      `tril(ones(Tq, Tk))`, aligned top left).
    - `mask` (optional) broadcasts to `[.., Tq, Tk]`: a float mask is added
      to the scores; an `i1` mask marks the positions that are *masked out*
      (score `-inf`, as `masked_fill(mask, -inf)` and
      `nn.MultiheadAttention`'s boolean masks). It receives no gradient.
    - `dropout` (probability, 0 for none) drops probabilities with exactly
      the keep-mask `eff.dropout {ratio = dropout, seed = seed}` draws on
      the `[.., Tq, Tk]` probabilities (a function of seed, step and element
      index), scaling the kept ones by `1 / (1 - dropout)`.

    A row whose every score is `-inf` gives NaN, as PyTorch's softmax does.

    ```mlir
    %o, %lse = eff.attention %q, %k, %v mask %m {scale = 0.125 : f64, causal = true}
        : (tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x1x1x77xi1>)
        -> (tensor<2x4x77x64xf32>, tensor<2x4x77xf32>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$query, Eff_FloatTensor:$key,
                       Eff_FloatTensor:$value, Optional<Eff_Tensor>:$mask,
                       F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs Eff_FloatTensor:$output, Eff_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Tq * Tk over all batches and heads: the score matrix's elements.
    int64_t getNumScores();
  }];
}

def Eff_AttentionGradOp : Eff_PureOp<"attention_grad"> {
  let summary = "gradient of eff.attention from its output and log-sum-exp";
  let description = [{
    The gradients of `query`, `key` and `value` of an `eff.attention` with
    the same attributes, from its operands, its `output` and `lse`, and the
    output's gradient. The probabilities are recomputed from `lse`
    (`P = exp(scale q k^T + mask - lse)`), and `D = rowsum(output_grad *
    output)` replaces `rowsum(P * dP)` (FlashAttention-2), so nothing
    `Tq x Tk` needs to be kept.

    ```mlir
    %dq, %dk, %dv = eff.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.125 : f64, causal = true}
        : (tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77xf32>, tensor<2x4x77x64xf32>)
        -> (tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77x64xf32>)
    ```
  }];
  let arguments = (ins Eff_FloatTensor:$query, Eff_FloatTensor:$key,
                       Eff_FloatTensor:$value, Eff_FloatTensor:$output,
                       Eff_FloatTensor:$lse, Eff_FloatTensor:$output_grad,
                       Optional<Eff_Tensor>:$mask, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs Eff_FloatTensor:$query_grad, Eff_FloatTensor:$key_grad,
                      Eff_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $lse `,` $output_grad (`mask` $mask^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFATTENTIONOPS_TD
