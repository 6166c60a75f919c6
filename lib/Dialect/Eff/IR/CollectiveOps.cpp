//===- CollectiveOps.cpp - all_reduce, reduce_scatter, all_gather, shard -===//

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

/// The rule shared by the ops that split a tensor of N*S elements into N
/// blocks of S (reduce_scatter, shard) or join them (all_gather, `gathers`).
static LogicalResult verifyBlocks(Operation *op, int64_t worldSize,
                                  Type input, Type result, bool gathers) {
  if (worldSize < 1)
    return op->emitOpError("world_size must be at least 1, got ")
           << worldSize;
  int64_t in = cast<RankedTensorType>(input).getNumElements();
  int64_t out = cast<RankedTensorType>(result).getNumElements();
  int64_t whole = gathers ? out : in, block = gathers ? in : out;
  if (whole != block * worldSize)
    return op->emitOpError("the ")
           << (gathers ? "result" : "input") << " has " << whole
           << " elements, not world_size (" << worldSize << ") x the "
           << (gathers ? "input" : "result") << "'s " << block;
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  return verifyBlocks(*this, getWorldSize(), getInput().getType(),
                      getResult().getType(), /*gathers=*/false);
}

LogicalResult AllGatherOp::verify() {
  return verifyBlocks(*this, getWorldSize(), getInput().getType(),
                      getResult().getType(), /*gathers=*/true);
}

LogicalResult ShardOp::verify() {
  return verifyBlocks(*this, getWorldSize(), getInput().getType(),
                      getResult().getType(), /*gathers=*/false);
}
