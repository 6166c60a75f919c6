//===- CollectiveOps.cpp - eff.all_reduce ---------------------------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"

using namespace mlir;
using namespace effopt::eff;

LogicalResult AllReduceOp::verify() {
  if (getWorldSize() < 1)
    return emitOpError("world_size must be at least 1, got ") << getWorldSize();
  return success();
}
