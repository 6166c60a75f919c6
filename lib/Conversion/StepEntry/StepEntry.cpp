//===- StepEntry.cpp - the C entry point of a compiled training step ------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Offload.h"

namespace effopt {
#define GEN_PASS_DEF_EFFSTEPENTRYPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// The symbol the runtime looks up (through the C interface wrapper).
constexpr StringLiteral kEntryName = "effx_step";

struct EffStepEntryPass : impl::EffStepEntryPassBase<EffStepEntryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // eff-step-abi laid out either the training step or, with
    // mode=forward, the imported @forward (every result goes to io).
    auto kind = module->getAttrOfType<StringAttr>(eff::kStepKindAttrName);
    bool forward = kind && kind.getValue() == eff::kForwardStepKind;
    auto step = module.lookupSymbol<func::FuncOp>(
        forward ? eff::kForwardFuncName : eff::kTrainStepFuncName);
    auto lossOffset = module->getAttrOfType<IntegerAttr>(eff::kLossOffsetAttrName);
    if (!step || (!forward && !lossOffset)) {
      module.emitError("eff-step-entry needs a bufferized ")
          << (forward ? "@forward" : "@train_step")
          << " with the layout of eff-step-abi";
      return signalPassFailure();
    }
    auto bytes = MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8));
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    Location loc = step.getLoc();
    // A step with state in host memory (eff-offload-optimizer) takes that
    // region as a fourth argument; the others keep the three-region entry.
    auto hostBytes = module->getAttrOfType<IntegerAttr>(eff::kHostBytesAttrName);
    bool withHost = hostBytes && hostBytes.getInt() > 0;
    SmallVector<Type> regions(withHost ? 4 : 3, bytes);
    auto entry = func::FuncOp::create(b, loc, kEntryName,
                                      FunctionType::get(ctx, regions, {}));
    entry->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
    entry->setAttr(eff::kArenaArgAttrName, b.getI64IntegerAttr(1));
    Block *body = entry.addEntryBlock();
    b.setInsertionPointToStart(body);
    Value state = body->getArgument(0), io = body->getArgument(2);
    Value host = withHost ? body->getArgument(3) : Value();

    SmallVector<Value> args;
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      auto type = dyn_cast<MemRefType>(step.getArgument(i).getType());
      if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity()) {
        step.emitError("argument ")
            << i << " is not a contiguous static memref after bufferization";
        return signalPassFailure();
      }
      auto region = step.getArgAttrOfType<StringAttr>(i, eff::kRegionAttrName);
      auto offset = step.getArgAttrOfType<IntegerAttr>(i, eff::kOffsetAttrName);
      if (!region || !offset) {
        step.emitError("argument ") << i << " has no place in the layout";
        return signalPassFailure();
      }
      if (region.getValue() == eff::kHostRegion && !host) {
        step.emitError("argument ")
            << i << " lives in the host region but the module has no "
            << eff::kHostBytesAttrName;
        return signalPassFailure();
      }
      Value base = region.getValue() == eff::kStateRegion  ? state
                   : region.getValue() == eff::kHostRegion ? host
                                                           : io;
      int64_t at = offset.getInt();
      Value off = arith::ConstantIndexOp::create(b, loc, at);
      args.push_back(memref::ViewOp::create(b, loc, type, base, off, ValueRange{}));
    }
    // Results with an `eff.offset` (the loss of a training step, every
    // result of a forward function) are copied to their place in io; the
    // others are updated state, equivalent to their argument when bufferized
    // in place (the copy then folds away).
    auto call = func::CallOp::create(b, loc, step, args);
    for (auto [r, result] : llvm::enumerate(call.getResults())) {
      auto type = dyn_cast<MemRefType>(result.getType());
      if (!type) {
        step.emitError("result ") << r << " is not a buffer after bufferization";
        return signalPassFailure();
      }
      Value target;
      auto ioOffset = step.getResultAttrOfType<IntegerAttr>(r, eff::kOffsetAttrName);
      if (!ioOffset && r == 0 && !forward)
        ioOffset = lossOffset;
      if (ioOffset) {
        // The io place is contiguous; the result may not be (a view).
        auto placeType = MemRefType::get(type.getShape(), type.getElementType());
        Value off = arith::ConstantIndexOp::create(b, loc, ioOffset.getInt());
        target = memref::ViewOp::create(b, loc, placeType, io, off, ValueRange{});
      } else {
        auto arg = step.getResultAttrOfType<IntegerAttr>(r, eff::kUpdatesArgAttrName);
        if (!arg) {
          step.emitError("result ") << r << " updates no argument";
          return signalPassFailure();
        }
        target = args[arg.getInt()];
      }
      memref::CopyOp::create(b, loc, result, target);
    }
    func::ReturnOp::create(b, loc);
    step.setPrivate();
    // The layout now lives in the views; the attributes that named the
    // module-level parameters would dangle once those are removed.
    step.setAllArgAttrs(SmallVector<DictionaryAttr>(step.getNumArguments(),
                                                    DictionaryAttr::get(ctx)));

    // Strided copies become loops (linalg.copy) like every other kernel
    // instead of calls into MLIR's C runner library, which the runtime does
    // not ship; contiguous ones stay memref.copy (a memcpy).
    module.walk([&](memref::CopyOp copy) {
      auto isContiguous = [](Value v) {
        return cast<MemRefType>(v.getType()).getLayout().isIdentity();
      };
      if (isContiguous(copy.getSource()) && isContiguous(copy.getTarget()))
        return;
      OpBuilder cb(copy);
      linalg::CopyOp::create(cb, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    });

    // The initial values travel in the .effx, not in the code.
    for (auto parameter :
         llvm::make_early_inc_range(module.getOps<eff::ParameterOp>()))
      parameter.erase();
  }
};

} // namespace
} // namespace effopt
