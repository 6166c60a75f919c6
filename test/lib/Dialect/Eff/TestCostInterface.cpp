//===- TestCostInterface.cpp - prints every op's cost for lit -------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {
/// Emits a remark "flops = F, read = R, written = W" on every op that
/// implements the cost interface.
struct TestCostInterfacePass
    : PassWrapper<TestCostInterfacePass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestCostInterfacePass)
  StringRef getArgument() const final { return "test-eff-cost"; }
  StringRef getDescription() const final {
    return "Print the FLOPs and bytes of every eff op as remarks";
  }
  void runOnOperation() override {
    getOperation().walk([](effopt::eff::CostOpInterface op) {
      op->emitRemark() << "flops = " << op.getFlops()
                       << ", read = " << op.getBytesRead()
                       << ", written = " << op.getBytesWritten();
    });
  }
};
} // namespace

namespace effopt::test {
void registerTestCostInterfacePass() {
  PassRegistration<TestCostInterfacePass>();
}
} // namespace effopt::test
