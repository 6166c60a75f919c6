//===- ONNXImporter.cpp - ONNX model to eff dialect -----------------------===//
//
// Loads a ModelProto (ONNX's protobuf classes), validates it with ONNX's
// checker, converts old opsets with ONNX's version converter, and builds
// (then runs ONNX's shape inference to cross-check eff's own types):
//
//   eff.parameter <role> @<initializer name> : <type> = dense_resource<...>
//   func.func @forward(<parameters>..., <graph inputs>...) -> (<outputs>...,
//                                                              <buffer
//                                                              updates>...)
//
// Float initializers become parameters (weights stay in the loaded protobuf
// or the memory-mapped external data file, referenced by resource blobs, not
// copied), or, with `shapesOnly`, parameters without an initial value whose
// data is never read (a memory plan from the graph alone); other
// initializers become constants. A node whose inputs are all
// constants is evaluated (ConstantFolding.h) rather than converted. A float initializer is a
// `trainable` parameter only if a gradient can reach it from the loss, as
// eff-autodiff will ask (the ops' GradientOpInterface): one read only through
// comparisons, `where` conditions, shape queries or integer ops (the causal
// mask buffer of a GPT) is a `buffer`.
//
// Bad input gets one error and never a crash: libonnx reports errors with
// exceptions, so every call into it is wrapped and turned into a diagnostic;
// what would crash libonnx itself is checked before it sees the model (or,
// for shape inference, by importing first); every eff op is built with
// `buildVerified` (NodeImporter.h), so operands an op does not accept are the
// node's error.
//
//===----------------------------------------------------------------------===//

#include "effopt/Import/ONNX/ONNXImporter.h"

#include "ConstantFolding.h"
#include "NodeImporter.h"
#include "RecognizeComposites.h"

#include "effopt/Dialect/Eff/IR/EffGradientInterface.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"
#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <fcntl.h>
#include <memory>
#include <unistd.h>

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

/// Owns the loaded model and its mapped external data; resource blobs keep a
/// reference so weights are never copied out of it.
struct ModelStorage {
  onnx::ModelProto model;
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> externalFiles;
};

const ConverterMap &getConverters() {
  static const ConverterMap converters = [] {
    ConverterMap map;
    populateElementwiseConverters(map);
    populateActivationConverters(map);
    populateShapeConverters(map);
    populateIndexingConverters(map);
    populateReductionConverters(map);
    populateContractionConverters(map);
    populateNormalizationConverters(map);
    populateLossConverters(map);
    populateRecurrentConverters(map);
    return map;
  }();
  return converters;
}

class ModelImporter {
public:
  ModelImporter(MLIRContext *context, StringRef displayName,
                StringRef baseDirectory, const ONNXImportOptions &options)
      : context(context), builder(context), displayName(displayName.str()),
        baseDirectory(baseDirectory.str()), options(options),
        fileLoc(FileLineColLoc::get(context, displayName, 0, 0)) {}

  OwningOpRef<ModuleOp> run(std::shared_ptr<ModelStorage> storage);

private:
  /// Emits "MESSAGE" at the model file's location and returns failure.
  LogicalResult error(const Twine &message) {
    emitError(fileLoc) << message;
    return failure();
  }

  LogicalResult prepareModel();
  LogicalResult checkLibOnnxAssumptions();
  LogicalResult loadExternalData();
  bool skipsData(const onnx::TensorProto &tensor);
  void moveSkippedWeightsToInputs(onnx::GraphProto &graph);
  FailureOr<RankedTensorType> convertValueType(const onnx::ValueInfoProto &info,
                                               StringRef kind);
  FailureOr<RankedTensorType> convertTensorType(const onnx::TensorProto &tensor);
  ArrayRef<char> rawBytes(const onnx::TensorProto &tensor);
  FailureOr<Value> materializeConstant(const onnx::TensorProto &tensor);
  FailureOr<ElementsAttr> initialValueOf(const onnx::TensorProto &tensor,
                                         RankedTensorType type);
  LogicalResult buildForward();
  LogicalResult importNode(const onnx::NodeProto &node, unsigned index);
  LogicalResult importConstantIf(const onnx::NodeProto &node,
                                 NodeContext &nodeContext);
  LogicalResult crossCheckShapes();
  LogicalResult checkAgainstOnnxShapes(const onnx::NodeProto &node,
                                       StringRef nodeName);
  LogicalResult cleanup(func::FuncOp func);
  void classifyBuffers(func::FuncOp func);

  MLIRContext *context;
  OpBuilder builder;
  std::string displayName;
  std::string baseDirectory;
  const ONNXImportOptions &options;
  Location fileLoc;

  std::shared_ptr<ModelStorage> storage;
  int64_t opset = 0;
  OwningOpRef<ModuleOp> module;

  /// Bytes of external tensors, by tensor name.
  llvm::StringMap<ArrayRef<char>> externalBytes;
  /// Initializers not yet materialized, by name.
  llvm::StringMap<const onnx::TensorProto *> pendingConstants;
  /// Value of every imported ONNX value, by name.
  llvm::StringMap<Value> values;
  /// How many node inputs and graph outputs read each value.
  llvm::StringMap<unsigned> useCounts;
  /// Types ONNX shape inference found, by value name.
  llvm::StringMap<const onnx::TypeProto *> onnxTypes;
  /// Parameter roles by initializer name.
  llvm::StringMap<eff::ParamRole> parameterRoles;
  SmallVector<std::pair<std::string, Value>> stateUpdates;
};

} // namespace

