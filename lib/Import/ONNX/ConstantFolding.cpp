//===- ConstantFolding.cpp - evaluating nodes over constants --------------===//
//
// A small interpreter of ONNX ops over constant tensors, with ONNX's
// semantics (multidirectional broadcasting, Slice's clamping, Reshape's 0
// and -1, Mod's fmod attribute). Integers (bool, signed, unsigned) are held
// as int64 and wrapped to their width after every op; floats as double,
// rounded to their type when the result becomes a constant. Every node is
// evaluated on its own from the constants its inputs already are, so a chain
// of any length folds node by node as it is imported.
//
// Parameters (float initializers) are function arguments, never constants:
// nothing computed from a trainable tensor is folded.
//
//===----------------------------------------------------------------------===//

#include "ConstantFolding.h"

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <type_traits>

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

/// A constant tensor being computed with: integers in `ints`, floats in
/// `floats`, row-major.
struct Tensor {
  SmallVector<int64_t> shape;
  Type elementType;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  bool isFloat() const { return isa<FloatType>(elementType); }
  int64_t numElements() const {
    return isFloat() ? floats.size() : ints.size();
  }
  double asDouble(int64_t i) const {
    return isFloat() ? floats[i] : static_cast<double>(ints[i]);
  }
  /// A tensor of this one's element type holding, at each position of
  /// `newShape`, this tensor's element `sources[i]`.
  Tensor select(ArrayRef<int64_t> newShape,
                const std::vector<int64_t> &sources) const {
    Tensor result{SmallVector<int64_t>(newShape), elementType, {}, {}};
    if (isFloat()) {
      result.floats.reserve(sources.size());
      for (int64_t s : sources)
        result.floats.push_back(floats[s]);
    } else {
      result.ints.reserve(sources.size());
      for (int64_t s : sources)
        result.ints.push_back(ints[s]);
    }
    return result;
  }
  /// Appends elements [begin, begin + count) of `other` (same type).
  void append(const Tensor &other, int64_t begin, int64_t count) {
    if (isFloat())
      floats.insert(floats.end(), other.floats.begin() + begin,
                    other.floats.begin() + begin + count);
    else
      ints.insert(ints.end(), other.ints.begin() + begin,
                  other.ints.begin() + begin + count);
  }
};

/// One node being evaluated: its constant inputs and the results so far.
struct Evaluation {
  NodeContext &ctx;
  SmallVector<std::optional<Tensor>> inputs;
  SmallVector<Tensor> results;
  /// Set when the node is left to its converter.
  bool declined = false;

  bool has(unsigned i) const { return i < inputs.size() && inputs[i]; }
  const Tensor &in(unsigned i) const { return *inputs[i]; }
  LogicalResult error(const Twine &message) { return ctx.error(message); }
  /// Leaves the node to its converter.
  LogicalResult decline() {
    declined = true;
    return success();
  }
  /// True if a tensor shaped `shape` may be computed; otherwise declines.
  bool fits(ArrayRef<int64_t> shape) {
    if (boundedElementCount(shape, kMaxFoldedElements))
      return true;
    declined = true;
    return false;
  }
  LogicalResult result(Tensor tensor) {
    results.push_back(std::move(tensor));
    return success();
  }
  Type i1() const { return IntegerType::get(ctx.context(), 1); }
};

using EvaluateFn = LogicalResult (*)(Evaluation &);

} // namespace

//===----------------------------------------------------------------------===//
// Attributes <-> tensors
//===----------------------------------------------------------------------===//

/// Wraps the integers of `tensor` to the width and signedness of its type.
static void wrapToWidth(Tensor &tensor) {
  if (tensor.isFloat())
    return;
  unsigned width = tensor.elementType.getIntOrFloatBitWidth();
  if (width >= 64)
    return;
  bool isUnsigned = tensor.elementType.isUnsignedInteger() || width == 1;
  for (int64_t &v : tensor.ints)
    v = isUnsigned
            ? static_cast<int64_t>(static_cast<uint64_t>(v) &
                                   llvm::maskTrailingOnes<uint64_t>(width))
            : llvm::SignExtend64(static_cast<uint64_t>(v), width);
}

static std::optional<Tensor> fromAttr(DenseElementsAttr attr) {
  Type elementType = attr.getElementType();
  auto type = cast<ShapedType>(attr.getType());
  Tensor tensor{SmallVector<int64_t>(type.getShape()), elementType, {}, {}};
  if (isa<FloatType>(elementType)) {
    for (const APFloat &v : attr.getValues<APFloat>())
      tensor.floats.push_back(v.convertToDouble());
    return tensor;
  }
  auto intType = dyn_cast<IntegerType>(elementType);
  if (!intType || intType.getWidth() > 64)
    return std::nullopt;
  bool isUnsigned = intType.isUnsigned() || intType.getWidth() == 1;
  for (const APInt &v : attr.getValues<APInt>())
    tensor.ints.push_back(isUnsigned ? static_cast<int64_t>(v.getZExtValue())
                                     : v.getSExtValue());
  return tensor;
}

