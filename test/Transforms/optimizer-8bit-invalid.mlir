// RUN: not effopt-opt %s --eff-optimizer="optimizer=adamw8bit amsgrad=true" 2>&1 | FileCheck %s --check-prefix=AMSGRAD
// RUN: not effopt-opt %s --eff-optimizer="optimizer=adam8bit quant-block-size=0" 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not effopt-opt %s --eff-optimizer="optimizer=adamw8bit min-8bit-size=-1" 2>&1 | FileCheck %s --check-prefix=MIN
// RUN: not effopt-opt %s --eff-optimizer="optimizer=adamw4bit" 2>&1 | FileCheck %s --check-prefix=NAME

// AMSGRAD: adamw8bit has no amsgrad (8-bit moments only)
// BLOCK: quant-block-size must be > 0, got 0
// MIN: min-8bit-size must be >= 0, got -1
// NAME: optimizer must be sgd, adam, adamw, adam8bit, adamw8bit or adafactor, got 'adamw4bit'

module {
  func.func @forward_backward() { return }
}
