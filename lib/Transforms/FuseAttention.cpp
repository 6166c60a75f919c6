//===- FuseAttention.cpp - eff-fuse-attention: one op per attention -------===//
//
// Exporters write attention as primitives: MatMul(q, k^T) -> scale (Div or
// Mul, on the scores or on q) -> mask (Add of a float mask, Where of a
// boolean one) -> Softmax -> (Dropout) -> MatMul(., v). PyTorch 1.13 exports
// hand-written attention, nn.MultiheadAttention and nn.TransformerEncoder
// this way. This pass turns each such chain into one eff.attention, whose
// gradient needs only q, k, v, the output and a log-sum-exp per row, and
// whose lowering never stores Tq x Tk (lib/Conversion/EffToLinalg/
// LowerAttention.cpp).
//
// It only fuses what computes the same function: every intermediate must
// have no other reader (probabilities returned as attention weights keep
// the chain as it is), the softmax runs over the keys, a Where fills with
// -inf (a finite fill differs on fully masked rows), and a float mask must
// not depend on a parameter (a learned bias, like Swin's relative position
// bias, needs a Tq x Tk gradient that eff.attention does not produce). A
// constant mask that is exactly the causal one becomes `causal = true`.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <vector>

namespace effopt {
#define GEN_PASS_DEF_EFFFUSEATTENTIONPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt::eff;

namespace {

RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The value of a splat float constant.
std::optional<double> splatValue(Value value) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

bool isNegInfSplat(Value value) {
  std::optional<double> v = splatValue(value);
  return v && std::isinf(*v) && *v < 0;
}

/// The elements of `value` as doubles (row-major, its own shape) when it is
/// a constant, or a cast, logical_not or comparison with a splat of such:
/// exporters compute boolean masks as `Equal(Cast(tril), 0)`, which the
/// importer leaves unfolded above its folding size limit.
std::optional<std::vector<double>> constantElements(Value value,
                                                    int depth = 0) {
  auto type = typeOf(value);
  int64_t n = type.getNumElements();
  DenseElementsAttr attr;
  if (matchPattern(value, m_Constant(&attr))) {
    std::vector<double> out;
    out.reserve(n);
    Type element = type.getElementType();
    if (element.isInteger(1)) {
      for (bool b : attr.getValues<bool>())
        out.push_back(b ? 1.0 : 0.0);
    } else if (isa<FloatType>(element)) {
      for (APFloat f : attr.getValues<APFloat>())
        out.push_back(f.convertToDouble());
    } else if (isa<IntegerType>(element)) {
      for (APInt i : attr.getValues<APInt>())
        out.push_back(static_cast<double>(i.getSExtValue()));
    } else {
      return std::nullopt;
    }
    return out;
  }
  if (depth > 4)
    return std::nullopt;
  Operation *op = value.getDefiningOp();
  if (auto cast = dyn_cast_or_null<CastOp>(op)) {
    if (typeOf(cast.getInput()).getShape() != type.getShape())
      return std::nullopt;
    std::optional<std::vector<double>> in =
        constantElements(cast.getInput(), depth + 1);
    if (in && type.getElementType().isInteger(1))
      for (double &x : *in)
        x = x != 0.0 ? 1.0 : 0.0;
    return in;
  }
  if (auto negation = dyn_cast_or_null<LogicalNotOp>(op)) {
    std::optional<std::vector<double>> in =
        constantElements(negation.getInput(), depth + 1);
    if (in)
      for (double &x : *in)
        x = x != 0.0 ? 0.0 : 1.0;
    return in;
  }
  if (auto cmp = dyn_cast_or_null<CmpOp>(op)) {
    DenseElementsAttr rhs;
    if (typeOf(cmp.getLhs()).getShape() != type.getShape() ||
        !matchPattern(cmp.getRhs(), m_Constant(&rhs)) || !rhs.isSplat())
      return std::nullopt;
    std::optional<std::vector<double>> lhs =
        constantElements(cmp.getLhs(), depth + 1);
    std::optional<std::vector<double>> splat = constantElements(cmp.getRhs(),
                                                                depth + 1);
    if (!lhs || !splat || splat->empty())
      return std::nullopt;
    double c = splat->front();
    for (double &x : *lhs) {
      bool r = false;
      switch (cmp.getPredicate()) {
      case CmpPredicate::eq: r = x == c; break;
      case CmpPredicate::ne: r = x != c; break;
      case CmpPredicate::lt: r = x < c; break;
      case CmpPredicate::le: r = x <= c; break;
      case CmpPredicate::gt: r = x > c; break;
      case CmpPredicate::ge: r = x >= c; break;
      }
      x = r ? 1.0 : 0.0;
    }
    return lhs;
  }
  return std::nullopt;
}

/// Whether `values` of a mask of `type` are, on [Tq, Tk] with every leading
/// dimension 1, exactly the causal mask: masked (`true`, or -inf added) at
/// column j > row i, and not masked (`false`, or 0 added) elsewhere.
bool isCausalPattern(RankedTensorType type, ArrayRef<double> values) {
  if (type.getRank() < 2)
    return false;
  for (int64_t d : type.getShape().drop_back(2))
    if (d != 1)
      return false;
  int64_t rows = type.getDimSize(type.getRank() - 2);
  int64_t cols = type.getDimSize(type.getRank() - 1);
  if (rows < 2 || cols < 2)
    return false;
  bool isBool = type.getElementType().isInteger(1);
  if (!isBool && !isa<FloatType>(type.getElementType()))
    return false;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double v = values[i * cols + j];
      bool masked = isBool ? v != 0.0 : (std::isinf(v) && v < 0);
      if (masked != (j > i) || (!isBool && !masked && v != 0.0))
        return false;
    }
  return true;
}

/// Whether the constant `mask` is exactly the causal mask (isCausalPattern).
bool isCausalConstant(Value mask) {
  std::optional<std::vector<double>> values = constantElements(mask);
  return values && isCausalPattern(typeOf(mask), *values);
}

/// Whether `value` is computed from a function argument that is a trainable
/// parameter (a learned float mask would need a gradient). Frozen
/// parameters and buffers are constants of the step.
bool dependsOnParameter(Value value, func::FuncOp func) {
  auto module = func->getParentOfType<ModuleOp>();
  SmallVector<Value> worklist{value};
  llvm::SmallPtrSet<Value, 16> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto symbol = func.getArgAttrOfType<FlatSymbolRefAttr>(
          arg.getArgNumber(), kParameterAttrName);
      if (!symbol)
        continue;
      auto parameter =
          module ? module.lookupSymbol<ParameterOp>(symbol.getAttr())
                 : ParameterOp();
      if (!parameter || parameter.getRole() == ParamRole::Trainable)
        return true;
      continue;
    }
    Operation *op = v.getDefiningOp();
    if (seen.size() > 4096)
      return true; // too far to tell: do not fuse
    llvm::append_range(worklist, op->getOperands());
  }
  return false;
}