//===----------------------------------------------------------------------===//
// Model preparation: opset, external data, checker, shape inference
//===----------------------------------------------------------------------===//

/// Runs `fn`, turning any exception libonnx throws into an error message.
template <typename Fn>
static std::optional<std::string> catchOnnxErrors(Fn &&fn) {
  try {
    fn();
  } catch (const std::exception &e) {
    std::string message = e.what();
    // One line: libonnx messages sometimes span several.
    for (char &c : message)
      if (c == '\n')
        c = ' ';
    return message;
  }
  return std::nullopt;
}

LogicalResult ModelImporter::prepareModel() {
  onnx::ModelProto &model = storage->model;
  if (!model.has_graph())
    return error("not an ONNX model: it has no graph");

  bool foundDefaultDomain = false;
  for (const onnx::OperatorSetIdProto &import : model.opset_import()) {
    if (import.domain().empty() || import.domain() == "ai.onnx") {
      opset = import.version();
      foundDefaultDomain = true;
    }
  }
  if (!foundDefaultDomain)
    return error("the model imports no opset of the default ONNX domain");

  if (opset > kMaxSupportedOpset)
    return error("opset " + Twine(opset) + " is newer than effopt supports (" +
                 Twine(kMinSupportedOpset) + "-" + Twine(kMaxSupportedOpset) +
                 "); re-export with opset_version=" +
                 Twine(kMaxSupportedOpset));

  if (failed(loadExternalData()))
    return failure();

  if (options.runChecker) {
    // The checker insists that external data files exist. Without the
    // weights it checks a graph that takes them as inputs instead.
    const onnx::GraphProto *checked = &model.graph();
    onnx::GraphProto withoutWeights;
    if (options.shapesOnly) {
      withoutWeights = model.graph();
      moveSkippedWeightsToInputs(withoutWeights);
      checked = &withoutWeights;
    }
    std::optional<std::string> problem = catchOnnxErrors([&] {
      onnx::checker::CheckerContext checkerContext;
      checkerContext.set_ir_version(static_cast<int>(model.ir_version()));
      std::unordered_map<std::string, int> imports;
      for (const onnx::OperatorSetIdProto &import : model.opset_import())
        imports[import.domain()] = static_cast<int>(import.version());
      checkerContext.set_opset_imports(imports);
      checkerContext.set_model_dir(baseDirectory);
      checkerContext.set_is_main_graph(true);
      onnx::checker::LexicalScopeContext lexicalScope;
      onnx::checker::check_graph(*checked, checkerContext, lexicalScope);
    });
    if (problem)
      return error("ONNX checker rejected the model: " + *problem);
  }

  // libonnx's version converter and shape inference assume what its checker
  // does not check, and crash where it does not hold.
  if (failed(checkLibOnnxAssumptions()))
    return failure();

  if (opset < kMinSupportedOpset) {
    // ONNX's version converter copies the model; acceptable for old opsets.
    std::optional<std::string> problem = catchOnnxErrors([&] {
      // Adapters (e.g. Softmax 12->13) need the shapes inference gives.
      onnx::shape_inference::InferShapes(storage->model);
      storage->model = onnx::version_conversion::ConvertVersion(
          model, static_cast<int>(kMinSupportedOpset));
    });
    if (problem)
      return error("cannot convert opset " + Twine(opset) + " to opset " +
                   Twine(kMinSupportedOpset) + ": " + *problem);
    opset = kMinSupportedOpset;
    // Converted initializers may have moved: reload the external views.
    externalBytes.clear();
    if (failed(loadExternalData()))
      return failure();
  }

  return success();
}

/// A node's name, or "TYPE_INDEX" for an unnamed node.
static std::string nodeDisplayName(const onnx::NodeProto &node,
                                   unsigned index) {
  return node.name().empty() ? node.op_type() + "_" + std::to_string(index)
                             : node.name();
}

