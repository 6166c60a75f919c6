//===- NodeContext.cpp - per-node conversion context ----------------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MathExtras.h"

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

std::optional<double> NodeContext::constantScalar(unsigned i) const {
  DenseElementsAttr attr = constantInput(i);
  if (!attr || attr.getNumElements() != 1)
    return std::nullopt;
  if (isa<FloatType>(attr.getElementType()))
    return (*attr.getValues<APFloat>().begin()).convertToDouble();
  APInt value = *attr.getValues<APInt>().begin();
  if (attr.getElementType().isUnsignedInteger() || value.getBitWidth() == 1)
    return static_cast<double>(value.getZExtValue());
  return static_cast<double>(value.getSExtValue());
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

FailureOr<SmallVector<int64_t>> NodeContext::splitSizes(int64_t total) {
  int64_t pieces = node.output_size();
  SmallVector<int64_t> sizes;
  if (hasInput(1)) {
    FailureOr<SmallVector<int64_t>> split = constantInts(1, "split");
    if (failed(split))
      return failure();
    sizes = *split;
  } else if (hasAttribute("split")) {
    sizes = getInts("split");
  } else {
    int64_t count = getInt("num_outputs", pieces);
    if (count <= 0)
      return error("num_outputs is " + Twine(count) + ", not positive");
    int64_t piece = (total + count - 1) / count;
    for (int64_t i = 0; i < count; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(piece, total - i * piece)));
  }
  if (static_cast<int64_t>(sizes.size()) != pieces)
    return error("split has " + Twine(sizes.size()) + " sizes for " +
                 Twine(pieces) + " outputs");
  int64_t sum = 0;
  for (int64_t size : sizes)
    sum += size;
  if (sum != total || llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
    return error("split sizes " + eff::formatShape(sizes) +
                 " do not add up to " + Twine(total));
  return sizes;
}

Value NodeContext::splat(double value, Type elementType,
                         ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, elementType);
  Attribute element;
  if (auto floatType = dyn_cast<FloatType>(elementType))
    element = builder.getFloatAttr(floatType, value);
  else
    element = builder.getIntegerAttr(elementType, static_cast<int64_t>(value));
  return constant(DenseElementsAttr::get(type, element));
}

std::optional<int64_t>
effopt::onnx_import::boundedElementCount(ArrayRef<int64_t> shape,
                                         int64_t limit) {
  int64_t count = 1;
  for (int64_t dim : shape)
    if (dim < 0 || llvm::MulOverflow(count, dim, count) || count > limit)
      return std::nullopt;
  return count;
}

LogicalResult NodeContext::checkComputedSize(ArrayRef<int64_t> shape,
                                             const Twine &what) {
  if (boundedElementCount(shape, kMaxComputedElements))
    return success();
  return error(what + " of shape " + eff::formatShape(shape) +
               " would have more than " + Twine(kMaxComputedElements) +
               " elements");
}

Value NodeContext::constant(DenseElementsAttr value) {
  return create<eff::ConstantOp>(value);
}

Value NodeContext::reshape(Value value, ArrayRef<int64_t> shape) {
  if (!value)
    return {};
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  return create<eff::ReshapeOp>(type.clone(shape), value);
}

Value NodeContext::cast(Value value, Type elementType) {
  if (!value)
    return {};
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  return create<eff::CastOp>(type.clone(elementType), value);
}

Value NodeContext::broadcastTo(Value value, ArrayRef<int64_t> shape) {
  if (!value)
    return {};
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  return create<eff::BroadcastToOp>(type.clone(shape), value);
}

Value NodeContext::iota(int64_t size, int64_t axis, int64_t rank,
                        Type elementType) {
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = size;
  if (failed(checkComputedSize(shape, "the positions constant")))
    return {};
  auto type = RankedTensorType::get(shape, elementType);
  SmallVector<Attribute> elements;
  for (int64_t i = 0; i < size; ++i) {
    if (auto floatType = dyn_cast<FloatType>(elementType))
      elements.push_back(builder.getFloatAttr(floatType, i));
    else
      elements.push_back(builder.getIntegerAttr(elementType, i));
  }
  return constant(DenseElementsAttr::get(type, elements));
}

