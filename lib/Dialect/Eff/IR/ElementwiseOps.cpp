//===- ElementwiseOps.cpp - elementwise ops: types, verifiers, folds ------===//

#include "ConstantFolding.h"
#include "OpUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/APSInt.h"

#include <cmath>

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::folding;

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

/// The numpy broadcast of the shapes of `operands`, or a diagnostic. With
/// `sameElementType`, the operands must also share one element type.
static FailureOr<SmallVector<int64_t>>
inferBroadcastShape(const RuleDiagnoser &emitError, ValueRange operands,
                    bool sameElementType) {
  SmallVector<int64_t> shape;
  Type elementType;
  for (auto [i, operand] : llvm::enumerate(operands)) {
    FailureOr<RankedTensorType> type =
        getRankedType(emitError, operand, "operand #" + std::to_string(i));
    if (failed(type))
      return failure();
    if (i == 0) {
      shape.assign(type->getShape().begin(), type->getShape().end());
      elementType = type->getElementType();
      continue;
    }
    if (sameElementType && type->getElementType() != elementType) {
      (void)emitError("operands must have the same element type, got ",
                      elementType, " and ", type->getElementType());
      return failure();
    }
    std::optional<SmallVector<int64_t>> broadcast =
        broadcastShapes(shape, type->getShape());
    if (!broadcast) {
      (void)emitError("operand shapes ", formatShape(shape), " and ",
                      formatShape(type->getShape()), " do not broadcast");
      return failure();
    }
    shape = std::move(*broadcast);
  }
  return shape;
}

/// Infers the broadcast of operands that share one element type, with
/// `elementType` or else that shared type as the result's element type.
static LogicalResult inferBroadcastType(const RuleDiagnoser &emitError,
                                        ValueRange operands, Type elementType,
                                        SmallVectorImpl<Type> &types) {
  FailureOr<SmallVector<int64_t>> shape =
      inferBroadcastShape(emitError, operands, /*sameElementType=*/true);
  if (failed(shape))
    return failure();
  if (!elementType)
    elementType = tensorType(operands.front()).getElementType();
  types.push_back(RankedTensorType::get(*shape, elementType));
  return success();
}

#define EFF_BROADCAST_BINARY(Op)                                               \
  LogicalResult Op::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferBroadcastType(loc, adaptor.getOperands(), Type(), types);      \
  }                                                                            \
  LogicalResult Op::verify() {                                                 \
    SmallVector<Type> types;                                                   \
    return inferBroadcastType(getOperation(), getOperands(), Type(), types);   \
  }

EFF_BROADCAST_BINARY(AddOp)
EFF_BROADCAST_BINARY(SubOp)
EFF_BROADCAST_BINARY(MulOp)
EFF_BROADCAST_BINARY(DivOp)
EFF_BROADCAST_BINARY(PowOp)
EFF_BROADCAST_BINARY(MaxOp)
EFF_BROADCAST_BINARY(MinOp)
EFF_BROADCAST_BINARY(LogicalAndOp)
EFF_BROADCAST_BINARY(LogicalOrOp)
#undef EFF_BROADCAST_BINARY

//===----------------------------------------------------------------------===//
// Arithmetic folds
//===----------------------------------------------------------------------===//

/// True if `attr` is a splat constant equal to the small integer `value`.
static bool isSplatConstant(Attribute attr, int64_t value) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  Type elementType = dense.getElementType();
  if (isa<FloatType>(elementType))
    return dense.getSplatValue<APFloat>().convertToDouble() == value;
  if (isa<IntegerType>(elementType))
    return APSInt::isSameValue(
        toAPSInt(dense.getSplatValue<APInt>(), elementType),
        APSInt::get(value));
  return false;
}

/// True if `attr` is a splat zero whose sign is `negative` (floats) or an
/// integer splat zero. IEEE makes `x + -0.0` and `x - +0.0` exactly `x`;
/// `-0.0 + +0.0` is `+0.0`, so the other signs are not identities.
static bool isSplatZero(Attribute attr, bool negative) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  if (isa<FloatType>(dense.getElementType())) {
    APFloat value = dense.getSplatValue<APFloat>();
    return value.isZero() && value.isNegative() == negative;
  }
  return isSplatConstant(attr, 0);
}