/// Checks what libonnx's IR (version converter, shape inference) relies on
/// but its checker does not check, in `graph` and its subgraphs: every
/// graph output is defined (by a graph input, an initializer, a node or, in
/// a subgraph, the enclosing graphs); `strides` and `dilations` are positive
/// (convolution and pooling shape inference divides by them); a Conv or
/// ConvTranspose weight of declared rank has the input's rank (their shape
/// inference reads its dimensions 0 and 1 unchecked). `rankBefore(value,
/// index)`, if given, finds the rank of a value no declaration gives, as
/// inference over the nodes before `index` would. Shape inference for the
/// cross-check runs after import, which checks far more; this guards the
/// version converter of old opsets, which needs shapes first.
using RankFn = function_ref<std::optional<int64_t>(StringRef, unsigned)>;
static std::optional<std::string>
findOnnxInferenceHazard(const onnx::GraphProto &graph, int64_t opset,
                        const llvm::StringSet<> &outerValues,
                        std::optional<RankFn> rankBefore = std::nullopt) {
  llvm::StringSet<> defined = outerValues;
  llvm::StringMap<int64_t> declaredRanks;
  auto declare = [&](const onnx::ValueInfoProto &info) {
    if (info.type().has_tensor_type() && info.type().tensor_type().has_shape())
      declaredRanks[info.name()] = info.type().tensor_type().shape().dim_size();
  };
  for (const onnx::ValueInfoProto &input : graph.input()) {
    defined.insert(input.name());
    declare(input);
  }
  for (const onnx::ValueInfoProto &info : graph.value_info())
    declare(info);
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    defined.insert(tensor.name());
    declaredRanks[tensor.name()] = tensor.dims_size();
  }
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    auto hazard = [&](const Twine &message) {
      return ("node '" + nodeDisplayName(node, index) + "' (" + node.op_type() +
              ", opset " + Twine(opset) + "): " + message)
          .str();
    };
    if ((node.op_type() == "Conv" || node.op_type() == "ConvTranspose") &&
        node.input_size() >= 2) {
      auto rankOf = [&](const std::string &value) -> std::optional<int64_t> {
        auto declared = declaredRanks.find(value);
        if (declared != declaredRanks.end())
          return declared->second;
        return rankBefore ? (*rankBefore)(value, index) : std::nullopt;
      };
      std::optional<int64_t> weight = rankOf(node.input(1));
      std::optional<int64_t> input = rankOf(node.input(0));
      if (weight && input && *weight != *input)
        return hazard("the weight '" + node.input(1) + "' has rank " +
                      Twine(*weight) + ", not the input's (" + Twine(*input) +
                      ")");
      if (weight && *weight < 3)
        return hazard("the weight '" + node.input(1) + "' has rank " +
                      Twine(*weight) + ", less than 3");
    }
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if ((attr.name() == "strides" || attr.name() == "dilations") &&
          llvm::any_of(attr.ints(), [](int64_t v) { return v <= 0; }))
        return hazard(attr.name() + " " +
                      eff::formatShape(SmallVector<int64_t>(
                          attr.ints().begin(), attr.ints().end())) +
                      " must be positive");
      SmallVector<const onnx::GraphProto *> subgraphs;
      if (attr.has_g())
        subgraphs.push_back(&attr.g());
      for (const onnx::GraphProto &g : attr.graphs())
        subgraphs.push_back(&g);
      for (const onnx::GraphProto *subgraph : subgraphs)
        if (std::optional<std::string> hazard =
                findOnnxInferenceHazard(*subgraph, opset, defined))
          return hazard;
    }
    for (const std::string &output : node.output())
      defined.insert(output);
  }
  for (const onnx::ValueInfoProto &output : graph.output())
    if (!defined.contains(output.name()))
      return "graph output '" + output.name() + "' is not produced by any node";
  return std::nullopt;
}

LogicalResult ModelImporter::checkLibOnnxAssumptions() {
  // Before the version converter, shape inference sees the model before
  // import has checked it: find the ranks of computed weights by inferring
  // shapes up to their node (rare: weights are initializers).
  auto rankBefore = [&](StringRef value,
                        unsigned end) -> std::optional<int64_t> {
    onnx::ModelProto prefix = storage->model;
    auto *nodes = prefix.mutable_graph()->mutable_node();
    nodes->DeleteSubrange(end, nodes->size() - end);
    if (catchOnnxErrors([&] { onnx::shape_inference::InferShapes(prefix); }))
      return std::nullopt;
    for (const onnx::ValueInfoProto &info : prefix.graph().value_info())
      if (info.name() == value && info.type().has_tensor_type() &&
          info.type().tensor_type().has_shape())
        return info.type().tensor_type().shape().dim_size();
    return std::nullopt;
  };
  std::optional<RankFn> ranks;
  if (opset < kMinSupportedOpset)
    ranks = rankBefore;
  if (std::optional<std::string> hazard =
          findOnnxInferenceHazard(storage->model.graph(), opset, {}, ranks))
    return error(*hazard);
  return success();
}

/// Whether `tensor`'s data is never read: a float initializer (a parameter)
/// under `shapesOnly`.
bool ModelImporter::skipsData(const onnx::TensorProto &tensor) {
  return options.shapesOnly &&
         isa_and_nonnull<FloatType>(
             convertElementType(tensor.data_type(), context));
}

/// Replaces the initializers whose data is skipped by graph inputs of the
/// same type (for the checker, which would look for their data files).
void ModelImporter::moveSkippedWeightsToInputs(onnx::GraphProto &graph) {
  llvm::StringSet<> inputs;
  for (const onnx::ValueInfoProto &input : graph.input())
    inputs.insert(input.name());
  auto *initializers = graph.mutable_initializer();
  int kept = 0;
  for (int i = 0, e = initializers->size(); i < e; ++i) {
    const onnx::TensorProto &tensor = initializers->Get(i);
    if (!skipsData(tensor)) {
      initializers->SwapElements(kept++, i);
      continue;
    }
    if (!inputs.insert(tensor.name()).second)
      continue;
    onnx::ValueInfoProto *input = graph.add_input();
    input->set_name(tensor.name());
    onnx::TypeProto::Tensor *type =
        input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(tensor.data_type());
    onnx::TensorShapeProto *shape = type->mutable_shape();
    for (int64_t dim : tensor.dims())
      shape->add_dim()->set_dim_value(dim);
  }
  initializers->DeleteSubrange(kept, initializers->size() - kept);
}

