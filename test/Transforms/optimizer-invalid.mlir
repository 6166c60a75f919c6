// RUN: effopt-opt %s --eff-optimizer --split-input-file --verify-diagnostics
// RUN: not effopt-opt %s --split-input-file --eff-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not effopt-opt %s --split-input-file --eff-optimizer="schedule=cosine warmup-steps=10 total-steps=10" 2>&1 | FileCheck %s --check-prefix=COSINE
// RUN: not effopt-opt %s --split-input-file --eff-optimizer="optimizer=sgd nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV

// OPTIMIZER: optimizer must be sgd, adam, adamw, adam8bit or adamw8bit, got 'lion'
// COSINE: the cosine schedule needs total-steps (10) > warmup-steps (10)
// NESTEROV: nesterov needs momentum > 0 and dampening 0

// expected-error @below {{eff-optimizer expects func.func @forward_backward; run eff-autodiff first}}
module {
  func.func @forward() { return }
}
