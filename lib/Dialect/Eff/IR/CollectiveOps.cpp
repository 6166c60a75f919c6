//===- CollectiveOps.cpp - all_reduce, reduce_scatter, all_gather, shard -===//

#include "effopt/Dialect/Eff/IR/EffOps.h"

using namespace mlir;
using namespace effopt::eff;

/// The rule shared by all_reduce, all_reduce_start and wait: each result
/// has its input's type.
static LogicalResult inferSums(ValueRange inputs,
                               SmallVectorImpl<Type> &types) {
  for (Value input : inputs)
    types.push_back(input.getType());
  return success();
}

/// The rule shared by all_reduce and all_reduce_start: a bucket of at least
/// one tensor, summed over at least one rank.
static LogicalResult verifySums(Operation *op, ValueRange inputs,
                                int64_t worldSize) {
  if (inputs.empty())
    return op->emitOpError("needs at least one tensor to sum");
  if (worldSize < 1)
    return op->emitOpError("world_size must be at least 1, got ")
           << worldSize;
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferSums(adaptor.getInputs(), types);
}

LogicalResult AllReduceOp::verify() {
  return verifySums(*this, getInputs(), getWorldSize());
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

//===----------------------------------------------------------------------===//
// Split collectives
//===----------------------------------------------------------------------===//

/// A start's results are in flight: their one reader is the eff.wait that
/// takes all of them, in order, later in the same block.
static LogicalResult verifyInFlight(Operation *start) {
  if (start->getNumResults() == 0)
    return success();
  Operation *wait = nullptr;
  for (Value result : start->getResults())
    for (Operation *user : result.getUsers()) {
      if (!isa<WaitOp>(user))
        return start->emitOpError("result is in flight: only eff.wait may "
                                  "read it, not ")
               << user->getName();
      if (wait && wait != user)
        return start->emitOpError(
            "results are waited for by more than one eff.wait");
      wait = user;
    }
  if (!wait)
    return success(); // not waited for yet (a pass is building the pair)
  if (wait->getOperands() != ValueRange(start->getResults()))
    return start->emitOpError(
        "eff.wait must take every result of the start, in order");
  if (wait->getBlock() != start->getBlock() || wait->isBeforeInBlock(start))
    return start->emitOpError(
        "eff.wait must follow the start in the same block");
  return success();
}

LogicalResult AllReduceStartOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location>,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  return inferSums(adaptor.getInputs(), types);
}

LogicalResult AllReduceStartOp::verify() {
  if (failed(verifySums(*this, getInputs(), getWorldSize())))
    return failure();
  return verifyInFlight(*this);
}

LogicalResult ReduceScatterStartOp::verify() {
  if (failed(verifyBlocks(*this, getWorldSize(), getInput().getType(),
                          getResult().getType(), /*gathers=*/false)))
    return failure();
  return verifyInFlight(*this);
}

LogicalResult AllGatherStartOp::verify() {
  if (failed(verifyBlocks(*this, getWorldSize(), getInput().getType(),
                          getResult().getType(), /*gathers=*/true)))
    return failure();
  return verifyInFlight(*this);
}

LogicalResult WaitOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  return inferSums(adaptor.getInputs(), types);
}

Operation *WaitOp::getStart() {
  if (getInputs().empty())
    return nullptr;
  return getInputs().front().getDefiningOp();
}

LogicalResult WaitOp::verify() {
  Operation *start = getStart();
  if (!start ||
      !isa<AllReduceStartOp, ReduceScatterStartOp, AllGatherStartOp>(start))
    return emitOpError("waits for the results of one eff.all_reduce_start, "
                       "eff.reduce_scatter_start or eff.all_gather_start");
  // The start's verifier checks the rest of the pairing.
  return success();
}