LogicalResult ModelImporter::loadExternalData() {
  for (const onnx::TensorProto &tensor :
       storage->model.graph().initializer()) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL ||
        skipsData(tensor))
      continue;
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::strtoull(entry.value().c_str(), nullptr, 10);
      else if (entry.key() == "length")
        length = std::strtoull(entry.value().c_str(), nullptr, 10);
    }
    if (location.empty())
      return error("initializer '" + tensor.name() +
                   "' has external data without a location");
    SmallString<256> path(baseDirectory);
    llvm::sys::path::append(path, location);
    uint64_t fileSize = 0;
    if (llvm::sys::fs::file_size(path, fileSize))
      return error("external data file '" + path.str() + "' of initializer '" +
                   tensor.name() + "' cannot be read" +
                   (options.shapesOnly
                        ? "; without the weights (--shapes-only), non-float "
                          "initializers are still read: constant folding "
                          "needs their values"
                        : "; to plan memory without the weights, import "
                          "with --shapes-only"));
    uint64_t size = length.value_or(fileSize > offset ? fileSize - offset : 0);
    if (offset + size > fileSize)
      return error("external data of initializer '" + tensor.name() +
                   "' lies beyond the end of '" + path.str() + "' (" +
                   Twine(fileSize) + " bytes)");
    // Memory-mapped when large: weights are never copied.
    auto buffer = llvm::MemoryBuffer::getFileSlice(path, size, offset);
    if (!buffer)
      return error("cannot map external data file '" + path.str() +
                   "': " + buffer.getError().message());
    externalBytes[tensor.name()] = ArrayRef<char>(
        (*buffer)->getBufferStart(), (*buffer)->getBufferSize());
    storage->externalFiles.push_back(std::move(*buffer));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Types and tensors
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType>
ModelImporter::convertValueType(const onnx::ValueInfoProto &info,
                                StringRef kind) {
  const std::string &name = info.name();
  if (!info.has_type() || !info.type().has_tensor_type())
    return error(kind + " '" + name + "' is not a tensor");
  const onnx::TypeProto::Tensor &tensorType = info.type().tensor_type();
  Type elementType = convertElementType(tensorType.elem_type(), context);
  if (!elementType)
    return error(kind + " '" + name + "' has unsupported element type " +
                 dataTypeName(tensorType.elem_type()));
  if (!tensorType.has_shape())
    return error(kind + " '" + name +
                 "' has no shape; bind it with --shape " + name + "=d0,d1,...");
  auto bound = options.inputShapes.find(name);
  const auto &dims = tensorType.shape().dim();
  if (bound != options.inputShapes.end()) {
    if (static_cast<int>(bound->second.size()) != dims.size())
      return error("--shape " + name + " gives " + Twine(bound->second.size()) +
                   " dimensions but the model's " + kind + " has rank " +
                   Twine(dims.size()));
    for (int i = 0; i < dims.size(); ++i)
      if (dims[i].has_dim_value() && dims[i].dim_value() != bound->second[i])
        return error("--shape " + name + " sets dimension " + Twine(i) +
                     " to " + Twine(bound->second[i]) + " but the model fixes it to " +
                     Twine(dims[i].dim_value()));
    if (!boundedElementCount(bound->second))
      return error("--shape " + name + " gives more than " +
                   Twine(kMaxTensorElements) + " elements");
    return RankedTensorType::get(bound->second, elementType);
  }
  SmallVector<int64_t> shape;
  for (int i = 0; i < dims.size(); ++i) {
    if (!dims[i].has_dim_value()) {
      std::string symbol = dims[i].has_dim_param()
                               ? "symbolic dimension '" + dims[i].dim_param() + "'"
                               : std::string("an unknown dimension");
      return error(kind + " '" + name + "' has " + symbol + " at position " +
                   Twine(i) + "; bind it with --shape " + name + "=d0,d1,...");
    }
    shape.push_back(dims[i].dim_value());
  }
  if (!boundedElementCount(shape))
    return error(kind + " '" + name + "' has shape " + eff::formatShape(shape) +
                 ", with a negative dimension or more than " +
                 Twine(kMaxTensorElements) + " elements");
  return RankedTensorType::get(shape, elementType);
}

FailureOr<RankedTensorType>
ModelImporter::convertTensorType(const onnx::TensorProto &tensor) {
  Type elementType = convertElementType(tensor.data_type(), context);
  if (!elementType)
    return error("initializer '" + tensor.name() +
                 "' has unsupported data type " +
                 dataTypeName(tensor.data_type()));
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  if (!boundedElementCount(shape))
    return error("initializer '" + tensor.name() + "' has shape " +
                 eff::formatShape(shape) +
                 ", with a negative dimension or more than " +
                 Twine(kMaxTensorElements) + " elements");
  return RankedTensorType::get(shape, elementType);
}

ArrayRef<char> ModelImporter::rawBytes(const onnx::TensorProto &tensor) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return externalBytes.lookup(tensor.name());
  if (tensor.has_raw_data())
    return ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size());
  return {};
}

FailureOr<Value>
ModelImporter::materializeConstant(const onnx::TensorProto &tensor) {
  FailureOr<RankedTensorType> type = convertTensorType(tensor);
  if (failed(type))
    return failure();
  FailureOr<DenseElementsAttr> attr = tensorToDenseAttr(
      tensor, *type, rawBytes(tensor), "initializer '" + tensor.name() + "'",
      [&] { return emitError(fileLoc); });
  if (failed(attr))
    return failure();
  auto constant = buildVerified<eff::ConstantOp>(
      builder, fileLoc,
      [&](const Twine &message) {
        (void)error("initializer '" + tensor.name() + "': " + message);
      },
      *attr);
  if (!constant)
    return failure();
  return constant.getResult();
}

/// A resource key from an initializer name: MLIR's bare identifiers.
static std::string resourceKey(StringRef name) {
  std::string key;
  for (char c : name)
    key.push_back(llvm::isAlnum(c) || c == '_' || c == '.' ? c : '_');
  if (key.empty() || llvm::isDigit(key.front()))
    key.insert(key.begin(), '_');
  return key;
}

