//===- TestMaskLikeParameters.cpp - prints mask-like parameters for lit ---===//

#include "effopt/Analysis/MaskLikeParameters.h"

#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {
/// Emits a remark on every trainable eff.parameter the analysis flags, with
/// the warning effc and effopt-translate --summary print.
struct TestMaskLikeParametersPass
    : PassWrapper<TestMaskLikeParametersPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestMaskLikeParametersPass)
  StringRef getArgument() const final { return "test-eff-mask-like-params"; }
  StringRef getDescription() const final {
    return "Print the trainable parameters that look like buffers as remarks";
  }
  void runOnOperation() override {
    effopt::MaskLikeParameters maskLike(getOperation());
    for (effopt::MaskLikeParameters::Entry entry : maskLike.entries())
      entry.parameter->emitRemark(
          effopt::MaskLikeParameters::warning(entry));
  }
};
} // namespace

namespace effopt::test {
void registerTestMaskLikeParametersPass() {
  PassRegistration<TestMaskLikeParametersPass>();
}
} // namespace effopt::test
