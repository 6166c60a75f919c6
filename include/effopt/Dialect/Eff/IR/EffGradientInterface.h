//===- EffGradientInterface.h - reverse-mode gradient rules -----*- C++ -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFGRADIENTINTERFACE_H
#define EFFOPT_DIALECT_EFF_IR_EFFGRADIENTINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"

namespace effopt::eff::detail {
/// True for ranked tensors of a floating-point element type.
bool isFloatTensor(mlir::Type type);
} // namespace effopt::eff::detail

#include "effopt/Dialect/Eff/IR/EffGradientInterface.h.inc"

namespace effopt::eff {
/// Attaches the gradient rules of every differentiable eff op.
void registerGradientInterfaceModels(mlir::DialectRegistry &registry);
} // namespace effopt::eff

#endif // EFFOPT_DIALECT_EFF_IR_EFFGRADIENTINTERFACE_H