/// The initial value of a float initializer: a resource blob over the loaded
/// bytes (no copy where they are aligned).
FailureOr<ElementsAttr>
ModelImporter::initialValueOf(const onnx::TensorProto &tensor,
                              RankedTensorType type) {
  ArrayRef<char> bytes = rawBytes(tensor);
  int64_t expectedBytes = storageBytes(type);
  AsmResourceBlob blob;
  if (!bytes.empty() || tensor.has_raw_data() ||
      tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    if (static_cast<int64_t>(bytes.size()) != expectedBytes)
      return error("initializer '" + tensor.name() + "' has " +
                   Twine(bytes.size()) + " bytes of data but its shape " +
                   eff::formatShape(type.getShape()) + " needs " +
                   Twine(expectedBytes));
    size_t alignment = type.getElementTypeBitWidth() / 8;
    if (reinterpret_cast<uintptr_t>(bytes.data()) % alignment == 0) {
      // Reference the loaded bytes; the blob keeps the model alive.
      blob = AsmResourceBlob(
          bytes, alignment, [keepAlive = storage](void *, size_t, size_t) {},
          /*dataIsMutable=*/false);
    } else {
      blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignment);
    }
  } else {
    FailureOr<DenseElementsAttr> dense = tensorToDenseAttr(
        tensor, type, {}, "initializer '" + tensor.name() + "'",
        [&] { return emitError(fileLoc); });
    if (failed(dense))
      return failure();
    blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        dense->getRawData(), type.getElementTypeBitWidth() / 8);
  }
  return cast<ElementsAttr>(DenseResourceElementsAttr::get(
      type, resourceKey(tensor.name()), std::move(blob)));
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> ModelImporter::run(std::shared_ptr<ModelStorage> loaded) {
  storage = std::move(loaded);
  if (failed(prepareModel()))
    return nullptr;
  module = ModuleOp::create(fileLoc);
  module->getOperation()->setAttr("eff.source",
                                  builder.getStringAttr(displayName));
  module->getOperation()->setAttr("eff.opset", builder.getI64IntegerAttr(opset));
  if (failed(buildForward()))
    return nullptr;
  return std::move(module);
}

