//===- QuantizeFrozen.cpp - frozen GEMM weights stored as NF4 -------------===//
//
// The storage half of QLoRA: a frozen weight read only by matrix products is
// quantized at compile time to bitsandbytes' NF4 layout (effopt/Support/NF4.h)
// and its parameter replaced by the four packed storage parameters; the
// products read it through eff.nf4_pack, and their lowering dequantizes tile
// by tile (convert-eff-to-linalg), so no full-precision copy exists.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Support/NF4.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Regex.h"

#include <cstring>

namespace effopt {
#define GEN_PASS_DEF_EFFQUANTIZEFROZENPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt::eff;

namespace effopt {
namespace {

/// A product that reads the weight: the op, whether the weight reaches it
/// transposed an odd number of times, and the element type it reads (f32,
/// or the bf16/f16 of an autocast eff.cast on the way).
struct WeightUse {
  Operation *product;
  bool transposed;
  Type elementType;
};

/// How the weight `arg` is read, or the first read that is not a product's
/// weight (`offender`, the operand number in `operand`).
struct UseAnalysis {
  SmallVector<WeightUse> products;
  /// Transposes and saves between the weight and its products, in the
  /// order they were found (parents before children).
  SetVector<Operation *> views;
  Operation *offender = nullptr;
  unsigned operand = 0;
};

UseAnalysis analyzeUses(Value weight) {
  UseAnalysis result;
  SmallVector<std::tuple<Value, bool, bool>> worklist{{weight, false, false}};
  while (!worklist.empty()) {
    auto [value, transposed, rounded] = worklist.pop_back_val();
    Type elementType = cast<RankedTensorType>(value.getType()).getElementType();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      unsigned number = use.getOperandNumber();
      if (auto transpose = dyn_cast<TransposeOp>(user)) {
        ArrayRef<int64_t> perm = transpose.getPermutation();
        if (perm.size() == 2 && perm[0] == 1 && perm[1] == 0) {
          result.views.insert(user);
          worklist.push_back({transpose.getResult(), !transposed, rounded});
          continue;
        }
      } else if (auto save = dyn_cast<SaveOp>(user)) {
        result.views.insert(user);
        worklist.push_back({save.getResult(), transposed, rounded});
        continue;
      } else if (auto castOp = dyn_cast<CastOp>(user)) {
        // Autocast's rounding of the weight to bf16/f16 (once): the
        // dequantized value is rounded the same way.
        Type to = castOp.getType().getElementType();
        if (!rounded && (to.isBF16() || to.isF16())) {
          result.views.insert(user);
          worklist.push_back({castOp.getResult(), transposed, true});
          continue;
        }
      } else if (isa<LinearOp>(user) && number == 1) {
        result.products.push_back({user, transposed, elementType});
        continue;
      } else if (auto matmul = dyn_cast<MatmulOp>(user)) {
        if (number == 1 && matmul.getRhs().getType().getRank() == 2) {
          result.products.push_back({user, transposed, elementType});
          continue;
        }
      }
      result.offender = user;
      result.operand = number;
      return result;
    }
  }
  return result;
}

/// The initial value of a parameter as f32s, or nothing when it has none
/// (a plan from shapes alone) or it cannot be read.
FailureOr<std::optional<std::vector<float>>>
initialValues(ParameterOp parameter) {
  std::optional<ElementsAttr> value = parameter.getInitialValue();
  if (!value)
    return std::optional<std::vector<float>>();
  int64_t count = parameter.getTensorType().getNumElements();
  std::vector<float> values;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(*value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return std::optional<std::vector<float>>();
    ArrayRef<char> data = blob->getData();
    if (static_cast<int64_t>(data.size()) != count * 4)
      return failure();
    values.resize(count);
    std::memcpy(values.data(), data.data(), data.size());
    return std::optional<std::vector<float>>(std::move(values));
  }
  auto dense = dyn_cast<DenseElementsAttr>(*value);
  if (!dense)
    return failure();
  values.reserve(count);
  for (float v : dense.getValues<float>())
    values.push_back(v);
  return std::optional<std::vector<float>>(std::move(values));
}

/// An initial value holding `bytes` as a resource blob of `type`.
ElementsAttr blobValue(RankedTensorType type, StringRef key,
                       ArrayRef<char> bytes) {
  size_t alignment = type.getElementTypeBitWidth() / 8;
  return DenseResourceElementsAttr::get(
      type, key,
      HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignment));
}

template <typename T>
ArrayRef<char> asBytes(const std::vector<T> &values) {
  return ArrayRef<char>(reinterpret_cast<const char *>(values.data()),
                        values.size() * sizeof(T));
}

struct EffQuantizeFrozenPass
    : impl::EffQuantizeFrozenPassBase<EffQuantizeFrozenPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (format != "nf4") {
      module.emitError("eff-quantize-frozen: format must be nf4, got '")
          << format << "'";
      return signalPassFailure();
    }
    if (blockSize < 1 || nestedBlockSize < 1) {
      module.emitError("eff-quantize-frozen: block sizes must be positive");
      return signalPassFailure();
    }
    llvm::Regex regex(names);
    std::string regexError;
    if (!names.empty() && !regex.isValid(regexError)) {
      module.emitError("eff-quantize-frozen: names '")
          << names << "' is not a valid regex: " << regexError;
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>(kTrainStepFuncName);
    if (!step || step.isExternal()) {
      module.emitError("eff-quantize-frozen needs func.func @train_step (run "
                       "eff-autodiff and eff-optimizer first)");
      return signalPassFailure();
    }
    // Arguments are replaced as we go: collect the parameters first.
    SmallVector<ParameterOp> frozen;
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      auto symbol =
          step.getArgAttrOfType<FlatSymbolRefAttr>(i, kParameterAttrName);
      auto parameter =
          symbol ? module.lookupSymbol<ParameterOp>(symbol) : ParameterOp();
      if (!parameter || parameter.getRole() != ParamRole::Frozen)
        continue;
      if (!names.empty() && !regex.match(parameter.getSymName()))
        continue;
      frozen.push_back(parameter);
    }
    for (ParameterOp parameter : frozen)
      if (failed(quantizeParameter(module, step, parameter)))
        return signalPassFailure();
  }

  /// The argument of `step` bound to `parameter`.
  static BlockArgument argumentOf(func::FuncOp step, ParameterOp parameter) {
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      if (auto symbol =
              step.getArgAttrOfType<FlatSymbolRefAttr>(i, kParameterAttrName))
        if (symbol.getValue() == parameter.getSymName())
          return step.getArgument(i);
    return {};
  }

  /// Quantizes one frozen parameter, or leaves it (a remark; an error when
  /// `names` asked for it).
  LogicalResult quantizeParameter(ModuleOp module, func::FuncOp step,
                                  ParameterOp parameter) {
    StringRef name = parameter.getSymName();
    auto skip = [&](const Twine &why) -> LogicalResult {
      if (!names.empty())
        return parameter.emitError("cannot store '")
               << name << "' as NF4: " << why;
      ++numSkipped;
      parameter.emitRemark("'") << name << "' stays as it is: " << why;
      return success();
    };
    RankedTensorType type = parameter.getTensorType();
    if (!type.getElementType().isF32()) {
      std::string element;
      llvm::raw_string_ostream(element) << type.getElementType();
      return skip("its element type is " + element +
                  " (only f32 weights are quantized)");
    }
    BlockArgument arg = argumentOf(step, parameter);
    if (!arg)
      return skip("@train_step does not read it");
    UseAnalysis uses = analyzeUses(arg);
    if (uses.offender)
      return skip("it is read by " +
                  uses.offender->getName().getStringRef() + " (operand #" +
                  Twine(uses.operand) +
                  "), not as the weight of a matrix product");
    if (uses.products.empty())
      return skip("no matrix product reads it");
    FailureOr<std::optional<std::vector<float>>> values =
        initialValues(parameter);
    if (failed(values))
      return parameter.emitError("cannot read the initial value of '")
             << name << "' to quantize it";

    // The storage parameters, declared right after the weight's.
    MLIRContext *ctx = &getContext();
    auto encoding = NF4EncodingAttr::get(ctx, blockSize, nestedBlockSize);
    SmallVector<Type> storageTypes;
    encoding.getStorageTypes(type.getNumElements(), storageTypes);
    static constexpr StringLiteral suffixes[] = {
        ".nf4", ".absmax", ".nested_absmax", ".nested_offset"};
    for (StringLiteral suffix : suffixes)
      if (module.lookupSymbol((name + suffix).str()))
        return parameter.emitError("cannot store '")
               << name << "' as NF4: the name '" << name << suffix
               << "' is taken";
    SmallVector<ElementsAttr, 4> initial(4);
    if (*values) {
      nf4::Quantized q =
          nf4::quantize(**values, blockSize, nestedBlockSize);
      std::vector<float> offset{q.offset};
      ArrayRef<char> bytes[] = {asBytes(q.codes), asBytes(q.absmax),
                                asBytes(q.nested), asBytes(offset)};
      for (unsigned i = 0; i < 4; ++i)
        initial[i] =
            blobValue(cast<RankedTensorType>(storageTypes[i]),
                      (name + suffixes[i]).str(), bytes[i]);
    }
    OpBuilder builder(parameter);
    builder.setInsertionPointAfter(parameter);
    unsigned index = arg.getArgNumber();
    SmallVector<Value, 4> storage;
    for (unsigned i = 0; i < 4; ++i) {
      std::string storageName = (name + suffixes[i]).str();
      auto op = ParameterOp::create(
          builder, parameter.getLoc(), storageName, ParamRole::Frozen,
          cast<RankedTensorType>(storageTypes[i]),
          initial[i] ? initial[i] : ElementsAttr());
      builder.setInsertionPointAfter(op);
      unsigned at = index + 1 + i;
      if (failed(step.insertArgument(
              at, storageTypes[i],
              builder.getDictionaryAttr(builder.getNamedAttr(
                  kParameterAttrName,
                  FlatSymbolRefAttr::get(op.getSymNameAttr()))),
              arg.getLoc())))
        return failure();
      storage.push_back(step.getArgument(at));
    }

    // One packed value per element type the products read, at the top of
    // the step.
    OpBuilder body = OpBuilder::atBlockBegin(&step.getBody().front());
    llvm::MapVector<Type, Value> packed;
    for (WeightUse use : uses.products) {
      Value &value = packed[use.elementType];
      if (!value)
        value = NF4PackOp::create(
            body, parameter.getLoc(),
            RankedTensorType::get(type.getShape(), use.elementType, encoding),
            storage[0], storage[1], storage[2], storage[3]);
      rewriteProduct(use, value);
    }
    for (Operation *view : llvm::reverse(uses.views))
      if (view->use_empty())
        view->erase();
    if (!arg.use_empty())
      return parameter.emitError("internal: '")
             << name << "' is still read after quantization";
    if (failed(step.eraseArgument(arg.getArgNumber())))
      return failure();
    parameter.erase();
    ++numQuantized;
    return success();
  }

  /// Makes the product read `packed` (the weight, [R, C]) as its `b`.
  void rewriteProduct(WeightUse use, Value packed) {
    if (auto linear = dyn_cast<LinearOp>(use.product)) {
      linear.getBMutable().assign(packed);
      linear.setTransposeB(linear.getTransposeB() != use.transposed);
      return;
    }
    // x [..., M, K] times the weight as [K, N]: rows of x times it, as
    // eff.matmul's own lowering folds a shared right operand.
    auto matmul = cast<MatmulOp>(use.product);
    OpBuilder b(matmul);
    Location loc = matmul.getLoc();
    RankedTensorType lhsType = matmul.getLhs().getType();
    RankedTensorType resultType = matmul.getType();
    int64_t k = lhsType.getShape().back();
    int64_t n = resultType.getShape().back();
    int64_t rows = lhsType.getNumElements() / k;
    Value lhs = matmul.getLhs();
    if (lhsType.getRank() != 2)
      lhs = ReshapeOp::create(b, loc, lhsType.clone({rows, k}), lhs);
    Value product = LinearOp::create(
        b, loc, resultType.clone({rows, n}), lhs, packed, Value(),
        b.getBoolAttr(false), b.getBoolAttr(use.transposed),
        b.getF64FloatAttr(1.0), b.getF64FloatAttr(1.0));
    if (resultType.getRank() != 2)
      product = ReshapeOp::create(b, loc, resultType, product);
    matmul.replaceAllUsesWith(product);
    matmul.erase();
  }
};

} // namespace
} // namespace effopt
