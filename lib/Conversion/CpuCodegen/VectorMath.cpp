//===- VectorMath.cpp - math functions LLVM can vectorise -----------------===//
//
// f32 exp, erf and tanh as upstream's polynomial approximations, so the
// loops that call them (softmax, GELU and its gradient, sigmoid, tanh)
// vectorise instead of calling libm once per element; the fma and floor
// they are made of as LLVM intrinsics (not libm calls).
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace effopt {
#define GEN_PASS_DEF_EFFVECTORIZABLEMATHPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// math.fma / math.floor -> LLVM's intrinsic. The approximations are built
/// from them, and `convert-math-to-libm` (which runs before the conversion
/// to LLVM) would make each one a call of `fmaf` / `floorf`, which LLVM
/// neither inlines nor vectorises.
template <typename MathOp, typename LLVMOp>
struct ToIntrinsic : OpRewritePattern<MathOp> {
  using OpRewritePattern<MathOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(MathOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<LLVMOp>(op, op->getResultTypes(),
                                        op->getOperands());
    return success();
  }
};

struct EffVectorizableMathPass
    : impl::EffVectorizableMathPassBase<EffVectorizableMathPass> {
  using Base::Base;

  /// The approximation of a vector op broadcasts its constants (declared
  /// here rather than in ODS, to keep the vector dialect out of Passes.h).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registry.insert<vector::VectorDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<std::string> names;
    llvm::SmallVector<std::string> requested(ops.begin(), ops.end());
    if (requested.empty())
      requested = {"exp", "erf", "tanh"};
    for (const std::string &op : requested) {
      if (op != "exp" && op != "erf" && op != "tanh") {
        getOperation()->emitError()
            << "eff-vectorizable-math: '" << op
            << "' is not one of exp, erf, tanh";
        return signalPassFailure();
      }
      names.push_back("math." + op);
    }
    auto selected = [&](StringRef name) {
      return llvm::is_contained(names, name);
    };
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, selected);
    patterns.add<ToIntrinsic<math::FmaOp, LLVM::FMAOp>,
                 ToIntrinsic<math::FloorOp, LLVM::FFloorOp>>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace effopt