static DenseElementsAttr toAttr(const Tensor &tensor) {
  auto type = RankedTensorType::get(tensor.shape, tensor.elementType);
  if (auto floatType = dyn_cast<FloatType>(tensor.elementType)) {
    SmallVector<APFloat> values;
    values.reserve(tensor.floats.size());
    for (double v : tensor.floats) {
      APFloat value(v);
      bool losesInfo;
      value.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &losesInfo);
      values.push_back(value);
    }
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = tensor.elementType.getIntOrFloatBitWidth();
  SmallVector<APInt> values;
  values.reserve(tensor.ints.size());
  for (int64_t v : tensor.ints)
    values.emplace_back(width, static_cast<uint64_t>(v), /*isSigned=*/false,
                        /*implicitTrunc=*/true);
  return DenseElementsAttr::get(type, values);
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

static SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

static int64_t product(ArrayRef<int64_t> values) {
  int64_t result = 1;
  for (int64_t v : values)
    result *= v;
  return result;
}

/// For every element of a tensor shaped `to` (row-major), the element of a
/// tensor shaped `from` whose coordinates `inIndex` computes from the
/// output's coordinates.
static std::vector<int64_t> mapIndices(
    ArrayRef<int64_t> to, ArrayRef<int64_t> from,
    function_ref<int64_t(ArrayRef<int64_t> out, unsigned inAxis)> inIndex) {
  int64_t count = product(to);
  SmallVector<int64_t> fromStrides = rowMajorStrides(from);
  SmallVector<int64_t> out(to.size(), 0);
  std::vector<int64_t> sources;
  sources.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t source = 0;
    for (unsigned d = 0; d < from.size(); ++d)
      source += inIndex(out, d) * fromStrides[d];
    sources.push_back(source);
    for (int64_t d = static_cast<int64_t>(to.size()) - 1; d >= 0; --d) {
      if (++out[d] < to[d])
        break;
      out[d] = 0;
    }
  }
  return sources;
}

/// Numpy's broadcast of `shapes`, or nullopt if they do not broadcast.
static std::optional<SmallVector<int64_t>>
broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (ArrayRef<int64_t> shape : shapes)
    rank = std::max(rank, shape.size());
  SmallVector<int64_t> result(rank, 1);
  for (ArrayRef<int64_t> shape : shapes) {
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t &dim = result[rank - shape.size() + d];
      if (shape[d] == dim || shape[d] == 1)
        continue;
      if (dim != 1)
        return std::nullopt;
      dim = shape[d];
    }
  }
  return result;
}

/// The elements of a tensor shaped `from` broadcast to `to`.
static std::vector<int64_t> broadcastSources(ArrayRef<int64_t> from,
                                             ArrayRef<int64_t> to) {
  size_t offset = to.size() - from.size();
  return mapIndices(to, from, [&](ArrayRef<int64_t> out, unsigned d) {
    return from[d] == 1 ? int64_t(0) : out[offset + d];
  });
}

static std::string formatShapes(ArrayRef<const Tensor *> tensors) {
  std::string text;
  for (auto [i, tensor] : llvm::enumerate(tensors))
    text += (i == 0 ? "" : (i + 1 == tensors.size() ? " and " : ", ")) +
            eff::formatShape(tensor->shape);
  return text;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// `fn` applied elementwise to `operands` broadcast together, giving
/// `resultType` elements. `fn` takes the operands' values as int64 when
/// every operand is an integer tensor, as double otherwise, and returns a
/// std::optional of a value; nullopt is the error `failure` names.
template <typename Fn>
static FailureOr<std::optional<Tensor>>
elementwise(Evaluation &e, ArrayRef<const Tensor *> operands, Type resultType,
            Fn fn, StringRef failureMessage = "") {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (const Tensor *operand : operands)
    shapes.push_back(operand->shape);
  std::optional<SmallVector<int64_t>> shape = broadcastShapes(shapes);
  if (!shape)
    return e.error("input shapes " + formatShapes(operands) +
                   " do not broadcast");
  if (!e.fits(*shape))
    return std::optional<Tensor>();
  SmallVector<std::vector<int64_t>> sources;
  for (const Tensor *operand : operands)
    sources.push_back(broadcastSources(operand->shape, *shape));
  bool asFloat =
      llvm::any_of(operands, [](const Tensor *t) { return t->isFloat(); });
  Tensor result{*shape, resultType, {}, {}};
  int64_t count = product(*shape);
  bool resultIsFloat = result.isFloat();
  auto store = [&](auto value) {
    if (resultIsFloat)
      result.floats.push_back(static_cast<double>(value));
    else
      result.ints.push_back(static_cast<int64_t>(value));
  };
  for (int64_t i = 0; i < count; ++i) {
    bool ok;
    if (asFloat) {
      SmallVector<double, 3> args;
      for (auto [operand, source] : llvm::zip(operands, sources))
        args.push_back(operand->asDouble(source[i]));
      auto value = fn(ArrayRef<double>(args));
      ok = value.has_value();
      if (ok)
        store(*value);
    } else {
      SmallVector<int64_t, 3> args;
      for (auto [operand, source] : llvm::zip(operands, sources))
        args.push_back(operand->ints[source[i]]);
      auto value = fn(ArrayRef<int64_t>(args));
      ok = value.has_value();
      if (ok)
        store(*value);
    }
    if (!ok)
      return e.error(failureMessage);
  }
  wrapToWidth(result);
  return std::optional<Tensor>(std::move(result));
}

/// Evaluates `fn` over all inputs of the node (at least one), pairwise from
/// the left for more than `arity` inputs (variadic Min, Max, Sum).
template <typename Fn>
static LogicalResult evaluateElementwise(Evaluation &e, Type resultType, Fn fn,
                                         StringRef failureMessage = "",
                                         unsigned arity = 0) {
  SmallVector<const Tensor *> operands;
  for (unsigned i = 0; i < e.inputs.size(); ++i) {
    if (!e.has(i))
      return e.decline();
    operands.push_back(&e.in(i));
  }
  if (arity != 0 && operands.size() == 1) // Max(x) is x
    return e.result(*operands.front());
  if (arity == 0 || operands.size() <= arity) {
    auto result = elementwise(e, operands, resultType, fn, failureMessage);
    if (failed(result))
      return failure();
    return *result ? e.result(std::move(**result)) : success();
  }
  std::optional<Tensor> accumulated = *operands.front();
  for (const Tensor *next : ArrayRef(operands).drop_front()) {
    auto result =
        elementwise(e, {&*accumulated, next}, resultType, fn, failureMessage);
    if (failed(result))
      return failure();
    if (!*result)
      return success();
    accumulated = std::move(**result);
  }
  return e.result(std::move(*accumulated));
}

static int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
static int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
static int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}

