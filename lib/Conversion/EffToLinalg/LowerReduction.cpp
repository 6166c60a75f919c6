//===- LowerReduction.cpp - eff reductions to linalg.generic --------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <limits>

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {

enum class Kind { Sum, Mean, Max, Min };

/// The identity of the reduction in `type`.
Value initialValue(OpBuilder &b, Location loc, Type type, Kind kind) {
  if (kind == Kind::Sum || kind == Kind::Mean)
    return scalarConstant(b, loc, type, 0);
  bool max = kind == Kind::Max;
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(f, APFloat::getInf(f.getFloatSemantics(), max)));
  unsigned width = type.getIntOrFloatBitWidth();
  bool isUnsigned = type.isUnsignedInteger() || width == 1;
  APInt v = isUnsigned ? (max ? APInt::getMinValue(width)
                              : APInt::getMaxValue(width))
                       : (max ? APInt::getSignedMinValue(width)
                              : APInt::getSignedMaxValue(width));
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

Value combine(OpBuilder &b, Location loc, Value x, Value acc, Kind kind) {
  Type t = x.getType();
  bool isFloat = isa<FloatType>(t);
  bool isUnsigned = t.isUnsignedInteger() || t.isInteger(1);
  switch (kind) {
  case Kind::Sum:
  case Kind::Mean:
    return isFloat ? arith::AddFOp::create(b, loc, x, acc).getResult()
                   : arith::AddIOp::create(b, loc, x, acc).getResult();
  case Kind::Max:
    if (isFloat)
      return arith::MaximumFOp::create(b, loc, x, acc);
    return isUnsigned ? arith::MaxUIOp::create(b, loc, x, acc).getResult()
                      : arith::MaxSIOp::create(b, loc, x, acc).getResult();
  case Kind::Min:
    if (isFloat)
      return arith::MinimumFOp::create(b, loc, x, acc);
    return isUnsigned ? arith::MinUIOp::create(b, loc, x, acc).getResult()
                      : arith::MinSIOp::create(b, loc, x, acc).getResult();
  }
  llvm_unreachable("unknown reduction");
}

template <typename OpTy, Kind kind>
struct ReductionLowering : PolicyPattern<OpTy> {
  using PolicyPattern<OpTy>::PolicyPattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
    Type elementType = inputType.getElementType();
    SmallVector<int64_t> axes =
        normalizeAxes(op.getAxes(), inputType.getRank());
    int64_t count = 1;
    for (int64_t a : axes)
      count *= inputType.getDimSize(a);
    // Float sums and means accumulate in f64 (f32 for f16/bf16) and are
    // divided there (buildSum).
    if (isa<FloatType>(elementType) &&
        (kind == Kind::Sum || kind == Kind::Mean)) {
      Value reduced = buildSum(
          rewriter, loc, this->policy, op.getInput(), axes,
          [](OpBuilder &, Location, ValueRange args) { return args[0]; }, {},
          kind == Kind::Mean ? static_cast<double>(count) : 1.0);
      rewriter.replaceOp(op, reshapeTo(rewriter, loc, reduced, resultType));
      return success();
    }
    Value init = initialValue(rewriter, loc, elementType, kind);
    Value reduced = buildReduction(
        rewriter, loc, op.getInput(), axes, init,
        [&](OpBuilder &b, Location l, ValueRange args) {
          return combine(b, l, args[0], args[1], kind);
        });
    if (kind == Kind::Mean) {
      auto type = cast<RankedTensorType>(reduced.getType());
      reduced = buildElementwise(
          rewriter, loc, type, {reduced},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value n = scalarConstant(b, l, elementType, count);
            if (isa<FloatType>(elementType))
              return arith::DivFOp::create(b, l, args[0], n);
            return arith::DivSIOp::create(b, l, args[0], n);
          });
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, reduced, resultType));
    return success();
  }
};

} // namespace

void populateReductionLowering(RewritePatternSet &patterns,
                               const LoweringPolicy &policy) {
  patterns.add<ReductionLowering<ReduceSumOp, Kind::Sum>,
               ReductionLowering<ReduceMeanOp, Kind::Mean>,
               ReductionLowering<ReduceMaxOp, Kind::Max>,
               ReductionLowering<ReduceMinOp, Kind::Min>>(
      patterns.getContext(), policy);
}

} // namespace effopt::lowering
