//===- EffDialect.cpp - eff dialect registration and helpers --------------===//

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/Offload.h"
#include "effopt/Support/StorageBytes.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace effopt::eff;

#include "effopt/Dialect/Eff/IR/EffEnums.cpp.inc"
#include "effopt/Dialect/Eff/IR/EffGradientInterface.cpp.inc"
#include "effopt/Dialect/Eff/IR/EffInterfaces.cpp.inc"
#include "effopt/Dialect/Eff/IR/EffOpsDialect.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "effopt/Dialect/Eff/IR/EffAttrs.cpp.inc"

void EffDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "effopt/Dialect/Eff/IR/EffOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "effopt/Dialect/Eff/IR/EffAttrs.cpp.inc"
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

//===----------------------------------------------------------------------===//
// The step ABI
//===----------------------------------------------------------------------===//

/// `attribute` as a non-negative i64, or a diagnostic on `op`.
static FailureOr<int64_t> nonNegativeInteger(Operation *op, const Twine &where,
                                             NamedAttribute attribute) {
  auto value = dyn_cast<IntegerAttr>(attribute.getValue());
  if (!value || !value.getType().isInteger(64) || value.getInt() < 0)
    return op->emitOpError()
           << where << "'" << attribute.getName().getValue()
           << "' must be a non-negative i64, got " << attribute.getValue();
  return value.getInt();
}

/// The alignment the enclosing module (or `op` itself) declares, if any.
static std::optional<int64_t> declaredAlignment(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                  : op->getParentOfType<ModuleOp>();
  if (!module)
    return std::nullopt;
  auto alignment = module->getAttrOfType<IntegerAttr>(kAlignmentAttrName);
  if (!alignment || alignment.getInt() < 1)
    return std::nullopt;
  return alignment.getInt();
}

/// A byte offset or size: non-negative, a multiple of the declared alignment.
static LogicalResult verifyAlignedBytes(Operation *op, const Twine &where,
                                        NamedAttribute attribute) {
  FailureOr<int64_t> value = nonNegativeInteger(op, where, attribute);
  if (failed(value))
    return failure();
  std::optional<int64_t> alignment = declaredAlignment(op);
  if (alignment && *value % *alignment != 0)
    return op->emitOpError()
           << where << "'" << attribute.getName().getValue() << "' is "
           << *value << ", not a multiple of the alignment " << *alignment
           << " (" << kAlignmentAttrName << ")";
  return success();
}

LogicalResult EffDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  bool moduleAttr = name == kStepKindAttrName || name == kStateBytesAttrName ||
                    name == kIoBytesAttrName || name == kLossOffsetAttrName ||
                    name == kAlignmentAttrName;
  if (moduleAttr && !isa<ModuleOp>(op))
    return op->emitOpError("'") << name << "' is only valid on a module";
  if (name == kStepKindAttrName) {
    auto kind = dyn_cast<StringAttr>(attribute.getValue());
    if (!kind || kind.getValue() != kForwardStepKind)
      return op->emitOpError("'")
             << name << "' must be \"" << kForwardStepKind
             << "\" (absent for a training step), got "
             << attribute.getValue();
    return success();
  }
  if (name == kAlignmentAttrName) {
    FailureOr<int64_t> alignment = nonNegativeInteger(op, "", attribute);
    if (failed(alignment))
      return failure();
    if (!llvm::isPowerOf2_64(*alignment))
      return op->emitOpError("'")
             << name << "' must be a power of two, got " << *alignment;
    return success();
  }
  if (moduleAttr)
    return verifyAlignedBytes(op, "", attribute);
  if (name == kArenaArgAttrName || name == kArenaBytesAttrName) {
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!function)
      return op->emitOpError("'") << name << "' is only valid on a function";
    FailureOr<int64_t> value = nonNegativeInteger(op, "", attribute);
    if (failed(value))
      return failure();
    if (name == kArenaArgAttrName &&
        *value >= static_cast<int64_t>(function.getNumArguments()))
      return op->emitOpError("'")
             << name << "' is " << *value << " but the function has "
             << function.getNumArguments() << " arguments";
    return success();
  }
  if (name == kRegionAttrName || name == kOffsetAttrName ||
      name == kUpdatesArgAttrName)
    return op->emitOpError("'")
           << name << "' is an attribute of function arguments and results, "
                      "not of operations";
  return success();
}

/// `eff.region` and `eff.offset` on argument or result `index` of `op`
/// (`attrs` its attribute dictionary): a known region, an aligned offset,
/// and each with the other.
static LogicalResult verifyPlacement(Operation *op, StringRef what,
                                     DictionaryAttr attrs,
                                     NamedAttribute attribute,
                                     bool resultPlacement) {
  StringRef name = attribute.getName().strref();
  if (name == kRegionAttrName) {
    auto region = dyn_cast<StringAttr>(attribute.getValue());
    bool known = region && (region.getValue() == kIoRegion ||
                            (!resultPlacement &&
                             (region.getValue() == kStateRegion ||
                              region.getValue() == kHostRegion)));
    if (!known)
      return op->emitOpError()
             << what << " '" << name << "' must be "
             << (resultPlacement ? "\"io\""
                                 : "\"state\", \"host\" or \"io\"")
             << ", got " << attribute.getValue();
    if (!attrs || !attrs.get(kOffsetAttrName))
      return op->emitOpError()
             << what << " has '" << name << "' but no '" << kOffsetAttrName
             << "'";
    return success();
  }
  return verifyAlignedBytes(op, what + " ", attribute);
}

LogicalResult EffDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned argIndex,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  if (name == kRegionAttrName || name == kOffsetAttrName) {
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!function)
      return op->emitOpError("'")
             << name << "' is only valid on function arguments";
    return verifyPlacement(op, "argument #" + std::to_string(argIndex),
                           function.getArgAttrDict(argIndex), attribute,
                           /*resultPlacement=*/false);
  }
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
  if (name == kRegionAttrName || name == kOffsetAttrName ||
      name == kUpdatesArgAttrName) {
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!function)
      return op->emitOpError("'")
             << name << "' is only valid on function results";
    std::string what = "result #" + std::to_string(resultIndex);
    if (name != kUpdatesArgAttrName)
      return verifyPlacement(op, what, function.getResultAttrDict(resultIndex),
                             attribute, /*resultPlacement=*/true);
    FailureOr<int64_t> arg = nonNegativeInteger(op, what + " ", attribute);
    if (failed(arg))
      return failure();
    if (*arg >= static_cast<int64_t>(function.getNumArguments()))
      return op->emitOpError()
             << what << " '" << name << "' is " << *arg
             << " but the function has " << function.getNumArguments()
             << " arguments";
    return success();
  }
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
  // A packed weight occupies its storage tensors, not its logical type.
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    if (auto nf4 = dyn_cast_or_null<NF4EncodingAttr>(tensor.getEncoding()))
      return tensor.hasStaticShape()
                 ? nf4.getStorageBytes(tensor.getNumElements())
                 : 0;
  return storageBytes(type);
}

int64_t effopt::eff::detail::sumTensorBytes(ValueRange values) {
  int64_t total = 0;
  for (Value value : values)
    total += tensorBytes(value.getType());
  return total;
}
