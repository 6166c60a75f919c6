// RUN: effopt-opt %s --eff-autocast=precision=bf16 -verify-diagnostics

// Autocast runs before autodiff, on the imported forward pass.
// expected-error @below {{eff-autocast expects func.func @forward as the ONNX importer builds it (run it before eff-autodiff)}}
module {
  func.func @forward_backward() {
    return
  }
}
