//===- NodeContext.cpp - per-node conversion context ----------------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

const onnx::AttributeProto *NodeContext::attribute(StringRef name) const {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t NodeContext::getInt(StringRef name, int64_t defaultValue) const {
  const onnx::AttributeProto *attr = attribute(name);
  return attr ? attr->i() : defaultValue;
}

double NodeContext::getFloat(StringRef name, double defaultValue) const {
  const onnx::AttributeProto *attr = attribute(name);
  return attr ? decimalValue(APFloat(attr->f())) : defaultValue;
}

double effopt::onnx_import::decimalValue(const APFloat &value) {
  // The shortest decimal that round-trips, so 1e-5f reads back as 1e-05
  // rather than 9.9999997473787516e-06.
  double exact = value.convertToDouble();
  if (&value.getSemantics() != &APFloat::IEEEsingle())
    return exact;
  float original = value.convertToFloat();
  for (int digits = 1; digits <= 9; ++digits) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.*g", digits, exact);
    double shortest = std::strtod(text, nullptr);
    if (static_cast<float>(shortest) == original)
      return shortest;
  }
  return exact;
}

std::string NodeContext::getString(StringRef name,
                                   StringRef defaultValue) const {
  const onnx::AttributeProto *attr = attribute(name);
  return attr ? attr->s() : defaultValue.str();
}

SmallVector<int64_t> NodeContext::getInts(StringRef name) const {
  SmallVector<int64_t> result;
  if (const onnx::AttributeProto *attr = attribute(name))
    result.assign(attr->ints().begin(), attr->ints().end());
  return result;
}

DenseElementsAttr NodeContext::constantInput(unsigned i) const {
  if (!hasInput(i))
    return {};
  DenseElementsAttr attr;
  if (matchPattern(input(i), m_Constant(&attr)))
    return attr;
  return {};
}

FailureOr<SmallVector<int64_t>> NodeContext::constantInts(unsigned i,
                                                          StringRef what) {
  DenseElementsAttr attr = constantInput(i);
  if (!attr || !isa<IntegerType>(attr.getElementType())) {
    (void)error("input '" + what +
                "' must be a constant integer tensor (effopt compiles static "
                "shapes)");
    return failure();
  }
  SmallVector<int64_t> result;
  for (const APInt &value : attr.getValues<APInt>())
    result.push_back(value.getSExtValue());
  return result;
}

Value NodeContext::splat(double value, Type elementType,
                         ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, elementType);
  Attribute element;
  if (auto floatType = dyn_cast<FloatType>(elementType))
    element = builder.getFloatAttr(floatType, value);
  else
    element = builder.getIntegerAttr(elementType, static_cast<int64_t>(value));
  return eff::ConstantOp::create(builder, location,
                                 DenseElementsAttr::get(type, element));
}

Value NodeContext::reshape(Value value, ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  return create<eff::ReshapeOp>(type.clone(shape), value);
}

Value NodeContext::cast(Value value, Type elementType) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  return create<eff::CastOp>(type.clone(elementType), value);
}

Value NodeContext::broadcastTo(Value value, ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  return create<eff::BroadcastToOp>(type.clone(shape), value);
}

Value NodeContext::iota(int64_t size, int64_t axis, int64_t rank,
                        Type elementType) {
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = size;
  auto type = RankedTensorType::get(shape, elementType);
  SmallVector<Attribute> elements;
  for (int64_t i = 0; i < size; ++i) {
    if (auto floatType = dyn_cast<FloatType>(elementType))
      elements.push_back(builder.getFloatAttr(floatType, i));
    else
      elements.push_back(builder.getIntegerAttr(elementType, i));
  }
  return eff::ConstantOp::create(builder, location,
                                 DenseElementsAttr::get(type, elements));
}

Value NodeContext::compare(eff::CmpPredicate predicate, Value value,
                           double scalar) {
  Type elementType =
      llvm::cast<RankedTensorType>(value.getType()).getElementType();
  return create<eff::CmpOp>(predicate, value, splat(scalar, elementType));
}

Value NodeContext::moveAxis(Value value, int64_t from, int64_t to) {
  if (from == to)
    return value;
  int64_t rank = llvm::cast<RankedTensorType>(value.getType()).getRank();
  SmallVector<int64_t> permutation;
  for (int64_t d = 0; d < rank; ++d)
    if (d != from)
      permutation.push_back(d);
  permutation.insert(permutation.begin() + to, from);
  return create<eff::TransposeOp>(value, permutation);
}

LogicalResult NodeContext::error(const Twine &message) {
  mlir::emitError(location) << "node '" << node.name() << "' ("
                            << node.op_type() << ", opset " << opset
                            << "): " << message;
  return failure();
}

LogicalResult NodeContext::unsupportedAttribute(StringRef name,
                                                const Twine &value) {
  return error("unsupported value " + value + " of attribute '" + name + "'");
}

FailureOr<int64_t> NodeContext::normalizedAxis(int64_t axis, int64_t rank,
                                               StringRef what) {
  std::optional<int64_t> normalized = eff::normalizeAxis(axis, rank);
  if (!normalized) {
    (void)error(what + " " + Twine(axis) + " is out of range [" +
                Twine(-rank) + ", " + Twine(rank - 1) + "]");
    return failure();
  }
  return *normalized;
}
