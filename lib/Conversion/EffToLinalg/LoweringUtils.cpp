//===- LoweringUtils.cpp - building blocks of the eff lowering ------------===//

#include "LoweringUtils.h"

#include "effopt/Analysis/MemoryReport.h"
#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;

namespace effopt::lowering {

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

SmallVector<int64_t> normalizeAxes(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t a : axes)
    result.push_back(a < 0 ? a + rank : a);
  llvm::sort(result);
  return result;
}

SmallVector<int64_t> reducedShape(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> axes) {
  SmallVector<int64_t> result;
  for (auto [i, d] : llvm::enumerate(shape))
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      result.push_back(d);
  return result;
}

/// The map reading an operand of `shape` inside a loop nest over
/// `iterationShape`, numpy style: trailing dimensions align, size-1
/// dimensions of the operand broadcast.
static AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> iterationShape) {
  int64_t rank = iterationShape.size();
  int64_t offset = rank - static_cast<int64_t>(shape.size());
  SmallVector<AffineExpr> exprs;
  for (auto [i, d] : llvm::enumerate(shape)) {
    int64_t loop = offset + static_cast<int64_t>(i);
    if (d == 1 && iterationShape[loop] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(loop, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

SmallVector<Value>
buildElementwiseMulti(OpBuilder &b, Location loc,
                      ArrayRef<RankedTensorType> resultTypes,
                      ValueRange operands, MultiScalarFn body) {
  ArrayRef<int64_t> shape = resultTypes.front().getShape();
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value operand : operands)
    maps.push_back(broadcastMap(
        ctx, cast<RankedTensorType>(operand.getType()).getShape(), shape));
  SmallVector<Value> inits;
  SmallVector<Type> types;
  for (RankedTensorType type : resultTypes) {
    inits.push_back(
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType()));
    types.push_back(type);
    maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  }
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::parallel);
  unsigned numInputs = operands.size();
  auto generic = linalg::GenericOp::create(
      b, loc, types, operands, inits, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> wide =
            widenScalars(nb, nloc, args.take_front(numInputs));
        SmallVector<Value> results = body(nb, nloc, wide);
        for (auto [result, type] : llvm::zip(results, resultTypes))
          result = castScalar(nb, nloc, result, type.getElementType());
        linalg::YieldOp::create(nb, nloc, results);
      });
  return SmallVector<Value>(generic.getResults());
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, ScalarFn body) {
  return buildElementwiseMulti(
      b, loc, {resultType}, operands,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        return SmallVector<Value>{body(nb, nloc, args)};
      })[0];
}

Value buildFill(OpBuilder &b, Location loc, RankedTensorType type,
                Value value) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty})
      .getResult(0);
}

Value buildReduction(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes, Value init, ScalarFn combine,
                     ValueRange operands) {
  auto inputType = cast<RankedTensorType>(input.getType());
  ArrayRef<int64_t> shape = inputType.getShape();
  MLIRContext *ctx = b.getContext();
  auto resultType =
      RankedTensorType::get(reducedShape(shape, axes), init.getType());
  Value acc = buildFill(b, loc, resultType, init);

  SmallVector<AffineMap> maps;
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  for (Value operand : operands)
    maps.push_back(broadcastMap(
        ctx, cast<RankedTensorType>(operand.getType()).getShape(), shape));
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t i = 0, e = shape.size(); i < e; ++i) {
    bool reduced = llvm::is_contained(axes, i);
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (!reduced)
      outExprs.push_back(getAffineDimExpr(i, ctx));
  }
  maps.push_back(AffineMap::get(shape.size(), 0, outExprs, ctx));
  SmallVector<Value> inputs{input};
  llvm::append_range(inputs, operands);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{acc}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = combine(nb, nloc, widenScalars(nb, nloc, args));
        linalg::YieldOp::create(
            nb, nloc, castScalar(nb, nloc, result, init.getType()));
      });
  return generic.getResult(0);
}

bool isLowPrecisionFloat(Type type) { return type.isF16() || type.isBF16(); }

Type computeType(Type type) {
  if (isLowPrecisionFloat(type))
    return Float32Type::get(type.getContext());
  return type;
}

SmallVector<Value> widenScalars(OpBuilder &b, Location loc, ValueRange values) {
  return llvm::map_to_vector(values, [&](Value v) {
    return castScalar(b, loc, v, computeType(v.getType()));
  });
}