/// `x op identity -> x` when the result type is x's type (no broadcast).
static OpFoldResult foldIdentityOperand(Value keep, Type resultType) {
  if (keep.getType() == resultType)
    return keep;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isSplatZero(adaptor.getRhs(), /*negative=*/true))
    if (OpFoldResult r = foldIdentityOperand(getLhs(), getType()))
      return r;
  if (isSplatZero(adaptor.getLhs(), /*negative=*/true))
    if (OpFoldResult r = foldIdentityOperand(getRhs(), getType()))
      return r;
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APSInt &a, const APSInt &b) -> std::optional<APInt> {
        return a + b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a + b;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatZero(adaptor.getRhs(), /*negative=*/false))
    if (OpFoldResult r = foldIdentityOperand(getLhs(), getType()))
      return r;
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APSInt &a, const APSInt &b) -> std::optional<APInt> {
        return a - b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a - b;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatConstant(adaptor.getRhs(), 1))
    if (OpFoldResult r = foldIdentityOperand(getLhs(), getType()))
      return r;
  if (isSplatConstant(adaptor.getLhs(), 1))
    if (OpFoldResult r = foldIdentityOperand(getRhs(), getType()))
      return r;
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APSInt &a, const APSInt &b) -> std::optional<APInt> {
        return a * b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a * b;
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatConstant(adaptor.getRhs(), 1))
    if (OpFoldResult r = foldIdentityOperand(getLhs(), getType()))
      return r;
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APSInt &a, const APSInt &b) -> std::optional<APInt> {
        // Division by zero and the signed INT_MIN / -1 are undefined: leave
        // them to the runtime rather than fold to an arbitrary value.
        if (b.isZero())
          return std::nullopt;
        if (a.isUnsigned())
          return a.udiv(b);
        bool overflow = false;
        APInt quotient = a.sdiv_ov(b, overflow);
        if (overflow)
          return std::nullopt;
        return quotient; // Truncates toward zero.
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a / b;
      });
}

/// Converts a double to the semantics of `like`, rounding to nearest even.
static APFloat toSemantics(double value, const APFloat &like) {
  APFloat result(value);
  bool losesInfo = false;
  result.convert(like.getSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
  return result;
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  if (isSplatConstant(adaptor.getRhs(), 1))
    if (OpFoldResult r = foldIdentityOperand(getLhs(), getType()))
      return r;
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APSInt &a, const APSInt &b) -> std::optional<APInt> {
        // Integer to a negative power is not an integer (numpy refuses it).
        if (b.isNegative())
          return std::nullopt;
        // Square-and-multiply over the exponent's bits, wrapping on overflow
        // like every other integer op.
        APInt result(a.getBitWidth(), 1), base = a;
        for (unsigned bit = 0, e = b.getActiveBits(); bit < e; ++bit) {
          if (b[bit])
            result *= base;
          base *= base;
        }
        return result;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return toSemantics(std::pow(a.convertToDouble(), b.convertToDouble()),
                           a);
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APSInt &a, const APSInt &b) -> std::optional<APInt> {
        return a >= b ? a : b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return llvm::maximum(a, b);
      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APSInt &a, const APSInt &b) -> std::optional<APInt> {
        return a <= b ? a : b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return llvm::minimum(a, b);
      });
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = getFoldable(adaptor.getInput());
  if (!input)
    return {};
  if (isa<FloatType>(input.getElementType()))
    return input.mapValues(input.getElementType(), [](const APFloat &v) {
      return (-v).bitcastToAPInt();
    });
  return input.mapValues(input.getElementType(),
                         [](const APInt &v) { return -v; });
}

OpFoldResult LogicalNotOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = getFoldable(adaptor.getInput());
  if (!input)
    return {};
  return input.mapValues(input.getElementType(),
                         [](const APInt &v) { return ~v; });
}

//===----------------------------------------------------------------------===//
// Comparison and selection
//===----------------------------------------------------------------------===//

LogicalResult CmpOp::inferReturnTypes(MLIRContext *context,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  return inferBroadcastType(loc, {adaptor.getLhs(), adaptor.getRhs()},
                            IntegerType::get(context, 1), types);
}

