//===- ZeroFill.h - The +0 fill a product accumulates into ------*- C++ -*-===//
//
// On tensors, a product that starts from zero has a linalg.fill of +0.0 of
// an empty tensor as its init: what eff-gpu-narrow-products and
// eff-gpu-fold-bias-into-products may replace.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_CONVERSION_GPUCODEGEN_ZEROFILL_H
#define EFFOPT_LIB_CONVERSION_GPUCODEGEN_ZEROFILL_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace effopt {

/// The fill of +0.0 of an empty tensor that `init` is, or null.
inline mlir::linalg::FillOp zeroFillOfEmpty(mlir::Value init) {
  auto fill = init.getDefiningOp<mlir::linalg::FillOp>();
  if (!fill || !fill.getDpsInits()[0].getDefiningOp<mlir::tensor::EmptyOp>())
    return {};
  auto value =
      fill.getDpsInputs()[0].getDefiningOp<mlir::arith::ConstantFloatOp>();
  if (!value || !value.value().isPosZero())
    return {};
  return fill;
}

} // namespace effopt

#endif // EFFOPT_LIB_CONVERSION_GPUCODEGEN_ZEROFILL_H
