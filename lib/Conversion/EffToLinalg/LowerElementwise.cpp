//===- LowerElementwise.cpp - eff elementwise ops to linalg.generic -------===//
//
// Every elementwise op becomes one all-parallel linalg.generic whose operands
// broadcast through their indexing maps; chains of them fuse later.
// Transcendentals on f16/bf16 are computed in f32, as PyTorch does on CPU.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {


/// Runs `fn` in f32 when `x` is a narrower float, converting back after.
Value inF32(OpBuilder &b, Location loc, Value x,
            llvm::function_ref<Value(Value)> fn) {
  Type type = x.getType();
  if (type.isF32() || type.isF64())
    return fn(x);
  Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  return arith::TruncFOp::create(b, loc, type, fn(wide));
}

Value geluScalar(OpBuilder &b, Location loc, Value x,
                 GeluApproximation approximate) {
  return inF32(b, loc, x, [&](Value v) -> Value {
    Type t = v.getType();
    Value half = scalarConstant(b, loc, t, 0.5);
    Value one = scalarConstant(b, loc, t, 1.0);
    Value inner;
    if (approximate == GeluApproximation::None) {
      Value scaled = arith::MulFOp::create(
          b, loc, v, scalarConstant(b, loc, t, 1.0 / llvm::numbers::sqrt2));
      inner = math::ErfOp::create(b, loc, scaled);
    } else {
      Value cube = arith::MulFOp::create(
          b, loc, v, arith::MulFOp::create(b, loc, v, v));
      Value poly = arith::AddFOp::create(
          b, loc, v,
          arith::MulFOp::create(b, loc, scalarConstant(b, loc, t, 0.044715),
                                cube));
      Value arg = arith::MulFOp::create(
          b, loc,
          scalarConstant(b, loc, t, std::sqrt(2.0 / llvm::numbers::pi)), poly);
      inner = math::TanhOp::create(b, loc, arg);
    }
    return arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, half, v),
        arith::AddFOp::create(b, loc, one, inner));
  });
}

/// d gelu(x) / dx, as PyTorch's GeluBackward computes it.
Value geluDerivative(OpBuilder &b, Location loc, Value v,
                     GeluApproximation approximate) {
  Type t = v.getType();
  auto c = [&](double x) { return scalarConstant(b, loc, t, x); };
  if (approximate == GeluApproximation::None) {
    // cdf + x * pdf
    Value cdf = arith::MulFOp::create(
        b, loc, c(0.5),
        arith::AddFOp::create(
            b, loc, c(1.0),
            math::ErfOp::create(
                b, loc,
                arith::MulFOp::create(b, loc, v,
                                      c(1.0 / llvm::numbers::sqrt2)))));
    Value pdf = arith::MulFOp::create(
        b, loc, c(1.0 / std::sqrt(2.0 * llvm::numbers::pi)),
        math::ExpOp::create(
            b, loc,
            arith::MulFOp::create(b, loc, c(-0.5),
                                  arith::MulFOp::create(b, loc, v, v))));
    return arith::AddFOp::create(b, loc, cdf,
                                 arith::MulFOp::create(b, loc, v, pdf));
  }
  // 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 * 0.044715 x^2)
  Value k = c(std::sqrt(2.0 / llvm::numbers::pi));
  Value x2 = arith::MulFOp::create(b, loc, v, v);
  Value inner = arith::MulFOp::create(
      b, loc, k,
      arith::AddFOp::create(
          b, loc, v,
          arith::MulFOp::create(b, loc, c(0.044715),
                                arith::MulFOp::create(b, loc, x2, v))));
  Value th = math::TanhOp::create(b, loc, inner);
  Value left = arith::MulFOp::create(b, loc, c(0.5),
                                     arith::AddFOp::create(b, loc, c(1.0), th));
  Value dinner = arith::MulFOp::create(
      b, loc, k,
      arith::AddFOp::create(
          b, loc, c(1.0),
          arith::MulFOp::create(b, loc, c(3 * 0.044715), x2)));
  Value right = arith::MulFOp::create(
      b, loc, arith::MulFOp::create(b, loc, c(0.5), v),
      arith::MulFOp::create(
          b, loc,
          arith::SubFOp::create(b, loc, c(1.0),
                                arith::MulFOp::create(b, loc, th, th)),
          dinner));
  return arith::AddFOp::create(b, loc, left, right);
}

