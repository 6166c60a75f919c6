//===- TestEmulateHostTaskCopies.cpp - a GPU's host tasks run in place ----===//
//
// Lets lit check what eff-host-tasks abi=cuda makes of a step on a machine
// without a GPU: the runtime's calls become what they mean, synchronously,
// on host memory. A staging buffer of the module's eff.host_staging_bytes
// is allocated at the step's start and filled with 0xff bytes (a byte a
// task reads but nobody copied down reads as NaN); each start becomes the
// copies named before it down (memref.copy from the region into the
// staging buffer), a direct call of the task on (staging, staging,
// staging, host) and the copies up; waits become nothing. The CPU pipeline
// and mlir-runner then run the step, and a test compares its regions with
// the step run without host tasks.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

constexpr StringLiteral kCopy = "effrt_cuda_host_task_copy";
constexpr StringLiteral kStart = "effrt_cuda_host_task_start";
constexpr StringLiteral kWait = "effrt_cuda_host_task_wait";

struct TestEmulateHostTaskCopiesPass
    : PassWrapper<TestEmulateHostTaskCopiesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestEmulateHostTaskCopiesPass)

  StringRef getArgument() const final {
    return "test-eff-emulate-host-task-copies";
  }
  StringRef getDescription() const final {
    return "Runs eff-host-tasks' cuda tasks synchronously on host memory "
           "(their copies as memref.copy, the task as a direct call)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect,
                    linalg::LinalgDialect, memref::MemRefDialect>();
  }

  struct Copy {
    bool toHost;
    int64_t region, offset, staging, bytes;
  };

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto stagingBytes =
        module->getAttrOfType<IntegerAttr>("eff.host_staging_bytes");
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<func::CallOp> calls;
      func.walk([&](func::CallOp call) {
        if (llvm::is_contained({kCopy, kStart, kWait}, call.getCallee()))
          calls.push_back(call);
      });
      if (calls.empty())
        continue;
      if (!stagingBytes || func.getNumArguments() != 4) {
        func.emitError("host task calls in a function that is not a step "
                       "with a host region, or no eff.host_staging_bytes");
        return signalPassFailure();
      }
      Location loc = func.getLoc();
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      auto bytesType =
          MemRefType::get({stagingBytes.getInt()}, b.getIntegerType(8));
      Value buffer = memref::AllocOp::create(b, loc, bytesType);
      Value ones = arith::ConstantIntOp::create(b, loc, -1, 8);
      linalg::FillOp::create(b, loc, ones, buffer);
      Value staging = memref::CastOp::create(
          b, loc, MemRefType::get({ShapedType::kDynamic}, b.getIntegerType(8)),
          buffer);
      auto bytesAt = [&](Value base, int64_t offset, int64_t bytes) -> Value {
        return memref::SubViewOp::create(
            b, loc, base, ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(bytes)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      };
      SmallVector<Copy> copies;
      for (func::CallOp call : calls) {
        b.setInsertionPoint(call);
        if (call.getCallee() == kCopy) {
          SmallVector<int64_t> v;
          for (Value operand : call.getOperands()) {
            std::optional<int64_t> c = getConstantIntValue(operand);
            if (!c) {
              call.emitError("host task copy with a non-constant operand");
              return signalPassFailure();
            }
            v.push_back(*c);
          }
          copies.push_back({v[0] != 0, v[1], v[2], v[3], v[4]});
        } else if (call.getCallee() == kStart) {
          for (bool toHost : {true, false}) {
            for (const Copy &c : copies) {
              if (c.toHost != toHost)
                continue;
              Value device = bytesAt(func.getArgument(c.region), c.offset,
                                     c.bytes);
              Value host = bytesAt(staging, c.staging, c.bytes);
              memref::CopyOp::create(b, loc, toHost ? device : host,
                                     toHost ? host : device);
            }
            if (toHost)
              func::CallIndirectOp::create(
                  b, loc, call.getOperand(0),
                  ValueRange{staging, staging, staging, func.getArgument(3)});
          }
          copies.clear();
          call.getResult(0).replaceAllUsesWith(
              arith::ConstantIntOp::create(b, loc, 0, 64).getResult());
        }
        call.erase();
      }
      b.setInsertionPoint(func.getBody().front().getTerminator());
      memref::DeallocOp::create(b, loc, buffer);
    }
    for (StringRef name : {kCopy, kStart, kWait})
      if (auto f = module.lookupSymbol<func::FuncOp>(name))
        if (f.isExternal() && SymbolTable::symbolKnownUseEmpty(f, module))
          f.erase();
  }
};

} // namespace

namespace effopt::test {
void registerTestEmulateHostTaskCopiesPass() {
  PassRegistration<TestEmulateHostTaskCopiesPass>();
}
} // namespace effopt::test
