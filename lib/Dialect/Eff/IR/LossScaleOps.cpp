//===- LossScaleOps.cpp - dynamic loss scaling ----------------------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"

using namespace mlir;
using namespace effopt::eff;

LogicalResult UnscaleGradientsOp::verify() {
  if (getGradients().size() != getUnscaled().size())
    return emitOpError("returns one unscaled gradient per gradient, got ")
           << getUnscaled().size() << " for " << getGradients().size();
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(getGradients(), getUnscaled())))
    if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
      return emitOpError("unscaled gradient ")
             << i << " must have its gradient's type "
             << std::get<0>(pair).getType() << ", got "
             << std::get<1>(pair).getType();
  return success();
}

LogicalResult UpdateLossScaleOp::verify() {
  if (!(getGrowthFactor().convertToDouble() >= 1.0))
    return emitOpError("growth_factor must be >= 1, got ")
           << getGrowthFactor().convertToDouble();
  double backoff = getBackoffFactor().convertToDouble();
  if (!(backoff > 0.0 && backoff <= 1.0))
    return emitOpError("backoff_factor must be in (0, 1], got ") << backoff;
  if (getGrowthInterval() < 1)
    return emitOpError("growth_interval must be >= 1, got ")
           << getGrowthInterval();
  if (getHysteresis() < 1)
    return emitOpError("hysteresis must be >= 1, got ") << getHysteresis();
  if (!(getMinScale().convertToDouble() >= 0.0))
    return emitOpError("min_scale must be >= 0");
  return success();
}
