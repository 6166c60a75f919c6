//===- NodeImporter.h - per-node conversion context and registry -*- C++ -*-===//
//
// Each ONNX op family has a file of converters (`Convert*.cpp`) that turn one
// `NodeProto` into eff ops through a `NodeContext`. Converters fold as they
// build (`createOrFold`), so the shape arithmetic exporters emit becomes
// constants as soon as it is imported.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_IMPORT_ONNX_NODEIMPORTER_H
#define EFFOPT_LIB_IMPORT_ONNX_NODEIMPORTER_H

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"

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
  /// Input `i` as integers; an error naming `what` if it is not constant.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constantInts(unsigned i, llvm::StringRef what);
  /// A scalar or splat constant of `elementType` shaped `shape`.
  mlir::Value splat(double value, mlir::Type elementType,
                    llvm::ArrayRef<int64_t> shape = {});

  //===--- Building ------------------------------------------------------===//

  template <typename OpTy, typename... Args>
  mlir::Value create(Args &&...args) {
    return builder.createOrFold<OpTy>(location, std::forward<Args>(args)...);
  }
  /// Reshapes `value` to `shape` (no-op if it already has it).
  mlir::Value reshape(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  /// Casts `value` to `elementType` (no-op if it already has it).
  mlir::Value cast(mlir::Value value, mlir::Type elementType);
  /// Broadcasts `value` to `shape` (no-op if it already has it).
  mlir::Value broadcastTo(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  /// A constant shaped like `rank` ones but `size` at `axis`, holding
  /// 0, 1, ..., size - 1 along `axis`: positions to compare indices with.
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
  /// Checks an attribute against the values the converter supports.
  mlir::LogicalResult unsupportedAttribute(llvm::StringRef name,
                                           const llvm::Twine &value);

  /// `axis` in [-rank, rank) normalised, or an error naming `what`.
  mlir::FailureOr<int64_t> normalizedAxis(int64_t axis, int64_t rank,
                                          llvm::StringRef what = "axis");

private:
  mlir::Location location;
  llvm::StringMap<mlir::Value> &values;
  const llvm::StringMap<unsigned> &useCounts;
};

} // namespace effopt::onnx_import

#endif // EFFOPT_LIB_IMPORT_ONNX_NODEIMPORTER_H
