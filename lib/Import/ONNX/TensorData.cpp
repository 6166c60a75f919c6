//===- TensorData.cpp - ONNX tensor data to MLIR attributes ---------------===//

#include "NodeImporter.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Endian.h"

using namespace mlir;
using namespace effopt::onnx_import;

Type effopt::onnx_import::convertElementType(int32_t dataType,
                                             MLIRContext *context) {
  Builder b(context);
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::INT16:
    return b.getI16Type();
  case onnx::TensorProto::INT8:
    return b.getI8Type();
  case onnx::TensorProto::UINT8:
    return IntegerType::get(context, 8, IntegerType::Unsigned);
  case onnx::TensorProto::UINT16:
    return IntegerType::get(context, 16, IntegerType::Unsigned);
  case onnx::TensorProto::UINT32:
    return IntegerType::get(context, 32, IntegerType::Unsigned);
  case onnx::TensorProto::UINT64:
    return IntegerType::get(context, 64, IntegerType::Unsigned);
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  default:
    return {};
  }
}

StringRef effopt::onnx_import::dataTypeName(int32_t dataType) {
  if (onnx::TensorProto_DataType_IsValid(dataType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(dataType));
  return "UNKNOWN";
}

/// Bytes per element as ONNX stores them in `raw_data` (bool: 1).
static int64_t rawElementSize(Type elementType) {
  return std::max<int64_t>(1, elementType.getIntOrFloatBitWidth() / 8);
}

FailureOr<DenseElementsAttr> effopt::onnx_import::tensorToDenseAttr(
    const onnx::TensorProto &tensor, RankedTensorType type,
    ArrayRef<char> rawBytes, StringRef what,
    function_ref<InFlightDiagnostic()> emitError) {
  Type elementType = type.getElementType();
  int64_t count = type.getNumElements();

  // Little-endian packed data: raw_data or external bytes.
  if (!rawBytes.empty() || tensor.has_raw_data() ||
      tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    int64_t expected = count * rawElementSize(elementType);
    if (static_cast<int64_t>(rawBytes.size()) != expected) {
      emitError() << what << " has " << rawBytes.size()
                  << " bytes of data but its type " << type << " needs "
                  << expected;
      return failure();
    }
    if (elementType.isInteger(1)) {
      SmallVector<bool> values;
      values.reserve(count);
      for (char byte : rawBytes)
        values.push_back(byte != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(values));
    }
    bool isSplat = false;
    if (!DenseElementsAttr::isValidRawBuffer(type, rawBytes, isSplat)) {
      emitError() << what << ": data does not fit type " << type;
      return failure();
    }
    return DenseElementsAttr::getFromRawBuffer(type, rawBytes);
  }

  // Typed repeated fields.
  auto checkCount = [&](int64_t actual) -> LogicalResult {
    if (actual == count)
      return success();
    emitError() << what << " has " << actual << " values but its type "
                << type << " needs " << count;
    return failure();
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT: {
    if (failed(checkCount(tensor.float_data_size())))
      return failure();
    SmallVector<float> values(tensor.float_data().begin(),
                              tensor.float_data().end());
    return DenseElementsAttr::get(type, ArrayRef<float>(values));
  }
  case onnx::TensorProto::DOUBLE: {
    if (failed(checkCount(tensor.double_data_size())))
      return failure();
    SmallVector<double> values(tensor.double_data().begin(),
                               tensor.double_data().end());
    return DenseElementsAttr::get(type, ArrayRef<double>(values));
  }
  case onnx::TensorProto::INT64: {
    if (failed(checkCount(tensor.int64_data_size())))
      return failure();
    SmallVector<int64_t> values(tensor.int64_data().begin(),
                                tensor.int64_data().end());
    return DenseElementsAttr::get(type, ArrayRef<int64_t>(values));
  }
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64: {
    if (failed(checkCount(tensor.uint64_data_size())))
      return failure();
    SmallVector<APInt> values;
    for (uint64_t v : tensor.uint64_data())
      values.emplace_back(elementType.getIntOrFloatBitWidth(), v);
    return DenseElementsAttr::get(type, values);
  }
  case onnx::TensorProto::BOOL: {
    if (failed(checkCount(tensor.int32_data_size())))
      return failure();
    SmallVector<bool> values;
    for (int32_t v : tensor.int32_data())
      values.push_back(v != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16: {
    // 16-bit floats are stored as their bit patterns in int32_data.
    if (failed(checkCount(tensor.int32_data_size())))
      return failure();
    SmallVector<APInt> values;
    for (int32_t v : tensor.int32_data())
      values.emplace_back(16, static_cast<uint16_t>(v));
    return DenseElementsAttr::get(
        type.clone(IntegerType::get(type.getContext(), 16)), values)
        .bitcast(elementType);
  }
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::UINT16: {
    if (failed(checkCount(tensor.int32_data_size())))
      return failure();
    SmallVector<APInt> values;
    for (int32_t v : tensor.int32_data())
      values.emplace_back(elementType.getIntOrFloatBitWidth(),
                          static_cast<uint64_t>(static_cast<int64_t>(v)),
                          /*isSigned=*/true, /*implicitTrunc=*/true);
    return DenseElementsAttr::get(type, values);
  }
  default:
    emitError() << what << " has unsupported data type "
                << dataTypeName(tensor.data_type());
    return failure();
  }
}
