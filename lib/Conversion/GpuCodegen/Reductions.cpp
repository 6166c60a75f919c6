//===- Reductions.cpp - how a linalg.generic reduces, for GPU kernels -----===//

#include "effopt/Conversion/GpuCodegen/Reductions.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace effopt {

static std::optional<gpu::AllReduceOperation> reduceKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<gpu::AllReduceOperation>>(
             op)
      .Case<arith::AddFOp, arith::AddIOp>(
          [](auto) { return gpu::AllReduceOperation::ADD; })
      .Case<arith::MulFOp, arith::MulIOp>(
          [](auto) { return gpu::AllReduceOperation::MUL; })
      .Case([](arith::MaximumFOp) { return gpu::AllReduceOperation::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return gpu::AllReduceOperation::MINIMUMF; })
      .Case([](arith::MaxNumFOp) { return gpu::AllReduceOperation::MAXNUMF; })
      .Case([](arith::MinNumFOp) { return gpu::AllReduceOperation::MINNUMF; })
      .Case([](arith::MaxSIOp) { return gpu::AllReduceOperation::MAXSI; })
      .Case([](arith::MinSIOp) { return gpu::AllReduceOperation::MINSI; })
      .Case([](arith::MaxUIOp) { return gpu::AllReduceOperation::MAXUI; })
      .Case([](arith::MinUIOp) { return gpu::AllReduceOperation::MINUI; })
      .Case([](arith::AndIOp) { return gpu::AllReduceOperation::AND; })
      .Case([](arith::OrIOp) { return gpu::AllReduceOperation::OR; })
      .Case([](arith::XOrIOp) { return gpu::AllReduceOperation::XOR; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The value `x` with `x combine identity == x` for every x.
static TypedAttr identityOf(gpu::AllReduceOperation kind, Type type) {
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    switch (kind) {
    case gpu::AllReduceOperation::ADD:
      return FloatAttr::get(type, llvm::APFloat::getZero(sem));
    case gpu::AllReduceOperation::MUL:
      return FloatAttr::get(type, llvm::APFloat::getOne(sem));
    case gpu::AllReduceOperation::MAXIMUMF:
    case gpu::AllReduceOperation::MAXNUMF:
      return FloatAttr::get(type,
                            llvm::APFloat::getInf(sem, /*Negative=*/true));
    case gpu::AllReduceOperation::MINIMUMF:
    case gpu::AllReduceOperation::MINNUMF:
      return FloatAttr::get(type, llvm::APFloat::getInf(sem));
    default:
      return {};
    }
  }
  auto intType = dyn_cast<IntegerType>(type);
  if (!intType)
    return {};
  unsigned width = intType.getWidth();
  switch (kind) {
  case gpu::AllReduceOperation::ADD:
  case gpu::AllReduceOperation::OR:
  case gpu::AllReduceOperation::XOR:
  case gpu::AllReduceOperation::MAXUI:
    return IntegerAttr::get(type, llvm::APInt::getZero(width));
  case gpu::AllReduceOperation::MUL:
    return IntegerAttr::get(type, llvm::APInt(width, 1));
  case gpu::AllReduceOperation::AND:
  case gpu::AllReduceOperation::MINUI:
    return IntegerAttr::get(type, llvm::APInt::getAllOnes(width));
  case gpu::AllReduceOperation::MAXSI:
    return IntegerAttr::get(type, llvm::APInt::getSignedMinValue(width));
  case gpu::AllReduceOperation::MINSI:
    return IntegerAttr::get(type, llvm::APInt::getSignedMaxValue(width));
  default:
    return {};
  }
}

/// True when `value` (in the payload of `op`) depends on no output block
/// argument.
static bool independentOfOutputs(linalg::GenericOp op, Value value) {
  SmallVector<Value> worklist{value};
  DenseSet<Value> seen;
  Block &body = op.getRegion().front();
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == &body && arg.getArgNumber() >= op.getNumDpsInputs())
        return false;
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body)
      continue;
    if (def->getNumRegions() != 0)
      return false;
    worklist.append(def->operand_begin(), def->operand_end());
  }
  return true;
}

FailureOr<SmallVector<Combiner>> matchCombiners(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  SmallVector<Combiner> combiners;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument arg = op.getMatchingBlockArgument(&init);
    unsigned k = init.getOperandNumber() - op.getNumDpsInputs();
    if (!arg.hasOneUse())
      return failure();
    Operation *user = *arg.getUsers().begin();
    if (user->getBlock() != &body || user->getNumOperands() != 2 ||
        user->getNumResults() != 1)
      return failure();
    std::optional<gpu::AllReduceOperation> kind = reduceKind(user);
    if (!kind)
      return failure();
    Value result = user->getResult(0);
    if (!result.hasOneUse() || yield.getValues()[k] != result)
      return failure();
    Value other =
        user->getOperand(0) == arg ? user->getOperand(1) : user->getOperand(0);
    if (other == arg || !independentOfOutputs(op, other))
      return failure();
    TypedAttr identity = identityOf(*kind, arg.getType());
    if (!identity)
      return failure();
    combiners.push_back({user, *kind, identity});
  }
  return combiners;
}

std::optional<unsigned> innermostAccessedDim(linalg::GenericOp op) {
  OpOperand *widest = nullptr;
  int64_t widestRank = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<ShapedType>(input->get().getType());
    if (type && type.getRank() > widestRank) {
      widest = input;
      widestRank = type.getRank();
    }
  }
  if (!widest)
    return std::nullopt;
  AffineMap map = op.getMatchingIndexingMap(widest);
  if (auto dim = dyn_cast<AffineDimExpr>(map.getResults().back()))
    return dim.getPosition();
  return std::nullopt;
}

} // namespace effopt
