//===- StepAbi.cpp - the binary interface of the training step ------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Offload.h"
#include "effopt/Support/StorageBytes.h"

#include "llvm/Support/MathExtras.h"

namespace effopt {
#define GEN_PASS_DEF_EFFSTEPABIPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

int64_t byteSize(RankedTensorType type) { return storageBytes(type); }

/// Bytes of each region the arguments are laid out in.
struct RegionCursors {
  int64_t state = 0, io = 0, host = 0;
};

/// Places every argument of `func` in "state" (eff.parameter arguments),
/// "host" (those eff-offload-optimizer marked eff.host) or "io" (graph
/// inputs), `alignment`-byte aligned; only `updated` arguments are
/// writable. Returns false (after an error) on a non-tensor argument.
bool layoutArguments(func::FuncOp func, ArrayRef<bool> updated,
                     int64_t alignment, RegionCursors &bytes) {
  MLIRContext *ctx = func.getContext();
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!type || !type.hasStaticShape()) {
      func.emitError("argument ") << i << " is not a statically shaped tensor";
      return false;
    }
    bool isState = static_cast<bool>(func.getArgAttr(i, eff::kParameterAttrName));
    bool onHost = isState && func.getArgAttr(i, eff::kHostAttrName);
    int64_t &cursor = onHost ? bytes.host : isState ? bytes.state : bytes.io;
    StringRef region = onHost    ? eff::kHostRegion
                       : isState ? eff::kStateRegion
                                 : eff::kIoRegion;
    func.setArgAttr(i, eff::kRegionAttrName, StringAttr::get(ctx, region));
    func.setArgAttr(i, eff::kOffsetAttrName,
                    IntegerAttr::get(IntegerType::get(ctx, 64), cursor));
    func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                    BoolAttr::get(ctx, updated[i]));
    cursor = alignBytes(cursor + byteSize(type), alignment);
  }
  return true;
}

struct EffStepAbiPass : impl::EffStepAbiPassBase<EffStepAbiPass> {
  using EffStepAbiPassBase::EffStepAbiPassBase;