/// The element type of input 0: the result type of arithmetic ops.
static Type firstType(Evaluation &e) { return e.in(0).elementType; }

/// A binary op whose int64 and double forms are given separately.
#define BINARY(NAME, INT_EXPR, FLOAT_EXPR)                                     \
  static LogicalResult evaluate##NAME(Evaluation &e) {                         \
    return evaluateElementwise(e, firstType(e), [](auto v) {                   \
      using T = typename decltype(v)::value_type;                              \
      T a = v[0], b = v[1];                                                    \
      (void)a;                                                                 \
      (void)b;                                                                 \
      if constexpr (std::is_integral_v<T>)                                     \
        return std::optional<T>(INT_EXPR);                                     \
      else                                                                     \
        return std::optional<T>(FLOAT_EXPR);                                   \
    });                                                                        \
  }
// clang-format off
BINARY(Add, wrapAdd(a, b), a + b)
BINARY(Sub, wrapSub(a, b), a - b)
BINARY(Mul, wrapMul(a, b), a * b)
// clang-format on
#undef BINARY

static LogicalResult evaluateDiv(Evaluation &e) {
  return evaluateElementwise(
      e, firstType(e),
      [](auto v) {
        using T = typename decltype(v)::value_type;
        if constexpr (std::is_integral_v<T>) {
          if (v[1] == 0)
            return std::optional<T>();
          if (v[1] == -1) // INT64_MIN / -1 wraps
            return std::optional<T>(wrapSub(0, v[0]));
          return std::optional<T>(v[0] / v[1]);
        } else {
          return std::optional<T>(v[0] / v[1]);
        }
      },
      "integer division by zero");
}

static LogicalResult evaluateMod(Evaluation &e) {
  bool fmod = e.ctx.getInt("fmod", 0) != 0;
  if (isa<FloatType>(firstType(e)) && !fmod)
    return e.decline(); // float Mod needs fmod=1: the converter says so
  return evaluateElementwise(
      e, firstType(e),
      [fmod](auto v) {
        using T = typename decltype(v)::value_type;
        if constexpr (std::is_integral_v<T>) {
          if (v[1] == 0)
            return std::optional<T>();
          if (v[1] == -1)
            return std::optional<T>(0);
          T r = v[0] % v[1];
          // fmod=0: the remainder takes the divisor's sign, as in Python.
          if (!fmod && r != 0 && ((r < 0) != (v[1] < 0)))
            r += v[1];
          return std::optional<T>(r);
        } else {
          return std::optional<T>(std::fmod(v[0], v[1]));
        }
      },
      "integer modulo by zero");
}

static LogicalResult evaluatePow(Evaluation &e) {
  return evaluateElementwise(e, firstType(e), [](auto v) {
    using T = typename decltype(v)::value_type;
    if constexpr (std::is_integral_v<T>) {
      if (v[1] < 0)
        return std::optional<T>(v[0] == 1 ? 1 : 0);
      // By squaring, wrapping as the integer type does.
      T result = 1, base = v[0];
      for (T exponent = v[1]; exponent > 0; exponent >>= 1) {
        if (exponent & 1)
          result = wrapMul(result, base);
        base = wrapMul(base, base);
      }
      return std::optional<T>(result);
    } else {
      return std::optional<T>(std::pow(v[0], v[1]));
    }
  });
}

