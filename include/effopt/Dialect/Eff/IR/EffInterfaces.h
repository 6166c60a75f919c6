//===- EffInterfaces.h - eff op interfaces ----------------------*- C++ -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFINTERFACES_H
#define EFFOPT_DIALECT_EFF_IR_EFFINTERFACES_H

#include "mlir/IR/OpDefinition.h"

namespace effopt::eff::detail {
/// Number of elements of a statically shaped tensor type (1 for scalars).
int64_t numElements(mlir::Type type);
/// Storage bytes of a statically shaped tensor type (i1 counts as a byte).
int64_t tensorBytes(mlir::Type type);
/// Sum of `tensorBytes` over the types of `values`.
int64_t sumTensorBytes(mlir::ValueRange values);
} // namespace effopt::eff::detail

#include "effopt/Dialect/Eff/IR/EffInterfaces.h.inc"

#endif // EFFOPT_DIALECT_EFF_IR_EFFINTERFACES_H
