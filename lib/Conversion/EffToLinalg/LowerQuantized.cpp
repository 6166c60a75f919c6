//===- LowerQuantized.cpp - products with an NF4 weight to linalg ---------===//
//
// A weight stored as NF4 (`tensor<..., #eff.nf4<...>>`, made by
// eff.nf4_pack) is converted by the pass's type converter into its four
// storage tensors, and eff.linear reading it becomes a loop over tiles of
// the product's output columns: each iteration dequantizes the weight's
// slice of those columns into a small f32 workspace (a linalg.generic that
// gathers the codes and the block statistics) and multiplies into that
// slice of the output (a linalg.matmul: an sgemm after eff-linalg-to-blas).
// Every tile has the whole contraction, so each output element is
// accumulated by one GEMM exactly as without quantization, and the largest
// f32 copy of the weight is one tile: the workspace the memory plan places
// (and the report counts as "workspace").
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"
#include "effopt/Support/NF4.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {

void addNF4TypeConversion(TypeConverter &converter) {
  converter.addConversion([](Type type) { return type; });
  converter.addConversion(
      [](RankedTensorType type,
         SmallVectorImpl<Type> &results) -> std::optional<LogicalResult> {
        auto nf4 = dyn_cast_or_null<NF4EncodingAttr>(type.getEncoding());
        if (!nf4)
          return std::nullopt;
        if (!type.hasStaticShape())
          return failure();
        nf4.getStorageTypes(type.getNumElements(), results);
        return success();
      });
}

namespace {

/// Bytes of f32 one tile of a dequantized weight may take.
constexpr int64_t kTileBytes = 1 << 20;

/// Output columns per tile for a product with contraction `k` and `n`
/// output columns: a tile fits kTileBytes, and there are at least two
/// (a workspace never holds the whole weight, however small).
int64_t tileColumns(int64_t n, int64_t k) {
  int64_t fit = std::max<int64_t>(1, kTileBytes / (4 * k));
  return std::max<int64_t>(1, std::min(fit, (n + 1) / 2));
}

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value tableConstant(OpBuilder &b, Location loc, ArrayRef<float> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getF32Type());
  return arith::ConstantOp::create(b, loc,
                                   DenseElementsAttr::get(type, values));
}

/// The storage of one NF4 weight [rows, cols] and the tables it decodes
/// with.
struct NF4Weight {
  ValueRange storage; // codes, absmax, nested_absmax, nested_offset
  NF4EncodingAttr encoding;
  int64_t rows, cols;
  Value codeTable, dynamicMap;
};

