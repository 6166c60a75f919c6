//===- ModelSummary.cpp - one-screen summary of an imported model ---------===//

#include "effopt/Analysis/ModelSummary.h"

#include "effopt/Analysis/MaskLikeParameters.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace effopt;

/// "1.5 MiB" style sizes.
static std::string formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = bytes;
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (unit == 0)
    os << bytes << " B";
  else
    os << llvm::format("%.1f %s", value, units[unit]);
  return text;
}

/// "12,345,678" style counts.
static std::string formatCount(int64_t count) {
  std::string digits = std::to_string(count), text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      text.push_back(',');
    text.push_back(digits[i]);
  }
  return text;
}

static std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

void effopt::printModelSummary(ModuleOp module, llvm::raw_ostream &os,
                               unsigned maxRows) {
  auto source = module->getAttrOfType<StringAttr>("eff.source");
  auto opset = module->getAttrOfType<IntegerAttr>("eff.opset");
  os << "model: " << (source ? source.getValue() : "<unknown>");
  if (opset)
    os << " (opset " << opset.getInt() << ")";
  os << "\n";

  // Parameters by role.
  llvm::MapVector<eff::ParamRole, std::pair<int64_t, int64_t>> byRole;
  SmallVector<eff::ParameterOp> parameters;
  for (auto param : module.getOps<eff::ParameterOp>()) {
    parameters.push_back(param);
    auto &[count, bytes] = byRole[param.getRole()];
    count += param.getTensorType().getNumElements();
    bytes += eff::detail::tensorBytes(param.getTensorType());
  }
  int64_t totalValues = 0, totalBytes = 0;
  for (auto &[role, stats] : byRole) {
    totalValues += stats.first;
    totalBytes += stats.second;
  }
  os << "parameters: " << parameters.size() << " tensors, "
     << formatCount(totalValues) << " values, " << formatBytes(totalBytes);
  for (auto &[role, stats] : byRole)
    os << "; " << eff::stringifyParamRole(role) << " "
       << formatCount(stats.first);
  os << "\n";
  size_t nameWidth = 0;
  for (auto param : parameters)
    nameWidth = std::max(nameWidth, param.getSymName().size());
  nameWidth = std::min<size_t>(nameWidth, 40);
  for (auto [i, param] : llvm::enumerate(parameters)) {
    if (i == maxRows) {
      os << "  ... and " << parameters.size() - maxRows << " more\n";
      break;
    }
    os << "  " << llvm::left_justify(param.getSymName(), nameWidth) << "  "
       << llvm::left_justify(eff::stringifyParamRole(param.getRole()), 9)
       << "  " << typeString(param.getType()) << "\n";
  }

  // What training will update, and initializers that look like buffers.
  SmallVector<StringRef> trained;
  for (auto param : parameters)
    if (param.getRole() == eff::ParamRole::Trainable)
      trained.push_back(param.getSymName());
  os << "trains: " << trained.size() << " tensors";
  for (auto [i, name] : llvm::enumerate(trained)) {
    if (i == maxRows) {
      os << ", ... and " << trained.size() - maxRows << " more";
      break;
    }
    os << (i ? ", " : ": ") << name;
  }
  os << "\n";
  MaskLikeParameters maskLike(module);
  for (const MaskLikeParameters::Entry &entry : maskLike.entries())
    os << "warning: " << MaskLikeParameters::warning(entry) << "\n";

  auto forward = module.lookupSymbol<func::FuncOp>(eff::kForwardFuncName);
  if (!forward)
    return;
  os << "inputs:";
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto name = forward.getArgAttrOfType<StringAttr>(i, eff::kInputAttrName))
      os << " " << name.getValue() << " "
         << typeString(forward.getArgument(i).getType());
  os << "\noutputs:";
  for (unsigned i = 0; i < forward.getNumResults(); ++i) {
    Type type = forward.getResultTypes()[i];
    if (auto name =
            forward.getResultAttrOfType<StringAttr>(i, eff::kOutputAttrName))
      os << " " << name.getValue() << " " << typeString(type)
         << (i == 0 ? " (loss)" : "");
    else if (auto buffer = forward.getResultAttrOfType<FlatSymbolRefAttr>(
                 i, eff::kBufferUpdateAttrName))
      os << " [new " << buffer.getValue() << "]";
  }
  os << "\n";

  // Ops by kind, most frequent first, and the forward cost.
  llvm::MapVector<StringRef, unsigned> opCounts;
  int64_t flops = 0, bytesMoved = 0;
  unsigned numOps = 0;
  forward.walk([&](Operation *op) {
    if (op == forward || isa<func::ReturnOp>(op))
      return;
    ++numOps;
    ++opCounts[op->getName().getStringRef()];
    if (auto cost = dyn_cast<eff::CostOpInterface>(op)) {
      flops += cost.getFlops();
      bytesMoved += cost.getBytesRead() + cost.getBytesWritten();
    }
  });
  SmallVector<std::pair<StringRef, unsigned>> sorted(opCounts.begin(),
                                                     opCounts.end());
  llvm::stable_sort(sorted, [](auto &a, auto &b) { return a.second > b.second; });
  os << "ops: " << numOps << " —";
  for (auto &[name, count] : sorted)
    os << " " << (name.starts_with("eff.") ? name.drop_front(4) : name) << " "
       << count;
  os << "\nforward cost: " << formatCount(flops) << " FLOPs, "
     << formatBytes(bytesMoved) << " read+written\n";
}
