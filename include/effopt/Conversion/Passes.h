//===- Passes.h - lowering eff to executable code ---------------*- C++ -*-===//

#ifndef EFFOPT_CONVERSION_PASSES_H
#define EFFOPT_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace effopt {

#define GEN_PASS_DECL
#include "effopt/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "effopt/Conversion/Passes.h.inc"

/// Whether this build can lower convolutions to the runtime's oneDNN calls
/// (convert-eff-to-linalg{convolution=library}): effopt and its runtime
/// were built with oneDNN (libdnnl-dev). A target uses it to choose its
/// default convolution policy.
bool libraryConvolutionsAvailable();

} // namespace effopt

#endif // EFFOPT_CONVERSION_PASSES_H