static LogicalResult evaluateMin(Evaluation &e) {
  return evaluateElementwise(
      e, firstType(e),
      [](auto v) { return std::optional(v[0] < v[1] ? v[0] : v[1]); }, "", 2);
}
static LogicalResult evaluateMax(Evaluation &e) {
  return evaluateElementwise(
      e, firstType(e),
      [](auto v) { return std::optional(v[0] > v[1] ? v[0] : v[1]); }, "", 2);
}
static LogicalResult evaluateSum(Evaluation &e) {
  return evaluateElementwise(
      e, firstType(e),
      [](auto v) {
        using T = typename decltype(v)::value_type;
        if constexpr (std::is_integral_v<T>)
          return std::optional<T>(wrapAdd(v[0], v[1]));
        else
          return std::optional<T>(v[0] + v[1]);
      },
      "", 2);
}

#define COMPARE(NAME, OP)                                                      \
  static LogicalResult evaluate##NAME(Evaluation &e) {                         \
    return evaluateElementwise(                                                \
        e, e.i1(), [](auto v) { return std::optional<bool>(v[0] OP v[1]); });  \
  }
COMPARE(Equal, ==)
COMPARE(Less, <)
COMPARE(LessOrEqual, <=)
COMPARE(Greater, >)
COMPARE(GreaterOrEqual, >=)
#undef COMPARE

#define LOGICAL(NAME, EXPR)                                                    \
  static LogicalResult evaluate##NAME(Evaluation &e) {                         \
    return evaluateElementwise(e, e.i1(), [](auto v) {                         \
      bool a = v[0] != 0, b = v[1] != 0;                                       \
      return std::optional<bool>(EXPR);                                        \
    });                                                                        \
  }
// clang-format off
LOGICAL(And, a && b)
LOGICAL(Or, a || b)
LOGICAL(Xor, a != b)
// clang-format on
#undef LOGICAL

static LogicalResult evaluateNot(Evaluation &e) {
  return evaluateElementwise(
      e, e.i1(), [](auto v) { return std::optional<bool>(v[0] == 0); });
}

/// A unary op: `INT_EXPR` for integers (if `INT_OK`; otherwise integer
/// inputs are left to the converter), `FLOAT_EXPR` for floats, of `a`.
#define UNARY(NAME, INT_OK, INT_EXPR, FLOAT_EXPR)                              \
  static LogicalResult evaluate##NAME(Evaluation &e) {                         \
    if (!(INT_OK) && !e.in(0).isFloat())                                       \
      return e.decline();                                                      \
    return evaluateElementwise(e, firstType(e), [](auto v) {                   \
      using T = typename decltype(v)::value_type;                              \
      T a = v[0];                                                              \
      if constexpr (std::is_integral_v<T>)                                     \
        return std::optional<T>(INT_EXPR);                                     \
      else                                                                     \
        return std::optional<T>(FLOAT_EXPR);                                   \
    });                                                                        \
  }
UNARY(Identity, true, a, a)
UNARY(Neg, true, wrapSub(0, a), -a)
UNARY(Abs, true, a < 0 ? wrapSub(0, a) : a, std::fabs(a))
UNARY(Sign, true, (a > 0) - (a < 0), static_cast<double>((a > 0) - (a < 0)))
UNARY(Floor, true, a, std::floor(a))
UNARY(Ceil, true, a, std::ceil(a))
UNARY(Round, true, a, std::nearbyint(a))
UNARY(Sqrt, false, a, std::sqrt(a))
UNARY(Reciprocal, false, a, 1.0 / a)
UNARY(Relu, true, a < 0 ? 0 : a, a < 0 ? 0.0 : a)
#undef UNARY

static LogicalResult evaluateWhere(Evaluation &e) {
  if (!e.has(0) || !e.has(1) || !e.has(2))
    return e.decline();
  if (e.in(1).elementType != e.in(2).elementType)
    return e.decline(); // the converter names the mismatch
  return evaluateElementwise(e, e.in(1).elementType, [](auto v) {
    return std::optional(v[0] != 0 ? v[1] : v[2]);
  });
}

/// Cast (to `to`) and CastLike (to input 1's type).
static LogicalResult castTo(Evaluation &e, Type to) {
  if (!to || !(isa<FloatType>(to) || isa<IntegerType>(to)))
    return e.decline();
  const Tensor &input = e.in(0);
  Tensor result{input.shape, to, {}, {}};
  if (isa<FloatType>(to)) {
    for (int64_t i = 0; i < input.numElements(); ++i)
      result.floats.push_back(input.asDouble(i));
    return e.result(std::move(result));
  }
  bool toBool = to.getIntOrFloatBitWidth() == 1;
  if (!input.isFloat()) {
    result.ints = input.ints;
    if (toBool)
      for (int64_t &v : result.ints)
        v = v != 0;
  } else {
    for (double v : input.floats) {
      if (toBool) {
        result.ints.push_back(v != 0);
        continue;
      }
      // Out of int64's range (or NaN) the conversion is the target's
      // business, not a constant's.
      if (!(std::fabs(v) < 9.2e18))
        return e.decline();
      result.ints.push_back(static_cast<int64_t>(v));
    }
  }
  wrapToWidth(result);
  return e.result(std::move(result));
}

