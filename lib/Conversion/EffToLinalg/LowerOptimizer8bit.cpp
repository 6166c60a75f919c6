//===- LowerOptimizer8bit.cpp - block-wise 8-bit Adam ---------------------===//
//
// eff.adam8bit_update as two loop nests over the parameter, with no
// full-size fp32 copy of either moment: the first dequantizes the moments,
// updates them in fp32 and reduces each block to its new absmax (per block,
// [blocks, block_size]); the second recomputes the same fp32 moments
// element by element, updates the parameter and requantizes the moments
// with the new absmax (read at the element's linear index floordiv
// block_size). Recomputing the moments costs a few flops and
// saves 8 bytes per parameter of temporaries; the second loop runs in the
// parameter's own shape so its results are written in place into the state.
//
// Codes index a 256-entry map held as a constant table; quantization finds
// the nearest code with one load from a table indexed by the value's
// exponent and top mantissa bits and one comparison with a midpoint.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {

/// bitsandbytes' dynamic quantization map (`create_dynamic_map(signed)`
/// with 7 exponent bits in 8 bits): for exponent e = 0..6 the means of
/// consecutive points of linspace(0.1, 1, 2^e + 1) (2^(e+1) + 1 unsigned)
/// scaled by 10^(e-6), negated too when signed, plus 0 and 1, sorted.
/// Computed in double and rounded once to f32 (bitsandbytes computes in
/// torch f32 ops, whose linspace rounding varies with the CPU's vector
/// width; the two agree to a few ulp).
SmallVector<float> dynamicMap(bool isSigned) {
  SmallVector<double> values;
  for (int e = 0; e < 7; ++e) {
    int points = isSigned ? (1 << e) + 1 : (1 << (e + 1)) + 1;
    double scale = std::pow(10.0, e - 6);
    auto point = [&](int k) { return 0.1 + 0.9 * k / (points - 1); };
    for (int k = 0; k + 1 < points; ++k) {
      double mean = (point(k) + point(k + 1)) / 2.0;
      values.push_back(scale * mean);
      if (isSigned)
        values.push_back(-scale * mean);
    }
  }
  values.push_back(0.0);
  values.push_back(1.0);
  llvm::sort(values);
  assert(values.size() == 256 && "the dynamic map has 256 codes");
  return llvm::map_to_vector(values,
                             [](double v) { return static_cast<float>(v); });
}

/// The 255 f32 midpoints between consecutive codes (as bitsandbytes'
/// `(code[:-1] + code[1:]) / 2`), padded to 256 with +inf for the search.
SmallVector<float> midpoints(ArrayRef<float> map) {
  SmallVector<float> mids;
  for (size_t i = 0; i + 1 < map.size(); ++i)
    mids.push_back((map[i] + map[i + 1]) / 2.0f);
  mids.push_back(std::numeric_limits<float>::infinity());
  return mids;
}

Value tableConstant(OpBuilder &b, Location loc, ArrayRef<float> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getF32Type());
  return arith::ConstantOp::create(b, loc,
                                   DenseElementsAttr::get(type, values));
}

/// map[code] * absmax, the code read as an unsigned index.
Value dequantize(OpBuilder &b, Location loc, Value map, Value code,
                 Value absmax) {
  Value wide = arith::ExtUIOp::create(b, loc, b.getI32Type(), code);
  Value index = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), wide);
  Value value = tensor::ExtractOp::create(b, loc, map, ValueRange{index});
  return arith::MulFOp::create(b, loc, value, absmax);
}

/// A first guess of the code of every f32, indexed by its magnitude's
/// exponent and top mantissa bits: `bits(|x|)` clamped to [2^-23, 2) (no
/// midpoint lies outside, checked), minus bits(2^-23), shifted right by
/// 23 - `mantissaBits`, selects one of `buckets` ranges; `guess[bucket]`
/// (x >= +0) or `guess[buckets + bucket]` (x <= -0) is the number of
/// midpoints below every x of that range. Each range holds at most one
/// midpoint, which is then `mids[guess]`, so the code of x is
/// `guess + (mids[guess] < x)`: exactly the binary search's answer with
/// one table load and one comparison (the maps' codes are 1.4% apart at
/// the most densely coded end, a range with 7 mantissa bits 0.8%).
struct CodeBuckets {
  int mantissaBits;
  int64_t buckets;
  SmallVector<int8_t> guess;
};