/// `value`'s single reader is `user`.
bool onlyReadBy(Value value, Operation *user) {
  return value.hasOneUse() && *value.getUsers().begin() == user;
}

/// The pieces of one attention.
struct AttentionParts {
  Value query, key, value, mask;
  double scale = 1.0;
  bool causal = false;
  double dropout = 0.0;
  int64_t seed = 0;
};

/// Peels a scale by a splat constant off `v` (x / c, x * c, c * x) if `v`
/// is read only by `user`; returns x and multiplies `scale`.
Value peelScale(Value v, Operation *user, double &scale) {
  if (!onlyReadBy(v, user))
    return v;
  if (auto div = v.getDefiningOp<DivOp>()) {
    std::optional<double> c = splatValue(div.getRhs());
    if (c && *c != 0.0 && typeOf(div.getLhs()) == typeOf(v)) {
      scale /= *c;
      return div.getLhs();
    }
  }
  if (auto mul = v.getDefiningOp<MulOp>()) {
    for (auto [x, y] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())}) {
      std::optional<double> c = splatValue(y);
      if (c && typeOf(x) == typeOf(v)) {
        scale *= *c;
        return x;
      }
    }
  }
  return v;
}

/// The permutation that swaps the last two of `rank` dimensions.
SmallVector<int64_t> swapLastTwo(int64_t rank) {
  SmallVector<int64_t> permutation = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(permutation[rank - 1], permutation[rank - 2]);
  return permutation;
}

