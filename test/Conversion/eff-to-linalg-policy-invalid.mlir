// RUN: effopt-opt %s --pass-pipeline="builtin.module(convert-eff-to-linalg{convolution=winograd})" --verify-diagnostics

// expected-error @+1 {{convert-eff-to-linalg: convolution must be im2col, direct, library or cudnn, got 'winograd'}}
module {
}
