// RUN: effopt-opt %s --eff-loss-scaling --split-input-file -verify-diagnostics

// expected-error @below {{eff-loss-scaling expects func.func @forward_backward; run eff-autodiff first}}
module {
}

// -----

module {
  // expected-error @below {{eff-loss-scaling found no backward seed (the constant eff-autodiff marks `eff.loss_seed`)}}
  func.func @forward_backward(%x: tensor<f32>) -> (tensor<f32>) {
    return %x : tensor<f32>
  }
}