/// matmul(softmax(mask(scale(q k^T))), v), with dropout, as one op.
struct FuseAttention : OpRewritePattern<MatmulOp> {
  /// `cudaKernels`: fuse only what effrt's CUDA kernels run (no mask but
  /// the causal one, no dropout, one head size up to 128).
  FuseAttention(MLIRContext *context, bool cudaKernels)
      : OpRewritePattern(context), cudaKernels(cudaKernels) {}
  bool cudaKernels;

  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    AttentionParts parts;
    parts.value = op.getRhs();
    Value probs = op.getLhs();
    Operation *reader = op;
    if (auto dropout = probs.getDefiningOp<DropoutOp>()) {
      if (!onlyReadBy(probs, op) || !dropout.getMask().use_empty())
        return rewriter.notifyMatchFailure(op, "dropout read elsewhere");
      parts.dropout = dropout.getRatio().convertToDouble();
      parts.seed = dropout.getSeed();
      reader = dropout;
      probs = dropout.getInput();
    }
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    if (!softmax)
      return rewriter.notifyMatchFailure(op, "not softmax(...) @ v");
    if (!onlyReadBy(probs, reader))
      return rewriter.notifyMatchFailure(
          op, "the probabilities are read elsewhere");
    int64_t rank = typeOf(probs).getRank();
    if (rank != 3 && rank != 4)
      return rewriter.notifyMatchFailure(op, "scores of rank other than 3, 4");
    auto axis = static_cast<int64_t>(softmax.getAxis());
    if (axis != -1 && axis != rank - 1)
      return rewriter.notifyMatchFailure(op, "softmax not over the keys");

    // Masks: up to one Where(-inf) and one Add, in either order; a
    // constant causal one becomes the attribute.
    Value scores = softmax.getInput();
    reader = softmax;
    // Where(keep, s, -inf) with a constant `keep`: the masked-out constant
    // to build, and the condition it stands for.
    DenseElementsAttr keptMask;
    std::vector<double> keptMaskValues;
    Value keptMaskOf;
    bool invertMask = false;
    for (int peeled = 0; peeled < 2; ++peeled) {
      if (!onlyReadBy(scores, reader))
        return rewriter.notifyMatchFailure(op, "the scores are read elsewhere");
      Value inner, mask;
      if (auto where = scores.getDefiningOp<WhereOp>()) {
        if (isNegInfSplat(where.getTrueValue()) &&
            typeOf(where.getFalseValue()) == typeOf(scores)) {
          inner = where.getFalseValue();
          mask = where.getCondition();
        } else if (isNegInfSplat(where.getFalseValue()) &&
                   typeOf(where.getTrueValue()) == typeOf(scores)) {
          // torch.where(keep, s, -inf): the condition marks what is kept.
          // A constant one becomes a masked-out constant (made once the
          // match is certain); another would need a logical not in the
          // step, and is left unfused.
          auto keepType = typeOf(where.getCondition());
          std::optional<std::vector<double>> keep =
              constantElements(where.getCondition());
          if (!keep || !keepType.getElementType().isInteger(1))
            break;
          SmallVector<bool> masked;
          for (double v : *keep) {
            masked.push_back(v == 0.0);
            keptMaskValues.push_back(v == 0.0 ? 1.0 : 0.0);
          }
          keptMask = DenseElementsAttr::get(keepType, ArrayRef<bool>(masked));
          keptMaskOf = where.getCondition();
          inner = where.getTrueValue();
          mask = where.getCondition();
        } else {
          break;
        }
      } else if (auto add = scores.getDefiningOp<AddOp>()) {
        for (auto [x, m] : {std::pair(add.getLhs(), add.getRhs()),
                            std::pair(add.getRhs(), add.getLhs())})
          if (!inner && typeOf(x) == typeOf(scores) &&
              !x.getDefiningOp<ConstantOp>()) {
            inner = x;
            mask = m;
          }
        if (!inner)
          break;
        if (dependsOnParameter(mask, op->getParentOfType<func::FuncOp>()))
          return rewriter.notifyMatchFailure(
              op, "the added mask depends on a parameter");
      } else {
        break;
      }
      bool causal = keptMask && mask == keptMaskOf
                        ? isCausalPattern(typeOf(mask), keptMaskValues)
                        : isCausalConstant(mask);
      if (causal && !parts.causal) {
        parts.causal = true;
      } else if (!parts.mask) {
        parts.mask = mask;
        invertMask = keptMask && mask == keptMaskOf;
      } else {
        return rewriter.notifyMatchFailure(op, "more than one mask");
      }
      reader = scores.getDefiningOp();
      scores = inner;
    }
    if (!onlyReadBy(scores, reader))
      return rewriter.notifyMatchFailure(op, "the scores are read elsewhere");

