//===- OptimizerOps.cpp - optimizer updates and schedules -----------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"

using namespace mlir;
using namespace effopt::eff;

LogicalResult LrScheduleOp::verify() {
  StringRef kind = getKind();
  if (kind != "constant" && kind != "linear_warmup" && kind != "cosine")
    return emitOpError("kind must be constant, linear_warmup or cosine, got '")
           << kind << "'";
  if (getWarmupSteps() < 0 || getTotalSteps() < 0)
    return emitOpError("step counts must be >= 0");
  if (kind == "cosine" && getTotalSteps() <= getWarmupSteps())
    return emitOpError("cosine decay needs total_steps (")
           << getTotalSteps() << ") > warmup_steps (" << getWarmupSteps()
           << ")";
  return success();
}

/// Every state operand and result has the parameter's type.
static LogicalResult verifySameAsParam(Operation *op, Type paramType,
                                       ValueRange values, StringRef what) {
  for (Value value : values)
    if (value && value.getType() != paramType)
      return op->emitOpError() << what << " must have the parameter's type "
                               << paramType << ", got " << value.getType();
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  bool hasMomentum = getMomentum().convertToDouble() != 0.0;
  if (hasMomentum != static_cast<bool>(getMomentumBuffer()))
    return emitOpError("a momentum buffer is needed exactly when momentum != 0");
  if (static_cast<bool>(getMomentumBuffer()) !=
      static_cast<bool>(getNewMomentumBuffer()))
    return emitOpError("returns a new momentum buffer exactly when it takes one");
  if (getNesterov() && (!hasMomentum || getDampening().convertToDouble() != 0))
    return emitOpError("nesterov needs momentum and zero dampening");
  return verifySameAsParam(*this, getParam().getType(),
                           {getGrad(), getMomentumBuffer(), getNewParam(),
                            getNewMomentumBuffer()},
                           "gradient and state");
}

LogicalResult AdamUpdateOp::verify() {
  if (static_cast<bool>(getMaxExpAvgSq()) !=
      static_cast<bool>(getNewMaxExpAvgSq()))
    return emitOpError("returns a new max_exp_avg_sq exactly when it takes one "
                       "(amsgrad)");
  for (double beta : {getBeta1().convertToDouble(), getBeta2().convertToDouble()})
    if (!(beta >= 0.0 && beta < 1.0))
      return emitOpError("betas must be in [0, 1), got ") << beta;
  return verifySameAsParam(*this, getParam().getType(),
                           {getGrad(), getExpAvg(), getExpAvgSq(),
                            getMaxExpAvgSq(), getNewParam(), getNewExpAvg(),
                            getNewExpAvgSq(), getNewMaxExpAvgSq()},
                           "gradient and state");
}

LogicalResult Adam8bitUpdateOp::verify() {
  for (double beta : {getBeta1().convertToDouble(), getBeta2().convertToDouble()})
    if (!(beta >= 0.0 && beta < 1.0))
      return emitOpError("betas must be in [0, 1), got ") << beta;
  int64_t blockSize = getBlockSize();
  if (blockSize <= 0)
    return emitOpError("block_size must be > 0, got ") << blockSize;
  auto paramType = cast<RankedTensorType>(getParam().getType());
  if (failed(verifySameAsParam(*this, paramType,
                               {getGrad(), getNewParam()}, "gradient")))
    return failure();
  auto codesType = paramType.clone(IntegerType::get(getContext(), 8));
  for (Value value : {getExpAvgCodes(), getExpAvgSqCodes(),
                      getNewExpAvgCodes(), getNewExpAvgSqCodes()})
    if (value.getType() != codesType)
      return emitOpError("codes must be ")
             << codesType << " (one per element of the parameter), got "
             << value.getType();
  int64_t blocks =
      getNumBlocks(paramType.getNumElements(), blockSize);
  auto absmaxType =
      RankedTensorType::get({blocks}, Float32Type::get(getContext()));
  for (Value value : {getExpAvgAbsmax(), getExpAvgSqAbsmax(),
                      getNewExpAvgAbsmax(), getNewExpAvgSqAbsmax()})
    if (value.getType() != absmaxType)
      return emitOpError("absmax must be ")
             << absmaxType << " (one per block of " << blockSize
             << " elements), got " << value.getType();
  return success();
}
