//===- Effx.cpp - writing the .effx compiled-model file -------------------===//

#include "effopt/Target/Effx.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Offload.h"
#include "effopt/Support/StorageBytes.h"
#include "effrt/EffxFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;

namespace effopt {

std::string dtypeName(Type t) {
  if (t.isF32()) return "float32";
  if (t.isF16()) return "float16";
  if (t.isBF16()) return "bfloat16";
  if (t.isF64()) return "float64";
  if (t.isInteger(1)) return "bool";
  if (auto i = dyn_cast<IntegerType>(t)) {
    std::string prefix = i.isUnsigned() ? "uint" : "int";
    return prefix + std::to_string(i.getWidth());
  }
  return "unsupported";
}


/// Copies the raw little-endian bytes of `value` (one byte per bool) to `out`.
static LogicalResult copyInitialValue(ElementsAttr value, RankedTensorType type,
                                      char *out, int64_t bytes, Location loc) {
  Type element = type.getElementType();
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return emitError(loc, "the initial value of a parameter was elided "
                            "(--elide-weights); compile from the .onnx file");
    ArrayRef<char> data = blob->getData();
    if (static_cast<int64_t>(data.size()) != bytes)
      return emitError(loc, "initial value has ")
             << data.size() << " bytes, expected " << bytes;
    std::memcpy(out, data.data(), bytes);
    return success();
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return emitError(loc, "unsupported initial value ") << value;
  if (element.isInteger(1)) {
    int64_t i = 0;
    for (bool b : dense.getValues<bool>())
      out[i++] = b ? 1 : 0;
    return success();
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    int64_t size = storageBytes(element, 1);
    for (int64_t at = 0; at < bytes; at += size)
      std::memcpy(out + at, raw.data(), size);
    return success();
  }
  if (static_cast<int64_t>(raw.size()) != bytes)
    return emitError(loc, "initial value has ")
           << raw.size() << " bytes, expected " << bytes;
  std::memcpy(out, raw.data(), bytes);
  return success();
}

FailureOr<StepLayout> readStepLayout(ModuleOp module, bool withInitialState) {
  auto kind = module->getAttrOfType<StringAttr>(eff::kStepKindAttrName);
  bool forward = kind && kind.getValue() == eff::kForwardStepKind;
  auto func = module.lookupSymbol<func::FuncOp>(
      forward ? eff::kForwardFuncName : eff::kTrainStepFuncName);
  auto stateBytes = module->getAttrOfType<IntegerAttr>(eff::kStateBytesAttrName);
  auto ioBytes = module->getAttrOfType<IntegerAttr>(eff::kIoBytesAttrName);
  auto lossOffset = module->getAttrOfType<IntegerAttr>(eff::kLossOffsetAttrName);
  if (!func || !stateBytes || !ioBytes || (!forward && !lossOffset))
    return module.emitError("no ")
           << (forward ? "@forward" : "@train_step")
           << " with the layout of eff-step-abi";
  StepLayout layout;
  layout.kind = forward ? "forward" : "train_step";
  layout.stateBytes = stateBytes.getInt();
  layout.ioBytes = ioBytes.getInt();
  if (!forward) {
    layout.lossOffset = lossOffset.getInt();
    layout.lossDtype = dtypeName(
        cast<ShapedType>(func.getResultTypes()[0]).getElementType());
  }
  if (auto hostBytes =
          module->getAttrOfType<IntegerAttr>(eff::kHostBytesAttrName))
    layout.hostBytes = hostBytes.getInt();
  if (withInitialState) {
    layout.initialState.assign(layout.stateBytes, 0);
    layout.hostInitialState.assign(layout.hostBytes, 0);
  }
  auto checkDtype = [&](const StepTensor &t, StringRef what) -> LogicalResult {
    if (t.dtype != "unsupported")
      return success();
    return func.emitError() << what << " '" << t.name
                            << "' has an element type the runtime does not "
                               "support";
  };

  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(func.getArgument(i).getType());
    StepTensor tensor;
    tensor.dtype = dtypeName(type.getElementType());
    tensor.shape.assign(type.getShape().begin(), type.getShape().end());
    tensor.offset =
        func.getArgAttrOfType<IntegerAttr>(i, eff::kOffsetAttrName).getInt();
    tensor.bytes = storageBytes(type);
    if (auto region = func.getArgAttrOfType<StringAttr>(i, eff::kRegionAttrName))
      tensor.onHost = region.getValue() == eff::kHostRegion;
    if (auto symbol =
            func.getArgAttrOfType<FlatSymbolRefAttr>(i, eff::kParameterAttrName)) {
      auto parameter = module.lookupSymbol<eff::ParameterOp>(symbol);
      tensor.name = parameter.getSymName().str();
      tensor.role = eff::stringifyParamRole(parameter.getRole()).str();
      if (auto master = parameter->getAttrOfType<FlatSymbolRefAttr>(
              eff::kCopyOfAttrName))
        tensor.copyOf = master.getValue().str();
      if (auto whole = parameter->getAttrOfType<DenseI64ArrayAttr>(
              eff::kShardOfAttrName))
        tensor.shardOf.emplace(whole.asArrayRef().begin(),
                               whole.asArrayRef().end());
      if (withInitialState) {
        std::optional<ElementsAttr> value = parameter.getInitialValue();
        // Imported without its weights (--shapes-only): a plan, never a
        // step with made-up values.
        if (!value)
          return parameter.emitError()
                 << "parameter '" << tensor.name
                 << "' has no initial value (the model was imported without "
                    "its weights, --shapes-only): a .effx needs them";
        auto valueType = cast<RankedTensorType>(value->getType());
        if (tensor.shardOf && valueType != type) {
          // ZeRO-3: the whole initial value of a sharded parameter.
          tensor.wholeInitial.resize(storageBytes(valueType));
          if (failed(copyInitialValue(*value, valueType,
                                      tensor.wholeInitial.data(),
                                      tensor.wholeInitial.size(),
                                      parameter.getLoc())))
            return failure();
        } else if (failed(copyInitialValue(
                       *value, type,
                       (tensor.onHost ? layout.hostInitialState
                                      : layout.initialState)
                               .data() +
                           tensor.offset,
                       tensor.bytes, parameter.getLoc()))) {
          return failure();
        }
      }
      if (tensor.role == "optimizer_state" && tensor.name == "optimizer.step")
        layout.stepCounter = tensor.name;
      if (failed(checkDtype(tensor, "state entry")))
        return failure();
      layout.state.push_back(std::move(tensor));
    } else {
      auto name = func.getArgAttrOfType<StringAttr>(i, eff::kInputAttrName);
      tensor.name = name ? name.str() : "input" + std::to_string(i);
      tensor.role = "input";
      if (layout.batchSize == 0 && !tensor.shape.empty())
        layout.batchSize = tensor.shape[0];
      if (failed(checkDtype(tensor, "input")))
        return failure();
      layout.inputs.push_back(std::move(tensor));
    }
  }
  // A forward function may have no input with a leading dimension (or a
  // leading dimension of 0): its batch is one call.
  if (layout.batchSize <= 0)
    layout.batchSize = 1;
  if (forward) {
    for (unsigned r = 0; r < func.getNumResults(); ++r) {
      auto type = cast<RankedTensorType>(func.getResultTypes()[r]);
      StepTensor tensor;
      auto name = func.getResultAttrOfType<StringAttr>(r, eff::kOutputAttrName);
      tensor.name = name ? name.str() : "output" + std::to_string(r);
      tensor.role = "output";
      tensor.dtype = dtypeName(type.getElementType());
      tensor.shape.assign(type.getShape().begin(), type.getShape().end());
      tensor.offset = func.getResultAttrOfType<IntegerAttr>(r, eff::kOffsetAttrName).getInt();
      tensor.bytes = storageBytes(type);
      if (failed(checkDtype(tensor, "output")))
        return failure();
      for (const StepTensor &other : layout.outputs)
        if (other.name == tensor.name)
          return func.emitError() << "two graph outputs are named '"
                                  << tensor.name << "'";
      layout.outputs.push_back(std::move(tensor));
    }
  }
  return layout;
}