Value NodeContext::compare(eff::CmpPredicate predicate, Value value,
                           double scalar) {
  if (!value)
    return {};
  Type elementType =
      llvm::cast<RankedTensorType>(value.getType()).getElementType();
  return create<eff::CmpOp>(predicate, value, splat(scalar, elementType));
}

Value NodeContext::moveAxis(Value value, int64_t from, int64_t to) {
  if (!value || from == to)
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
  errorReported = true;
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

//===----------------------------------------------------------------------===//
// Building ops without aborting
//===----------------------------------------------------------------------===//

/// A diagnostic as one line, without the "'eff.sub' op " prefix verifiers
/// put before their message.
static std::string oneLine(const Diagnostic &diag, StringRef opName) {
  std::string message = diag.str();
  std::string prefix = ("'" + opName + "' op ").str();
  if (StringRef(message).starts_with(prefix))
    message.erase(0, prefix.size());
  for (char &c : message)
    if (c == '\n')
      c = ' ';
  return message;
}

Operation *onnx_import::detail::createVerified(
    OpBuilder &builder, OperationState &state,
    InferReturnTypesFn inferReturnTypes,
    function_ref<void(const Twine &)> reportError) {
  MLIRContext *context = builder.getContext();
  StringRef opName = state.name.getStringRef();
  if (llvm::any_of(state.operands, [](Value v) { return !v; })) {
    reportError("cannot create '" + opName + "': an operand is missing");
    return nullptr;
  }
  // Inference and verification report problems as diagnostics: keep the
  // first for the one-line error instead of printing them.
  std::string reason;
  Operation *op = nullptr;
  {
    ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
      if (reason.empty() && diag.getSeverity() == DiagnosticSeverity::Error)
        reason = oneLine(diag, opName);
      return success();
    });
    bool typed = true;
    if (inferReturnTypes) {
      SmallVector<Type> types;
      typed = succeeded(
          inferReturnTypes(context, state.location, state.operands,
                           state.attributes.getDictionary(context),
                           state.getRawProperties(), state.regions, types));
      state.addTypes(types);
    }
    for (Type type : state.types) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (typed && tensor && tensor.hasStaticShape() &&
          !boundedElementCount(tensor.getShape())) {
        reason = "its result shape " + eff::formatShape(tensor.getShape()) +
                 " has a negative dimension or more than " +
                 std::to_string(kMaxTensorElements) + " elements";
        typed = false;
      }
    }
    if (typed) {
      // Verified in place (ops may require their parent), and announced to
      // the builder's listener only once verified, as createOrFold does.
      op = Operation::create(state);
      if (Block *block = builder.getInsertionBlock())
        block->getOperations().insert(builder.getInsertionPoint(), op);
      if (failed(mlir::verify(op))) {
        op->erase();
        op = nullptr;
      }
    }
  }
  if (!op) {
    if (reason.empty()) {
      std::string operandTypes;
      llvm::raw_string_ostream os(operandTypes);
      llvm::interleaveComma(state.operands, os,
                            [&](Value v) { os << v.getType(); });
      reason = "it does not accept operands of types " + operandTypes;
    }
    reportError("cannot create '" + opName + "': " + reason);
    return nullptr;
  }
  if (op->getBlock())
    if (OpBuilder::Listener *listener = builder.getListener())
      listener->notifyOperationInserted(op, /*previous=*/{});
  return op;
}

Value NodeContext::foldOrKeep(Operation *op) {
  SmallVector<Value, 1> results;
  if (succeeded(builder.tryFold(op, results)) && !results.empty()) {
    op->erase();
    return results.front();
  }
  return op->getResult(0);
}
