//===- LowerContraction.cpp - eff matrix products to linalg ---------------===//
//
// Products become linalg.matmul / linalg.batch_matmul with transposes in the
// indexing maps, so eff-linalg-to-blas can hand them to a GEMM with the
// transpose flags instead of materialising transposed copies.
//
// Products of f16/bf16 accumulate in f32, as PyTorch's GEMMs do. By the
// target's policy the operands are either widened to f32 temporaries first
// (exact; O(n^2) work against the product's O(n^3); the product then runs as
// an f32 GEMM -- on CPU, where OpenBLAS has no half-precision GEMM) or read in
// their own type by a product with an f32 accumulator (a tensor-core GEMM).
// Either way the result is rounded once.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {

Value buildMatmul(OpBuilder &b, Location loc, Value a, Value bm, Value c,
                  bool transposeA, bool transposeB) {
  MLIRContext *ctx = b.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  auto map = [&](AffineExpr x, AffineExpr y) {
    return AffineMap::get(3, 0, {x, y}, ctx);
  };
  SmallVector<Attribute> maps{
      AffineMapAttr::get(transposeA ? map(k, m) : map(m, k)),
      AffineMapAttr::get(transposeB ? map(n, k) : map(k, n)),
      AffineMapAttr::get(map(m, n))};
  NamedAttribute attr(b.getStringAttr("indexing_maps"), b.getArrayAttr(maps));
  return linalg::MatmulOp::create(b, loc, TypeRange{c.getType()},
                                  ValueRange{a, bm}, ValueRange{c}, {attr})
      .getResult(0);
}

/// Whether `v` is a constant of +0.0 everywhere (eff-chunk-cross-entropy's
/// f32 start of a dW accumulation).
bool isPositiveZero(Value v) {
  ElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return false;
  auto dense = dyn_cast<DenseFPElementsAttr>(attr);
  return dense && dense.getSplatValue<APFloat>().isPosZero();
}

Value buildLinearInit(OpBuilder &b, Location loc, RankedTensorType type,
                      Value bias, double alpha, double beta) {
  // A zero bias is a zero fill, which the GEMM call folds into beta = 0
  // (no fill kernel, C not read).
  if (!bias || alpha != 1.0 || isPositiveZero(bias))
    return zeros(b, loc, type);
  return buildElementwise(
      b, loc, type, {bias},
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        if (beta == 1.0)
          return args[0];
        return arith::MulFOp::create(
            b, l, args[0], scalarConstant(b, l, args[0].getType(), beta));
      });
}

Value buildLinearEpilogue(OpBuilder &b, Location loc, RankedTensorType type,
                          Value product, Value bias, double alpha,
                          double beta) {
  if (alpha == 1.0)
    return product;
  SmallVector<Value> operands{product};
  if (bias)
    operands.push_back(bias);
  return buildElementwise(
      b, loc, type, operands,
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Type t = args[0].getType();
        Value r =
            arith::MulFOp::create(b, l, args[0], scalarConstant(b, l, t, alpha));
        if (args.size() == 2)
          r = arith::AddFOp::create(
              b, l, r,
              arith::MulFOp::create(b, l, args[1],
                                    scalarConstant(b, l, t, beta)));
        return r;
      });
}

/// `operand` in the type the product reads it in: its own with native
/// low-precision products, else the accumulator's.
Value productOperand(OpBuilder &b, Location loc, const LoweringPolicy &policy,
                     Value operand, Type accumulator) {
  if (policy.nativeLowPrecisionProducts)
    return operand;
  return convertElements(b, loc, operand, accumulator);
}

namespace {

struct LinearLowering : PolicyPattern<LinearOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    // A packed weight is dequantized inside the product (LowerQuantized).
    if (tensorType(op.getB()).getEncoding())
      return rewriter.notifyMatchFailure(op, "the weight has an encoding");
    Location loc = op.getLoc();
    auto resultType = tensorType(op.getResult());
    Type acc = computeType(resultType.getElementType());
    auto type = resultType.clone(acc);
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    Value init =
        buildLinearInit(rewriter, loc, type, op.getBias(), alpha, beta);
    Value product = buildMatmul(
        rewriter, loc, productOperand(rewriter, loc, policy, op.getA(), acc),
        productOperand(rewriter, loc, policy, op.getB(), acc), init,
        op.getTransposeA(), op.getTransposeB());
    product = buildLinearEpilogue(rewriter, loc, type, product, op.getBias(),
                                  alpha, beta);
    rewriter.replaceOp(op, convertElements(rewriter, loc, product,
                                           resultType.getElementType()));
    return success();
  }
};