  void runOnOperation() override {
    if (alignment < 1 || !llvm::isPowerOf2_64(alignment)) {
      getOperation().emitError("eff-step-abi: alignment must be a power of "
                               "two, got ")
          << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    getOperation()->setAttr(
        eff::kAlignmentAttrName,
        IntegerAttr::get(IntegerType::get(&getContext(), 64), alignment));
    if (mode == "train")
      return runOnTrainStep();
    if (mode == "forward")
      return runOnForward();
    getOperation().emitError("eff-step-abi: mode must be train or forward, "
                             "got '")
        << mode << "'";
    signalPassFailure();
  }

  /// Inference: @forward as imported; state is read-only and every result
  /// is written to io after the inputs.
  void runOnForward() {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(eff::kForwardFuncName);
    if (!func || func.isExternal()) {
      module.emitError("eff-step-abi{mode=forward} needs func.func @forward "
                       "(as the ONNX importer builds it)");
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto i64 = IntegerType::get(ctx, 64);
    RegionCursors bytes;
    SmallVector<bool> updated(func.getNumArguments(), false);
    if (!layoutArguments(func, updated, alignment, bytes))
      return signalPassFailure();
    int64_t stateBytes = bytes.state, ioBytes = bytes.io;
    for (unsigned r = 0; r < func.getNumResults(); ++r) {
      auto type = dyn_cast<RankedTensorType>(func.getResultTypes()[r]);
      if (!type || !type.hasStaticShape()) {
        func.emitError("result ") << r << " is not a statically shaped tensor";
        return signalPassFailure();
      }
      func.setResultAttr(r, eff::kRegionAttrName,
                         StringAttr::get(ctx, eff::kIoRegion));
      func.setResultAttr(r, eff::kOffsetAttrName,
                         IntegerAttr::get(i64, ioBytes));
      ioBytes = alignBytes(ioBytes + byteSize(type), alignment);
    }
    module->setAttr(eff::kStepKindAttrName,
                    StringAttr::get(ctx, eff::kForwardStepKind));
    module->setAttr(eff::kStateBytesAttrName, IntegerAttr::get(i64, stateBytes));
    module->setAttr(eff::kIoBytesAttrName, IntegerAttr::get(i64, ioBytes));
  }

  void runOnTrainStep() {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(eff::kTrainStepFuncName);
    if (!func) {
      module.emitError("eff-step-abi needs func.func @train_step (run "
                       "eff-autodiff and eff-optimizer first)");
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());

    // Which argument each update result writes.
    DenseMap<Attribute, unsigned> argOfParameter;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (Attribute p = func.getArgAttr(i, eff::kParameterAttrName))
        argOfParameter[p] = i;

    OpBuilder b(ret);
    SmallVector<bool> updated(func.getNumArguments(), false);
    SmallVector<unsigned> writtenArg; // per update result
    SmallVector<Value> results{ret.getOperand(0)};
    for (unsigned r = 1; r < ret.getNumOperands(); ++r) {
      Attribute target = func.getResultAttr(r, eff::kUpdateAttrName);
      if (!target)
        continue; // another forward output: dropped
      auto it = argOfParameter.find(target);
      if (it == argOfParameter.end()) {
        func.emitError("update of ") << target << " has no argument to write";
        return signalPassFailure();
      }
      Value arg = func.getArgument(it->second);
      results.push_back(bufferization::MaterializeInDestinationOp::create(
                            b, ret.getLoc(), arg.getType(), ret.getOperand(r),
                            arg)
                            .getResult());
      updated[it->second] = true;
      writtenArg.push_back(it->second);
    }
    // Returned materializations are equivalent to their arguments after
    // bufferization (each result says which argument it updates, in
    // `eff.updates_arg`); the entry point copies only what is not in place.
    SmallVector<Type> resultTypes = llvm::to_vector(ValueRange(results).getTypes());
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    DictionaryAttr lossAttrs = func.getResultAttrDict(0);
    func.setType(FunctionType::get(ctx, func.getArgumentTypes(), resultTypes));
    SmallVector<DictionaryAttr> resultAttrs(resultTypes.size(),
                                            DictionaryAttr::get(ctx));
    if (lossAttrs)
      resultAttrs[0] = lossAttrs;
    for (auto [r, arg] : llvm::enumerate(writtenArg))
      resultAttrs[r + 1] = DictionaryAttr::get(
          ctx, {NamedAttribute(StringAttr::get(ctx, eff::kUpdatesArgAttrName),
                               IntegerAttr::get(IntegerType::get(ctx, 64), arg))});
    func.setAllResultAttrs(resultAttrs);
    Type lossType = resultTypes[0];

    // Layout: state (persistent tensors) and io (batch inputs, then loss).
    RegionCursors bytes;
    if (!layoutArguments(func, updated, alignment, bytes))
      return signalPassFailure();
    int64_t stateBytes = bytes.state, ioBytes = bytes.io;
    if (bytes.host)
      module->setAttr(eff::kHostBytesAttrName,
                      IntegerAttr::get(IntegerType::get(ctx, 64), bytes.host));
    func.setResultAttr(0, eff::kOffsetAttrName,
                       IntegerAttr::get(IntegerType::get(ctx, 64), ioBytes));
    ioBytes = alignBytes(
        ioBytes + byteSize(cast<RankedTensorType>(lossType)), alignment);
    module->setAttr(eff::kStateBytesAttrName,
                    IntegerAttr::get(IntegerType::get(ctx, 64), stateBytes));
    module->setAttr(eff::kLossOffsetAttrName,
                    func.getResultAttr(0, eff::kOffsetAttrName));
    module->setAttr(eff::kIoBytesAttrName,
                    IntegerAttr::get(IntegerType::get(ctx, 64), ioBytes));
  }
};

} // namespace
} // namespace effopt
