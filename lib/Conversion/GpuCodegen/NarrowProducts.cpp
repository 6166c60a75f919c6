//===- NarrowProducts.cpp - GEMMs that write the type they are rounded to -===//
//
// A bf16 x bf16 product accumulates in f32; when every reader of its f32
// result rounds it straight back to bf16, the GEMM can write bf16 itself
// (cuBLASLt rounds its f32 accumulator once, as the truncf did) and the f32
// tensor -- GPT-2's 32768 x 50304 logits, 6.3 GB -- never exists. See the
// pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ZeroFill.h"

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace effopt {
#define GEN_PASS_DEF_EFFGPUNARROWPRODUCTSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// True when every use of `result` is an input of a linalg.generic whose
/// block argument is only ever rounded to `narrow`.
bool onlyRoundedTo(Value result, Type narrow) {
  if (result.use_empty())
    return false;
  for (OpOperand &use : result.getUses()) {
    auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!generic || !generic.isDpsInput(&use))
      return false;
    BlockArgument arg = generic.getMatchingBlockArgument(&use);
    for (Operation *user : arg.getUsers()) {
      auto trunc = dyn_cast<arith::TruncFOp>(user);
      if (!trunc || trunc.getType() != narrow)
        return false;
    }
  }
  return true;
}

/// The named products eff-linalg-to-blas hands to cuBLASLt, with their
/// result written untransposed (as cuBLASLt writes C).
bool isLibraryProduct(linalg::LinalgOp op) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op.getOperation()) ||
      !op.hasPureTensorSemantics() || op->getNumResults() != 1)
    return false;
  // C indexed by the leading loops in order: [b,] m, n.
  AffineMap out = op.getIndexingMapsArray().back();
  for (auto [i, expr] : llvm::enumerate(out.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim || dim.getPosition() != i)
      return false;
  }
  return true;
}

struct EffGpuNarrowProductsPass
    : impl::EffGpuNarrowProductsPassBase<EffGpuNarrowProductsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> products;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isLibraryProduct(op))
        products.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : products)
      if (narrow(rewriter, op))
        ++numNarrowed;
  }

  bool narrow(IRRewriter &rewriter, linalg::LinalgOp op) {
    Type a = getElementTypeOrSelf(op.getDpsInputs()[0].getType());
    Type b = getElementTypeOrSelf(op.getDpsInputs()[1].getType());
    Value result = op->getResult(0);
    auto resultType = cast<RankedTensorType>(result.getType());
    if (a != b || !(a.isBF16() || a.isF16()) || !resultType.getElementType().isF32())
      return false;
    linalg::FillOp fill = zeroFillOfEmpty(op.getDpsInits()[0]);
    if (!fill || !onlyRoundedTo(result, a))
      return false;

    // The product into a zero-filled tensor of the operands' type.
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto narrowType = resultType.clone(a);
    Value empty = tensor::EmptyOp::create(rewriter, loc, narrowType.getShape(),
                                          narrowType.getElementType());
    Value zero = arith::ConstantOp::create(rewriter, loc, a,
                                           rewriter.getFloatAttr(a, 0.0));
    Value init = linalg::FillOp::create(rewriter, loc, zero, empty).result();
    Operation *narrowed =
        createProduct(rewriter, op, narrowType, op.getDpsInputs(), init);

    // Readers take the rounded value as it is: truncf(x) becomes x.
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
      auto generic = cast<linalg::GenericOp>(use.getOwner());
      BlockArgument arg = generic.getMatchingBlockArgument(&use);
      rewriter.modifyOpInPlace(generic, [&] {
        use.set(narrowed->getResult(0));
        arg.setType(a);
      });
      for (Operation *trunc : llvm::make_early_inc_range(arg.getUsers()))
        rewriter.replaceOp(trunc, arg);
    }
    rewriter.eraseOp(op);
    if (fill->use_empty())
      rewriter.eraseOp(fill);
    return true;
  }

  /// A product like `op` (same kind, same indexing maps) into `init`: the
  /// builder gives the named op the region of its element types (a bf16 C
  /// accumulates in f32 all the same in the library call it becomes).
  static Operation *createProduct(OpBuilder &b, linalg::LinalgOp op,
                                  Type resultType, ValueRange inputs,
                                  Value init) {
    SmallVector<NamedAttribute> attrs;
    if (Attribute maps = op->getAttr("indexing_maps"))
      attrs.emplace_back(b.getStringAttr("indexing_maps"), maps);
    if (isa<linalg::MatmulOp>(op.getOperation()))
      return linalg::MatmulOp::create(b, op.getLoc(), TypeRange{resultType},
                                      inputs, ValueRange{init}, attrs);
    return linalg::BatchMatmulOp::create(b, op.getLoc(), TypeRange{resultType},
                                         inputs, ValueRange{init}, attrs);
  }
};

} // namespace
} // namespace effopt