struct MatmulLowering : PolicyPattern<MatmulOp> {
  using PolicyPattern::PolicyPattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getResult());
    Type resultElementType = type.getElementType();
    // Operands and accumulator in the type the product accumulates in.
    Type elementType = computeType(resultElementType);
    auto rounded = [&](Value product) {
      return reshapeTo(
          rewriter, loc,
          convertElements(rewriter, loc, product, resultElementType),
          type);
    };
    Value lhs = op.getLhs(), rhs = op.getRhs();
    auto lhsType = tensorType(lhs), rhsType = tensorType(rhs);
    int64_t rank = type.getRank();
    int64_t m = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);
    int64_t k = lhsType.getDimSize(lhsType.getRank() - 1);
    ArrayRef<int64_t> batch = type.getShape().drop_back(2);
    int64_t batchSize = numElements(batch);

    // A shared right operand: fold the left's batch into its rows. A
    // transposed weight (`x @ w.t()`, ONNX's MatMul after Transpose) is
    // read through the product's indexing map -- a GEMM transpose flag --
    // instead of a transposed copy.
    if (rhsType.getRank() == 2) {
      auto rowsType = RankedTensorType::get({batchSize * m, k},
                                            lhsType.getElementType());
      Value rows = productOperand(rewriter, loc, policy,
                                  reshapeTo(rewriter, loc, lhs, rowsType),
                                  elementType);
      bool transposeB = false;
      auto transpose = rhs.getDefiningOp<TransposeOp>();
      if (transpose && transpose.getPermutation()[0] == 1) {
        rhs = transpose.getInput();
        transposeB = true;
      }
      auto outType = RankedTensorType::get({batchSize * m, n}, elementType);
      Value product = buildMatmul(
          rewriter, loc, rows,
          productOperand(rewriter, loc, policy, rhs, elementType),
          zeros(rewriter, loc, outType), false, transposeB);
      rewriter.replaceOp(op, rounded(product));
      return success();
    }

    // Otherwise broadcast both to the full batch (widening them on the way,
    // unless the product reads them natively) and run one batched GEMM.
    auto expand = [&](Value v, int64_t rows, int64_t cols) {
      SmallVector<int64_t> shape(batch);
      shape.append({rows, cols});
      Type operandType = policy.nativeLowPrecisionProducts
                             ? tensorType(v).getElementType()
                             : elementType;
      auto full = RankedTensorType::get(shape, operandType);
      if (tensorType(v) != full)
        v = buildElementwise(rewriter, loc, full, {v},
                             [](OpBuilder &, Location, ValueRange args) {
                               return args[0];
                             });
      return reshapeTo(rewriter, loc, v,
                       RankedTensorType::get({batchSize, rows, cols},
                                             operandType));
    };
    // An operand that is a transpose moving its input's contiguous
    // dimension to the second-to-last place (K^T of attention, dS^T and
    // P^T of its backward) is read through a transposed indexing map -- a
    // GEMM flag -- instead: what remains of the transpose (a head split)
    // keeps the contiguous dimension last, or nothing remains.
    bool transposeA = false, transposeB = false;
    auto untranspose = [&](Value v, bool &transposed) -> Value {
      auto transpose = v.getDefiningOp<TransposeOp>();
      if (!transpose)
        return v;
      SmallVector<int64_t> perm(transpose.getPermutation());
      int64_t r = perm.size();
      if (r < 2 || perm[r - 2] != r - 1)
        return v;
      std::swap(perm[r - 2], perm[r - 1]);
      bool identity = llvm::equal(perm, llvm::seq<int64_t>(0, r));
      if (!identity && !transpose->hasOneUse())
        return v;
      transposed = true;
      if (identity)
        return transpose.getInput();
      return TransposeOp::create(rewriter, loc, transpose.getInput(), perm);
    };
    lhs = untranspose(lhs, transposeA);
    rhs = untranspose(rhs, transposeB);
    Value a = transposeA ? expand(lhs, k, m) : expand(lhs, m, k);
    Value bm = transposeB ? expand(rhs, n, k) : expand(rhs, k, n);
    auto outType = RankedTensorType::get({batchSize, m, n}, elementType);
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr bd = getAffineDimExpr(0, ctx), md = getAffineDimExpr(1, ctx),
               nd = getAffineDimExpr(2, ctx), kd = getAffineDimExpr(3, ctx);
    auto map = [&](AffineExpr x, AffineExpr y) {
      return AffineMapAttr::get(AffineMap::get(4, 0, {bd, x, y}, ctx));
    };
    NamedAttribute maps(
        rewriter.getStringAttr("indexing_maps"),
        rewriter.getArrayAttr({transposeA ? map(kd, md) : map(md, kd),
                               transposeB ? map(nd, kd) : map(kd, nd),
                               map(md, nd)}));
    Value product =
        linalg::BatchMatmulOp::create(rewriter, loc, TypeRange{outType},
                                      ValueRange{a, bm},
                                      ValueRange{zeros(rewriter, loc, outType)},
                                      {maps})
            .getResult(0);
    rewriter.replaceOp(op, rounded(product));
    return success();
  }
};

} // namespace

void populateContractionLowering(RewritePatternSet &patterns,
                                 const LoweringPolicy &policy) {
  patterns.add<LinearLowering, MatmulLowering>(patterns.getContext(), policy);
}

} // namespace effopt::lowering
