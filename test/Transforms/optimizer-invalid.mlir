// RUN: effopt-opt %s --eff-optimizer --split-input-file --verify-diagnostics
// RUN: not effopt-opt %s --split-input-file --eff-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not effopt-opt %s --split-input-file --eff-optimizer="schedule=cosine warmup-steps=10 total-steps=10" 2>&1 | FileCheck %s --check-prefix=COSINE
// RUN: not effopt-opt %s --split-input-file --eff-optimizer="optimizer=sgd nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: not effopt-opt %s --split-input-file --eff-optimizer="optimizer=adafactor beta2-decay=0.5" 2>&1 | FileCheck %s --check-prefix=BETA2DECAY
// RUN: not effopt-opt %s --split-input-file --eff-optimizer="optimizer=adafactor eps2=-1" 2>&1 | FileCheck %s --check-prefix=EPS2
// RUN: not effopt-opt %s --split-input-file --eff-optimizer="optimizer=adafactor clip-threshold=0.5" 2>&1 | FileCheck %s --check-prefix=CLIPTHRESHOLD

// OPTIMIZER: optimizer must be sgd, adam, adamw, adam8bit, adamw8bit or adafactor, got 'lion'
// COSINE: the cosine schedule needs total-steps (10) > warmup-steps (10)
// NESTEROV: nesterov needs momentum > 0 and dampening 0
// BETA2DECAY: beta2-decay must be <= 0, got 0.5
// EPS2: eps2 must be >= 0, got -1
// CLIPTHRESHOLD: clip-threshold must be >= 1, got 0.5

// expected-error @below {{eff-optimizer expects func.func @forward_backward; run eff-autodiff first}}
module {
  func.func @forward() { return }
}
