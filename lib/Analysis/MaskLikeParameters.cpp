//===- MaskLikeParameters.cpp - float initializers that look like buffers -===//

#include "effopt/Analysis/MaskLikeParameters.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Regex.h"

#include <cstring>

using namespace mlir;
using namespace effopt;

/// Whether `v` is computed from constants only (eff.constant, possibly
/// reshaped or broadcast): a scale or shift that keeps a mask a mask.
static bool isConstantLike(Value v) {
  Operation *op = v.getDefiningOp();
  while (op && isa<eff::ReshapeOp, eff::BroadcastToOp, eff::CastOp>(op))
    op = op->getOperand(0).getDefiningOp();
  return op && isa<eff::ConstantOp>(op);
}

/// Ops a mask passes through unchanged in meaning: layout, float casts.
static bool isLayoutOp(Operation *op) {
  if (isa<eff::ReshapeOp, eff::TransposeOp, eff::BroadcastToOp, eff::SliceOp,
          eff::ConcatOp>(op))
    return true;
  if (auto cast = dyn_cast<eff::CastOp>(op))
    return isa<FloatType>(getElementTypeOrSelf(cast.getType()));
  return false;
}

/// Elementwise ops that scale or shift a value by a constant (or negate
/// it): `mask * 0.5` added to scores is still a mask. (The value test below
/// looks at the initializer's own values, so a 0/1 mask turned additive by
/// `(1 - mask) * -10000` is not flagged: conservative.)
static bool isConstantScaling(Operation *op, Value through) {
  if (isa<eff::NegOp>(op))
    return true;
  if (!isa<eff::AddOp, eff::SubOp, eff::MulOp, eff::DivOp>(op))
    return false;
  for (Value operand : op->getOperands())
    if (operand != through && !isConstantLike(operand))
      return false;
  return true;
}

/// Whether `v` (scores with a mask added) reaches the input of a softmax
/// through layout ops and constant scalings only.
static bool reachesSoftmax(Value v) {
  SmallVector<Value> worklist{v};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (Operation *user : value.getUsers()) {
      if (isa<eff::SoftmaxOp, eff::LogSoftmaxOp>(user))
        return true;
      if (isLayoutOp(user) || isConstantScaling(user, value))
        worklist.push_back(user->getResult(0));
    }
  }
  return false;
}

/// The initial values as doubles; empty when unknown.
static std::vector<double> initialValues(eff::ParameterOp parameter) {
  std::vector<double> values;
  std::optional<ElementsAttr> attr = parameter.getInitialValue();
  if (!attr)
    return values;
  auto type = dyn_cast<FloatType>(parameter.getTensorType().getElementType());
  if (!type)
    return values;
  auto toDouble = [&](APFloat value) {
    bool lost;
    value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    return value.convertToDouble();
  };
  if (auto dense = dyn_cast<DenseElementsAttr>(*attr)) {
    for (APFloat value : dense.getValues<APFloat>())
      values.push_back(toDouble(value));
    return values;
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(*attr);
  if (!resource || !resource.getRawHandle().getBlob())
    return values;
  ArrayRef<char> data = resource.getRawHandle().getBlob()->getData();
  unsigned bytes = type.getWidth() / 8;
  int64_t count = parameter.getTensorType().getNumElements();
  if (bytes == 0 || static_cast<int64_t>(data.size()) != count * bytes)
    return values;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, data.data() + i * bytes, bytes); // little-endian
    values.push_back(
        toDouble(APFloat(type.getFloatSemantics(), APInt(bytes * 8, bits))));
  }
  return values;
}

/// Values of an additive mask: each 0 or at most -100 (-inf included), not
/// all 0.
static bool looksLikeAdditiveMask(eff::ParameterOp parameter) {
  std::vector<double> values = initialValues(parameter);
  bool masked = false;
  for (double value : values) {
    if (value == 0)
      continue;
    if (!(value <= -100))
      return false;
    masked = true;
  }
  return masked;
}

MaskLikeParameters::MaskLikeParameters(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>(eff::kForwardFuncName);
  if (!forward || forward.isExternal())
    return;
  for (BlockArgument arg : forward.getArguments()) {
    auto symbol = forward.getArgAttrOfType<FlatSymbolRefAttr>(
        arg.getArgNumber(), eff::kParameterAttrName);
    if (!symbol)
      continue;
    auto parameter = module.lookupSymbol<eff::ParameterOp>(symbol.getAttr());
    if (!parameter || parameter.getRole() != eff::ParamRole::Trainable)
      continue;
    // Follow the parameter through layout ops and constant scalings; every
    // other use is a sink: mask-like (softmax addend, comparison, integer
    // cast) or weight-like (anything else).
    llvm::SetVector<StringRef> maskUses;
    bool weightLike = false;
    SmallVector<Value> worklist{arg};
    llvm::SmallPtrSet<Value, 8> seen;
    while (!worklist.empty() && !weightLike) {
      Value value = worklist.pop_back_val();
      if (!seen.insert(value).second)
        continue;
      for (Operation *user : value.getUsers()) {
        if (isLayoutOp(user) || isConstantScaling(user, value)) {
          worklist.push_back(user->getResult(0));
        } else if (isa<eff::CmpOp>(user)) {
          maskUses.insert("compared");
        } else if (isa<eff::CastOp>(user)) {
          maskUses.insert("cast to an integer or boolean type");
        } else if (isa<eff::AddOp>(user) &&
                   reachesSoftmax(user->getResult(0)) &&
                   looksLikeAdditiveMask(parameter)) {
          maskUses.insert("added to the input of a softmax (its values are "
                          "0 and large negatives: an attention mask)");
        } else {
          weightLike = true;
          break;
        }
      }
    }
    if (weightLike || maskUses.empty())
      continue;
    std::string use;
    for (auto [i, text] : llvm::enumerate(maskUses))
      use += (i ? (i + 1 == maskUses.size() ? " and " : ", ") : "") + text.str();
    found.push_back({parameter, use});
  }
}

std::string MaskLikeParameters::warning(Entry entry) {
  StringRef name = entry.parameter.getSymName();
  return ("initializer '" + name +
          "' is trained but looks like a buffer: it is only " + entry.use +
          "; if it is a buffer, keep it as it is with --freeze '^" +
          llvm::Regex::escape(name) + "$'")
      .str();
}
