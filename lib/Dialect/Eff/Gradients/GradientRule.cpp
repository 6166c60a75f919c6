//===- GradientRule.cpp - shared machinery of the gradient rules ----------===//

#include "GradientRule.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;
using namespace effopt::eff::gradients;

bool effopt::eff::detail::isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

void GradientContext::setGrad(unsigned i, Value grad) {
  if (!need(i) || !grad)
    return;
  auto target = typeOf(op->getOperand(i));
  grad = reduceToShape(grad, target.getShape());
  if (typeOf(grad).getElementType() != target.getElementType())
    grad = castTo(grad, target.getElementType());
  operandGradients[i] = grad;
}

Value GradientContext::scalar(double value, Type elementType) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getFloatAttr(elementType, value)));
}

Value GradientContext::zerosLike(Value v) {
  RankedTensorType type = typeOf(v);
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
}

Value GradientContext::reshape(Value x, ArrayRef<int64_t> shape) {
  RankedTensorType type = typeOf(x);
  if (type.getShape() == shape)
    return x;
  return create<ReshapeOp>(type.clone(shape), x);
}

Value GradientContext::broadcastTo(Value x, ArrayRef<int64_t> shape) {
  RankedTensorType type = typeOf(x);
  if (type.getShape() == shape)
    return x;
  return create<BroadcastToOp>(type.clone(shape), x);
}

Value GradientContext::castTo(Value x, Type elementType) {
  RankedTensorType type = typeOf(x);
  if (type.getElementType() == elementType)
    return x;
  return create<CastOp>(type.clone(elementType), x);
}

Value GradientContext::reduceToShape(Value grad, ArrayRef<int64_t> shape) {
  RankedTensorType type = typeOf(grad);
  ArrayRef<int64_t> gradShape = type.getShape();
  if (gradShape == shape)
    return grad;
  // Dimensions broadcasting added in front, then those expanded from 1.
  size_t offset = gradShape.size() - shape.size();
  SmallVector<int64_t> axes;
  for (size_t d = 0; d < gradShape.size(); ++d)
    if (d < offset || (shape[d - offset] == 1 && gradShape[d] != 1))
      axes.push_back(d);
  Value reduced = grad;
  if (!axes.empty())
    reduced = create<ReduceSumOp>(grad, axes, /*keep_dims=*/false);
  return reshape(reduced, shape);
}

Value GradientContext::transposeLastTwo(Value x) {
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> permutation;
  for (int64_t d = 0; d < rank; ++d)
    permutation.push_back(d);
  std::swap(permutation[rank - 1], permutation[rank - 2]);
  return create<TransposeOp>(x, permutation);
}

void effopt::eff::registerGradientInterfaceModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, EffDialect *) {
    registerElementwiseGradients(context);
    registerShapeGradients(context);
    registerContractionGradients(context);
    registerNormalizationGradients(context);
    registerAttentionGradients(context);
    registerLossGradients(context);
  });
}
