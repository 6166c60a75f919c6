//===- FoldBiasIntoProducts.cpp - Biases as cuBLASLt's GEMM epilogue ------===//
//
// A linear layer's bias is added by the GEMM's reader, an elementwise kernel
// that reads the product and writes it again with the bias (GPT-2's query,
// key and value projection: 151 MB each way per layer at batch 32). Here the
// bias becomes the product's init, a row broadcast of the per-column vector,
// which eff-linalg-to-blas hands to cuBLASLt as its bias epilogue: the GEMM
// adds it to its f32 accumulator before it rounds. See the pass description
// in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ZeroFill.h"

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace effopt {
#define GEN_PASS_DEF_EFFGPUFOLDBIASINTOPRODUCTSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

bool isIdentity(AffineMap map, unsigned loops) {
  return map.isIdentity() && map.getNumDims() == loops;
}

/// Whether `map` reads a rank-1 operand by the last of `loops` loops alone.
bool isLastLoopOnly(AffineMap map, unsigned loops) {
  if (map.getNumResults() != 1 || map.getNumDims() != loops)
    return false;
  auto dim = dyn_cast<AffineDimExpr>(map.getResult(0));
  return dim && dim.getPosition() == loops - 1;
}

/// One reader of the product that adds the bias: the reader, in its body
/// the product's value, the column value, the ops computing it (in order),
/// the reader's vector inputs they read, and the rounded sum they replace.
struct Reader {
  linalg::GenericOp generic;
  BlockArgument c;
  Value column;
  Value sum;
  SmallVector<Operation *> columnOps;
  SmallVector<OpOperand *> columnInputs;
};

/// What one fold rewrites: the product, its zero fill and its readers.
struct Fold {
  linalg::MatmulOp product;
  linalg::FillOp fill;
  SmallVector<Reader> readers;
};

/// Collects into `r` the ops of the reader's body that compute `v` from its
/// per-column inputs and constants; false when `v` depends on anything else
/// (another input, the product, the loop position).
bool collectColumn(Value v, Reader &r) {
  linalg::GenericOp g = r.generic;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != g.getBody())
      return false;
    OpOperand *operand = g.getMatchingOpOperand(arg);
    if (!g.isDpsInput(operand) ||
        !isLastLoopOnly(g.getMatchingIndexingMap(operand), g.getNumLoops()))
      return false;
    if (!llvm::is_contained(r.columnInputs, operand))
      r.columnInputs.push_back(operand);
    return true;
  }
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (llvm::is_contained(r.columnOps, def))
    return true;
  // A constant from outside the body is cloned with the rest (the vector's
  // computation moves in front of the product).
  if (def->getParentRegion() != &g.getRegion()) {
    if (!def->hasTrait<OpTrait::ConstantLike>())
      return false;
    r.columnOps.push_back(def);
    return true;
  }
  if (def->getNumRegions() != 0 || def->getNumResults() != 1 ||
      !isa<arith::ArithDialect, math::MathDialect>(def->getDialect()))
    return false;
  for (Value operand : def->getOperands())
    if (!collectColumn(operand, r))
      return false;
  r.columnOps.push_back(def);
  return true;
}

/// The reader of `use` (the product's value, of type `t`) if its only use
/// of it is to add a per-column vector and round the sum to `t`.
std::optional<Reader> matchReader(OpOperand &use, Type t, int64_t n) {
  Reader r;
  r.generic = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!r.generic || !r.generic.isDpsInput(&use) ||
      r.generic.getNumReductionLoops() != 0 ||
      !isIdentity(r.generic.getMatchingIndexingMap(&use),
                  r.generic.getNumLoops()))
    return std::nullopt;
  r.c = r.generic.getMatchingBlockArgument(&use);
  if (!r.c.hasOneUse())
    return std::nullopt;
  // c + v (f32), or truncf(extf(c) + v) to the product's type.
  Operation *first = *r.c.getUsers().begin();
  Value widened = r.c;
  if (!t.isF32()) {
    auto ext = dyn_cast<arith::ExtFOp>(first);
    if (!ext || !ext.getType().isF32() || !ext->hasOneUse())
      return std::nullopt;
    widened = ext;
    first = *ext->getUsers().begin();
  }
  auto add = dyn_cast<arith::AddFOp>(first);
  if (!add)
    return std::nullopt;
  Value other = add.getLhs() == widened ? add.getRhs() : add.getLhs();
  if (other == widened)
    return std::nullopt;
  if (t.isF32()) {
    r.sum = add;
    r.column = other;
  } else {
    if (!add->hasOneUse())
      return std::nullopt;
    auto round = dyn_cast<arith::TruncFOp>(*add->getUsers().begin());
    if (!round || round.getType() != t)
      return std::nullopt;
    r.sum = round;
    // The vector must be exactly of the product's type (autocast's cast of
    // the bias): the epilogue reads it in that type.
    auto ext = other.getDefiningOp<arith::ExtFOp>();
    if (!ext || ext.getIn().getType() != t)
      return std::nullopt;
    r.column = ext.getIn();
  }
  if (!collectColumn(r.column, r) || r.columnInputs.empty())
    return std::nullopt;
  for (OpOperand *input : r.columnInputs) {
    auto vt = dyn_cast<RankedTensorType>(input->get().getType());
    if (!vt || vt.getRank() != 1 || vt.getDimSize(0) != n)
      return std::nullopt;
  }
  return r;
}

