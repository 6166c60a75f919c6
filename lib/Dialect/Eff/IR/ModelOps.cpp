//===- ModelOps.cpp - parameters and constants ----------------------------===//

#include "effopt/Dialect/Eff/IR/EffOps.h"

using namespace mlir;
using namespace effopt::eff;

LogicalResult ParameterOp::verify() {
  if (std::optional<ElementsAttr> value = getInitialValue()) {
    // A ZeRO-3 shard (eff.shard_of) may keep the whole tensor's initial
    // value: each rank takes its block when the run starts.
    Type whole;
    if (auto shape = (*this)->getAttrOfType<DenseI64ArrayAttr>(
            kShardOfAttrName))
      whole = getTensorType().clone(shape.asArrayRef());
    if (value->getType() != getType() && value->getType() != whole) {
      InFlightDiagnostic diag = emitOpError("initial value has type ")
                                << value->getType()
                                << " but the parameter is declared "
                                << getType();
      if (whole)
        diag << " (a shard of " << whole << ")";
      return diag;
    }
  }
  // Frozen parameters may also be integer storage (the packed codes of an
  // NF4 weight, eff-quantize-frozen).
  if (getRole() != ParamRole::Buffer && getRole() != ParamRole::OptimizerState &&
      !isa<FloatType>(getTensorType().getElementType()) &&
      !(getRole() == ParamRole::Frozen &&
        getTensorType().getElementType().isSignlessInteger(8)))
    return emitOpError("a ")
           << stringifyParamRole(getRole())
           << " parameter must have a floating-point element type, not "
           << getTensorType().getElementType();
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getValue().getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

int64_t ConstantOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// NF4 storage
//===----------------------------------------------------------------------===//

LogicalResult
NF4EncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t blockSize, int64_t nestedBlockSize) {
  if (blockSize < 1 || nestedBlockSize < 1)
    return emitError() << "block sizes must be positive, got block_size = "
                       << blockSize << " and nested_block_size = "
                       << nestedBlockSize;
  return success();
}

int64_t NF4EncodingAttr::getNumBlocks(int64_t elements) const {
  return static_cast<int64_t>(llvm::divideCeil(elements, getBlockSize()));
}

void NF4EncodingAttr::getStorageTypes(int64_t elements,
                                      SmallVectorImpl<Type> &types) const {
  MLIRContext *ctx = getContext();
  auto i8 = IntegerType::get(ctx, 8);
  auto f32 = Float32Type::get(ctx);
  int64_t blocks = getNumBlocks(elements);
  types.push_back(RankedTensorType::get(
      {static_cast<int64_t>(llvm::divideCeil(elements, 2))}, i8));
  types.push_back(RankedTensorType::get({blocks}, i8));
  types.push_back(RankedTensorType::get(
      {static_cast<int64_t>(llvm::divideCeil(blocks, getNestedBlockSize()))},
      f32));
  types.push_back(RankedTensorType::get({}, f32));
}

int64_t NF4EncodingAttr::getStorageBytes(int64_t elements) const {
  int64_t blocks = getNumBlocks(elements);
  return static_cast<int64_t>(llvm::divideCeil(elements, 2) + blocks +
                              4 * llvm::divideCeil(blocks, getNestedBlockSize()) +
                              4);
}

LogicalResult NF4PackOp::verify() {
  RankedTensorType type = getResult().getType();
  auto nf4 = dyn_cast_or_null<NF4EncodingAttr>(type.getEncoding());
  if (!nf4)
    return emitOpError("result must have the #eff.nf4 encoding, got ")
           << type;
  SmallVector<Type> expected;
  nf4.getStorageTypes(type.getNumElements(), expected);
  const char *names[] = {"codes", "absmax", "nested_absmax", "nested_offset"};
  for (auto [i, operand] : llvm::enumerate(getOperands()))
    if (operand.getType() != expected[i])
      return emitOpError()
             << names[i] << " of a " << type.getNumElements()
             << "-element weight must be " << expected[i] << ", got "
             << operand.getType();
  for (OpOperand &use : getResult().getUses()) {
    auto linear = dyn_cast<LinearOp>(use.getOwner());
    if (!linear || use.getOperandNumber() != 1)
      return emitOpError("an NF4 weight can only be the weight operand (b) "
                         "of eff.linear, but it is operand ")
             << use.getOperandNumber() << " of "
             << use.getOwner()->getName();
  }
  return success();
}

int64_t NF4PackOp::getFlops() { return 0; }