LogicalResult CmpOp::verify() {
  SmallVector<Type> types;
  return inferBroadcastType(getOperation(), {getLhs(), getRhs()},
                            IntegerType::get(getContext(), 1), types);
}

/// `predicate` for two values whose comparison gave `order` (<0, 0, >0), or
/// that are `unordered` (a NaN is involved).
static bool evaluatePredicate(CmpPredicate predicate, int order,
                              bool unordered) {
  if (unordered)
    return predicate == CmpPredicate::ne;
  switch (predicate) {
  case CmpPredicate::eq:
    return order == 0;
  case CmpPredicate::ne:
    return order != 0;
  case CmpPredicate::lt:
    return order < 0;
  case CmpPredicate::le:
    return order <= 0;
  case CmpPredicate::gt:
    return order > 0;
  case CmpPredicate::ge:
    return order >= 0;
  }
  llvm_unreachable("unknown predicate");
}

OpFoldResult CmpOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr lhs = getFoldable(adaptor.getLhs());
  DenseElementsAttr rhs = getFoldable(adaptor.getRhs());
  if (!lhs || !rhs)
    return {};
  RankedTensorType type = getType();
  // Two splats give a splat of any size: compare one pair.
  bool splat = lhs.isSplat() && rhs.isSplat();
  if (!splat && type.getNumElements() > kMaxFoldedElements)
    return {};
  ArrayRef<int64_t> shape = splat ? ArrayRef<int64_t>() : type.getShape();
  ArrayRef<int64_t> lhsShape =
      splat ? ArrayRef<int64_t>() : lhs.getType().getShape();
  ArrayRef<int64_t> rhsShape =
      splat ? ArrayRef<int64_t>() : rhs.getType().getShape();
  Type elementType = lhs.getElementType();
  CmpPredicate predicate = getPredicate();
  SmallVector<bool> result;
  for (int64_t i = 0, e = splat ? 1 : type.getNumElements(); i < e; ++i) {
    int64_t li = broadcastSourceIndex(i, shape, lhsShape);
    int64_t ri = broadcastSourceIndex(i, shape, rhsShape);
    if (isa<FloatType>(elementType)) {
      APFloat a = lhs.getValues<APFloat>()[li];
      APFloat b = rhs.getValues<APFloat>()[ri];
      APFloat::cmpResult c = a.compare(b);
      int order = c == APFloat::cmpLessThan ? -1
                  : c == APFloat::cmpEqual  ? 0
                                            : 1;
      result.push_back(
          evaluatePredicate(predicate, order, c == APFloat::cmpUnordered));
    } else {
      APSInt a = toAPSInt(lhs.getValues<APInt>()[li], elementType);
      APSInt b = toAPSInt(rhs.getValues<APInt>()[ri], elementType);
      result.push_back(
          evaluatePredicate(predicate, APSInt::compareValues(a, b), false));
    }
  }
  // A single value makes a splat.
  return DenseElementsAttr::get(type, ArrayRef<bool>(result));
}

/// Type rule of `eff.where`: the values share an element type, and the i1
/// condition broadcasts with them.
static LogicalResult inferWhereType(const RuleDiagnoser &emitError,
                                   WhereOp::Adaptor adaptor,
                                   SmallVectorImpl<Type> &types) {
  FailureOr<SmallVector<int64_t>> valueShape = inferBroadcastShape(
      emitError, {adaptor.getTrueValue(), adaptor.getFalseValue()},
      /*sameElementType=*/true);
  if (failed(valueShape))
    return failure();
  FailureOr<RankedTensorType> condition =
      getRankedType(emitError, adaptor.getCondition(), "condition");
  if (failed(condition))
    return failure();
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(condition->getShape(), *valueShape);
  if (!shape)
    return emitError("condition shape ", formatShape(condition->getShape()),
                     " does not broadcast with the value shape ",
                     formatShape(*valueShape));
  types.push_back(RankedTensorType::get(
      *shape, tensorType(adaptor.getTrueValue()).getElementType()));
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferWhereType(loc, adaptor, types);
}

