//===- EffToLinalg.cpp - the convert-eff-to-linalg pass -------------------===//

#include "effopt/Conversion/Passes.h"

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Transforms/DialectConversion.h"

namespace effopt {
#define GEN_PASS_DEF_CONVERTEFFTOLINALGPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

struct ConvertEffToLinalgPass
    : impl::ConvertEffToLinalgPassBase<ConvertEffToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect,
                           scf::SCFDialect, func::FuncDialect>();
    target.addIllegalDialect<eff::EffDialect>();
    // Persistent state stays declared at module level; the driver reads it.
    target.addLegalOp<eff::ParameterOp>();

    RewritePatternSet patterns(ctx);
    lowering::populateElementwiseLowering(patterns);
    lowering::populateReductionLowering(patterns);
    lowering::populateShapeLowering(patterns);
    lowering::populateContractionLowering(patterns);
    lowering::populateNormalizationLowering(patterns);
    lowering::populateLossLowering(patterns);
    lowering::populateOptimizerLowering(patterns);
    lowering::populateConvolutionLowering(patterns);
    lowering::populateLossScaleLowering(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace effopt