LogicalResult ModelImporter::buildForward() {
  const onnx::GraphProto &graph = storage->model.graph();

  // Uses of every value, so converters can skip unused optional outputs
  // (a branch of an If may read any value of the graph).
  std::function<void(const onnx::GraphProto &)> countUses =
      [&](const onnx::GraphProto &g) {
        for (const onnx::NodeProto &node : g.node()) {
          for (const std::string &input : node.input())
            if (!input.empty())
              ++useCounts[input];
          for (const onnx::AttributeProto &attr : node.attribute())
            if (attr.has_g())
              countUses(attr.g());
        }
        for (const onnx::ValueInfoProto &output : g.output())
          ++useCounts[output.name()];
      };
  countUses(graph);

  // BatchNorm statistics are buffers, whatever mode the node runs in.
  for (const onnx::NodeProto &node : graph.node())
    if (node.op_type() == "BatchNormalization")
      for (int i : {3, 4})
        if (i < node.input_size())
          parameterRoles[node.input(i)] = eff::ParamRole::Buffer;

  std::optional<llvm::Regex> freeze;
  if (!options.freezeRegex.empty()) {
    freeze.emplace(options.freezeRegex);
    std::string regexError;
    if (!freeze->isValid(regexError))
      return error("--freeze '" + options.freezeRegex +
                   "' is not a valid regular expression: " + regexError);
  }

  // Parameters: float initializers. Everything else is a constant.
  builder.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> argumentTypes;
  SmallVector<NamedAttribute> argumentTags;
  SmallVector<std::string> argumentNames;
  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    initializerNames.insert(tensor.name());
    FailureOr<RankedTensorType> type = convertTensorType(tensor);
    if (failed(type))
      return failure();
    if (!isa<FloatType>(type->getElementType())) {
      pendingConstants[tensor.name()] = &tensor;
      continue;
    }
    ElementsAttr initialValue;
    if (!skipsData(tensor)) {
      FailureOr<ElementsAttr> value = initialValueOf(tensor, *type);
      if (failed(value))
        return failure();
      initialValue = *value;
    }

    auto knownRole = parameterRoles.find(tensor.name());
    eff::ParamRole role = knownRole == parameterRoles.end()
                              ? eff::ParamRole::Trainable
                              : knownRole->second;
    if (role == eff::ParamRole::Trainable && freeze &&
        freeze->match(tensor.name()))
      role = eff::ParamRole::Frozen;
    parameterRoles[tensor.name()] = role;
    auto parameter = buildVerified<eff::ParameterOp>(
        builder, fileLoc,
        [&](const Twine &message) {
          (void)error("initializer '" + tensor.name() + "': " + message);
        },
        tensor.name(), role, *type, initialValue);
    if (!parameter)
      return failure();
    argumentTypes.push_back(*type);
    argumentNames.push_back(tensor.name());
    argumentTags.push_back(builder.getNamedAttr(
        eff::kParameterAttrName,
        FlatSymbolRefAttr::get(context, tensor.name())));
  }

  // Batch inputs: graph inputs that are not initializers.
  llvm::StringMap<std::unique_ptr<onnx::TensorProto>> boundConstants;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    auto constantFile = options.constantInputs.find(input.name());
    if (constantFile != options.constantInputs.end()) {
      auto tensor = std::make_unique<onnx::TensorProto>();
      auto buffer = llvm::MemoryBuffer::getFile(constantFile->second);
      if (!buffer || !tensor->ParseFromArray((*buffer)->getBufferStart(),
                                             (*buffer)->getBufferSize()))
        return error("--constant-input " + input.name() + ": cannot read a "
                     "TensorProto from '" + constantFile->second + "'");
      tensor->set_name(input.name());
      pendingConstants[input.name()] = tensor.get();
      boundConstants[input.name()] = std::move(tensor);
      continue;
    }
    FailureOr<RankedTensorType> type = convertValueType(input, "input");
    if (failed(type))
      return failure();
    argumentTypes.push_back(*type);
    argumentNames.push_back(input.name());
    argumentTags.push_back(builder.getNamedAttr(
        eff::kInputAttrName, builder.getStringAttr(input.name())));
  }
  for (const auto &entry : options.inputShapes)
    if (llvm::none_of(argumentNames,
                      [&](const std::string &n) { return n == entry.getKey(); }))
      return error("--shape names '" + entry.getKey() +
                   "', which is not an input of the model");

  auto func = func::FuncOp::create(builder, fileLoc, eff::kForwardFuncName,
                                   builder.getFunctionType(argumentTypes, {}));
  Block *body = func.addEntryBlock();
  for (unsigned i = 0; i < argumentTypes.size(); ++i) {
    func.setArgAttrs(i, builder.getDictionaryAttr(argumentTags[i]));
    values[argumentNames[i]] = body->getArgument(i);
  }

  builder.setInsertionPointToStart(body);
  unsigned index = 0;
  for (const onnx::NodeProto &node : graph.node())
    if (failed(importNode(node, index++)))
      return failure();
  if (failed(crossCheckShapes()))
    return failure();

  // Results: graph outputs in order (the first is the loss), then the new
  // values of buffers.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultTags;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = values.lookup(output.name());
    if (!value) {
      // An output may be an initializer or constant passed straight through.
      if (pendingConstants.count(output.name())) {
        FailureOr<Value> constant =
            materializeConstant(*pendingConstants[output.name()]);
        if (failed(constant))
          return failure();
        value = *constant;
      } else {
        return error("graph output '" + output.name() +
                     "' is not produced by any node");
      }
    }
    results.push_back(value);
    resultTags.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        eff::kOutputAttrName, builder.getStringAttr(output.name()))));
  }
  llvm::StringSet<> updated;
  for (auto &[name, value] : stateUpdates) {
    auto role = parameterRoles.find(name);
    if (role == parameterRoles.end() || role->second != eff::ParamRole::Buffer ||
        !initializerNames.contains(name))
      continue;
    if (!updated.insert(name).second)
      return error("buffer '" + name + "' is updated by more than one node");
    results.push_back(value);
    resultTags.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        eff::kBufferUpdateAttrName, FlatSymbolRefAttr::get(context, name))));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setType(builder.getFunctionType(argumentTypes,
                                       ValueRange(results).getTypes()));
  for (unsigned i = 0; i < resultTags.size(); ++i)
    func.setResultAttrs(i, resultTags[i]);

  if (failed(cleanup(func)))
    return failure();
  classifyBuffers(func);
  return success();
}

/// What to do instead of a control-flow node, as a tail of its error ("" for
/// other ops). torch exports nn.EmbeddingBag as a Loop whose body gathers
/// rows of the table and reduces them, one bag per iteration.
static std::string controlFlowHint(const onnx::NodeProto &node) {
  if (node.op_type() != "Loop" && node.op_type() != "If" &&
      node.op_type() != "Scan")
    return "";
  bool gathers = false, reduces = false;
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.has_g())
      for (const onnx::NodeProto &inner : attr.g().node()) {
        gathers |= inner.op_type() == "Gather";
        reduces |= StringRef(inner.op_type()).starts_with("Reduce");
      }
  if (node.op_type() == "Loop" && gathers && reduces)
    return ": control flow is not supported, and this Loop is how torch "
           "exports nn.EmbeddingBag; use nn.Embedding and a sum/mean over the "
           "bag dimension instead";
  return ": control flow is not supported (the importer needs a static "
         "graph); compute the loop or branch outside the model, or unroll it";
}