static llvm::json::Array tensorsToJson(ArrayRef<StepTensor> tensors,
                                       bool withRole) {
  llvm::json::Array array;
  for (const StepTensor &t : tensors) {
    llvm::json::Object o{{"name", t.name},
                         {"dtype", t.dtype},
                         {"shape", llvm::json::Array(t.shape)},
                         {"offset", t.offset}};
    if (withRole)
      o["role"] = t.role;
    if (t.shardOf)
      o["shard_of"] = llvm::json::Array(*t.shardOf);
    if (t.onHost)
      o["region"] = "host";
    if (!t.copyOf.empty())
      o["copy_of"] = t.copyOf;
    array.push_back(std::move(o));
  }
  return array;
}

static uint64_t alignUp(uint64_t v) {
  return (v + effrt::kEffxAlignment - 1) / effrt::kEffxAlignment *
         effrt::kEffxAlignment;
}

static uint32_t crc32Of(ArrayRef<char> bytes) {
  return llvm::crc32(ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
}

/// Copies `value` into a NUL-padded field of `size` bytes; fails if it does
/// not fit or is not printable ASCII without spaces.
template <size_t N>
static LogicalResult setPadded(char (&field)[N], StringRef value,
                               StringRef what, Location loc) {
  if (value.size() > N)
    return emitError(loc, "the .effx section ")
           << what << " '" << value << "' is longer than " << N << " bytes";
  for (char c : value)
    if (c < 0x21 || c > 0x7e)
      return emitError(loc, "the .effx section ")
             << what << " '" << value
             << "' is not printable ASCII without spaces";
  std::memset(field, 0, N);
  std::memcpy(field, value.data(), value.size());
  return success();
}

static bool allZero(ArrayRef<char> bytes) {
  return llvm::all_of(bytes, [](char c) { return c == 0; });
}

LogicalResult writeEffx(StringRef path, const StepLayout &layout,
                        ArrayRef<EffxSectionData> codeSections,
                        const llvm::json::Object &description, Location loc) {
  for (const char *key : {"target", "entry"}) {
    const llvm::json::Value *value = description.get(key);
    if (!value || !value->getAsString() || value->getAsString()->empty())
      return emitError(loc, "the .effx manifest needs a '")
             << key << "' from the target backend";
  }

  // Entries that start as zeros are not stored: the manifest marks them and
  // the initial state section holds the others' bytes in manifest order.
  llvm::json::Array state = tensorsToJson(layout.state, true);
  std::vector<char> storedState;
  for (auto [tensor, entry] : llvm::zip_equal(layout.state, state)) {
    // A ZeRO-3 shard stores the whole tensor (docs/Effx.md).
    ArrayRef<char> bytes =
        !tensor.wholeInitial.empty()
            ? ArrayRef<char>(tensor.wholeInitial)
            : ArrayRef<char>((tensor.onHost ? layout.hostInitialState
                                            : layout.initialState)
                                     .data() +
                                 tensor.offset,
                             tensor.bytes);
    if (allZero(bytes))
      (*entry.getAsObject())["init"] = "zeros";
    else
      storedState.insert(storedState.end(), bytes.begin(), bytes.end());
  }

  llvm::json::Object manifest(description);
  manifest["format"] = "effx";
  manifest["version"] = static_cast<int64_t>(effrt::kEffxVersion);
  manifest["batch_size"] = layout.batchSize;
  llvm::json::Object regions{{"state", layout.stateBytes},
                             {"arena", layout.arenaBytes},
                             {"io", layout.ioBytes}};
  // State kept in host memory (eff-offload-optimizer): a fourth region,
  // and the entry point takes it as a fourth argument.
  if (layout.hostBytes)
    regions["host"] = layout.hostBytes;
  manifest["regions"] = std::move(regions);
  // The target libraries' scratch space the runtime allocates once at
  // load (cuda: cuBLASLt's workspace); absent when the target has none.
  if (layout.workspaceBytes)
    manifest["workspace_bytes"] = layout.workspaceBytes;
  // The pinned buffer a GPU's host tasks stage device bytes in (effc
  // --offload optimizer --target cuda); absent when there is none.
  if (layout.hostStagingBytes)
    manifest["host_staging_bytes"] = layout.hostStagingBytes;
  manifest["minor_version"] = static_cast<int64_t>(effrt::kEffxMinorVersion);
  manifest["kind"] = layout.kind;
  if (layout.kind == "forward")
    manifest["outputs"] = tensorsToJson(layout.outputs, false);
  else
    manifest["loss"] = llvm::json::Object{{"offset", layout.lossOffset},
                                          {"dtype", layout.lossDtype}};
  manifest["inputs"] = tensorsToJson(layout.inputs, false);
  manifest["state"] = std::move(state);
  manifest["step_counter"] = layout.stepCounter.empty()
                                 ? llvm::json::Value(nullptr)
                                 : llvm::json::Value(layout.stepCounter);
  std::string manifestText;
  {
    llvm::raw_string_ostream os(manifestText);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)));
  }

  // The sections in file order: manifest, code, initial state.
  struct Placed {
    effrt::EffxSectionKind kind;
    StringRef target, name;
    ArrayRef<char> bytes;
    bool required;
  };
  SmallVector<Placed> placed;
  placed.push_back({effrt::EffxSectionKind::Manifest, "", "manifest",
                    ArrayRef<char>(manifestText.data(), manifestText.size()),
                    true});
  for (const EffxSectionData &section : codeSections) {
    if (section.kind == effrt::EffxSectionKind::Manifest ||
        section.kind == effrt::EffxSectionKind::InitialState)
      return emitError(loc, "a target backend cannot add a manifest or an "
                            "initial state section to an .effx");
    placed.push_back({section.kind, section.target, section.name,
                      section.bytes, section.required});
  }
  placed.push_back({effrt::EffxSectionKind::InitialState, "", "state",
                    storedState, true});

  const uint64_t tableOffset = sizeof(effrt::EffxHeader);
  const uint64_t tableBytes = placed.size() * sizeof(effrt::EffxSectionEntry);
  std::vector<effrt::EffxSectionEntry> table(placed.size());
  uint64_t at = alignUp(tableOffset + tableBytes);
  for (auto [i, p] : llvm::enumerate(placed)) {
    for (size_t j = 0; j < i; ++j)
      if (placed[j].kind == p.kind && placed[j].target == p.target &&
          placed[j].name == p.name)
        return emitError(loc, "two .effx sections of kind ")
               << static_cast<uint32_t>(p.kind) << " for target '"
               << p.target << "' are named '" << p.name << "'";
    effrt::EffxSectionEntry &e = table[i];
    e = effrt::EffxSectionEntry{};
    e.kind = static_cast<uint32_t>(p.kind);
    e.flags = p.required ? effrt::kEffxSectionRequired : 0;
    if (failed(setPadded(e.target, p.target, "target", loc)) ||
        failed(setPadded(e.name, p.name, "name", loc)))
      return failure();
    e.offset = at;
    e.size = p.bytes.size();
    e.crc32 = crc32Of(p.bytes);
    at = alignUp(at + p.bytes.size());
  }
  ArrayRef<char> tableView(reinterpret_cast<const char *>(table.data()),
                           tableBytes);

  effrt::EffxHeader header{};
  std::memcpy(header.magic, effrt::kEffxMagic, sizeof(header.magic));
  header.version = effrt::kEffxVersion;
  header.headerSize = sizeof(effrt::EffxHeader);
  header.sectionTableOffset = tableOffset;
  header.sectionCount = static_cast<uint32_t>(placed.size());
  header.sectionEntrySize = sizeof(effrt::EffxSectionEntry);
  header.sectionTableCrc = crc32Of(tableView);
  header.headerCrc = 0;
  header.headerCrc = crc32Of(ArrayRef<char>(
      reinterpret_cast<const char *>(&header), sizeof(header)));

  llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    uint64_t at = 0;
    auto put = [&](uint64_t offset, ArrayRef<char> bytes) {
      for (; at < offset; ++at)
        os << '\0';
      os.write(bytes.data(), bytes.size());
      at += bytes.size();
    };
    put(0, ArrayRef<char>(reinterpret_cast<const char *>(&header),
                          sizeof(header)));
    put(tableOffset, tableView);
    for (auto [p, e] : llvm::zip_equal(placed, table))
      put(e.offset, p.bytes);
    return llvm::Error::success();
  });
  if (error)
    return emitError(loc, "cannot write ")
           << path << ": " << llvm::toString(std::move(error));
  return success();
}

} // namespace effopt