constexpr int32_t kLowestBucketBits = (127 - 23) << 23; // 2^-23
constexpr int32_t kHighestBucketBits = (128 << 23) - 1; // just below 2

float floatOfBits(int32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// The buckets of `mids` (255 sorted midpoints) with the fewest mantissa
/// bits that keep at most one midpoint per bucket.
CodeBuckets codeBuckets(ArrayRef<float> mids) {
  float inf = std::numeric_limits<float>::infinity();
  for (int m = 5; m <= 12; ++m) {
    int shift = 23 - m;
    int64_t buckets =
        ((kHighestBucketBits - kLowestBucketBits) >> shift) + 1;
    CodeBuckets result{m, buckets, SmallVector<int8_t>(2 * buckets)};
    bool fits = true;
    for (int64_t bucket = 0; bucket < buckets && fits; ++bucket) {
      float lo = bucket == 0 ? 0.0f
                             : floatOfBits(kLowestBucketBits +
                                           static_cast<int32_t>(bucket << shift));
      float hi = bucket + 1 == buckets
                     ? inf
                     : floatOfBits(kLowestBucketBits +
                                   static_cast<int32_t>((bucket + 1) << shift));
      // x in [lo, hi) and x in (-hi, -lo].
      int64_t below = 0, inside = 0, negBelow = 0, negInside = 0;
      for (float mid : mids) {
        below += mid < lo;
        inside += mid >= lo && mid < hi;
        negBelow += mid <= -hi;
        negInside += mid > -hi && mid <= -lo;
      }
      fits = inside <= 1 && negInside <= 1;
      result.guess[bucket] = static_cast<int8_t>(static_cast<uint8_t>(below));
      result.guess[buckets + bucket] =
          static_cast<int8_t>(static_cast<uint8_t>(negBelow));
    }
    if (fits)
      return result;
  }
  llvm_unreachable("a dynamic map with codes closer than 2^-12 relative");
}

Value bucketTable(OpBuilder &b, Location loc, const CodeBuckets &buckets) {
  auto type = RankedTensorType::get({2 * buckets.buckets}, b.getI8Type());
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<int8_t>(buckets.guess)));
}

/// The number of midpoints below `x` (torch.bucketize(x, mids), right =
/// False): the nearest code, ties to the lower one.
Value quantize(OpBuilder &b, Location loc, const CodeBuckets &buckets,
               Value guesses, Value mids, Value x) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) { return scalarConstant(b, loc, i32, v); };
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value magnitude = arith::AndIOp::create(b, loc, bits, c(0x7fffffff));
  Value clamped = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, magnitude, c(kLowestBucketBits)),
      c(kHighestBucketBits));
  Value bucket = arith::ShRUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, clamped, c(kLowestBucketBits)),
      c(23 - buckets.mantissaBits));
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, bits, c(0));
  bucket = arith::SelectOp::create(
      b, loc, negative, arith::AddIOp::create(b, loc, bucket, c(buckets.buckets)),
      bucket);
  Value guess8 = tensor::ExtractOp::create(
      b, loc, guesses,
      ValueRange{arith::IndexCastUIOp::create(b, loc, b.getIndexType(), bucket)});
  Value guess = arith::ExtUIOp::create(b, loc, i32, guess8);
  Value mid = tensor::ExtractOp::create(
      b, loc, mids,
      ValueRange{arith::IndexCastUIOp::create(b, loc, b.getIndexType(), guess)});
  Value above = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, mid, x);
  Value code = arith::AddIOp::create(
      b, loc, guess, arith::ExtUIOp::create(b, loc, i32, above));
  return arith::TruncIOp::create(b, loc, b.getI8Type(), code);
}

