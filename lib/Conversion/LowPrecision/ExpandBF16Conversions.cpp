//===- ExpandBF16Conversions.cpp - bf16 conversions as integer code -------===//
//
// f32 <-> bf16 conversions as shifts and integer rounding, so the step
// needs neither AVX512-BF16 nor a libcall Debian's libgcc lacks, and
// rounds exactly as PyTorch's c10::BFloat16 (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace effopt {
#define GEN_PASS_DEF_EFFEXPANDBF16CONVERSIONSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

struct EffExpandBF16ConversionsPass
    : impl::EffExpandBF16ConversionsPassBase<EffExpandBF16ConversionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace effopt