Value convertElements(OpBuilder &b, Location loc, Value tensor,
                      Type elementType) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (type.getElementType() == elementType)
    return tensor;
  return buildElementwise(
      b, loc, type.clone(elementType), {tensor},
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

Type accumulatorType(Type type, const LoweringPolicy &policy) {
  if (type.isF32())
    return policy.f32SumsInF64 ? Type(Float64Type::get(type.getContext()))
                               : type;
  if (type.isF16() || type.isBF16())
    return Float32Type::get(type.getContext());
  return type;
}

Value buildSum(OpBuilder &b, Location loc, const LoweringPolicy &policy,
               Value input, ArrayRef<int64_t> axes,
               ScalarFn term, ValueRange operands, double divisor,
               Type resultElementType) {
  Type elementType = resultElementType
                         ? resultElementType
                         : cast<RankedTensorType>(input.getType())
                               .getElementType();
  Type acc = accumulatorType(elementType, policy);
  bool isFloat = isa<FloatType>(elementType);
  Value sum = buildReduction(
      b, loc, input, axes, scalarConstant(b, loc, acc, 0),
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value t = castScalar(nb, l, term(nb, l, args.drop_back()), acc);
        return isFloat ? arith::AddFOp::create(nb, l, t, args.back()).getResult()
                       : arith::AddIOp::create(nb, l, t, args.back()).getResult();
      },
      operands);
  if (acc == elementType && divisor == 1.0)
    return sum;
  auto resultType = cast<RankedTensorType>(sum.getType()).clone(elementType);
  return buildElementwise(
      b, loc, resultType, {sum},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value v = args[0];
        if (divisor != 1.0) {
          Value d = scalarConstant(nb, l, acc, divisor);
          v = isFloat ? arith::DivFOp::create(nb, l, v, d).getResult()
                      : arith::DivSIOp::create(nb, l, v, d).getResult();
        }
        return v;
      });
}

Value reshapeTo(OpBuilder &b, Location loc, Value value,
                RankedTensorType type) {
  auto sourceType = cast<RankedTensorType>(value.getType());
  if (sourceType == type)
    return value;
  if (sourceType.getRank() > type.getRank()) {
    if (auto groups = getReassociationIndicesForCollapse(sourceType.getShape(),
                                                         type.getShape()))
      return tensor::CollapseShapeOp::create(b, loc, type, value, *groups);
  } else if (sourceType.getRank() < type.getRank()) {
    if (auto groups = getReassociationIndicesForCollapse(type.getShape(),
                                                         sourceType.getShape()))
      return tensor::ExpandShapeOp::create(b, loc, type, value, *groups);
  }
  // No single collapse or expand relates the shapes: go through 1-D, which is
  // still a pair of views.
  int64_t n = numElements(type.getShape());
  auto flatType = RankedTensorType::get({n}, type.getElementType());
  Value flat = value;
  if (sourceType.getRank() != 1) {
    SmallVector<ReassociationIndices> all(1);
    for (int64_t i = 0; i < sourceType.getRank(); ++i)
      all[0].push_back(i);
    if (sourceType.getRank() == 0)
      flat = tensor::ExpandShapeOp::create(b, loc, flatType, value,
                                           SmallVector<ReassociationIndices>{});
    else
      flat = tensor::CollapseShapeOp::create(b, loc, flatType, value, all);
  }
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(
        b, loc, type, flat, SmallVector<ReassociationIndices>{});
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[0].push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, type, flat, all);
}

Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  return buildFill(b, loc, type,
                   scalarConstant(b, loc, type.getElementType(), 0));
}

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(
      values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); });
}

Value negativeInfinity(OpBuilder &b, Location loc, Type type) {
  auto f = cast<FloatType>(type);
  return arith::ConstantOp::create(
      b, loc, b.getFloatAttr(f, APFloat::getInf(f.getFloatSemantics(), true)));
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

/// i1 and unsigned integers extend and convert as unsigned.
static bool isUnsignedLike(Type type) {
  return type.isInteger(1) || type.isUnsignedInteger();
}

Value castScalar(OpBuilder &b, Location loc, Value value, Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0);
    if (isa<FloatType>(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value,
                                   zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value,
                                 zero);
  }
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  Type f32 = b.getF32Type();
  // f16/bf16 convert through f32, as c10::Half and c10::BFloat16 do: every
  // f16/bf16 value is exact in f32, and narrowing rounds once from f32 (so
  // f64 -> bf16 and int -> bf16 round twice, exactly like torch's `.to()`).
  if (fromFloat && toFloat) {
    if (isLowPrecisionFloat(to) && !from.isF32())
      return arith::TruncFOp::create(b, loc, to,
                                     castScalar(b, loc, value, f32));
    if (isLowPrecisionFloat(from) && !to.isF32())
      return castScalar(b, loc, arith::ExtFOp::create(b, loc, f32, value), to);
    if (fromFloat.getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, to, value);
    return arith::TruncFOp::create(b, loc, to, value);
  }
  if (fromFloat) {
    if (isLowPrecisionFloat(from))
      value = arith::ExtFOp::create(b, loc, f32, value);
    return arith::FPToSIOp::create(b, loc, to, value);
  }
  if (toFloat) {
    Type through = isLowPrecisionFloat(to) ? f32 : to;
    Value converted =
        isUnsignedLike(from)
            ? arith::UIToFPOp::create(b, loc, through, value).getResult()
            : arith::SIToFPOp::create(b, loc, through, value).getResult();
    return castScalar(b, loc, converted, to);
  }
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth > toWidth)
    return arith::TruncIOp::create(b, loc, to, value);
  if (isUnsignedLike(from))
    return arith::ExtUIOp::create(b, loc, to, value);
  return arith::ExtSIOp::create(b, loc, to, value);
}