static LogicalResult evaluateCast(Evaluation &e) {
  return castTo(e,
                convertElementType(static_cast<int32_t>(e.ctx.getInt("to", 0)),
                                   e.ctx.context()));
}

static LogicalResult evaluateCastLike(Evaluation &e) {
  return castTo(e, e.in(1).elementType);
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

/// An integer input as int64 values, or nullopt (declining) for floats.
static std::optional<ArrayRef<int64_t>> intsOf(Evaluation &e, unsigned i) {
  if (!e.has(i) || e.in(i).isFloat()) {
    (void)e.decline();
    return std::nullopt;
  }
  return ArrayRef<int64_t>(e.in(i).ints);
}

static FailureOr<int64_t> normalized(Evaluation &e, int64_t axis, int64_t rank,
                                     StringRef what = "axis") {
  std::optional<int64_t> result = eff::normalizeAxis(axis, rank);
  if (!result)
    return e.error(what + " " + Twine(axis) + " is out of range [" +
                   Twine(-rank) + ", " + Twine(rank - 1) + "]");
  return *result;
}

/// `tensor` with the same elements viewed as `shape`.
static Tensor withShape(const Tensor &tensor, ArrayRef<int64_t> shape) {
  Tensor result = tensor;
  result.shape.assign(shape.begin(), shape.end());
  return result;
}

static LogicalResult evaluateReshape(Evaluation &e) {
  std::optional<ArrayRef<int64_t>> target = intsOf(e, 1);
  if (!target)
    return success();
  const Tensor &data = e.in(0);
  bool allowZero = e.ctx.getInt("allowzero", 0) != 0;
  SmallVector<int64_t> shape;
  std::optional<unsigned> inferred;
  for (auto [i, given] : llvm::enumerate(*target)) {
    int64_t dim = given;
    if (dim == 0 && !allowZero) {
      if (i >= data.shape.size())
        return e.error("shape " + eff::formatShape(*target) +
                       " copies dimension " + Twine(i) +
                       " (0) of an input of "
                       "rank " +
                       Twine(data.shape.size()));
      dim = data.shape[i];
    } else if (dim == -1) {
      if (inferred)
        return e.error("shape " + eff::formatShape(*target) +
                       " has more than one -1");
      inferred = i;
      dim = 1;
    } else if (dim < 0) {
      return e.error("shape " + eff::formatShape(*target) +
                     " has a negative dimension other than -1");
    }
    shape.push_back(dim);
  }
  std::optional<int64_t> known = boundedElementCount(shape);
  int64_t count = data.numElements();
  if (known && inferred && *known != 0 && count % *known == 0)
    shape[*inferred] = count / *known;
  if (!boundedElementCount(shape) || product(shape) != count)
    return e.error("cannot reshape " + eff::formatShape(data.shape) + " (" +
                   Twine(count) + " elements) to " + eff::formatShape(*target));
  return e.result(withShape(data, shape));
}

static LogicalResult evaluateFlatten(Evaluation &e) {
  const Tensor &data = e.in(0);
  int64_t rank = data.shape.size();
  int64_t axis = e.ctx.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return e.error("axis " + Twine(axis) + " is out of range [" + Twine(-rank) +
                   ", " + Twine(rank) + "]");
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> shape = data.shape;
  return e.result(withShape(data, {product(shape.take_front(axis)),
                                   product(shape.drop_front(axis))}));
}

static LogicalResult evaluateUnsqueeze(Evaluation &e) {
  std::optional<ArrayRef<int64_t>> axes = intsOf(e, 1);
  if (!axes)
    return success();
  const Tensor &data = e.in(0);
  int64_t rank = data.shape.size() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    FailureOr<int64_t> d = normalized(e, axis, rank);
    if (failed(d))
      return failure();
    if (inserted[*d])
      return e.error("axes " + eff::formatShape(*axes) + " repeat axis " +
                     Twine(*d));
    inserted[*d] = true;
  }
  SmallVector<int64_t> shape;
  auto dims = data.shape.begin();
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(inserted[d] ? 1 : *dims++);
  return e.result(withShape(data, shape));
}

