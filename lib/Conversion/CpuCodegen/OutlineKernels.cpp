//===- OutlineKernels.cpp - one function per loop nest --------------------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace effopt {
#define GEN_PASS_DEF_EFFOUTLINEKERNELSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

struct EffOutlineKernelsPass
    : impl::EffOutlineKernelsPassBase<EffOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(eff::kArenaArgAttrName) && !func.isExternal())
        steps.push_back(func);
    for (func::FuncOp step : steps)
      outline(module, step);
  }

  void outline(ModuleOp module, func::FuncOp step) {
    MLIRContext *ctx = &getContext();
    // eff-grad-accum's micro-batch loop stays in the step: the nests of its
    // body are outlined as the step's own.
    SmallVector<Operation *> nests;
    std::function<void(Block &)> collect = [&](Block &block) {
      for (Operation &op : block) {
        if (isa<scf::ForOp>(op) && op.hasAttr(eff::kAccumulationLoopAttrName))
          collect(*cast<scf::ForOp>(op).getBody());
        else if (isa<scf::ForOp, scf::ParallelOp>(op))
          nests.push_back(&op);
      }
    };
    collect(step.getBody().front());
    OpBuilder moduleBuilder(module.getBodyRegion());
    moduleBuilder.setInsertionPointToEnd(module.getBody());
    unsigned index = 0;
    for (Operation *nest : nests) {
      SetVector<Value> captured;
      captured.insert(nest->operand_begin(), nest->operand_end());
      getUsedValuesDefinedAbove(nest->getRegions(), captured);
      // Constants are cloned into the kernel; everything else is passed.
      SmallVector<Value> args;
      SmallVector<Operation *> constants;
      for (Value v : captured) {
        if (Operation *def = v.getDefiningOp();
            def && def->hasTrait<OpTrait::ConstantLike>())
          constants.push_back(def);
        else
          args.push_back(v);
      }
      std::string name =
          (step.getName() + "_kernel_" + Twine(index++)).str();
      auto kernel = func::FuncOp::create(
          moduleBuilder, nest->getLoc(), name,
          FunctionType::get(ctx, ValueRange(args).getTypes(), {}));
      kernel.setPrivate();
      Block *body = kernel.addEntryBlock();
      OpBuilder b = OpBuilder::atBlockBegin(body);
      IRMapping mapping;
      for (auto [arg, value] : llvm::zip(body->getArguments(), args))
        mapping.map(value, arg);
      for (Operation *c : constants)
        b.clone(*c, mapping);
      b.clone(*nest, mapping);
      func::ReturnOp::create(b, nest->getLoc());

      OpBuilder callBuilder(nest);
      func::CallOp::create(callBuilder, nest->getLoc(), kernel, args);
      nest->erase();
      ++numKernels;
    }
  }
};

} // namespace
} // namespace effopt
