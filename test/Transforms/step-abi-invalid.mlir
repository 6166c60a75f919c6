// RUN: effopt-opt %s --pass-pipeline="builtin.module(eff-step-abi{alignment=48})" --verify-diagnostics

// The target's alignment must be a power of two.
// expected-error @+1 {{eff-step-abi: alignment must be a power of two, got 48}}
module {
}
