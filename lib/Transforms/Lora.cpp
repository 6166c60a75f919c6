//===- Lora.cpp - eff-lora: low-rank adapters beside frozen GEMMs ---------===//
//
// Runs on the imported @forward before eff-autocast and eff-autodiff: the
// model is frozen and every targeted GEMM weight W gets two trainable
// parameters A (rank x in) and B (out x rank); each GEMM reading W gets the
// path (alpha/rank) B (A dropout(x)) added to its result. The base GEMM is
// not touched, so autodiff gives gradients to A and B only, the optimizer
// keeps state for them only, and a later pass may still change how the
// frozen W is stored (NF4 for QLoRA).
//
// Initial values follow peft: A is kaiming_uniform_(a=sqrt(5)), i.e.
// uniform in [-1/sqrt(in), 1/sqrt(in)] (gain sqrt(2/(1+5)), bound
// gain*sqrt(3/fan_in)), drawn here from a seeded mt19937_64 (whose output
// the C++ standard fixes) so a compile is reproducible; B is zero, so the
// adapted model starts as the model.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Lora.h"
#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <random>

namespace effopt {
#define GEN_PASS_DEF_EFFLORAPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt;
using namespace effopt::eff;

namespace {

/// One GEMM reading a weight: its result, the activation it multiplies and
/// how the weight is laid out there.
struct GemmUse {
  Operation *gemm;
  /// The activation operand (x of x W^T).
  Value input;
  /// W is out x in (nn.Linear's layout, read transposed); false: in x out.
  bool outByIn;
};

/// Every read of a weight argument: the GEMMs, and whether anything else
/// reads it (a tied embedding's gather).
struct WeightUses {
  SmallVector<GemmUse> gemms;
  Operation *other = nullptr;
};

WeightUses classifyUses(BlockArgument weight) {
  WeightUses uses;
  for (OpOperand &use : weight.getUses()) {
    Operation *user = use.getOwner();
    if (auto linear = dyn_cast<LinearOp>(user)) {
      if (use.getOperandNumber() == 1 && linear.getA() != weight) {
        uses.gemms.push_back({linear, linear.getA(), linear.getTransposeB()});
        continue;
      }
    } else if (auto matmul = dyn_cast<MatmulOp>(user)) {
      if (use.getOperandNumber() == 1 && matmul.getLhs() != weight) {
        uses.gemms.push_back({matmul, matmul.getLhs(), /*outByIn=*/false});
        continue;
      }
    } else if (auto transpose = dyn_cast<TransposeOp>(user)) {
      // nn.Linear on a 3-D input: MatMul(x, Transpose(W)).
      bool allMatmuls = ArrayRef<int64_t>(transpose.getPermutation()) ==
                            ArrayRef<int64_t>{1, 0} &&
                        !transpose->use_empty();
      for (OpOperand &tuse : transpose->getUses()) {
        auto matmul = dyn_cast<MatmulOp>(tuse.getOwner());
        allMatmuls &= matmul && tuse.getOperandNumber() == 1 &&
                      matmul.getLhs() != transpose.getResult();
      }
      if (allMatmuls) {
        for (Operation *reader : transpose->getUsers()) {
          auto matmul = cast<MatmulOp>(reader);
          uses.gemms.push_back({matmul, matmul.getLhs(), /*outByIn=*/true});
        }
        continue;
      }
    }
    if (!uses.other)
      uses.other = user;
  }
  return uses;
}

/// peft's module name of a weight: "fc.weight" -> "fc",
/// "attn.in_proj_weight" -> "attn.in_proj", anything else as it is.
std::string moduleNameOf(StringRef weight) {
  if (!weight.consume_back(".weight"))
    weight.consume_back("_weight");
  return weight.str();
}

/// A uniform double in [-bound, bound) from 53 bits of `rng`.
double uniform(std::mt19937_64 &rng, double bound) {
  double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return (2.0 * unit - 1.0) * bound;
}

/// A non-negative seed mixed from the pass's seed and a name.
int64_t mixSeed(int64_t seed, StringRef name) {
  return static_cast<int64_t>(
      (llvm::xxHash64(name) ^ static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ull) >>
      1);
}

struct EffLoraPass : public effopt::impl::EffLoraPassBase<EffLoraPass> {
  using EffLoraPassBase::EffLoraPassBase;

