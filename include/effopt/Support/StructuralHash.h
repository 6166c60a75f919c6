//===- StructuralHash.h - a hash for structurally equal regions -*- C++ -*-===//
//
// Passes that keep one of each set of identical kernels (eff-outline-kernels,
// eff-gpu-share-kernels) bucket them by this hash and let
// OperationEquivalence::isRegionEquivalentTo decide within a bucket.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_SUPPORT_STRUCTURALHASH_H
#define EFFOPT_SUPPORT_STRUCTURALHASH_H

#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Region.h"

namespace effopt {

/// Combines into `seed` every op of `region` in walk order: its name,
/// attributes, properties and result types (operand values and locations
/// left out), so regions that isRegionEquivalentTo (ignoring locations)
/// calls equal hash equal.
inline llvm::hash_code structuralHash(mlir::Region &region,
                                      llvm::hash_code seed) {
  region.walk([&](mlir::Operation *op) {
    seed = llvm::hash_combine(
        seed, mlir::OperationEquivalence::computeHash(
                  op, mlir::OperationEquivalence::ignoreHashValue,
                  mlir::OperationEquivalence::ignoreHashValue,
                  mlir::OperationEquivalence::IgnoreLocations));
  });
  return seed;
}

} // namespace effopt

#endif // EFFOPT_SUPPORT_STRUCTURALHASH_H
