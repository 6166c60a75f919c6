//===- EffDialect.cpp - eff dialect registration and helpers --------------===//

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace effopt::eff;

#include "effopt/Dialect/Eff/IR/EffEnums.cpp.inc"
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