static LogicalResult evaluateSqueeze(Evaluation &e) {
  const Tensor &data = e.in(0);
  int64_t rank = data.shape.size();
  SmallVector<bool> removed(rank, false);
  if (e.has(1)) {
    std::optional<ArrayRef<int64_t>> axes = intsOf(e, 1);
    if (!axes)
      return success();
    for (int64_t axis : *axes) {
      FailureOr<int64_t> d = normalized(e, axis, rank);
      if (failed(d))
        return failure();
      if (data.shape[*d] != 1)
        return e.error("cannot squeeze axis " + Twine(*d) + " of size " +
                       Twine(data.shape[*d]));
      removed[*d] = true;
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      removed[d] = data.shape[d] == 1;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!removed[d])
      shape.push_back(data.shape[d]);
  return e.result(withShape(data, shape));
}

static LogicalResult evaluateConcat(Evaluation &e) {
  SmallVector<const Tensor *> operands;
  for (unsigned i = 0; i < e.inputs.size(); ++i) {
    if (!e.has(i))
      return e.decline();
    operands.push_back(&e.in(i));
  }
  const Tensor &first = *operands.front();
  int64_t rank = first.shape.size();
  FailureOr<int64_t> axis = normalized(e, e.ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.shape);
  shape[*axis] = 0;
  for (const Tensor *operand : operands) {
    bool compatible = operand->elementType == first.elementType &&
                      static_cast<int64_t>(operand->shape.size()) == rank;
    for (int64_t d = 0; compatible && d < rank; ++d)
      compatible = d == *axis || operand->shape[d] == first.shape[d];
    if (!compatible)
      return e.error("cannot concatenate inputs shaped " +
                     formatShapes(operands) + " along axis " + Twine(*axis));
    shape[*axis] += operand->shape[*axis];
  }
  if (!e.fits(shape))
    return success();
  Tensor result{shape, first.elementType, {}, {}};
  int64_t outer = product(ArrayRef<int64_t>(shape).take_front(*axis));
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor *operand : operands) {
      int64_t chunk =
          product(ArrayRef<int64_t>(operand->shape).drop_front(*axis));
      result.append(*operand, o * chunk, chunk);
    }
  return e.result(std::move(result));
}

