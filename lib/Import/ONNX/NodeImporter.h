//===- NodeImporter.h - per-node conversion context and registry -*- C++
//-*-===//
//
// Each ONNX op family has a file of converters (`Convert*.cpp`) that turn one
// `NodeProto` into eff ops through a `NodeContext`. Converters fold as they
// build (`createOrFold`), and a node whose inputs are all constants is
// evaluated instead of converted (ConstantFolding.h), so the shape arithmetic
// exporters emit becomes constants as soon as it is imported.
//
// A model can pass ONNX's checker and still give an op operands it does not
// accept (a Sub of shapes that do not broadcast). eff's builders would abort
// on such operands, so the importer never calls them directly: every op is
// made by `buildVerified`, which infers the result types itself, verifies
// the op, and turns a failure into the node's one-line error.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_IMPORT_ONNX_NODEIMPORTER_H
#define EFFOPT_LIB_IMPORT_ONNX_NODEIMPORTER_H

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"

#include <type_traits>

#include <onnx/onnx_pb.h>

namespace effopt::onnx_import {

class NodeContext;
using ConvertFn = mlir::LogicalResult (*)(NodeContext &);
using ConverterMap = llvm::StringMap<ConvertFn>;

void populateElementwiseConverters(ConverterMap &converters);
void populateShapeConverters(ConverterMap &converters);
void populateReductionConverters(ConverterMap &converters);
void populateContractionConverters(ConverterMap &converters);
void populateNormalizationConverters(ConverterMap &converters);
void populateLossConverters(ConverterMap &converters);
void populateActivationConverters(ConverterMap &converters);
void populateIndexingConverters(ConverterMap &converters);
void populateRecurrentConverters(ConverterMap &converters);

/// Window attributes of Conv and pooling: per spatial dimension, ONNX's
/// pads order (all begins, then all ends). 1-D windows are returned as 2-D
/// ones over [1, L].
struct Window {
  llvm::SmallVector<int64_t> kernel, strides, padding, dilations;
};

/// Reads kernel/strides/pads/dilations/auto_pad for the spatial dimensions
/// of `inputShape` (`kernel` has one size per spatial dimension).
mlir::FailureOr<Window> readWindow(NodeContext &ctx,
                                   llvm::ArrayRef<int64_t> inputShape,
                                   llvm::ArrayRef<int64_t> kernel);

/// 3-D windows as 2-D ones over the frames (ConvertWindows3D.cpp).
mlir::LogicalResult convertConv3D(NodeContext &ctx, const Window &window,
                                  int64_t groups);
mlir::LogicalResult convertMaxPool3D(NodeContext &ctx, const Window &window,
                                     bool ceilMode);
mlir::LogicalResult convertAveragePool3D(NodeContext &ctx,
                                         const Window &window, bool ceilMode,
                                         bool countIncludePad);

/// The most elements a tensor may have: a larger shape (or one with a
/// negative dimension) is taken to be malformed, and would overflow the
/// element and byte counts computed from it.
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
/// The most elements of a constant the importer computes element by element
/// (masks, positions, interpolation weights, folds of constant inputs).
inline constexpr int64_t kMaxComputedElements = int64_t(1) << 24;

/// The number of elements of `shape`, or nullopt if a dimension is negative
/// or the count exceeds `limit`.
std::optional<int64_t> boundedElementCount(llvm::ArrayRef<int64_t> shape,
                                           int64_t limit = kMaxTensorElements);

/// The shortest decimal reading of a float (1e-5f -> 1e-05, not
/// 9.9999997e-06), as the user wrote it in the exporting framework.
double decimalValue(const llvm::APFloat &value);

/// The MLIR element type of an ONNX `TensorProto::DataType`, or null.
mlir::Type convertElementType(int32_t dataType, mlir::MLIRContext *context);

/// Name of an ONNX data type ("FLOAT", "STRING", ...).
llvm::StringRef dataTypeName(int32_t dataType);

/// Converts tensor data (inline fields, `raw_data` or already loaded external
/// bytes) into a `DenseElementsAttr`. Errors name `what`.
mlir::FailureOr<mlir::DenseElementsAttr>
tensorToDenseAttr(const onnx::TensorProto &tensor, mlir::RankedTensorType type,
                  llvm::ArrayRef<char> rawBytes, llvm::StringRef what,
                  llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

//===----------------------------------------------------------------------===//
// Building ops without aborting
//===----------------------------------------------------------------------===//

namespace detail {

/// The number of results of an op with a fixed number of them, -1 if it has
/// variadic results.
template <typename OpTy, unsigned N = 2> constexpr int fixedResultCount() {
  if constexpr (OpTy::template hasTrait<mlir::OpTrait::ZeroResults>())
    return 0;
  else if constexpr (OpTy::template hasTrait<mlir::OpTrait::OneResult>())
    return 1;
  else if constexpr (N > 8)
    return -1;
  else if constexpr (OpTy::template hasTrait<
                         mlir::OpTrait::NResults<N>::template Impl>())
    return N;
  else
    return fixedResultCount<OpTy, N + 1>();
}

/// Whether builder arguments start with the result type(s).
template <typename... Args> inline constexpr bool startsWithResultTypes = false;
template <typename First, typename... Rest>
inline constexpr bool startsWithResultTypes<First, Rest...> =
    std::is_convertible_v<std::decay_t<First>, mlir::Type> ||
    std::is_convertible_v<std::decay_t<First>, llvm::ArrayRef<mlir::Type>> ||
    std::is_same_v<std::decay_t<First>, mlir::TypeRange>;

using InferReturnTypesFn = llvm::LogicalResult (*)(
    mlir::MLIRContext *, std::optional<mlir::Location>, mlir::ValueRange,
    mlir::DictionaryAttr, mlir::OpaqueProperties, mlir::RegionRange,
    llvm::SmallVectorImpl<mlir::Type> &);

/// Completes `state` with the result types `inferReturnTypes` gives (when
/// not null), creates the op at the builder's insertion point and verifies
/// it. If the types cannot be inferred, a result shape is out of bounds
/// (kMaxTensorElements) or the op does not verify, nothing is inserted,
/// `reportError` receives one line saying why ("cannot create 'eff.sub':
/// operand shapes [2, 3] and [4] do not broadcast") and the result is null.
mlir::Operation *
createVerified(mlir::OpBuilder &builder, mlir::OperationState &state,
               InferReturnTypesFn inferReturnTypes,
               llvm::function_ref<void(const llvm::Twine &)> reportError);

} // namespace detail

/// Builds an `OpTy` from the arguments of one of its ODS builders, never
/// aborting: where that builder would infer the result types (and abort if
/// it cannot), the types are inferred here first; the op is verified before
/// it is inserted. On failure, `reportError` gets a one-line reason and the
/// result is null.
template <typename OpTy, typename... Args>
OpTy buildVerified(mlir::OpBuilder &builder, mlir::Location loc,
                   llvm::function_ref<void(const llvm::Twine &)> reportError,
                   Args &&...args) {
  mlir::OperationState state(loc, OpTy::getOperationName());
  detail::InferReturnTypesFn infer = nullptr;
  if constexpr (OpTy::template hasTrait<mlir::InferTypeOpInterface::Trait>() &&
                !detail::startsWithResultTypes<Args...>) {
    // The builder that takes result types fills in the operands, attributes
    // and properties without inferring; placeholders stand in for the types
    // until the inference below.
    constexpr int numResults = detail::fixedResultCount<OpTy>();
    static_assert(numResults >= 0,
                  "ops with variadic results need explicit result types");
    llvm::SmallVector<mlir::Type, 4> placeholders(
        numResults, mlir::NoneType::get(builder.getContext()));
    OpTy::build(builder, state, mlir::TypeRange(placeholders),
                std::forward<Args>(args)...);
    state.types.clear();
    infer = &OpTy::inferReturnTypes;
  } else {
    OpTy::build(builder, state, std::forward<Args>(args)...);
  }
  return llvm::cast_or_null<OpTy>(
      detail::createVerified(builder, state, infer, reportError));
}

/// The state a converter sees while importing one node.
class NodeContext {
public:
  NodeContext(const onnx::NodeProto &node, int64_t opset,
              mlir::OpBuilder &builder, mlir::Location loc,
              llvm::StringMap<mlir::Value> &values,
              const llvm::StringMap<unsigned> &useCounts)
      : node(node), opset(opset), builder(builder), location(loc),
        values(values), useCounts(useCounts) {}

  const onnx::NodeProto &node;
  const int64_t opset;
  mlir::OpBuilder &builder;

  mlir::Location loc() const { return location; }
  mlir::MLIRContext *context() const { return builder.getContext(); }

  //===--- Inputs and outputs -------------------------------------------===//

  /// True if input `i` is present (ONNX marks omitted inputs with "").
  bool hasInput(unsigned i) const {
    return static_cast<int>(i) < node.input_size() && !node.input(i).empty();
  }
  mlir::Value input(unsigned i) const { return values.lookup(node.input(i)); }
  mlir::RankedTensorType inputType(unsigned i) const {
    return llvm::cast<mlir::RankedTensorType>(input(i).getType());
  }
  /// True if output `i` exists and something reads it.
  bool isOutputUsed(unsigned i) const {
    return static_cast<int>(i) < node.output_size() &&
           !node.output(i).empty() && useCounts.lookup(node.output(i)) > 0;
  }
  void setOutput(unsigned i, mlir::Value value) {
    if (static_cast<int>(i) < node.output_size() && !node.output(i).empty())
      values[node.output(i)] = value;
  }
  /// Records that `newValue` is the updated value of the state read by input
  /// `i` (BatchNorm running statistics); the importer returns it from
  /// `forward` if that input is a buffer parameter.
  void recordStateUpdate(unsigned i, mlir::Value newValue) {
    if (stateUpdates && hasInput(i))
      stateUpdates->push_back({node.input(i), newValue});
  }
  llvm::SmallVectorImpl<std::pair<std::string, mlir::Value>> *stateUpdates =
      nullptr;

  //===--- Attributes ----------------------------------------------------===//

  const onnx::AttributeProto *attribute(llvm::StringRef name) const;
  bool hasAttribute(llvm::StringRef name) const { return attribute(name); }
  int64_t getInt(llvm::StringRef name, int64_t defaultValue) const;
  /// A float attribute as the shortest decimal that round-trips the float.
  double getFloat(llvm::StringRef name, double defaultValue) const;
  std::string getString(llvm::StringRef name,
                        llvm::StringRef defaultValue) const;
  llvm::SmallVector<int64_t> getInts(llvm::StringRef name) const;

  //===--- Constants -----------------------------------------------------===//

  /// The value of input `i` if it folded to a constant.
  mlir::DenseElementsAttr constantInput(unsigned i) const;
  /// The number input `i` holds if it folded to a constant of one element.
  std::optional<double> constantScalar(unsigned i) const;
  /// Input `i` as integers; an error naming `what` if it is not constant.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constantInts(unsigned i, llvm::StringRef what);
  /// A scalar or splat constant of `elementType` shaped `shape`.
  mlir::Value splat(double value, mlir::Type elementType,
                    llvm::ArrayRef<int64_t> shape = {});
  /// An error naming `what` unless a constant shaped `shape` is small
  /// enough to compute element by element (kMaxComputedElements).
  mlir::LogicalResult checkComputedSize(llvm::ArrayRef<int64_t> shape,
                                        const llvm::Twine &what);

  //===--- Building ------------------------------------------------------===//

  // Every op of a node is built with `buildVerified`: operands an eff op
  // does not accept give the node's error ("node 'N' (Sub, opset 17):
  // cannot create 'eff.sub': ..."), never an abort. After the first error,
  // `build`, `create`, `splat` and the helpers below return null without
  // building (the helpers also return null for a null `value`), so a chain
  // of them needs no check of its own. Converters check for null where they
  // read the type of a value they built; the importer fails the node when
  // it `hasErrors()`, whatever the converter returns.

  /// Builds an `OpTy` at the node's location; null after an error.
  template <typename OpTy, typename... Args> OpTy build(Args &&...args) {
    if (errorReported)
      return {};
    auto report = [&](const llvm::Twine &message) { (void)error(message); };
    return buildVerified<OpTy>(builder, location, report,
                               std::forward<Args>(args)...);
  }
  /// Builds a single-result `OpTy` and folds it; null after an error.
  template <typename OpTy, typename... Args>
  mlir::Value create(Args &&...args) {
    static_assert(OpTy::template hasTrait<mlir::OpTrait::OneResult>(),
                  "create<OpTy> returns the one result; use build<OpTy>");
    OpTy op = build<OpTy>(std::forward<Args>(args)...);
    return op ? foldOrKeep(op) : mlir::Value();
  }
  /// A constant holding `value` (a DenseElementsAttr); null after an error.
  mlir::Value constant(mlir::DenseElementsAttr value);
  /// Reshapes `value` to `shape` (no-op if it already has it).
  mlir::Value reshape(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  /// Casts `value` to `elementType` (no-op if it already has it).
  mlir::Value cast(mlir::Value value, mlir::Type elementType);
  /// Broadcasts `value` to `shape` (no-op if it already has it).
  mlir::Value broadcastTo(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  /// A constant shaped like `rank` ones but `size` at `axis`, holding
  /// 0, 1, ..., size - 1 along `axis`: positions to compare indices with.
  /// Null (after an error) if `size` is beyond kMaxComputedElements.
  mlir::Value iota(int64_t size, int64_t axis, int64_t rank,
                   mlir::Type elementType);
  /// `value <predicate> scalar`, the scalar of `value`'s element type.
  mlir::Value compare(eff::CmpPredicate predicate, mlir::Value value,
                      double scalar);
  /// Moves dimension `from` of `value` to position `to`.
  mlir::Value moveAxis(mlir::Value value, int64_t from, int64_t to);

  //===--- Errors --------------------------------------------------------===//

  /// Emits "node 'NAME' (TYPE, opset N): MESSAGE" and returns failure.
  mlir::LogicalResult error(const llvm::Twine &message);
  /// True once an error has been emitted for this node.
  bool hasErrors() const { return errorReported; }
  /// Checks an attribute against the values the converter supports.
  mlir::LogicalResult unsupportedAttribute(llvm::StringRef name,
                                           const llvm::Twine &value);

  /// `axis` in [-rank, rank) normalised, or an error naming `what`.
  mlir::FailureOr<int64_t> normalizedAxis(int64_t axis, int64_t rank,
                                          llvm::StringRef what = "axis");
  /// The sizes of a Split node's outputs along an axis of `total`
  /// elements: its `split` input or attribute, else equal pieces (opset 18's
  /// num_outputs makes the last one smaller); an error unless they are one
  /// per output and add up to `total`.
  mlir::FailureOr<llvm::SmallVector<int64_t>> splitSizes(int64_t total);

private:
  /// The folded value of single-result `op` (erasing `op`), or its result.
  mlir::Value foldOrKeep(mlir::Operation *op);

  mlir::Location location;
  bool errorReported = false;
  llvm::StringMap<mlir::Value> &values;
  const llvm::StringMap<unsigned> &useCounts;
};

} // namespace effopt::onnx_import

#endif // EFFOPT_LIB_IMPORT_ONNX_NODEIMPORTER_H