/// One pattern for every unary op: `scalar` computes the element.
template <typename OpTy>
struct UnaryLowering : OpRewritePattern<OpTy> {
  using ScalarOf = Value (*)(OpBuilder &, Location, OpTy, Value);
  UnaryLowering(MLIRContext *ctx, ScalarOf scalar)
      : OpRewritePattern<OpTy>(ctx), scalar(scalar) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), tensorType(op.getResult()), {op.getInput()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return scalar(b, loc, op, args[0]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
  ScalarOf scalar;
};

/// Binary arithmetic: `floatOp` for floats, `intOp` for integers.
template <typename OpTy>
struct BinaryLowering : OpRewritePattern<OpTy> {
  using ScalarOf = Value (*)(OpBuilder &, Location, Value, Value);
  BinaryLowering(MLIRContext *ctx, ScalarOf scalar)
      : OpRewritePattern<OpTy>(ctx), scalar(scalar) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), tensorType(op.getResult()),
        {op.getLhs(), op.getRhs()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return scalar(b, loc, args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
  ScalarOf scalar;
};

bool isFloat(Value v) { return isa<FloatType>(v.getType()); }
bool isUnsignedLike(Type t) { return t.isInteger(1) || t.isUnsignedInteger(); }

template <typename FloatOp, typename IntOp>
Value arithScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x))
    return FloatOp::create(b, loc, x, y);
  return IntOp::create(b, loc, x, y);
}

Value divScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x))
    return arith::DivFOp::create(b, loc, x, y);
  if (isUnsignedLike(x.getType()))
    return arith::DivUIOp::create(b, loc, x, y);
  return arith::DivSIOp::create(b, loc, x, y);
}

/// x^y for signless integers, in straight-line code: square-and-multiply
/// over every bit of y (no library call: math.ipowi has no lowering to LLVM
/// in this pipeline). A negative y gives what integer division would
/// (1 / x^-y): 1 for x = 1, +-1 for x = -1, 0 otherwise.
Value integerPow(OpBuilder &b, Location loc, Value x, Value y) {
  Type type = x.getType();
  unsigned width = type.getIntOrFloatBitWidth();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, IntegerAttr::get(type, v));
  };
  Value zero = constant(0), one = constant(1);
  Value result = one, base = x, exponent = y;
  for (unsigned bit = 0; bit < width; ++bit) {
    Value odd = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, loc, exponent, one), zero);
    result = arith::SelectOp::create(
        b, loc, odd, arith::MulIOp::create(b, loc, result, base), result);
    if (bit + 1 == width)
      break;
    base = arith::MulIOp::create(b, loc, base, base);
    exponent = arith::ShRUIOp::create(b, loc, exponent, one);
  }
  if (width == 1)
    return result;
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, y, zero);
  Value minusOne = constant(-1);
  Value yOdd = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                     arith::AndIOp::create(b, loc, y, one), zero);
  Value inverse = arith::SelectOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, one),
      one,
      arith::SelectOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, minusOne),
          arith::SelectOp::create(b, loc, yOdd, minusOne, one), zero));
  return arith::SelectOp::create(b, loc, negative, inverse, result);
}

Value powScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x))
    return inF32(b, loc, x, [&](Value wide) -> Value {
      Value exponent = y;
      if (exponent.getType() != wide.getType())
        exponent = arith::ExtFOp::create(b, loc, wide.getType(), y);
      return math::PowFOp::create(b, loc, wide, exponent);
    });
  return integerPow(b, loc, x, y);
}

Value maxScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x))
    return arith::MaximumFOp::create(b, loc, x, y);
  if (isUnsignedLike(x.getType()))
    return arith::MaxUIOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}

Value minScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x))
    return arith::MinimumFOp::create(b, loc, x, y);
  if (isUnsignedLike(x.getType()))
    return arith::MinUIOp::create(b, loc, x, y);
  return arith::MinSIOp::create(b, loc, x, y);
}

template <typename MathOp, typename OpTy>
Value mathScalar(OpBuilder &b, Location loc, OpTy, Value x) {
  return inF32(b, loc, x,
               [&](Value v) -> Value { return MathOp::create(b, loc, v); });
}