/// Whether two readers add the same vector: the same input tensors through
/// the same ops.
bool sameColumn(Reader a, Reader b) {
  if (a.columnOps.size() != b.columnOps.size() ||
      a.columnInputs.size() != b.columnInputs.size())
    return false;
  // b's values as a's.
  DenseMap<Value, Value> as;
  for (auto [x, y] : llvm::zip(a.columnInputs, b.columnInputs)) {
    if (x->get() != y->get())
      return false;
    as[b.generic.getMatchingBlockArgument(y)] =
        a.generic.getMatchingBlockArgument(x);
  }
  for (auto [x, y] : llvm::zip(a.columnOps, b.columnOps)) {
    if (x->getName() != y->getName() ||
        x->getAttrDictionary() != y->getAttrDictionary() ||
        x->getResultTypes() != y->getResultTypes() ||
        x->getNumOperands() != y->getNumOperands())
      return false;
    for (auto [u, v] : llvm::zip(x->getOperands(), y->getOperands())) {
      auto it = as.find(v);
      Value mapped = it != as.end() ? it->second : v;
      // Constants defined in each body: equal attributes will do.
      if (mapped != u) {
        Operation *cu = u.getDefiningOp(), *cv = v.getDefiningOp();
        if (!cu || !cv || !cu->hasTrait<OpTrait::ConstantLike>() ||
            cu->getName() != cv->getName() ||
            cu->getAttrDictionary() != cv->getAttrDictionary())
          return false;
      }
    }
    as[y->getResult(0)] = x->getResult(0);
  }
  auto it = as.find(b.column);
  return (it != as.end() ? it->second : b.column) == a.column;
}

/// The fold of `product`, if every reader of its value adds the same
/// per-column vector to it right away.
std::optional<Fold> match(linalg::MatmulOp product, DominanceInfo &dom) {
  if (!product.hasPureTensorSemantics() || product->getNumResults() != 1)
    return std::nullopt;
  // C indexed (m, n) by the loops (m, n, k), untransposed as cuBLASLt
  // writes it.
  AffineMap out = product.getIndexingMapsArray().back();
  if (out.getNumResults() != 2 ||
      out.getResult(0) != getAffineDimExpr(0, product.getContext()) ||
      out.getResult(1) != getAffineDimExpr(1, product.getContext()))
    return std::nullopt;
  Value result = product->getResult(0);
  auto type = cast<RankedTensorType>(result.getType());
  Type t = type.getElementType();
  if (!(t.isF32() || t.isBF16() || t.isF16()) || !type.hasStaticShape())
    return std::nullopt;
  Fold fold;
  fold.product = product;
  fold.fill = zeroFillOfEmpty(product.getDpsInits()[0]);
  if (!fold.fill)
    return std::nullopt;
  // Every reader, through reshapes that keep the columns as the last
  // dimension.
  int64_t n = type.getDimSize(1);
  SmallVector<Value> values{result};
  while (!values.empty()) {
    Value v = values.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      SmallVector<ReassociationIndices> groups;
      if (auto e = dyn_cast<tensor::ExpandShapeOp>(user))
        groups = e.getReassociationIndices();
      else if (auto c = dyn_cast<tensor::CollapseShapeOp>(user))
        groups = c.getReassociationIndices();
      if (!groups.empty()) {
        auto next = cast<RankedTensorType>(user->getResult(0).getType());
        if (groups.back().size() != 1 || next.getShape().back() != n)
          return std::nullopt;
        values.push_back(user->getResult(0));
        continue;
      }
      std::optional<Reader> r = matchReader(use, t, n);
      if (!r || (!fold.readers.empty() && !sameColumn(fold.readers[0], *r)))
        return std::nullopt;
      fold.readers.push_back(std::move(*r));
    }
  }
  if (fold.readers.empty())
    return std::nullopt;
  // The vectors move in front of the product.
  for (OpOperand *input : fold.readers[0].columnInputs)
    if (!dom.properlyDominates(input->get(), product))
      return std::nullopt;
  return fold;
}

