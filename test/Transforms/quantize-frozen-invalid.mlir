// RUN: effopt-opt %s --pass-pipeline="builtin.module(eff-quantize-frozen{names=emb})" --split-input-file --verify-diagnostics

// Asked for by name, a weight that is not only a product's weight is an
// error naming the op that reads it.
module {
  // expected-error @+1 {{cannot store 'emb' as NF4: it is read by eff.gather (operand #0), not as the weight of a matrix product}}
  eff.parameter frozen @emb : tensor<10x4xf32> = dense<1.0> : tensor<10x4xf32>
  func.func @train_step(%emb: tensor<10x4xf32> {eff.parameter = @emb}, %ids: tensor<2xi64> {eff.input = "ids"})
      -> (tensor<2x4xf32> {eff.output = "y"}) {
    %e = eff.gather %emb, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
    %y = eff.linear %e, %emb {transpose_b = true} : (tensor<2x4xf32>, tensor<10x4xf32>) -> tensor<2x10xf32>
    return %e : tensor<2x4xf32>
  }
}

// -----

// A name taken by another parameter.
module {
  // expected-error @+1 {{cannot store 'emb' as NF4: the name 'emb.absmax' is taken}}
  eff.parameter frozen @emb : tensor<10x4xf32> = dense<1.0> : tensor<10x4xf32>
  eff.parameter trainable @emb.absmax : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  func.func @train_step(%emb: tensor<10x4xf32> {eff.parameter = @emb}, %x: tensor<2x4xf32> {eff.input = "x"})
      -> (tensor<2x10xf32> {eff.output = "y"}) {
    %y = eff.linear %x, %emb {transpose_b = true} : (tensor<2x4xf32>, tensor<10x4xf32>) -> tensor<2x10xf32>
    return %y : tensor<2x10xf32>
  }
}

// -----

// expected-error @+1 {{eff-quantize-frozen needs func.func @train_step}}
module {
}
