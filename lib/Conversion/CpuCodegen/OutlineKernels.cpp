//===- OutlineKernels.cpp - one function per loop nest --------------------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"
#include "effopt/Support/StructuralHash.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace effopt {
#define GEN_PASS_DEF_EFFOUTLINEKERNELSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// The first name a location carries (an ONNX node name from the importer,
/// kept through autodiff and lowering), or "".
static StringRef firstName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (StringRef name = firstName(inner); !name.empty())
        return name;
  if (auto site = dyn_cast<CallSiteLoc>(loc))
    return firstName(site.getCallee());
  return "";
}

/// A symbol-safe tag for a kernel from its nest's location: the last 48
/// characters of the node name, anything but [A-Za-z0-9_.] as '_' (one
/// for a run), e.g. "/features.1/conv/conv.1/BatchNormalization" ->
/// "features.1_conv_conv.1_BatchNormalization". Profilers show kernels by
/// symbol, and effx_step_kernel_917 alone does not say what it computes.
static std::string kernelTag(Location loc) {
  std::string tag;
  for (char c : firstName(loc)) {
    bool keep = llvm::isAlnum(c) || c == '_' || c == '.';
    if (keep)
      tag.push_back(c);
    else if (!tag.empty() && tag.back() != '_')
      tag.push_back('_');
  }
  while (!tag.empty() && tag.back() == '_')
    tag.pop_back();
  constexpr size_t kMaxTag = 48;
  if (tag.size() > kMaxTag) {
    tag = tag.substr(tag.size() - kMaxTag);
    size_t cut = tag.find('_');
    if (cut != std::string::npos && cut + 1 < tag.size())
      tag = tag.substr(cut + 1);
  }
  return tag;
}

struct EffOutlineKernelsPass
    : impl::EffOutlineKernelsPassBase<EffOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(eff::kArenaArgAttrName) && !func.isExternal())
        steps.push_back(func);
    SmallVector<std::pair<func::FuncOp, func::CallOp>> kernels;
    for (func::FuncOp step : steps)
      outline(module, step, kernels);
    shareIdenticalKernels(kernels);
  }

  /// Kernels with identical bodies (the same ops, attributes, types and
  /// use-def structure; locations aside) become one, the first: a network's
  /// repeated blocks, and its forward and backward, make the same nests
  /// over and over (MobileNet v2: 1245 nests, 307 distinct), and LLVM then
  /// optimises and compiles each once. Its name stays the first's.
  void shareIdenticalKernels(
      ArrayRef<std::pair<func::FuncOp, func::CallOp>> kernels) {
    DenseMap<llvm::hash_code, SmallVector<func::FuncOp, 1>> byHash;
    for (auto [kernelOp, call] : kernels) {
      func::FuncOp kernel = kernelOp;
      SmallVector<func::FuncOp, 1> &bucket = byHash[structuralHash(
          kernel.getBody(), hash_value(kernel.getFunctionType()))];
      auto same = llvm::find_if(bucket, [&](func::FuncOp other) {
        return OperationEquivalence::isRegionEquivalentTo(
            &other.getBody(), &kernel.getBody(),
            OperationEquivalence::IgnoreLocations);
      });
      if (same == bucket.end()) {
        bucket.push_back(kernel);
        continue;
      }
      call.setCallee(same->getSymName());
      kernel.erase();
      ++numShared;
    }
  }

  void outline(ModuleOp module, func::FuncOp step,
               SmallVectorImpl<std::pair<func::FuncOp, func::CallOp>> &kernels) {
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
      if (std::string tag = kernelTag(nest->getLoc()); !tag.empty())
        name += "_" + tag;
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
      auto call = func::CallOp::create(callBuilder, nest->getLoc(), kernel, args);
      kernels.emplace_back(kernel, call);
      nest->erase();
      ++numKernels;
    }
  }
};

} // namespace
} // namespace effopt
