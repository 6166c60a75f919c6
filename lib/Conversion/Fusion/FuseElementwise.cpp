//===- FuseElementwise.cpp - one loop nest per elementwise chain ----------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace effopt {
#define GEN_PASS_DEF_EFFFUSEELEMENTWISEPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// The element op of a generic that only widens its one input
/// (`arith.extf` of each element, every loop parallel, its output written
/// through a permutation), or null.
arith::ExtFOp wideningOf(linalg::GenericOp op) {
  if (!op || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumLoops() == 0 || op.getNumLoops() != op.getNumParallelLoops() ||
      !op.getIndexingMapsArray().back().isPermutation())
    return {};
  Block *body = op.getBody();
  if (body->getOperations().size() != 2)
    return {};
  auto ext = dyn_cast<arith::ExtFOp>(body->front());
  if (!ext || ext.getIn() != body->getArgument(0) ||
      body->getTerminator()->getOperand(0) != ext.getResult())
    return {};
  return ext;
}

/// Fuse a generic producer into a generic consumer when the consumer is its
/// only user and the producer has loops: no computation is duplicated and
/// named ops stay named. A producer that only widens (bf16 -> f32) fuses
/// into every consumer: each reads the narrow values and widens them
/// itself, and the wide copy is never stored.
bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  Operation *consumer = fused->getOwner();
  if (!isa_and_nonnull<linalg::GenericOp>(producer) ||
      !isa<linalg::GenericOp>(consumer))
    return false;
  if (wideningOf(cast<linalg::GenericOp>(producer)))
    return true;
  for (Operation *user : producer->getUsers())
    if (user != consumer)
      return false;
  // A rank-0 producer (the per-step scalars of an optimizer update: bias
  // corrections with pow) stays a loop of its own: fused into a loop nest
  // it would be recomputed for every element.
  if (cast<linalg::GenericOp>(producer).getNumLoops() == 0 &&
      cast<linalg::GenericOp>(consumer).getNumLoops() != 0)
    return false;
  return true;
}

/// `tensor.extract` of a widening generic's result reads the narrow
/// source and widens the one element (a loss's gather of the target's
/// logit), so the wide tensor has no reader left.
struct ExtractThroughWidening : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractOp extract,
                                PatternRewriter &rewriter) const override {
    auto producer = extract.getTensor().getDefiningOp<linalg::GenericOp>();
    arith::ExtFOp ext = wideningOf(producer);
    if (!ext)
      return failure();
    // The source element at the extracted output position: input map
    // composed with the inverse of the output permutation.
    AffineMap outMap = producer.getIndexingMapsArray().back();
    AffineMap inMap = producer.getIndexingMapsArray().front();
    if (!inMap.isProjectedPermutation())
      return failure();
    AffineMap sourceOfOutput = inMap.compose(inversePermutation(outMap));
    SmallVector<Value> indices;
    for (AffineExpr expr : sourceOfOutput.getResults())
      indices.push_back(
          extract.getIndices()[cast<AffineDimExpr>(expr).getPosition()]);
    Location loc = extract.getLoc();
    Value narrow = tensor::ExtractOp::create(
        rewriter, loc, producer.getDpsInputs()[0], indices);
    rewriter.replaceOpWithNewOp<arith::ExtFOp>(extract, ext.getType(), narrow);
    return success();
  }
};

struct EffFuseElementwisePass
    : impl::EffFuseElementwisePassBase<EffFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    patterns.add<ExtractThroughWidening>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace effopt