/// The values of weight rows [first, first + count) (`byRows`) or columns
/// [first, first + count), dequantized as bitsandbytes does: NF4[code] *
/// (DYN[absmax] * nested + offset), every operation in f32; then rounded to
/// `valueType` (the weight's element type: bf16/f16 under autocast) and
/// held in `tileType` (what the product reads).
Value dequantizeTile(OpBuilder &b, Location loc, const NF4Weight &w,
                     bool byRows, Value first, int64_t count, Type valueType,
                     Type tileType) {
  SmallVector<int64_t> shape = byRows ? SmallVector<int64_t>{count, w.cols}
                                      : SmallVector<int64_t>{w.rows, count};
  auto type = RankedTensorType::get(shape, tileType);
  // The workspace: a buffer of its own, planned in the arena, which the
  // memory report counts as workspace.
  Location workspaceLoc = withProvenance(loc, Provenance::Workspace);
  Value empty = tensor::EmptyOp::create(b, workspaceLoc, shape, tileType);
  AffineMap identity = b.getMultiDimIdentityMap(2);
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  int64_t blockSize = w.encoding.getBlockSize();
  int64_t nestedBlockSize = w.encoding.getNestedBlockSize();
  auto generic = linalg::GenericOp::create(
      b, workspaceLoc, TypeRange{type}, ValueRange{}, ValueRange{empty},
      ArrayRef<AffineMap>{identity}, iterators,
      [&](OpBuilder &b, Location l, ValueRange) {
        Value i = linalg::IndexOp::create(b, l, 0);
        Value j = linalg::IndexOp::create(b, l, 1);
        Value row = byRows ? arith::AddIOp::create(b, l, first, i).getResult() : i;
        Value col = byRows ? j : arith::AddIOp::create(b, l, first, j).getResult();
        Value flat = arith::AddIOp::create(
            b, l, arith::MulIOp::create(b, l, row, indexConstant(b, l, w.cols)),
            col);
        // The code: element 2k in the high nibble of byte k.
        Value one = indexConstant(b, l, 1);
        Value byteIndex = arith::ShRUIOp::create(b, l, flat, one);
        Value byte = tensor::ExtractOp::create(b, l, w.storage[0], byteIndex);
        Value wide = arith::ExtUIOp::create(b, l, b.getI32Type(), byte);
        Value odd = arith::IndexCastOp::create(
            b, l, b.getI32Type(), arith::AndIOp::create(b, l, flat, one));
        Value c4 = arith::ConstantIntOp::create(b, l, 4, 32);
        Value shift = arith::MulIOp::create(
            b, l, arith::SubIOp::create(
                      b, l, arith::ConstantIntOp::create(b, l, 1, 32), odd),
            c4);
        Value code = arith::AndIOp::create(
            b, l, arith::ShRUIOp::create(b, l, wide, shift),
            arith::ConstantIntOp::create(b, l, 15, 32));
        Value normal = tensor::ExtractOp::create(
            b, l, w.codeTable,
            ValueRange{arith::IndexCastOp::create(b, l, b.getIndexType(), code)});
        // The block's absmax, double-dequantized.
        Value block =
            arith::DivUIOp::create(b, l, flat, indexConstant(b, l, blockSize));
        Value qabsmax = arith::ExtUIOp::create(
            b, l, b.getI32Type(),
            tensor::ExtractOp::create(b, l, w.storage[1], block));
        Value dynamic = tensor::ExtractOp::create(
            b, l, w.dynamicMap,
            ValueRange{
                arith::IndexCastOp::create(b, l, b.getIndexType(), qabsmax)});
        Value nested = tensor::ExtractOp::create(
            b, l, w.storage[2],
            ValueRange{arith::DivUIOp::create(
                b, l, block, indexConstant(b, l, nestedBlockSize))});
        Value offset =
            tensor::ExtractOp::create(b, l, w.storage[3], ValueRange{});
        Value absmax = arith::AddFOp::create(
            b, l, arith::MulFOp::create(b, l, dynamic, nested), offset);
        Value value = arith::MulFOp::create(b, l, normal, absmax);
        value = castScalar(b, l, castScalar(b, l, value, valueType), tileType);
        linalg::YieldOp::create(b, l, ValueRange{value});
      });
  return generic.getResult(0);
}

/// eff.linear whose weight `b` is NF4: the product tile by tile over its
/// output columns, each tile's weight dequantized into a workspace.
struct NF4LinearLowering : OpConversionPattern<LinearOp> {
  NF4LinearLowering(const TypeConverter &converter, MLIRContext *context,
                    const LoweringPolicy &policy)
      : OpConversionPattern(converter, context, /*benefit=*/2),
        policy(policy) {}
  LoweringPolicy policy;

