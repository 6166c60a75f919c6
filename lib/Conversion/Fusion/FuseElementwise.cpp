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
/// only user: no computation is duplicated and named ops stay named.
bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  Operation *consumer = fused->getOwner();
  if (!isa_and_nonnull<linalg::GenericOp>(producer) ||
      !isa<linalg::GenericOp>(consumer))
    return false;
  for (Operation *user : producer->getUsers())
    if (user != consumer)
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