LogicalResult WhereOp::verify() {
  return verifyTypeRule(*this, inferWhereType);
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  auto condition = dyn_cast_or_null<DenseElementsAttr>(adaptor.getCondition());
  if (condition && condition.isSplat()) {
    Value chosen =
        condition.getSplatValue<bool>() ? getTrueValue() : getFalseValue();
    if (chosen.getType() == getType())
      return chosen;
  }
  if (getTrueValue() == getFalseValue() &&
      getTrueValue().getType() == getType())
    return getTrueValue();
  return {};
}

int64_t CmpOp::getFlops() { return detail::numElements(getType()); }
int64_t WhereOp::getFlops() { return detail::numElements(getType()); }

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Converts one element of type `from` to type `to` with the semantics of
/// `eff.cast`, or nullopt where they leave the result undefined (NaN or an
/// out-of-range float converted to an integer).
static std::optional<APInt> castElement(Attribute element, Type from, Type to) {
  auto toInt = dyn_cast<IntegerType>(to);
  auto toFloat = dyn_cast<FloatType>(to);
  if (auto value = dyn_cast<IntegerAttr>(element)) {
    APSInt v = toAPSInt(value.getValue(), from);
    if (toInt && toInt.getWidth() == 1)
      return APInt(1, v.isZero() ? 0 : 1);
    if (toInt) // Two's complement: extends by the source's signedness.
      return v.extOrTrunc(toInt.getWidth());
    APFloat result(toFloat.getFloatSemantics());
    result.convertFromAPInt(v, v.isSigned(), APFloat::rmNearestTiesToEven);
    return result.bitcastToAPInt();
  }
  APFloat v = cast<FloatAttr>(element).getValue();
  if (toFloat) {
    bool losesInfo = false;
    v.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &losesInfo);
    return v.bitcastToAPInt();
  }
  if (toInt.getWidth() == 1)
    return APInt(1, v.isZero() ? 0 : 1);
  APSInt result(toInt.getWidth(), isUnsignedInteger(toInt));
  bool isExact = false;
  if (v.convertToInteger(result, APFloat::rmTowardZero, &isExact) ==
      APFloat::opInvalidOp)
    return std::nullopt;
  return APInt(result);
}

/// Whether every value of `from` survives a cast to `through` and back:
/// widening float casts whose format holds the source's exactly (f16 ->
/// f32, bf16 -> f64, not f16 -> bf16), and integer casts to at least as
/// many bits (the way back truncates what the way there extended).
static bool isExactRoundTrip(Type from, Type through) {
  if (auto f = dyn_cast<FloatType>(from))
    if (auto t = dyn_cast<FloatType>(through))
      return llvm::APFloatBase::isRepresentableBy(f.getFloatSemantics(),
                                                  t.getFloatSemantics());
  if (auto f = dyn_cast<IntegerType>(from))
    if (auto t = dyn_cast<IntegerType>(through))
      return f.getWidth() > 1 && t.getWidth() >= f.getWidth();
  return false;
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // cast(cast(x, wider), type(x)) -> x: casts that cancel.
  if (auto inner = getInput().getDefiningOp<CastOp>())
    if (inner.getInput().getType() == getType() &&
        isExactRoundTrip(getType().getElementType(),
                         inner.getType().getElementType()))
      return inner.getInput();
  DenseElementsAttr input = getFoldable(adaptor.getInput());
  if (!input)
    return {};
  Type from = input.getElementType(), to = getType().getElementType();
  if (!isa<IntegerType, FloatType>(from) || !isa<IntegerType, FloatType>(to))
    return {};
  auto elements = input.getValues<Attribute>();
  int64_t count = input.isSplat() ? 1 : input.getNumElements();
  SmallVector<APInt> result;
  result.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    std::optional<APInt> value = castElement(elements[i], from, to);
    if (!value)
      return {};
    result.push_back(*value);
  }
  // A single value makes a splat.
  return DenseElementsAttr::get(getType(), result);
}

int64_t CastOp::getFlops() { return detail::numElements(getType()); }

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> type =
      getRankedType(RuleDiagnoser(loc), adaptor.getInput(), "input");
  if (failed(type))
    return failure();
  types.push_back(*type);
  types.push_back(type->clone(IntegerType::get(context, 1)));
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio must be in [0, 1), got ") << formatNumber(ratio);
  return success();
}

int64_t DropoutOp::getFlops() {
  // Random number, compare, scale.
  return 3 * detail::numElements(getOutput().getType());
}