LogicalResult ModelImporter::importNode(const onnx::NodeProto &node,
                                        unsigned index) {
  std::string nodeName = nodeDisplayName(node, index);
  Location loc = NameLoc::get(builder.getStringAttr(nodeName), fileLoc);

  // Initializers and bound inputs become constants where first read.
  for (const std::string &input : node.input()) {
    if (input.empty() || values.count(input))
      continue;
    auto pending = pendingConstants.find(input);
    if (pending == pendingConstants.end())
      return emitError(loc) << "node '" << nodeName << "' (" << node.op_type()
                            << ") reads '" << input
                            << "', which no earlier node produces",
             failure();
    FailureOr<Value> constant = materializeConstant(*pending->second);
    if (failed(constant))
      return failure();
    values[input] = *constant;
  }

  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return emitError(loc) << "node '" << nodeName << "': unsupported op '"
                          << node.op_type() << "' of domain '" << node.domain()
                          << "'",
           failure();
  onnx::NodeProto named = node;
  named.set_name(nodeName);
  NodeContext nodeContext(named, opset, builder, loc, values, useCounts);
  nodeContext.stateUpdates = &stateUpdates;
  // Only optional inputs may be omitted (""); ONNX's checker lets a
  // variadic one be empty too.
  if (const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(
          node.op_type(), static_cast<int>(opset))) {
    const auto &formals = schema->inputs();
    for (int i = 0; i < node.input_size() && !formals.empty(); ++i) {
      const onnx::OpSchema::FormalParameter &formal =
          formals[std::min<size_t>(i, formals.size() - 1)];
      if (node.input(i).empty() &&
          formal.GetOption() != onnx::OpSchema::Optional)
        return nodeContext.error("input " + Twine(i) + " ('" +
                                 formal.GetName() +
                                 "') is empty, but it is not optional");
    }
  }
  if (node.op_type() == "If")
    return importConstantIf(node, nodeContext);
  // A node over constants is evaluated (shape arithmetic, masks); the rest
  // is converted. A converter that built an op its operands do not fit has
  // reported the node's error, whatever it returned.
  FailureOr<bool> folded = foldConstantNode(nodeContext);
  if (failed(folded))
    return failure();
  if (!*folded) {
    const ConverterMap &converters = getConverters();
    auto converter = converters.find(node.op_type());
    if (converter == converters.end())
      return emitError(loc) << "node '" << nodeName
                            << "': unsupported ONNX op '" << node.op_type()
                            << "' (opset " << opset << ")"
                            << controlFlowHint(node),
             failure();
    if (failed(converter->second(nodeContext)) || nodeContext.hasErrors())
      return failure();
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    if (!values.count(node.output(i)) && nodeContext.isOutputUsed(i))
      return nodeContext.error("output " + Twine(i) + " ('" + node.output(i) +
                               "') is used but not supported by effopt");
  }
  return success();
}

/// An If whose condition folds to a constant (torch exports some shape
/// checks as one: torch.diagonal's bounds) is the branch it takes, imported
/// in its place; its outputs are that branch's. One decided at run time is
/// control flow, which a static graph cannot hold.
LogicalResult ModelImporter::importConstantIf(const onnx::NodeProto &node,
                                              NodeContext &nodeContext) {
  std::optional<double> condition = nodeContext.constantScalar(0);
  if (!condition)
    return nodeContext.error("the condition is computed at run time" +
                             controlFlowHint(node));
  const onnx::AttributeProto *branchAttr =
      nodeContext.attribute(*condition != 0 ? "then_branch" : "else_branch");
  if (!branchAttr || !branchAttr->has_g())
    return nodeContext.error("has no then_branch/else_branch graph");
  const onnx::GraphProto &branch = branchAttr->g();
  if (branch.initializer_size() || branch.sparse_initializer_size())
    return nodeContext.error("a branch with initializers of its own is not "
                             "supported");
  if (branch.output_size() != node.output_size())
    return nodeContext.error("the branch has " + Twine(branch.output_size()) +
                             " outputs for the node's " +
                             Twine(node.output_size()));
  unsigned index = 0;
  for (const onnx::NodeProto &inner : branch.node())
    if (failed(importNode(inner, index++)))
      return failure();
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string &name = branch.output(i).name();
    if (!values.count(name)) {
      auto pending = pendingConstants.find(name);
      if (pending == pendingConstants.end())
        return nodeContext.error("branch output '" + name +
                                 "' is not produced by any node");
      FailureOr<Value> constant = materializeConstant(*pending->second);
      if (failed(constant))
        return failure();
      values[name] = *constant;
    }
    if (!node.output(i).empty())
      values[node.output(i)] = values[name];
  }
  return success();
}

/// Runs ONNX's shape inference (with data propagation) and checks that eff
/// inferred the same type for every node output. It runs after the nodes
/// are imported: eff's converters and verifiers have then accepted every
/// node, as ONNX's inference functions assume (some read dimensions that a
/// malformed node's operands lack, and crash).
LogicalResult ModelImporter::crossCheckShapes() {
  if (!options.checkShapes)
    return success();
  std::optional<std::string> problem = catchOnnxErrors([&] {
    onnx::ShapeInferenceOptions inferenceOptions(/*check_type_val=*/false,
                                                 /*strict_mode_val=*/0,
                                                 /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(
        storage->model, onnx::OpSchemaRegistry::Instance(), inferenceOptions);
  });
  if (problem)
    return error("ONNX shape inference failed: " + *problem);
  for (const onnx::ValueInfoProto &info : storage->model.graph().value_info())
    onnxTypes[info.name()] = &info.type();
  unsigned index = 0;
  for (const onnx::NodeProto &node : storage->model.graph().node())
    if (failed(checkAgainstOnnxShapes(node, nodeDisplayName(node, index++))))
      return failure();
  return success();
}

LogicalResult ModelImporter::checkAgainstOnnxShapes(const onnx::NodeProto &node,
                                                    StringRef nodeName) {
  for (const std::string &output : node.output()) {
    const onnx::TypeProto *onnxType = onnxTypes.lookup(output);
    Value value = values.lookup(output);
    if (!onnxType || !value || !onnxType->has_tensor_type())
      continue;
    const onnx::TypeProto::Tensor &tensor = onnxType->tensor_type();
    if (!tensor.has_shape())
      continue;
    SmallVector<int64_t> shape;
    for (const auto &dim : tensor.shape().dim()) {
      if (!dim.has_dim_value())
        break;
      shape.push_back(dim.dim_value());
    }
    if (static_cast<int>(shape.size()) != tensor.shape().dim_size())
      continue; // ONNX could not infer a static shape; nothing to compare.
    auto type = cast<RankedTensorType>(value.getType());
    Type elementType = convertElementType(tensor.elem_type(), context);
    if (type.getShape() != ArrayRef<int64_t>(shape) ||
        (elementType && elementType != type.getElementType())) {
      emitError(value.getLoc())
          << "node '" << nodeName << "' (" << node.op_type()
          << "): effopt infers " << type << " for output '" << output
          << "' but ONNX shape inference says "
          << RankedTensorType::get(shape, elementType ? elementType
                                                      : type.getElementType());
      return failure();
    }
  }
  return success();
}

/// Recognises exporter idioms, then removes the constants and dead ops that
/// folding left behind.
LogicalResult ModelImporter::cleanup(func::FuncOp func) {
  RewritePatternSet patterns(context);
  onnx_import::populateRecognizeCompositesPatterns(patterns);
  if (failed(applyPatternsGreedily(func, std::move(patterns))))
    return error("recognising composite ops did not converge");
  PassManager pm(context, func::FuncOp::getOperationName());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(func)))
    return error("cleanup after import failed");
  return success();
}