RuntimeCall::RuntimeCall(OpBuilder &b, Location loc)
    : b(b), loc(loc), ptrType(LLVM::LLVMPointerType::get(b.getContext())) {}

void RuntimeCall::addI64(int64_t v) {
  add(arith::ConstantIntOp::create(b, loc, v, 64));
}
void RuntimeCall::addI32(int64_t v) {
  add(arith::ConstantIntOp::create(b, loc, v, 32));
}
void RuntimeCall::addF32(double v) {
  add(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)));
}
void RuntimeCall::addNull() { add(LLVM::ZeroOp::create(b, loc, ptrType)); }

Value RuntimeCall::pointerOf(Value buffer) {
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  Value address = arith::IndexCastOp::create(b, loc, b.getI64Type(), base);
  return LLVM::IntToPtrOp::create(b, loc, ptrType, address);
}

void RuntimeCall::addInput(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  add(bufferization::ToBufferOp::create(b, loc, memrefType, tensor, true),
      /*buffer=*/true);
}

void RuntimeCall::addStridedInput(Value tensor, ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  if (!strides.empty())
    strides.back() = 1;
  auto layout =
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides);
  auto memrefType =
      MemRefType::get(type.getShape(), type.getElementType(), layout);
  stridedDims[args.size()] = llvm::to_vector(dims);
  add(bufferization::ToBufferOp::create(b, loc, memrefType, tensor, true),
      /*buffer=*/true);
}

void RuntimeCall::appendStrided(Value buffer, ArrayRef<int64_t> dims,
                                SmallVectorImpl<Value> &operands) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, metadata.getBaseBuffer());
  int64_t bytes =
      storageBytes(cast<MemRefType>(buffer.getType()).getElementType(), 1);
  Value offsetBytes = arith::MulIOp::create(
      b, loc, metadata.getOffset(),
      arith::ConstantIndexOp::create(b, loc, bytes));
  Value address = arith::IndexCastOp::create(
      b, loc, b.getI64Type(), arith::AddIOp::create(b, loc, base, offsetBytes));
  operands.push_back(LLVM::IntToPtrOp::create(b, loc, ptrType, address));
  for (int64_t d : dims)
    operands.push_back(
        d < 0 ? arith::ConstantIntOp::create(b, loc, 0, 64).getResult()
              : arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                           metadata.getStrides()[d])
                    .getResult());
}

Value RuntimeCall::addOutput(RankedTensorType type) {
  Value buffer = memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()));
  add(buffer, /*buffer=*/true);
  return buffer;
}

void RuntimeCall::addStridedOutput(Value view, ArrayRef<int64_t> dims) {
  stridedDims[args.size()] = llvm::to_vector(dims);
  add(view, /*buffer=*/true);
}

Value RuntimeCall::addWorkspace(RankedTensorType type) {
  Value buffer = addOutput(type);
  buffer.getDefiningOp()->setAttr(kWorkspaceAttrName, b.getUnitAttr());
  return buffer;
}

Value RuntimeCall::asTensor(Value buffer, Type type) {
  return bufferization::ToTensorOp::create(b, loc, type, buffer,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

void RuntimeCall::call(ModuleOp module, StringRef name) {
  SmallVector<Value> operands;
  for (auto [i, arg, buffer] : llvm::enumerate(args, isBuffer)) {
    if (auto it = stridedDims.find(i); it != stridedDims.end())
      appendStrided(arg, it->second, operands);
    else
      operands.push_back(buffer ? pointerOf(arg) : arg);
  }
  auto calleeType = b.getFunctionType(ValueRange(operands).getTypes(), {});
  if (!module.lookupSymbol<func::FuncOp>(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto callee = func::FuncOp::create(b, module.getLoc(), name, calleeType);
    callee.setPrivate();
  }
  func::CallOp::create(b, loc, name, TypeRange{}, operands);
}

} // namespace effopt::lowering