  void runOnOperation() override;

private:
  /// Builds y + scale B (A dropout(x)) after `use.gemm` and makes the
  /// GEMM's readers read it.
  void addAdapterPath(OpBuilder &builder, const GemmUse &use, Value a, Value b,
                      double scale, int64_t dropoutSeed);
};

} // namespace

void EffLoraPass::addAdapterPath(OpBuilder &builder, const GemmUse &use,
                                 Value a, Value b, double scale,
                                 int64_t dropoutSeed) {
  Operation *gemm = use.gemm;
  Location loc = gemm->getLoc();
  Value y = gemm->getResult(0);
  builder.setInsertionPointAfter(gemm);
  Value x = use.input;
  if (auto linear = dyn_cast<LinearOp>(gemm); linear && linear.getTransposeA())
    x = TransposeOp::create(builder, loc, x, ArrayRef<int64_t>{1, 0});
  if (dropout > 0)
    x = DropoutOp::create(builder, loc, x,
                          builder.getF64FloatAttr(static_cast<double>(dropout)),
                          builder.getI64IntegerAttr(dropoutSeed))
            .getOutput();
  Value update;
  if (auto linear = dyn_cast<LinearOp>(gemm)) {
    // Gemm's alpha scales op(x) op(W); the adapter is part of W.
    double gemmAlpha = linear.getAlpha().convertToDouble();
    BoolAttr no = builder.getBoolAttr(false), yes = builder.getBoolAttr(true);
    Value t = LinearOp::create(builder, loc, x, a, Value(), no, yes,
                               builder.getF64FloatAttr(1.0),
                               builder.getF64FloatAttr(1.0));
    update = LinearOp::create(builder, loc, t, b, Value(), no, yes,
                              builder.getF64FloatAttr(gemmAlpha * scale),
                              builder.getF64FloatAttr(1.0));
  } else {
    auto transposed = [&](Value w) -> Value {
      return TransposeOp::create(builder, loc, w, ArrayRef<int64_t>{1, 0});
    };
    Value t = MatmulOp::create(builder, loc, x, transposed(a));
    Value u = MatmulOp::create(builder, loc, t, transposed(b));
    auto scalarType = RankedTensorType::get(
        {}, cast<RankedTensorType>(u.getType()).getElementType());
    Value s = ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(
            scalarType, builder.getFloatAttr(scalarType.getElementType(),
                                             scale)));
    update = MulOp::create(builder, loc, u, s);
  }
  auto sum = AddOp::create(builder, loc, y, update);
  y.replaceAllUsesExcept(sum, sum);
}

void EffLoraPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto forward = module.lookupSymbol<func::FuncOp>(kForwardFuncName);
  if (!forward) {
    module.emitError("eff-lora: no func.func @forward (run it on the "
                     "imported model, before eff-autodiff)");
    return signalPassFailure();
  }
  if (module->hasAttr(kLoraAttrName)) {
    module.emitError("eff-lora: the model already has LoRA adapters");
    return signalPassFailure();
  }
  if (rank < 1) {
    module.emitError("eff-lora: rank must be >= 1, got ")
        << static_cast<int64_t>(rank);
    return signalPassFailure();
  }
  if (!(dropout >= 0 && dropout < 1)) {
    module.emitError("eff-lora: dropout must be in [0, 1), got ")
        << static_cast<double>(dropout);
    return signalPassFailure();
  }
  llvm::Regex regex(targets);
  std::string regexError;
  if (!targets.empty() && !regex.isValid(regexError)) {
    module.emitError("eff-lora: targets '")
        << targets << "' is not a valid regex: " << regexError;
    return signalPassFailure();
  }

  // Every parameter is frozen; the adapters are the only trainable state.
  for (auto param : module.getOps<ParameterOp>())
    if (param.getRole() == ParamRole::Trainable) {
      param.setRole(ParamRole::Frozen);
      ++numFrozen;
    }

  // The GEMM weights, in argument order, and which of them are targets.
  struct Target {
    unsigned argIndex;
    ParameterOp param;
    WeightUses uses;
  };
  SmallVector<Target> chosen;
  SmallVector<StringRef> gemmWeights;
  for (BlockArgument arg : forward.getArguments()) {
    auto symbol = forward.getArgAttrOfType<FlatSymbolRefAttr>(
        arg.getArgNumber(), kParameterAttrName);
    if (!symbol)
      continue;
    auto param = module.lookupSymbol<ParameterOp>(symbol);
    if (!param || param.getRole() != ParamRole::Frozen ||
        param.getTensorType().getRank() != 2)
      continue;
    WeightUses uses = classifyUses(arg);
    if (uses.gemms.empty())
      continue;
    gemmWeights.push_back(param.getSymName());
    if (!targets.empty() && !regex.match(param.getSymName()))
      continue;
    if (uses.other) {
      // Merging W + BA would change the other reader too.
      if (!targets.empty())
        param.emitWarning("eff-lora: '")
            << param.getSymName() << "' gets no adapter: it is also read by "
            << uses.other->getName() << " (tied weights)";
      continue;
    }
    chosen.push_back({arg.getArgNumber(), param, std::move(uses)});
  }
  if (chosen.empty()) {
    std::string known;
    for (StringRef name : ArrayRef(gemmWeights).take_front(8))
      known += (known.empty() ? "" : ", ") + name.str();
    if (gemmWeights.size() > 8)
      known += ", ...";
    module.emitError("eff-lora: targets '")
        << targets << "' matches no GEMM weight"
        << (known.empty() ? std::string(" (the model has none)")
                          : " (the GEMM weights are " + known + ")");
    return signalPassFailure();
  }

  OpBuilder builder(module.getContext());
  const double scale = static_cast<double>(alpha) / static_cast<double>(rank);
  SmallVector<Attribute> records;
  // From the last argument back, so the indices of the others stay valid;
  // each adapter's arguments go right after its weight's.
  for (Target &target : llvm::reverse(chosen)) {
    StringRef weight = target.param.getSymName();
    RankedTensorType weightType = target.param.getTensorType();
    auto elementType = cast<FloatType>(weightType.getElementType());
    bool outByIn = target.uses.gemms.front().outByIn;
    if (llvm::any_of(target.uses.gemms,
                     [&](const GemmUse &u) { return u.outByIn != outByIn; })) {
      target.param.emitError("eff-lora: '")
          << weight << "' is read both as out x in and as in x out";
      return signalPassFailure();
    }
    int64_t out = weightType.getDimSize(outByIn ? 0 : 1);
    int64_t in = weightType.getDimSize(outByIn ? 1 : 0);
    std::string moduleName = moduleNameOf(weight);
    std::string nameA = moduleName + ".lora_A.weight";
    std::string nameB = moduleName + ".lora_B.weight";
    for (StringRef name : {StringRef(nameA), StringRef(nameB)})
      if (getOperation().lookupSymbol(name)) {
        target.param.emitError("eff-lora: the adapter name '")
            << name << "' is already a parameter of the model";
        return signalPassFailure();
      }

    auto typeA = RankedTensorType::get({static_cast<int64_t>(rank), in},
                                       elementType);
    auto typeB = RankedTensorType::get({out, static_cast<int64_t>(rank)},
                                       elementType);
    std::mt19937_64 rng(static_cast<uint64_t>(mixSeed(seed, weight)));
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    SmallVector<APFloat> valuesA;
    valuesA.reserve(typeA.getNumElements());
    for (int64_t i = 0; i < typeA.getNumElements(); ++i) {
      APFloat value(uniform(rng, bound));
      bool lost;
      value.convert(elementType.getFloatSemantics(),
                    APFloat::rmNearestTiesToEven, &lost);
      valuesA.push_back(value);
    }
    Location loc = target.param.getLoc();
    builder.setInsertionPointAfter(target.param);
    auto paramA = ParameterOp::create(builder, loc, nameA, ParamRole::Trainable,
                                      typeA,
                                      DenseElementsAttr::get(typeA, valuesA));
    auto paramB = ParameterOp::create(
        builder, loc, nameB, ParamRole::Trainable, typeB,
        DenseElementsAttr::get(typeB, builder.getFloatAttr(elementType, 0.0)));
    auto argAttrs = [&](ParameterOp p) {
      return builder.getDictionaryAttr(builder.getNamedAttr(
          kParameterAttrName, FlatSymbolRefAttr::get(p.getSymNameAttr())));
    };
    unsigned at = target.argIndex + 1;
    if (failed(forward.insertArgument(at, typeA, argAttrs(paramA), loc)) ||
        failed(forward.insertArgument(at + 1, typeB, argAttrs(paramB), loc)))
      return signalPassFailure();
    Value a = forward.getArgument(at), b = forward.getArgument(at + 1);
    for (auto [index, use] : llvm::enumerate(target.uses.gemms)) {
      addAdapterPath(builder, use, a, b, scale,
                     mixSeed(seed, (weight + "#" + Twine(index)).str()));
      ++numAdaptedGemms;
    }
    ++numAdapters;
    records.push_back(builder.getDictionaryAttr({
        builder.getNamedAttr("weight", builder.getStringAttr(weight)),
        builder.getNamedAttr("lora_a", builder.getStringAttr(nameA)),
        builder.getNamedAttr("lora_b", builder.getStringAttr(nameB)),
        builder.getNamedAttr("scaling", builder.getF64FloatAttr(scale)),
        builder.getNamedAttr("transposed", builder.getBoolAttr(!outByIn)),
    }));
  }
  std::reverse(records.begin(), records.end());
  module->setAttr(kLoraAttrName,
                  builder.getDictionaryAttr({
                      builder.getNamedAttr("rank",
                                           builder.getI64IntegerAttr(rank)),
                      builder.getNamedAttr(
                          "alpha",
                          builder.getF64FloatAttr(static_cast<double>(alpha))),
                      builder.getNamedAttr("adapters",
                                           builder.getArrayAttr(records)),
                  }));
}