/// `value[offset : offset + rows * cols]` of a 1-D tensor viewed as
/// [rows, cols] (a subview after bufferization, no copy).
Value blockView(OpBuilder &b, Location loc, Value value, int64_t offset,
                int64_t rows, int64_t cols) {
  auto type = tensorType(value);
  Value slice = value;
  if (offset != 0 || rows * cols != type.getNumElements())
    slice = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({rows * cols}, type.getElementType()),
        value, ValueRange{}, ValueRange{}, ValueRange{},
        b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({rows * cols}),
        b.getDenseI64ArrayAttr({1}));
  return reshapeTo(b, loc, slice,
                   RankedTensorType::get({rows, cols}, type.getElementType()));
}

/// `value[offset : offset + size]` of a 1-D tensor.
Value slice1d(OpBuilder &b, Location loc, Value value, int64_t offset,
              int64_t size) {
  auto type = tensorType(value);
  if (offset == 0 && size == type.getNumElements())
    return value;
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({size}, type.getElementType()), value,
      ValueRange{}, ValueRange{}, ValueRange{},
      b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({size}),
      b.getDenseI64ArrayAttr({1}));
}

struct Adam8bitUpdateLowering : OpRewritePattern<Adam8bitUpdateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(Adam8bitUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto paramType = tensorType(op.getParam());
    Type paramElement = paramType.getElementType();
    Type f32 = rewriter.getF32Type();
    double beta1 = op.getBeta1().convertToDouble();
    double beta2 = op.getBeta2().convertToDouble();
    double eps = op.getEps().convertToDouble();
    double weightDecay = op.getWeightDecay().convertToDouble();
    bool decoupled = op.getDecoupled();
    int64_t n = paramType.getNumElements();
    int64_t blockSize = op.getBlockSize();
    int64_t blocks = Adam8bitUpdateOp::getNumBlocks(n, blockSize);
    int64_t fullBlocks = n / blockSize;
    int64_t tail = n % blockSize;

    // The step's scalars, as eff.adam_update computes them.
    SmallVector<Value> scalars = buildAdamStepScalars(
        rewriter, loc, op.getLr(), op.getStep(), beta1, beta2, weightDecay, f32);

    SmallVector<float> signedMap = dynamicMap(/*isSigned=*/true);
    SmallVector<float> unsignedMap = dynamicMap(/*isSigned=*/false);
    Value signedCodes = tableConstant(rewriter, loc, signedMap);
    Value unsignedCodes = tableConstant(rewriter, loc, unsignedMap);
    SmallVector<float> signedMidpoints = midpoints(signedMap);
    SmallVector<float> unsignedMidpoints = midpoints(unsignedMap);
    Value signedMids = tableConstant(rewriter, loc, signedMidpoints);
    Value unsignedMids = tableConstant(rewriter, loc, unsignedMidpoints);
    CodeBuckets signedBuckets =
        codeBuckets(ArrayRef<float>(signedMidpoints).drop_back());
    CodeBuckets unsignedBuckets =
        codeBuckets(ArrayRef<float>(unsignedMidpoints).drop_back());
    Value signedGuesses = bucketTable(rewriter, loc, signedBuckets);
    Value unsignedGuesses = bucketTable(rewriter, loc, unsignedBuckets);

    auto flat = [&](Value v) {
      auto type = tensorType(v);
      return reshapeTo(rewriter, loc, v,
                       RankedTensorType::get({n}, type.getElementType()));
    };
    Value param = flat(op.getParam()), grad = flat(op.getGrad());
    Value mCodes = flat(op.getExpAvgCodes());
    Value vCodes = flat(op.getExpAvgSqCodes());
    Value mAbsmax = op.getExpAvgAbsmax(), vAbsmax = op.getExpAvgSqAbsmax();

    // The new fp32 moments of one element from its parameter, gradient,
    // codes and old absmax; both loop nests build exactly these ops, so
    // they see the same values.
    auto moments = [&](OpBuilder &b, Location l, Value p, Value g, Value mq,
                       Value ma, Value vq, Value va) -> std::pair<Value, Value> {
      auto c = [&](double v) { return scalarConstant(b, l, f32, v); };
      p = castScalar(b, l, p, f32);
      g = castScalar(b, l, g, f32);
      if (weightDecay != 0.0 && !decoupled)
        g = arith::AddFOp::create(b, l, g,
                                  arith::MulFOp::create(b, l, p, c(weightDecay)));
      Value m = arith::AddFOp::create(
          b, l,
          arith::MulFOp::create(b, l, dequantize(b, l, signedCodes, mq, ma),
                                c(beta1)),
          arith::MulFOp::create(b, l, g, c(1.0 - beta1)));
      Value v = arith::AddFOp::create(
          b, l,
          arith::MulFOp::create(b, l, dequantize(b, l, unsignedCodes, vq, va),
                                c(beta2)),
          arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, g, g),
                                c(1.0 - beta2)));
      return {m, v};
    };

    // Loop nest 1: the new absmax of every block, [rows, cols] at a time
    // (the full blocks, then the shorter last one).
    MLIRContext *ctx = rewriter.getContext();
    auto blockAbsmax = [&](int64_t offset, int64_t rows, int64_t cols,
                           int64_t firstBlock) -> std::pair<Value, Value> {
      SmallVector<Value> inputs{
          blockView(rewriter, loc, param, offset, rows, cols),
          blockView(rewriter, loc, grad, offset, rows, cols),
          blockView(rewriter, loc, mCodes, offset, rows, cols),
          slice1d(rewriter, loc, mAbsmax, firstBlock, rows),
          blockView(rewriter, loc, vCodes, offset, rows, cols),
          slice1d(rewriter, loc, vAbsmax, firstBlock, rows)};
      auto resultType = RankedTensorType::get({rows}, f32);
      Value zero = scalarConstant(rewriter, loc, f32, 0.0);
      SmallVector<Value> inits{buildFill(rewriter, loc, resultType, zero),
                               buildFill(rewriter, loc, resultType, zero)};
      AffineMap element = AffineMap::getMultiDimIdentityMap(2, ctx);
      AffineMap block = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
      SmallVector<AffineMap> maps{element, element, element, block,
                                  element, block,   block,   block};
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{resultType, resultType}, inputs, inits,
          maps,
          {utils::IteratorType::parallel, utils::IteratorType::reduction},
          [&](OpBuilder &b, Location l, ValueRange args) {
            auto [m, v] =
                moments(b, l, args[0], args[1], args[2], args[3], args[4],
                        args[5]);
            Value mMax = arith::MaximumFOp::create(
                b, l, args[6], math::AbsFOp::create(b, l, m));
            Value vMax = arith::MaximumFOp::create(
                b, l, args[7], math::AbsFOp::create(b, l, v));
            linalg::YieldOp::create(b, l, ValueRange{mMax, vMax});
          });
      return {generic.getResult(0), generic.getResult(1)};
    };
    Value newMAbsmax, newVAbsmax;
    if (tail == 0) {
      std::tie(newMAbsmax, newVAbsmax) =
          blockAbsmax(0, fullBlocks, blockSize, 0);
    } else {
      auto place = [&](Value into, Value part, int64_t at) -> Value {
        int64_t size = tensorType(part).getNumElements();
        return tensor::InsertSliceOp::create(
            rewriter, loc, part, into, ValueRange{}, ValueRange{},
            ValueRange{}, rewriter.getDenseI64ArrayAttr({at}),
            rewriter.getDenseI64ArrayAttr({size}),
            rewriter.getDenseI64ArrayAttr({1}));
      };
      newMAbsmax = tensor::EmptyOp::create(rewriter, loc, {blocks}, f32);
      newVAbsmax = tensor::EmptyOp::create(rewriter, loc, {blocks}, f32);
      if (fullBlocks > 0) {
        auto [m, v] = blockAbsmax(0, fullBlocks, blockSize, 0);
        newMAbsmax = place(newMAbsmax, m, 0);
        newVAbsmax = place(newVAbsmax, v, 0);
      }
      auto [m, v] = blockAbsmax(fullBlocks * blockSize, 1, tail, fullBlocks);
      newMAbsmax = place(newMAbsmax, m, fullBlocks);
      newVAbsmax = place(newVAbsmax, v, fullBlocks);
    }

    // Loop nest 2, over every element in the parameter's own shape (so the
    // results are written in place into the state): the parameter update
    // from the fp32 moments, and the moments requantized with the new
    // absmax, whose block is the row-major linear index floordiv block_size.
    int64_t rank = paramType.getRank();
    AffineExpr linear = getAffineConstantExpr(0, ctx);
    for (int64_t d = 0; d < rank; ++d)
      linear = linear * paramType.getDimSize(d) + getAffineDimExpr(d, ctx);
    AffineMap element = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap block = AffineMap::get(rank, 0, {linear.floorDiv(blockSize)}, ctx);
    AffineMap scalar = AffineMap::get(rank, 0, {}, ctx);
    SmallVector<Value> inputs{op.getParam(),         op.getGrad(),
                              op.getExpAvgCodes(),   mAbsmax,
                              op.getExpAvgSqCodes(), vAbsmax,
                              newMAbsmax,            newVAbsmax,
                              scalars[0],            scalars[1],
                              scalars[2]};
    SmallVector<AffineMap> maps{element, element, element, block,
                                element, block,   block,   block,
                                scalar,  scalar,  scalar,  element,
                                element, element};
    auto codesType = paramType.clone(rewriter.getI8Type());
    SmallVector<Value> inits{
        tensor::EmptyOp::create(rewriter, loc, paramType.getShape(),
                                paramElement),
        tensor::EmptyOp::create(rewriter, loc, paramType.getShape(),
                                rewriter.getI8Type()),
        tensor::EmptyOp::create(rewriter, loc, paramType.getShape(),
                                rewriter.getI8Type())};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{paramType, codesType, codesType}, inputs,
        inits, maps,
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) {
          auto c = [&](double v) { return scalarConstant(b, l, f32, v); };
          auto [m, v] = moments(b, l, args[0], args[1], args[2], args[3],
                                args[4], args[5]);
          Value stepSize = args[8], bc2Sqrt = args[9], decay = args[10];
          Value p = castScalar(b, l, args[0], f32);
          if (weightDecay != 0.0 && decoupled)
            p = arith::MulFOp::create(b, l, p, decay);
          Value denom = arith::AddFOp::create(
              b, l,
              arith::DivFOp::create(b, l, math::SqrtOp::create(b, l, v),
                                    bc2Sqrt),
              c(eps));
          Value newParam = arith::SubFOp::create(
              b, l, p,
              arith::MulFOp::create(b, l, stepSize,
                                    arith::DivFOp::create(b, l, m, denom)));
          // value * (1 / max(absmax, 1e-38)), as bitsandbytes scales.
          auto scaled = [&](Value x, Value absmax) -> Value {
            Value inverse = arith::DivFOp::create(
                b, l, c(1.0),
                arith::MaximumFOp::create(b, l, absmax, c(1e-38)));
            return arith::MulFOp::create(b, l, x, inverse);
          };
          Value mq = quantize(b, l, signedBuckets, signedGuesses, signedMids,
                              scaled(m, args[6]));
          Value vq = quantize(b, l, unsignedBuckets, unsignedGuesses,
                              unsignedMids, scaled(v, args[7]));
          linalg::YieldOp::create(
              b, l,
              ValueRange{castScalar(b, l, newParam, paramElement), mq, vq});
        });

    rewriter.replaceOp(op, {generic.getResult(0), generic.getResult(1),
                            newMAbsmax, generic.getResult(2), newVAbsmax});
    return success();
  }
};

} // namespace

void populateOptimizer8bitLowering(RewritePatternSet &patterns) {
  patterns.add<Adam8bitUpdateLowering>(patterns.getContext());
}

} // namespace effopt::lowering