/// Whether operand `index` of `op` can carry a gradient: eff-autodiff's rule.
static bool isDifferentiableOperand(Operation *op, unsigned index) {
  if (auto gradient = dyn_cast<eff::GradientOpInterface>(op))
    return gradient.isDifferentiableOperand(index);
  return eff::detail::isFloatTensor(op->getOperand(index).getType());
}

/// Turns the trainable (or `--freeze`-frozen) parameters that no gradient
/// reaches from the loss (result 0) into buffers: they are model state, not
/// parameters. The values the loss depends on differentiably are found
/// backwards from it, as eff-autodiff finds them, after cleanup has folded
/// shape queries and removed dead code.
void ModelImporter::classifyBuffers(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  llvm::DenseSet<Value> reached;
  if (returnOp.getNumOperands() > 0 &&
      eff::detail::isFloatTensor(returnOp.getOperand(0).getType()))
    reached.insert(returnOp.getOperand(0));
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (llvm::none_of(op.getResults(),
                      [&](Value result) { return reached.contains(result); }))
      continue;
    for (OpOperand &operand : op.getOpOperands())
      if (isDifferentiableOperand(&op, operand.getOperandNumber()))
        reached.insert(operand.get());
  }
  for (BlockArgument argument : body.getArguments()) {
    auto symbol = func.getArgAttrOfType<FlatSymbolRefAttr>(
        argument.getArgNumber(), eff::kParameterAttrName);
    auto parameter =
        symbol ? module->lookupSymbol<eff::ParameterOp>(symbol) : nullptr;
    if (parameter && !reached.contains(argument) &&
        (parameter.getRole() == eff::ParamRole::Trainable ||
         parameter.getRole() == eff::ParamRole::Frozen)) {
      parameter.setRole(eff::ParamRole::Buffer);
      parameterRoles[parameter.getSymName()] = eff::ParamRole::Buffer;
    }
  }
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::vector<std::string> effopt::getSupportedONNXOps() {
  std::vector<std::string> names;
  for (const auto &entry : getConverters())
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

static OwningOpRef<ModuleOp> importLoaded(std::shared_ptr<ModelStorage> storage,
                                          StringRef displayName,
                                          StringRef baseDirectory,
                                          MLIRContext *context,
                                          const ONNXImportOptions &options) {
  // Gradient rules say which operands a gradient reaches (classifyBuffers).
  DialectRegistry registry;
  eff::registerGradientInterfaceModels(registry);
  context->appendDialectRegistry(registry);
  context->loadDialect<eff::EffDialect, func::FuncDialect>();
  ModelImporter importer(context, displayName, baseDirectory, options);
  return importer.run(std::move(storage));
}

OwningOpRef<ModuleOp> effopt::importONNXFile(StringRef path,
                                             MLIRContext *context,
                                             const ONNXImportOptions &options) {
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  int fd = ::open(path.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    emitError(fileLoc) << "cannot open the model file: "
                       << std::strerror(errno);
    return nullptr;
  }
  // Parse straight from the file descriptor: no second copy of the weights.
  auto storage = std::make_shared<ModelStorage>();
  bool parsed = storage->model.ParseFromFileDescriptor(fd);
  ::close(fd);
  if (!parsed) {
    emitError(fileLoc) << "not a valid ONNX model (the protobuf cannot be "
                          "parsed; is the file truncated?)";
    return nullptr;
  }
  SmallString<256> directory(path);
  llvm::sys::path::remove_filename(directory);
  if (directory.empty())
    directory = ".";
  return importLoaded(std::move(storage), path, directory, context, options);
}

OwningOpRef<ModuleOp> effopt::importONNXBuffer(StringRef bytes,
                                               StringRef displayName,
                                               StringRef baseDirectory,
                                               MLIRContext *context,
                                               const ONNXImportOptions &options) {
  auto storage = std::make_shared<ModelStorage>();
  if (!storage->model.ParseFromArray(bytes.data(),
                                     static_cast<int>(bytes.size()))) {
    emitError(FileLineColLoc::get(context, displayName, 0, 0))
        << "not a valid ONNX model (the protobuf cannot be parsed; is the "
           "file truncated?)";
    return nullptr;
  }
  return importLoaded(std::move(storage), displayName, baseDirectory, context,
                      options);
}