struct EffGpuFoldBiasIntoProductsPass
    : impl::EffGpuFoldBiasIntoProductsPassBase<
          EffGpuFoldBiasIntoProductsPass> {
  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> products;
    getOperation().walk(
        [&](linalg::MatmulOp op) { products.push_back(op); });
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> readers;
    for (linalg::MatmulOp op : products) {
      DominanceInfo dom(getOperation());
      if (std::optional<Fold> fold = match(op, dom)) {
        for (const Reader &r : fold->readers)
          readers.push_back(r.generic);
        apply(rewriter, *fold);
        ++numFolded;
      }
    }
    // The readers no longer read the bias: drop the operand (a reader left
    // copying the product then folds away, GenericOp's canonicalization).
    RewritePatternSet patterns(&getContext());
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyOpPatternsGreedily(readers, std::move(patterns))))
      return signalPassFailure();
  }

  static void apply(IRRewriter &rewriter, Fold &fold) {
    linalg::MatmulOp product = fold.product;
    Location loc = product.getLoc();
    auto type = cast<RankedTensorType>(product->getResult(0).getType());
    Type t = type.getElementType();
    int64_t n = type.getDimSize(1);
    MLIRContext *ctx = rewriter.getContext();
    rewriter.setInsertionPoint(product);

    // The bias per column, in the product's type.
    Reader first = fold.readers[0];
    SmallVector<Value> vectors;
    for (OpOperand *input : first.columnInputs)
      vectors.push_back(input->get());
    Value biasEmpty = tensor::EmptyOp::create(rewriter, loc, {n}, t);
    AffineMap id1 = AffineMap::getMultiDimIdentityMap(1, ctx);
    SmallVector<AffineMap> biasMaps(vectors.size() + 1, id1);
    auto bias = linalg::GenericOp::create(
        rewriter, loc, TypeRange{biasEmpty.getType()}, vectors,
        ValueRange{biasEmpty}, biasMaps,
        SmallVector<utils::IteratorType>{utils::IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) {
          IRMapping map;
          for (auto [i, input] : llvm::enumerate(first.columnInputs))
            map.map(first.generic.getMatchingBlockArgument(input), args[i]);
          for (Operation *op : first.columnOps)
            b.clone(*op, map);
          linalg::YieldOp::create(b, l, map.lookupOrDefault(first.column));
        });

    // The product's init: the bias broadcast over the rows.
    Value initEmpty =
        tensor::EmptyOp::create(rewriter, loc, type.getShape(), t);
    AffineMap column = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
    auto init = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{bias->getResult(0)},
        ValueRange{initEmpty},
        SmallVector<AffineMap>{column, AffineMap::getMultiDimIdentityMap(2, ctx)},
        SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
        [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, args[0]);
        });

    SmallVector<NamedAttribute> attrs;
    if (Attribute maps = product->getAttr("indexing_maps"))
      attrs.emplace_back(rewriter.getStringAttr("indexing_maps"), maps);
    auto folded = linalg::MatmulOp::create(rewriter, loc, TypeRange{type},
                                           product.getDpsInputs(),
                                           ValueRange{init->getResult(0)},
                                           attrs);
    rewriter.replaceOp(product, folded->getResults());
    if (fold.fill->use_empty())
      rewriter.eraseOp(fold.fill);
    // The readers take the product, which now holds the rounded sum.
    for (Reader &r : fold.readers) {
      rewriter.replaceAllUsesWith(r.sum, r.c);
      // The sum and the bias's rounding are dead now.
      SmallVector<Operation *> body;
      for (Operation &op : r.generic.getBody()->without_terminator())
        body.push_back(&op);
      for (Operation *op : llvm::reverse(body))
        if (isOpTriviallyDead(op))
          rewriter.eraseOp(op);
    }
  }
};

} // namespace
} // namespace effopt