struct CmpLowering : OpRewritePattern<CmpOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CmpOp op,
                                PatternRewriter &rewriter) const override {
    CmpPredicate predicate = op.getPredicate();
    Value result = buildElementwise(
        rewriter, op.getLoc(), tensorType(op.getResult()),
        {op.getLhs(), op.getRhs()},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Type t = args[0].getType();
          if (isa<FloatType>(t)) {
            // Ordered comparisons except `ne`, which is true for NaN (numpy).
            arith::CmpFPredicate p;
            switch (predicate) {
            case CmpPredicate::eq: p = arith::CmpFPredicate::OEQ; break;
            case CmpPredicate::ne: p = arith::CmpFPredicate::UNE; break;
            case CmpPredicate::lt: p = arith::CmpFPredicate::OLT; break;
            case CmpPredicate::le: p = arith::CmpFPredicate::OLE; break;
            case CmpPredicate::gt: p = arith::CmpFPredicate::OGT; break;
            case CmpPredicate::ge: p = arith::CmpFPredicate::OGE; break;
            }
            return arith::CmpFOp::create(b, loc, p, args[0], args[1]);
          }
          bool u = isUnsignedLike(t);
          arith::CmpIPredicate p;
          switch (predicate) {
          case CmpPredicate::eq: p = arith::CmpIPredicate::eq; break;
          case CmpPredicate::ne: p = arith::CmpIPredicate::ne; break;
          case CmpPredicate::lt:
            p = u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
            break;
          case CmpPredicate::le:
            p = u ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
            break;
          case CmpPredicate::gt:
            p = u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
            break;
          case CmpPredicate::ge:
            p = u ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
            break;
          }
          return arith::CmpIOp::create(b, loc, p, args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct WhereLowering : OpRewritePattern<WhereOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(WhereOp op,
                                PatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), tensorType(op.getResult()), op->getOperands(),
        [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct CastLowering : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = tensorType(op.getResult());
    Value result = buildElementwise(
        rewriter, op.getLoc(), type, {op.getInput()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return castScalar(b, loc, args[0], type.getElementType());
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GeluGradLowering : OpRewritePattern<GeluGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluGradOp op,
                                PatternRewriter &rewriter) const override {
    GeluApproximation approximate = op.getApproximate();
    Value result = buildElementwise(
        rewriter, op.getLoc(), tensorType(op.getResult()),
        {op.getInput(), op.getOutputGrad()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value x = args[0], dy = args[1];
          return inF32(b, loc, x, [&](Value wide) -> Value {
            Value dyWide = dy.getType() == wide.getType()
                               ? dy
                               : arith::ExtFOp::create(b, loc,
                                                       wide.getType(), dy)
                                     .getResult();
            return arith::MulFOp::create(
                b, loc, dyWide, geluDerivative(b, loc, wide, approximate));
          });
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

/// The training step counter of the enclosing step function: the argument
/// that holds `@optimizer.step`, or nothing outside a training step.
Value stepCounter(Operation *op) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func)
    return {};
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto p = func.getArgAttrOfType<FlatSymbolRefAttr>(i, kParameterAttrName))
      if (p.getValue() == "optimizer.step")
        return func.getArgument(i);
  return {};
}

/// splitmix64's finaliser: a well-mixed 64-bit hash of a 64-bit value.
Value mix64(OpBuilder &b, Location loc, Value z) {
  auto k = [&](uint64_t v) {
    return arith::ConstantOp::create(b, loc,
                                     b.getIntegerAttr(b.getI64Type(), v));
  };
  z = arith::MulIOp::create(
      b, loc,
      arith::XOrIOp::create(b, loc, z, arith::ShRUIOp::create(b, loc, z, k(30))),
      k(0xbf58476d1ce4e5b9ULL));
  z = arith::MulIOp::create(
      b, loc,
      arith::XOrIOp::create(b, loc, z, arith::ShRUIOp::create(b, loc, z, k(27))),
      k(0x94d049bb133111ebULL));
  return arith::XOrIOp::create(b, loc, z,
                               arith::ShRUIOp::create(b, loc, z, k(31)));
}

/// The key of a dropout mask drawn in `op`'s step: mix64(seed), mixed with
/// the effective step (step * K + k in eff-grad-accum's loop of K) when
/// there is a step counter. Built at the builder's insertion point, outside
/// any loop body.
FailureOr<Value> buildDropoutKey(OpBuilder &b, Location loc, Operation *op,
                                 uint64_t seed) {
  Type i64 = b.getI64Type();
  auto k = [&](uint64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, v));
  };
  Value key = mix64(b, loc, k(seed));
  Value step = stepCounter(op);
  if (!step)
    return key;
  Value stepValue = tensor::ExtractOp::create(b, loc, step, ValueRange{});
  if (stepValue.getType() != i64)
    stepValue = arith::ExtSIOp::create(b, loc, i64, stepValue);
  if (auto loop = op->getParentOfType<scf::ForOp>();
      loop && loop->hasAttr(kAccumulationLoopAttrName)) {
    auto trips = getConstantIntValue(loop.getUpperBound());
    if (!trips || !isConstantIntValue(loop.getLowerBound(), 0) ||
        !isConstantIntValue(loop.getStep(), 1))
      return failure();
    Value microBatch = arith::IndexCastOp::create(b, loc, i64,
                                                  loop.getInductionVar());
    stepValue = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, stepValue, k(*trips)),
        microBatch);
  }
  return mix64(b, loc, arith::XOrIOp::create(b, loc, key, stepValue));
}

namespace {

/// Dropout's keep-mask is a counter-based hash of (seed, step, element
/// index): reproducible, identical when recomputed, different every step.
struct DropoutLowering : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getOutput());
    auto maskType = tensorType(op.getMask());
    double ratio = op.getRatio().convertToDouble();
    uint64_t seed = static_cast<uint64_t>(op.getSeed());
    // keep when the top 24 bits of the hash are >= ratio * 2^24
    uint64_t threshold = static_cast<uint64_t>(ratio * double(1 << 24));
    SmallVector<Value> operands{op.getInput()};
    Value step = stepCounter(op);
    if (step)
      operands.push_back(step);
    // In eff-grad-accum's micro-batch loop the mask is drawn for step
    // `step * K + k` (iteration k of K): a new mask per micro-batch, the
    // same one for a recomputation in the same iteration.
    Value microBatch;
    int64_t microBatches = 1;
    if (auto loop = op->getParentOfType<scf::ForOp>();
        step && loop && loop->hasAttr(kAccumulationLoopAttrName)) {
      auto trips = getConstantIntValue(loop.getUpperBound());
      if (!trips || !isConstantIntValue(loop.getLowerBound(), 0) ||
          !isConstantIntValue(loop.getStep(), 1))
        return rewriter.notifyMatchFailure(
            op, "the micro-batch loop has no static trip count");
      microBatches = *trips;
      microBatch = arith::IndexCastOp::create(
          rewriter, loc, rewriter.getI64Type(), loop.getInductionVar());
    }
    ArrayRef<int64_t> shape = type.getShape();
    SmallVector<Value> results = buildElementwiseMulti(
        rewriter, loc, {type, maskType}, operands,
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Type i64 = b.getI64Type();
          auto k = [&](uint64_t v) -> Value {
            return arith::ConstantOp::create(b, l, b.getIntegerAttr(i64, v));
          };
          Value index = k(0);
          for (int64_t d = 0, e = shape.size(); d < e; ++d) {
            Value i = arith::IndexCastOp::create(
                b, l, i64, linalg::IndexOp::create(b, l, d));
            index = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, index, k(shape[d])), i);
          }
          Value key = mix64(b, l, k(seed));
          if (a.size() == 2) {
            Value effectiveStep = a[1];
            if (microBatch)
              effectiveStep = arith::AddIOp::create(
                  b, l, arith::MulIOp::create(b, l, a[1], k(microBatches)),
                  microBatch);
            key = mix64(b, l, arith::XOrIOp::create(b, l, key, effectiveStep));
          }
          Value h = mix64(b, l, arith::XOrIOp::create(b, l, key, index));
          Value top = arith::ShRUIOp::create(b, l, h, k(40));
          Value keep = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                             top, k(threshold));
          Type t = a[0].getType();
          Value scaled = arith::MulFOp::create(
              b, l, a[0], scalarConstant(b, l, t, 1.0 / (1.0 - ratio)));
          Value y = arith::SelectOp::create(b, l, keep, scaled,
                                            scalarConstant(b, l, t, 0.0));
          return {y, keep};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// eff.save only marks what the backward reads; it computes nothing.