  LogicalResult
  matchAndRewrite(LinearOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType weightType = tensorType(op.getB());
    auto nf4 = dyn_cast_or_null<NF4EncodingAttr>(weightType.getEncoding());
    if (!nf4)
      return rewriter.notifyMatchFailure(op, "the weight is not NF4");
    auto resultType = tensorType(op.getResult());
    if (adaptor.getB().size() != 4 || adaptor.getA().size() != 1)
      return rewriter.notifyMatchFailure(op, "the weight was not converted");
    Location loc = op.getLoc();
    // Products of f16/bf16 accumulate in f32 (LowerContraction.cpp); the
    // tile is what the product reads.
    Type accumulator = computeType(resultType.getElementType());
    auto accType = resultType.clone(accumulator);
    Type weightElement = weightType.getElementType();
    Type tileElement =
        policy.nativeLowPrecisionProducts ? weightElement : accumulator;
    Value a = productOperand(rewriter, loc, policy, adaptor.getA().front(),
                             accumulator);
    Value bias = op.getBias() ? adaptor.getBias().front() : Value();
    bool ta = op.getTransposeA(), tb = op.getTransposeB();
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();

    NF4Weight w{adaptor.getB(), nf4, weightType.getDimSize(0),
                weightType.getDimSize(1),
                tableConstant(rewriter, loc, nf4::codeTable()),
                tableConstant(rewriter, loc, nf4::dynamicMap())};
    // op(B) is [k, n]: the weight's rows are the output columns when it
    // is transposed, its columns otherwise.
    int64_t k = tb ? w.cols : w.rows;
    int64_t n = tb ? w.rows : w.cols;
    int64_t m = resultType.getDimSize(0);
    int64_t width = tileColumns(n, k);
    Value init = buildLinearInit(rewriter, loc, accType, bias, alpha, beta);

    // out[:, c0 : c0 + count] += op(A) op(tile).
    auto tileProduct = [&](OpBuilder &b, Location l, Value acc, Value c0,
                           int64_t count) -> Value {
      Value tile = dequantizeTile(b, l, w, /*byRows=*/tb, c0, count,
                                  weightElement, tileElement);
      SmallVector<OpFoldResult> offsets{b.getIndexAttr(0),
                                        getAsOpFoldResult(c0)};
      SmallVector<OpFoldResult> sizes{b.getIndexAttr(m), b.getIndexAttr(count)};
      SmallVector<OpFoldResult> strides{b.getIndexAttr(1), b.getIndexAttr(1)};
      auto sliceType = RankedTensorType::get({m, count}, accumulator);
      Value slice = tensor::ExtractSliceOp::create(b, l, sliceType, acc,
                                                   offsets, sizes, strides);
      Value product = buildMatmul(b, l, a, tile, slice, ta, tb);
      return tensor::InsertSliceOp::create(b, l, product, acc, offsets, sizes,
                                           strides);
    };

    int64_t full = n / width;
    Value acc = init;
    if (full > 0) {
      auto loop = scf::ForOp::create(
          rewriter, loc, indexConstant(rewriter, loc, 0),
          indexConstant(rewriter, loc, full * width),
          indexConstant(rewriter, loc, width), ValueRange{acc},
          [&](OpBuilder &b, Location l, Value c0, ValueRange iterArgs) {
            scf::YieldOp::create(b, l,
                                 tileProduct(b, l, iterArgs[0], c0, width));
          });
      acc = loop.getResult(0);
    }
    if (int64_t rest = n - full * width)
      acc = tileProduct(rewriter, loc, acc,
                        indexConstant(rewriter, loc, full * width), rest);
    acc = buildLinearEpilogue(rewriter, loc, accType, acc, bias, alpha, beta);
    rewriter.replaceOp(op, convertElements(rewriter, loc, acc,
                                           resultType.getElementType()));
    return success();
  }
};

/// eff.nf4_pack is only a view: its value is the four storage tensors.
struct NF4PackLowering : OpConversionPattern<NF4PackOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(NF4PackOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> storage;
    for (ValueRange operand : adaptor.getOperands())
      llvm::append_range(storage, operand);
    rewriter.replaceOpWithMultiple(op, {storage});
    return success();
  }
};

} // namespace

void populateQuantizedLowering(RewritePatternSet &patterns,
                               const TypeConverter &converter,
                               const LoweringPolicy &policy) {
  // Above the plain eff.linear lowering, which refuses encoded weights.
  patterns.add<NF4LinearLowering>(converter, patterns.getContext(), policy);
  patterns.add<NF4PackLowering>(converter, patterns.getContext());
}

} // namespace effopt::lowering