static LogicalResult evaluateSplit(Evaluation &e) {
  const Tensor &data = e.in(0);
  int64_t rank = data.shape.size();
  FailureOr<int64_t> axis = normalized(e, e.ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  FailureOr<SmallVector<int64_t>> sizes = e.ctx.splitSizes(data.shape[*axis]);
  if (failed(sizes))
    return failure();
  int64_t outer = product(ArrayRef<int64_t>(data.shape).take_front(*axis));
  int64_t inner = product(ArrayRef<int64_t>(data.shape).drop_front(*axis + 1));
  int64_t begin = 0;
  for (int64_t size : *sizes) {
    SmallVector<int64_t> shape(data.shape);
    shape[*axis] = size;
    Tensor piece{shape, data.elementType, {}, {}};
    for (int64_t o = 0; o < outer; ++o)
      piece.append(data, (o * data.shape[*axis] + begin) * inner, size * inner);
    begin += size;
    (void)e.result(std::move(piece));
  }
  return success();
}

static LogicalResult evaluateTranspose(Evaluation &e) {
  const Tensor &data = e.in(0);
  int64_t rank = data.shape.size();
  SmallVector<int64_t> perm = e.ctx.getInts("perm");
  if (!e.ctx.hasAttribute("perm"))
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    return e.error("perm " + eff::formatShape(perm) +
                   " is not a permutation of " + Twine(rank) + " axes");
  SmallVector<int64_t> shape;
  SmallVector<int64_t> inverse(rank);
  for (int64_t d = 0; d < rank; ++d) {
    shape.push_back(data.shape[perm[d]]);
    inverse[perm[d]] = d;
  }
  return e.result(
      data.select(shape, mapIndices(shape, data.shape,
                                    [&](ArrayRef<int64_t> out, unsigned d) {
                                      return out[inverse[d]];
                                    })));
}

static LogicalResult evaluateGather(Evaluation &e) {
  std::optional<ArrayRef<int64_t>> indices = intsOf(e, 1);
  if (!indices)
    return success();
  const Tensor &data = e.in(0);
  int64_t rank = data.shape.size();
  FailureOr<int64_t> axis = normalized(e, e.ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  int64_t dim = data.shape[*axis];
  ArrayRef<int64_t> dataShape = data.shape;
  SmallVector<int64_t> shape(dataShape.take_front(*axis));
  llvm::append_range(shape, e.in(1).shape);
  llvm::append_range(shape, dataShape.drop_front(*axis + 1));
  if (!e.fits(shape))
    return success();
  int64_t outer = product(dataShape.take_front(*axis));
  int64_t inner = product(dataShape.drop_front(*axis + 1));
  std::vector<int64_t> sources;
  sources.reserve(product(shape));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : *indices) {
      if (index < -dim || index >= dim)
        return e.error("index " + Twine(index) + " is out of range [" +
                       Twine(-dim) + ", " + Twine(dim - 1) + "] of axis " +
                       Twine(*axis));
      int64_t i = index < 0 ? index + dim : index;
      for (int64_t k = 0; k < inner; ++k)
        sources.push_back((o * dim + i) * inner + k);
    }
  return e.result(data.select(shape, sources));
}

static LogicalResult evaluateSlice(Evaluation &e) {
  std::optional<ArrayRef<int64_t>> starts = intsOf(e, 1), ends = intsOf(e, 2);
  if (!starts || !ends)
    return success();
  const Tensor &data = e.in(0);
  int64_t rank = data.shape.size();
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (e.has(3)) {
    std::optional<ArrayRef<int64_t>> given = intsOf(e, 3);
    if (!given)
      return success();
    axes.assign(given->begin(), given->end());
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (e.has(4)) {
    std::optional<ArrayRef<int64_t>> given = intsOf(e, 4);
    if (!given)
      return success();
    steps.assign(given->begin(), given->end());
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return e.error("starts, ends, axes and steps have " +
                   Twine(starts->size()) + ", " + Twine(ends->size()) + ", " +
                   Twine(axes.size()) + " and " + Twine(steps.size()) +
                   " values");
  SmallVector<int64_t> begin(rank, 0), stride(rank, 1),
      shape(data.shape.begin(), data.shape.end());
  SmallVector<bool> sliced(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> d = normalized(e, axes[i], rank);
    if (failed(d))
      return failure();
    if (sliced[*d])
      return e.error("axes " + eff::formatShape(axes) + " repeat axis " +
                     Twine(*d));
    sliced[*d] = true;
    int64_t dim = data.shape[*d], step = steps[i];
    if (step == 0)
      return e.error("step of axis " + Twine(*d) + " is 0");
    int64_t start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    begin[*d] = start;
    stride[*d] = step;
    shape[*d] = count;
  }
  return e.result(
      data.select(shape, mapIndices(shape, data.shape,
                                    [&](ArrayRef<int64_t> out, unsigned d) {
                                      return begin[d] + out[d] * stride[d];
                                    })));
}

static LogicalResult evaluateExpand(Evaluation &e) {
  std::optional<ArrayRef<int64_t>> target = intsOf(e, 1);
  if (!target)
    return success();
  const Tensor &data = e.in(0);
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes({data.shape, *target});
  if (!shape || llvm::any_of(*target, [](int64_t d) { return d < 0; }))
    return e.error("cannot expand " + eff::formatShape(data.shape) + " to " +
                   eff::formatShape(*target));
  if (!e.fits(*shape))
    return success();
  return e.result(data.select(*shape, broadcastSources(data.shape, *shape)));
}

static LogicalResult evaluateTile(Evaluation &e) {
  std::optional<ArrayRef<int64_t>> repeats = intsOf(e, 1);
  if (!repeats)
    return success();
  const Tensor &data = e.in(0);
  if (repeats->size() != data.shape.size() ||
      llvm::any_of(*repeats, [](int64_t r) { return r < 0; }))
    return e.error("repeats " + eff::formatShape(*repeats) +
                   " do not fit an input of rank " + Twine(data.shape.size()));
  SmallVector<int64_t> shape;
  for (auto [dim, r] : llvm::zip(data.shape, *repeats)) {
    int64_t size;
    if (llvm::MulOverflow(dim, r, size))
      return e.decline();
    shape.push_back(size);
  }
  if (!e.fits(shape))
    return success();
  return e.result(
      data.select(shape, mapIndices(shape, data.shape,
                                    [&](ArrayRef<int64_t> out, unsigned d) {
                                      return out[d] % data.shape[d];
                                    })));
}

static LogicalResult evaluateScatterND(Evaluation &e) {
  std::string reduction = e.ctx.getString("reduction", "none");
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return e.decline();
  // Each update is combined with the element as it stands: repeated
  // indices accumulate in the order they are listed.
  auto combine = [&](auto old, auto update) -> decltype(old) {
    using T = decltype(old);
    if (reduction == "add") {
      if constexpr (std::is_integral_v<T>)
        return wrapAdd(old, update);
      return old + update;
    }
    if (reduction == "mul") {
      if constexpr (std::is_integral_v<T>)
        return wrapMul(old, update);
      return old * update;
    }
    if (reduction == "max")
      return std::max(old, update);
    if (reduction == "min")
      return std::min(old, update);
    return update;
  };
  std::optional<ArrayRef<int64_t>> indices = intsOf(e, 1);
  if (!indices || !e.has(2))
    return success();
  const Tensor &data = e.in(0), &updates = e.in(2);
  ArrayRef<int64_t> indexShape = e.in(1).shape, dataShape = data.shape;
  if (indexShape.empty() || indexShape.back() > int64_t(dataShape.size()) ||
      updates.elementType != data.elementType)
    return e.error("indices shaped " + eff::formatShape(indexShape) +
                   " do not index data shaped " + eff::formatShape(dataShape));
  int64_t depth = indexShape.back();
  SmallVector<int64_t> updateShape(indexShape.drop_back());
  llvm::append_range(updateShape, dataShape.drop_front(depth));
  if (ArrayRef<int64_t>(updateShape) != ArrayRef<int64_t>(updates.shape))
    return e.error("updates are shaped " + eff::formatShape(updates.shape) +
                   ", not " + eff::formatShape(updateShape));
  SmallVector<int64_t> strides = rowMajorStrides(dataShape);
  int64_t chunk = product(dataShape.drop_front(depth));
  Tensor result = data;
  int64_t count = product(indexShape.drop_back());
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (int64_t k = 0; k < depth; ++k) {
      int64_t index = (*indices)[i * depth + k], dim = dataShape[k];
      if (index < -dim || index >= dim)
        return e.error("index " + Twine(index) + " is out of range [" +
                       Twine(-dim) + ", " + Twine(dim - 1) + "] of axis " +
                       Twine(k));
      offset += (index < 0 ? index + dim : index) * strides[k];
    }
    for (int64_t j = 0; j < chunk; ++j) {
      if (result.isFloat())
        result.floats[offset + j] =
            combine(result.floats[offset + j], updates.floats[i * chunk + j]);
      else
        result.ints[offset + j] =
            combine(result.ints[offset + j], updates.ints[i * chunk + j]);
    }
  }
  wrapToWidth(result);
  return e.result(std::move(result));
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

namespace {
struct Evaluator {
  EvaluateFn fn;
  /// Inputs that must be present (Slice needs starts and ends).
  unsigned requiredInputs;
};
} // namespace

static const llvm::StringMap<Evaluator> &getEvaluators() {
  static const llvm::StringMap<Evaluator> evaluators = {
      // Arithmetic and comparisons.
      {"Add", {evaluateAdd, 2}},
      {"Sub", {evaluateSub, 2}},
      {"Mul", {evaluateMul, 2}},
      {"Div", {evaluateDiv, 2}},
      {"Mod", {evaluateMod, 2}},
      {"Pow", {evaluatePow, 2}},
      {"Min", {evaluateMin, 1}},
      {"Max", {evaluateMax, 1}},
      {"Sum", {evaluateSum, 1}},
      {"Equal", {evaluateEqual, 2}},
      {"Less", {evaluateLess, 2}},
      {"LessOrEqual", {evaluateLessOrEqual, 2}},
      {"Greater", {evaluateGreater, 2}},
      {"GreaterOrEqual", {evaluateGreaterOrEqual, 2}},
      {"And", {evaluateAnd, 2}},
      {"Or", {evaluateOr, 2}},
      {"Xor", {evaluateXor, 2}},
      {"Not", {evaluateNot, 1}},
      {"Identity", {evaluateIdentity, 1}},
      {"Neg", {evaluateNeg, 1}},
      {"Abs", {evaluateAbs, 1}},
      {"Sign", {evaluateSign, 1}},
      {"Floor", {evaluateFloor, 1}},
      {"Ceil", {evaluateCeil, 1}},
      {"Round", {evaluateRound, 1}},
      {"Sqrt", {evaluateSqrt, 1}},
      {"Reciprocal", {evaluateReciprocal, 1}},
      {"Relu", {evaluateRelu, 1}},
      {"Where", {evaluateWhere, 3}},
      {"Cast", {evaluateCast, 1}},
      {"CastLike", {evaluateCastLike, 2}},
      // Shapes and data movement.
      {"Reshape", {evaluateReshape, 2}},
      {"Flatten", {evaluateFlatten, 1}},
      {"Unsqueeze", {evaluateUnsqueeze, 2}},
      {"Squeeze", {evaluateSqueeze, 1}},
      {"Concat", {evaluateConcat, 1}},
      {"Split", {evaluateSplit, 1}},
      {"Transpose", {evaluateTranspose, 1}},
      {"Gather", {evaluateGather, 2}},
      {"Slice", {evaluateSlice, 3}},
      {"Expand", {evaluateExpand, 2}},
      {"Tile", {evaluateTile, 2}},
      {"ScatterND", {evaluateScatterND, 3}},
  };
  return evaluators;
}

FailureOr<bool> effopt::onnx_import::foldConstantNode(NodeContext &ctx) {
  const onnx::NodeProto &node = ctx.node;
  auto evaluator = getEvaluators().find(node.op_type());
  if (evaluator == getEvaluators().end())
    return false;
  // Squeeze and Unsqueeze took their axes as an attribute before opset 13,
  // below what the importer accepts.
  unsigned numInputs = node.input_size();
  if (numInputs < evaluator->second.requiredInputs)
    return false;
  Evaluation e{ctx, {}, {}, false};
  for (unsigned i = 0; i < numInputs; ++i) {
    if (!ctx.hasInput(i)) {
      if (i < evaluator->second.requiredInputs)
        return false;
      e.inputs.push_back(std::nullopt);
      continue;
    }
    DenseElementsAttr attr = ctx.constantInput(i);
    if (!attr || attr.getNumElements() > kMaxFoldedElements)
      return false;
    std::optional<Tensor> tensor = fromAttr(attr);
    if (!tensor)
      return false;
    e.inputs.push_back(std::move(tensor));
  }
  if (failed(evaluator->second.fn(e)))
    return failure();
  if (e.declined || e.results.empty())
    return false;
  for (auto [i, tensor] : llvm::enumerate(e.results))
    ctx.setOutput(i, ctx.constant(toAttr(tensor)));
  if (ctx.hasErrors())
    return failure();
  return true;
}
