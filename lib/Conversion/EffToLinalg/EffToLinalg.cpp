//===- EffToLinalg.cpp - the convert-eff-to-linalg pass -------------------===//

#include "effopt/Conversion/Passes.h"

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"

namespace effopt {
#define GEN_PASS_DEF_CONVERTEFFTOLINALGPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {

bool libraryConvolutionsAvailable() {
#ifdef EFFOPT_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

namespace {

struct ConvertEffToLinalgPass
    : impl::ConvertEffToLinalgPassBase<ConvertEffToLinalgPass> {
  using Base::Base;

  /// The options as a policy, or an error naming the bad value.
  FailureOr<lowering::LoweringPolicy> policy() {
    lowering::LoweringPolicy policy;
    auto bad = [&](StringRef option, StringRef value, StringRef expected) {
      getOperation().emitError("convert-eff-to-linalg: ")
          << option << " must be " << expected << ", got '" << value << "'";
      return failure();
    };
    if (f32Accumulator != "f64" && f32Accumulator != "f32")
      return bad("f32-accumulator", f32Accumulator, "f64 or f32");
    policy.f32SumsInF64 = f32Accumulator == "f64";
    if (lowPrecisionProducts != "widen" && lowPrecisionProducts != "native")
      return bad("low-precision-products", lowPrecisionProducts,
                 "widen or native");
    policy.nativeLowPrecisionProducts = lowPrecisionProducts == "native";
    if (convolution != "im2col" && convolution != "direct" &&
        convolution != "library" && convolution != "cudnn")
      return bad("convolution", convolution,
                 "im2col, direct, library or cudnn");
    if (convolution == "library" && !libraryConvolutionsAvailable()) {
      getOperation().emitError("convert-eff-to-linalg: convolution=library "
                               "needs oneDNN, which this effopt was built "
                               "without (Debian: libdnnl-dev)");
      return failure();
    }
    // Library convolutions that oneDNN cannot run fall back to im2col.
    policy.im2colConvolutions = convolution != "direct";
    policy.libraryConvolutions = convolution == "library";
    policy.cudnnConvolutions = convolution == "cudnn";
    if (attention != "cpu" && attention != "cuda")
      return bad("attention", attention, "cpu or cuda");
    policy.cudaAttention = attention == "cuda";
    if (collectives != "cpu" && collectives != "cuda")
      return bad("collectives", collectives, "cpu or cuda");
    policy.cudaCollectives = collectives == "cuda";
    policy.onlineLogSumExp = onlineLogSumExp;
    if (threads < 1)
      return bad("threads", std::to_string(threads), "at least 1");
    policy.threads = threads;
    return policy;
  }

  void runOnOperation() override {
    FailureOr<lowering::LoweringPolicy> policy = this->policy();
    if (failed(policy))
      return signalPassFailure();
    MLIRContext *ctx = &getContext();
    // First, while the transposes around attention are still eff ops that
    // the kernels' strides can replace.
    if (failed(lowering::lowerAttentionCalls(getOperation(), *policy)))
      return signalPassFailure();
    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect,
                           scf::SCFDialect, func::FuncDialect,
                           bufferization::BufferizationDialect,
                           memref::MemRefDialect, LLVM::LLVMDialect>();
    target.addIllegalDialect<eff::EffDialect>();
    // Persistent state stays declared at module level; the driver reads it.
    target.addLegalOp<eff::ParameterOp>();

    // Packed weights become their storage tensors (1:N); every other type
    // stays as it is.
    TypeConverter converter;
    lowering::addNF4TypeConversion(converter);

    RewritePatternSet patterns(ctx);
    lowering::populateQuantizedLowering(patterns, converter, *policy);
    lowering::populateElementwiseLowering(patterns);
    lowering::populateReductionLowering(patterns, *policy);
    lowering::populateShapeLowering(patterns);
    lowering::populateContractionLowering(patterns, *policy);
    lowering::populateNormalizationLowering(patterns, *policy);
    lowering::populateLossLowering(patterns, *policy);
    lowering::populateOptimizerLowering(patterns);
    lowering::populateOptimizer8bitLowering(patterns);
    lowering::populateConvolutionLowering(patterns, *policy);
    lowering::populateLossScaleLowering(patterns);
    lowering::populateCollectiveLowering(patterns, *policy);
    lowering::populateAttentionLowering(patterns, *policy);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace effopt
