//===- ElementwiseOps.cpp - elementwise ops: types, verifiers, folds ------===//

#include "ConstantFolding.h"

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

/// Infers the broadcast result type of `operands`, with `elementType` or the
/// first operand's element type.
static LogicalResult inferBroadcastType(std::optional<Location> loc,
                                        ValueRange operands, Type elementType,
                                        SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> shape;
  bool first = true;
  for (Value operand : operands) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type)
      return emitOptionalError(loc, "operands must be ranked tensors");
    if (first) {
      shape.assign(type.getShape().begin(), type.getShape().end());
      first = false;
      continue;
    }
    std::optional<SmallVector<int64_t>> broadcast =
        broadcastShapes(shape, type.getShape());
    if (!broadcast)
      return emitOptionalError(loc, "operand shapes ", formatShape(shape),
                               " and ", formatShape(type.getShape()),
                               " do not broadcast");
    shape = std::move(*broadcast);
  }
  if (!elementType)
    elementType = cast<RankedTensorType>(operands.front().getType())
                      .getElementType();
  types.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

/// Checks that value operands share one element type.
static LogicalResult verifySameElementType(Operation *op, ValueRange values) {
  Type elementType;
  for (Value value : values) {
    Type type = cast<ShapedType>(value.getType()).getElementType();
    if (!elementType)
      elementType = type;
    else if (type != elementType)
      return op->emitOpError("operands must have the same element type, got ")
             << elementType << " and " << type;
  }
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
    return verifySameElementType(*this, getOperands());                        \
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

static bool isSplatConstant(Attribute attr, double value) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  if (isa<FloatType>(dense.getElementType()))
    return dense.getSplatValue<APFloat>().convertToDouble() == value;
  if (isa<IntegerType>(dense.getElementType()))
    return dense.getSplatValue<APInt>().getSExtValue() == value;
  return false;
}

/// `x op identity -> x` when the result type is x's type (no broadcast).
static OpFoldResult foldIdentityOperand(Value keep, Type resultType) {
  if (keep.getType() == resultType)
    return keep;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isSplatConstant(adaptor.getRhs(), 0))
    if (OpFoldResult r = foldIdentityOperand(getLhs(), getType()))
      return r;
  if (isSplatConstant(adaptor.getLhs(), 0))
    if (OpFoldResult r = foldIdentityOperand(getRhs(), getType()))
      return r;
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a + b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a + b;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatConstant(adaptor.getRhs(), 0))
    if (OpFoldResult r = foldIdentityOperand(getLhs(), getType()))
      return r;
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
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
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
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
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        return a.sdiv(b);
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
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isNegative())
          return std::nullopt;
        APInt result(a.getBitWidth(), 1);
        for (uint64_t i = 0, e = b.getZExtValue(); i < e && i < 64; ++i)
          result *= a;
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
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a.sge(b) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return llvm::maximum(a, b);
      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldBroadcastBinary(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a.sle(b) ? a : b;
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
    return input.mapValues(input.getElementType(),
                           [](const APFloat &v) { return (-v).bitcastToAPInt(); });
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
  return verifySameElementType(*this, {getLhs(), getRhs()});
}