    // Scale on the scores, then the product q k^T, then a scale on q.
    Value product = peelScale(scores, reader, parts.scale);
    auto qk = product.getDefiningOp<MatmulOp>();
    if (!qk || (product != scores && !onlyReadBy(product, scores.getDefiningOp())))
      return rewriter.notifyMatchFailure(op, "not a product q k^T");
    parts.query = peelScale(qk.getLhs(), qk, parts.scale);
    // Some code scales both: q * d^-1/4 and k^T * d^-1/4.
    Value keyT = peelScale(qk.getRhs(), qk, parts.scale);

    // Shapes: same leading dimensions everywhere (no broadcasting).
    auto q = typeOf(parts.query), kt = typeOf(keyT), v = typeOf(parts.value);
    if (q.getRank() != rank || kt.getRank() != rank || v.getRank() != rank ||
        q.getShape().drop_back(2) != kt.getShape().drop_back(2) ||
        q.getShape().drop_back(2) != v.getShape().drop_back(2))
      return rewriter.notifyMatchFailure(op, "broadcasting batch dimensions");
    // The kernels are f32 (autocast keeps attention in f32); a model written
    // in bf16/f16 throughout keeps its unfused chain.
    if (!q.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not an f32 attention");
    if (cudaKernels) {
      if (parts.mask || parts.dropout > 0.0)
        return rewriter.notifyMatchFailure(
            op, "a mask or dropout (the CUDA kernels take neither)");
      if (q.getShape().back() > 128 ||
          v.getShape().back() != q.getShape().back())
        return rewriter.notifyMatchFailure(
            op, "head sizes the CUDA kernels do not take");
    }

    // k from k^T: through the transpose that made k^T when there is one.
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    SmallVector<int64_t> swap = swapLastTwo(rank);
    if (auto transpose = keyT.getDefiningOp<TransposeOp>()) {
      SmallVector<int64_t> permutation;
      for (int64_t d : swap)
        permutation.push_back(transpose.getPermutation()[d]);
      if (llvm::equal(permutation, llvm::seq<int64_t>(0, rank)))
        parts.key = transpose.getInput();
      else
        parts.key = TransposeOp::create(rewriter, loc, transpose.getInput(),
                                        permutation);
    } else {
      parts.key = TransposeOp::create(rewriter, loc, keyT, swap);
    }

    auto outputType = typeOf(op.getResult());
    SmallVector<int64_t> lseShape(q.getShape().drop_back());
    auto lseType = RankedTensorType::get(lseShape, rewriter.getF32Type());
    if (invertMask)
      parts.mask = ConstantOp::create(rewriter, loc, keptMask);
    auto attention = AttentionOp::create(
        rewriter, loc, outputType, lseType, parts.query, parts.key,
        parts.value, parts.mask, rewriter.getF64FloatAttr(parts.scale),
        rewriter.getBoolAttr(parts.causal),
        rewriter.getF64FloatAttr(parts.dropout),
        rewriter.getI64IntegerAttr(parts.seed));
    LogicalResult verified = success();
    {
      // A shape the op rejects is no match, not an error.
      ScopedDiagnosticHandler silence(op.getContext(),
                                      [](Diagnostic &) { return success(); });
      verified = verify(attention, /*verifyRecursively=*/false);
    }
    if (failed(verified)) {
      rewriter.eraseOp(attention);
      return rewriter.notifyMatchFailure(op, "the attention would not verify");
    }
    rewriter.replaceOp(op, attention.getOutput());
    return success();
  }
};

struct EffFuseAttentionPass
    : effopt::impl::EffFuseAttentionPassBase<EffFuseAttentionPass> {
  using EffFuseAttentionPassBase::EffFuseAttentionPassBase;

  void runOnOperation() override {
    if (kernels != "cpu" && kernels != "cuda") {
      getOperation().emitError("eff-fuse-attention: kernels must be cpu or "
                               "cuda, got '")
          << kernels << "'";
      return signalPassFailure();
    }
    RewritePatternSet set(&getContext());
    set.add<FuseAttention>(&getContext(), kernels == "cuda");
    FrozenRewritePatternSet patterns(std::move(set));
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (failed(applyPatternsGreedily(func, patterns, config)))
        return signalPassFailure();
      func.walk([&](AttentionOp) { ++numFused; });
    }
  }
};

} // namespace
