//===- ModelOps.cpp - parameters and constants ----------------------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"

using namespace mlir;
using namespace effopt::eff;

LogicalResult ParameterOp::verify() {
  if (std::optional<ElementsAttr> value = getInitialValue()) {
    if (value->getType() != getType())
      return emitOpError("initial value has type ")
             << value->getType() << " but the parameter is declared "
             << getType();
  }
  if (getRole() != ParamRole::Buffer && getRole() != ParamRole::OptimizerState &&
      !isa<FloatType>(getTensorType().getElementType()))
    return emitOpError("a ")
           << stringifyParamRole(getRole())
           << " parameter must have a floating-point element type, not "
           << getTensorType().getElementType();
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getValue().getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

int64_t ConstantOp::getFlops() { return 0; }
