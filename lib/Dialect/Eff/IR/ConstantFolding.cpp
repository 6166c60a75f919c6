//===- ConstantFolding.cpp - folding helpers for small eff constants ------===//

#include "ConstantFolding.h"

using namespace mlir;

namespace effopt::eff::folding {

bool isUnsignedInteger(Type type) {
  auto integer = dyn_cast<IntegerType>(type);
  return integer && (integer.isUnsigned() || integer.getWidth() == 1);
}

APSInt toAPSInt(const APInt &value, Type elementType) {
  return APSInt(value, isUnsignedInteger(elementType));
}

DenseElementsAttr getFoldable(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.getType().hasStaticShape())
    return {};
  if (!dense.isSplat() && dense.getNumElements() > kMaxFoldedElements)
    return {};
  return dense;
}

DenseElementsAttr gatherElements(DenseElementsAttr source,
                                 RankedTensorType resultType,
                                 llvm::function_ref<int64_t(int64_t)> sourceIndex) {
  if (source.isSplat())
    return DenseElementsAttr::get(resultType,
                                  source.getSplatValue<Attribute>());
  int64_t count = resultType.getNumElements();
  if (count > kMaxFoldedElements)
    return {};
  auto values = source.getValues<Attribute>();
  SmallVector<Attribute> result;
  result.reserve(count);
  for (int64_t i = 0; i < count; ++i)
    result.push_back(values[sourceIndex(i)]);
  return DenseElementsAttr::get(resultType, result);
}

int64_t broadcastSourceIndex(int64_t resultIndex, ArrayRef<int64_t> resultShape,
                             ArrayRef<int64_t> operandShape) {
  int64_t operandIndex = 0, operandStride = 1;
  size_t offset = resultShape.size() - operandShape.size();
  for (int64_t d = static_cast<int64_t>(resultShape.size()) - 1; d >= 0; --d) {
    int64_t coordinate = resultIndex % resultShape[d];
    resultIndex /= resultShape[d];
    if (d < static_cast<int64_t>(offset))
      continue;
    int64_t operandDim = operandShape[d - offset];
    if (operandDim != 1)
      operandIndex += coordinate * operandStride;
    operandStride *= operandDim;
  }
  return operandIndex;
}

Attribute foldBroadcastBinary(Attribute lhsAttr, Attribute rhsAttr,
                              RankedTensorType resultType, IntBinaryFn intFn,
                              FloatBinaryFn floatFn) {
  DenseElementsAttr lhs = getFoldable(lhsAttr), rhs = getFoldable(rhsAttr);
  if (!lhs || !rhs)
    return {};
  Type elementType = lhs.getElementType();
  if (elementType != rhs.getElementType() ||
      elementType != resultType.getElementType())
    return {};
  ArrayRef<int64_t> resultShape = resultType.getShape();
  ArrayRef<int64_t> lhsShape = lhs.getType().getShape();
  ArrayRef<int64_t> rhsShape = rhs.getType().getShape();
  // Two splats give a splat of any size: compute one element.
  bool splat = lhs.isSplat() && rhs.isSplat();
  if (splat) {
    lhsShape = rhsShape = resultShape = {};
  } else if (resultType.getNumElements() > kMaxFoldedElements) {
    return {};
  }
  int64_t count = splat ? 1 : resultType.getNumElements();

  if (isa<IntegerType>(elementType)) {
    if (!intFn)
      return {};
    auto lhsValues = lhs.getValues<APInt>();
    auto rhsValues = rhs.getValues<APInt>();
    SmallVector<APInt> result;
    result.reserve(count);
    for (int64_t i = 0; i < count; ++i) {
      std::optional<APInt> value = intFn(
          toAPSInt(lhsValues[broadcastSourceIndex(i, resultShape, lhsShape)],
                   elementType),
          toAPSInt(rhsValues[broadcastSourceIndex(i, resultShape, rhsShape)],
                   elementType));
      if (!value)
        return {};
      result.push_back(*value);
    }
    // A single value makes a splat.
    return DenseElementsAttr::get(resultType, result);
  }
  if (isa<FloatType>(elementType)) {
    if (!floatFn)
      return {};
    auto lhsValues = lhs.getValues<APFloat>();
    auto rhsValues = rhs.getValues<APFloat>();
    SmallVector<APFloat> result;
    result.reserve(count);
    for (int64_t i = 0; i < count; ++i) {
      std::optional<APFloat> value =
          floatFn(lhsValues[broadcastSourceIndex(i, resultShape, lhsShape)],
                  rhsValues[broadcastSourceIndex(i, resultShape, rhsShape)]);
      if (!value)
        return {};
      result.push_back(*value);
    }
    // A single value makes a splat.
    return DenseElementsAttr::get(resultType, result);
  }
  return {};
}

} // namespace effopt::eff::folding