struct SaveLowering : OpRewritePattern<SaveOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SaveOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

struct ConstantLowering : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op,
                                PatternRewriter &rewriter) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "constant is not a typed value");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

} // namespace

void populateElementwiseLowering(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<UnaryLowering<NegOp>>(
      ctx, +[](OpBuilder &b, Location loc, NegOp, Value x) -> Value {
        if (isFloat(x))
          return arith::NegFOp::create(b, loc, x);
        return arith::SubIOp::create(b, loc, scalarConstant(b, loc, x.getType(), 0), x);
      });
  patterns.add<UnaryLowering<AbsOp>>(
      ctx, +[](OpBuilder &b, Location loc, AbsOp, Value x) -> Value {
        if (isFloat(x))
          return math::AbsFOp::create(b, loc, x);
        return math::AbsIOp::create(b, loc, x);
      });
  patterns.add<UnaryLowering<ExpOp>>(ctx, &mathScalar<math::ExpOp, ExpOp>);
  patterns.add<UnaryLowering<LogOp>>(ctx, &mathScalar<math::LogOp, LogOp>);
  patterns.add<UnaryLowering<SqrtOp>>(ctx, &mathScalar<math::SqrtOp, SqrtOp>);
  patterns.add<UnaryLowering<RsqrtOp>>(ctx,
                                       &mathScalar<math::RsqrtOp, RsqrtOp>);
  patterns.add<UnaryLowering<TanhOp>>(ctx, &mathScalar<math::TanhOp, TanhOp>);
  patterns.add<UnaryLowering<ErfOp>>(ctx, &mathScalar<math::ErfOp, ErfOp>);
  patterns.add<UnaryLowering<ReciprocalOp>>(
      ctx, +[](OpBuilder &b, Location loc, ReciprocalOp, Value x) -> Value {
        return arith::DivFOp::create(
            b, loc, scalarConstant(b, loc, x.getType(), 1.0), x);
      });
  patterns.add<UnaryLowering<SigmoidOp>>(
      ctx, +[](OpBuilder &b, Location loc, SigmoidOp, Value x) -> Value {
        return inF32(b, loc, x, [&](Value v) -> Value {
          Value one = scalarConstant(b, loc, v.getType(), 1.0);
          Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, v));
          return arith::DivFOp::create(b, loc, one,
                                       arith::AddFOp::create(b, loc, one, e));
        });
      });
  patterns.add<UnaryLowering<ReluOp>>(
      ctx, +[](OpBuilder &b, Location loc, ReluOp, Value x) -> Value {
        return arith::MaximumFOp::create(
            b, loc, x, scalarConstant(b, loc, x.getType(), 0.0));
      });
  patterns.add<UnaryLowering<GeluOp>>(
      ctx, +[](OpBuilder &b, Location loc, GeluOp op, Value x) -> Value {
        return geluScalar(b, loc, x, op.getApproximate());
      });
  patterns.add<UnaryLowering<LogicalNotOp>>(
      ctx, +[](OpBuilder &b, Location loc, LogicalNotOp, Value x) -> Value {
        return arith::XOrIOp::create(b, loc, x,
                                     scalarConstant(b, loc, x.getType(), 1));
      });

  patterns.add<BinaryLowering<AddOp>>(ctx,
                                      &arithScalar<arith::AddFOp, arith::AddIOp>);
  patterns.add<BinaryLowering<SubOp>>(ctx,
                                      &arithScalar<arith::SubFOp, arith::SubIOp>);
  patterns.add<BinaryLowering<MulOp>>(ctx,
                                      &arithScalar<arith::MulFOp, arith::MulIOp>);
  patterns.add<BinaryLowering<DivOp>>(ctx, &divScalar);
  patterns.add<BinaryLowering<PowOp>>(ctx, &powScalar);
  patterns.add<BinaryLowering<MaxOp>>(ctx, &maxScalar);
  patterns.add<BinaryLowering<MinOp>>(ctx, &minScalar);
  patterns.add<BinaryLowering<LogicalAndOp>>(
      ctx, +[](OpBuilder &b, Location loc, Value x, Value y) -> Value {
        return arith::AndIOp::create(b, loc, x, y);
      });
  patterns.add<BinaryLowering<LogicalOrOp>>(
      ctx, +[](OpBuilder &b, Location loc, Value x, Value y) -> Value {
        return arith::OrIOp::create(b, loc, x, y);
      });
  patterns.add<CmpLowering, WhereLowering, CastLowering, GeluGradLowering,
               SaveLowering, ConstantLowering, DropoutLowering>(ctx);
}

} // namespace effopt::lowering
