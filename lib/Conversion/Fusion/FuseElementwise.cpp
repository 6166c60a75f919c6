//===- FuseElementwise.cpp - one loop nest per elementwise chain ----------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace effopt {
#define GEN_PASS_DEF_EFFFUSEELEMENTWISEPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// Fuse a generic producer into a generic consumer when the consumer is its
/// only user and the producer has loops: no computation is duplicated and
/// named ops stay named.
bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  Operation *consumer = fused->getOwner();
  if (!isa_and_nonnull<linalg::GenericOp>(producer) ||
      !isa<linalg::GenericOp>(consumer))
    return false;
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

struct EffFuseElementwisePass
    : impl::EffFuseElementwisePassBase<EffFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace effopt