std::optional<llvm::json::Object>
effopt::describeLoraAdapters(ModuleOp module) {
  auto lora = module->getAttrOfType<DictionaryAttr>(kLoraAttrName);
  if (!lora)
    return std::nullopt;
  llvm::json::Object description;
  if (auto rank = lora.getAs<IntegerAttr>("rank"))
    description["rank"] = rank.getInt();
  if (auto alpha = lora.getAs<FloatAttr>("alpha"))
    description["alpha"] = alpha.getValueAsDouble();
  llvm::json::Array adapters;
  if (auto records = lora.getAs<ArrayAttr>("adapters"))
    for (auto record : records.getAsRange<DictionaryAttr>()) {
      auto text = [&](StringRef key) {
        auto value = record.getAs<StringAttr>(key);
        return value ? value.str() : std::string();
      };
      auto scaling = record.getAs<FloatAttr>("scaling");
      auto transposed = record.getAs<BoolAttr>("transposed");
      llvm::json::Object adapter{
          {"weight", text("weight")},
          {"lora_A", text("lora_a")},
          {"lora_B", text("lora_b")},
          {"scaling", scaling ? scaling.getValueAsDouble() : 0.0},
          {"transposed", transposed && transposed.getValue()}};
      // QLoRA: eff-quantize-frozen replaced the base weight by its NF4
      // storage (docs/Quantization.md).
      if (!module.lookupSymbol(text("weight")) &&
          module.lookupSymbol(text("weight") + ".nf4"))
        adapter["storage"] = "nf4";
      adapters.push_back(std::move(adapter));
    }
  description["adapters"] = std::move(adapters);
  return description;
}
