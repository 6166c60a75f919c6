//===- CollectiveOps.cpp - eff.all_reduce ---------------------------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"

using namespace mlir;
using namespace effopt::eff;

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  for (Value input : adaptor.getInputs())
    types.push_back(input.getType());
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one tensor to sum");
  if (getWorldSize() < 1)
    return emitOpError("world_size must be at least 1, got ") << getWorldSize();
  return success();
}
