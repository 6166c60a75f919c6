//===- EffDialect.cpp - eff dialect registration and helpers --------------===//

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace effopt::eff;

#include "effopt/Dialect/Eff/IR/EffEnums.cpp.inc"
#include "effopt/Dialect/Eff/IR/EffGradientInterface.cpp.inc"
#include "effopt/Dialect/Eff/IR/EffInterfaces.cpp.inc"
#include "effopt/Dialect/Eff/IR/EffOpsDialect.cpp.inc"

void EffDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "effopt/Dialect/Eff/IR/EffOps.cpp.inc"
      >();
}

Operation *EffDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

/// The `eff.parameter` that `attribute` (on `what` of the function `op`, of
/// type `type`) names, or a diagnostic.
static FailureOr<ParameterOp> lookupParameter(Operation *op, StringRef what,
                                              NamedAttribute attribute,
                                              Type type) {
  auto symbol = dyn_cast<FlatSymbolRefAttr>(attribute.getValue());
  if (!symbol)
    return op->emitOpError()
           << what << " attribute '" << attribute.getName().getValue()
           << "' must name an eff.parameter (@name), got "
           << attribute.getValue();
  auto parameter =
      SymbolTable::lookupNearestSymbolFrom<ParameterOp>(op, symbol);
  if (!parameter)
    return op->emitOpError()
           << what << " attribute '" << attribute.getName().getValue()
           << "' names " << symbol << ", which is not an eff.parameter";
  // A parameter without a type is reported by its own verifier.
  // After bufferization the value is a buffer of the same shape and type.
  TypeAttr declared = parameter.getTypeAttr();
  auto sameShapeAndType = [](Type a, Type b) {
    auto sa = dyn_cast<ShapedType>(a), sb = dyn_cast<ShapedType>(b);
    return sa && sb && sa.getShape() == sb.getShape() &&
           sa.getElementType() == sb.getElementType();
  };
  if (declared && declared.getValue() != type &&
      !(isa<BaseMemRefType>(type) &&
        sameShapeAndType(declared.getValue(), type)))
    return op->emitOpError()
           << what << " has type " << type << " but " << symbol
           << " is declared " << declared.getValue();
  return parameter;
}

/// Checks that `attribute` on `what` of `op` is a string.
static LogicalResult verifyNameAttribute(Operation *op, StringRef what,
                                         NamedAttribute attribute) {
  if (!isa<StringAttr>(attribute.getValue()))
    return op->emitOpError()
           << what << " attribute '" << attribute.getName().getValue()
           << "' must be a string, got " << attribute.getValue();
  return success();
}

LogicalResult EffDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned argIndex,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  if (name != kParameterAttrName && name != kInputAttrName)
    return success();
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return op->emitOpError("'")
           << name << "' is only valid on function arguments";
  std::string what = "argument #" + std::to_string(argIndex);
  if (name == kInputAttrName)
    return verifyNameAttribute(op, what, attribute);
  return lookupParameter(op, what, attribute,
                         function.getArgumentTypes()[argIndex]);
}

LogicalResult
EffDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                        unsigned resultIndex,
                                        NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  if (name != kOutputAttrName && name != kBufferUpdateAttrName &&
      name != kUpdateAttrName)
    return success();
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return op->emitOpError("'")
           << name << "' is only valid on function results";
  std::string what = "result #" + std::to_string(resultIndex);
  if (name == kOutputAttrName)
    return verifyNameAttribute(op, what, attribute);
  FailureOr<ParameterOp> parameter = lookupParameter(
      op, what, attribute, function.getResultTypes()[resultIndex]);
  if (failed(parameter))
    return failure();
  if (name == kUpdateAttrName) {
    if (parameter->getRole() == ParamRole::Frozen)
      return op->emitOpError()
             << what << " updates the frozen parameter " << attribute.getValue();
    return success();
  }
  // Buffers, and state a training pass keeps outside the optimizer (the
  // loss scale), are updated whether or not the optimizer step is taken.
  if (parameter->getRole() != ParamRole::Buffer &&
      parameter->getRole() != ParamRole::OptimizerState)
    return op->emitOpError()
           << what << " updates " << attribute.getValue() << ", which is a "
           << stringifyParamRole(parameter->getRole())
           << " parameter, not a buffer or optimizer state";
  return success();
}

int64_t effopt::eff::detail::numElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 1;
  return shaped.getNumElements();
}

int64_t effopt::eff::detail::tensorBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 0;
  int64_t bits = shaped.getElementTypeBitWidth();
  // Booleans are stored one per byte.
  int64_t bytesPerElement = std::max<int64_t>(1, (bits + 7) / 8);
  return shaped.getNumElements() * bytesPerElement;
}

int64_t effopt::eff::detail::sumTensorBytes(ValueRange values) {
  int64_t total = 0;
  for (Value value : values)
    total += tensorBytes(value.getType());
  return total;
}