static bool evaluatePredicate(CmpPredicate predicate, int order, bool unordered) {
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
  if (type.getNumElements() > kMaxFoldedElements)
    return {};
  CmpPredicate predicate = getPredicate();
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<bool> result;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    int64_t li = broadcastSourceIndex(i, shape, lhs.getType().getShape());
    int64_t ri = broadcastSourceIndex(i, shape, rhs.getType().getShape());
    if (isa<FloatType>(lhs.getElementType())) {
      APFloat a = lhs.getValues<APFloat>()[li], b = rhs.getValues<APFloat>()[ri];
      APFloat::cmpResult c = a.compare(b);
      int order = c == APFloat::cmpLessThan ? -1 : c == APFloat::cmpEqual ? 0 : 1;
      result.push_back(
          evaluatePredicate(predicate, order, c == APFloat::cmpUnordered));
    } else {
      APInt a = lhs.getValues<APInt>()[li], b = rhs.getValues<APInt>()[ri];
      bool isBool = a.getBitWidth() == 1;
      int order = a == b ? 0 : ((isBool ? a.ult(b) : a.slt(b)) ? -1 : 1);
      result.push_back(evaluatePredicate(predicate, order, false));
    }
  }
  return DenseElementsAttr::get(type, ArrayRef<bool>(result));
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  SmallVector<Type> ignored;
  if (failed(inferBroadcastType(loc, adaptor.getOperands(), Type(), ignored)))
    return failure();
  Type elementType =
      cast<RankedTensorType>(adaptor.getTrueValue().getType()).getElementType();
  types.push_back(RankedTensorType::get(
      cast<RankedTensorType>(ignored.front()).getShape(), elementType));
  return success();
}

LogicalResult WhereOp::verify() {
  return verifySameElementType(*this, {getTrueValue(), getFalseValue()});
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  auto condition = dyn_cast_or_null<DenseElementsAttr>(adaptor.getCondition());
  if (condition && condition.isSplat()) {
    Value chosen =
        condition.getSplatValue<bool>() ? getTrueValue() : getFalseValue();
    if (chosen.getType() == getType())
      return chosen;
  }
  if (getTrueValue() == getFalseValue() && getTrueValue().getType() == getType())
    return getTrueValue();
  return {};
}

int64_t CmpOp::getFlops() { return detail::numElements(getType()); }
int64_t WhereOp::getFlops() { return detail::numElements(getType()); }

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("cannot change the shape: input is ")
           << formatShape(getInput().getType().getShape()) << ", result is "
           << formatShape(getType().getShape());
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  DenseElementsAttr input = getFoldable(adaptor.getInput());
  if (!input)
    return {};
  Type from = input.getElementType(), to = getType().getElementType();
  auto toInt = dyn_cast<IntegerType>(to);
  auto fromInt = dyn_cast<IntegerType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  auto fromFloat = dyn_cast<FloatType>(from);
  bool fromBool = fromInt && fromInt.getWidth() == 1;
  if (fromInt && toInt) {
    unsigned width = toInt.getWidth();
    if (width == 1)
      return input.mapValues(
          to, [](const APInt &v) { return APInt(1, v.isZero() ? 0 : 1); });
    return input.mapValues(to, [&](const APInt &v) {
      return fromBool || fromInt.isUnsigned() ? v.zextOrTrunc(width)
                                              : v.sextOrTrunc(width);
    });
  }
  if (fromInt && toFloat) {
    return input.mapValues(to, [&](const APInt &v) {
      APFloat result(toFloat.getFloatSemantics());
      result.convertFromAPInt(v, !(fromBool || fromInt.isUnsigned()),
                              APFloat::rmNearestTiesToEven);
      return result.bitcastToAPInt();
    });
  }
  if (fromFloat && toFloat) {
    return input.mapValues(to, [&](const APFloat &v) {
      APFloat result = v;
      bool losesInfo = false;
      result.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                     &losesInfo);
      return result.bitcastToAPInt();
    });
  }
  if (fromFloat && toInt) {
    unsigned width = toInt.getWidth();
    return input.mapValues(to, [&](const APFloat &v) {
      if (width == 1)
        return APInt(1, v.isZero() ? 0 : 1);
      APSInt result(width, toInt.isUnsigned());
      bool isExact = false;
      v.convertToInteger(result, APFloat::rmTowardZero, &isExact);
      return APInt(result);
    });
  }
  return {};
}

int64_t CastOp::getFlops() { return detail::numElements(getType()); }

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  types.push_back(type);
  types.push_back(type.clone(IntegerType::get(context, 1)));
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  return success();
}

int64_t DropoutOp::getFlops() {
  // Random number, compare, scale.
  return 3 * detail::numElements(getOutput().getType());
}
