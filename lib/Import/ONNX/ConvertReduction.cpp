//===- ConvertReduction.cpp - ONNX reductions to eff ----------------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

/// ReduceSum (opset >= 13) and every reduction from opset 18 take `axes` as
/// an input; older reductions take an attribute.
template <typename OpTy>
LogicalResult convertReduce(NodeContext &ctx) {
  SmallVector<int64_t> axes;
  bool axesAsInput = ctx.node.op_type() == "ReduceSum" ? ctx.opset >= 13
                                                        : ctx.opset >= 18;
  if (axesAsInput) {
    if (ctx.hasInput(1)) {
      FailureOr<SmallVector<int64_t>> a = ctx.constantInts(1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else {
    axes = ctx.getInts("axes");
  }
  RankedTensorType type = ctx.inputType(0);
  if (axes.empty()) {
    if (ctx.getInt("noop_with_empty_axes", 0)) {
      ctx.setOutput(0, ctx.input(0));
      return success();
    }
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
  }
  for (int64_t &axis : axes) {
    FailureOr<int64_t> d = ctx.normalizedAxis(axis, type.getRank());
    if (failed(d))
      return failure();
    axis = *d;
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return ctx.error("an axis appears twice in " + eff::formatShape(axes));
  bool keepDims = ctx.getInt("keepdims", 1) != 0;
  ctx.setOutput(0, ctx.create<OpTy>(ctx.input(0), axes, keepDims));
  return success();
}

} // namespace

void effopt::onnx_import::populateReductionConverters(ConverterMap &map) {
  map["ReduceSum"] = convertReduce<eff::ReduceSumOp>;
  map["ReduceMean"] = convertReduce<eff::ReduceMeanOp>;
  map["ReduceMax"] = convertReduce<eff::ReduceMaxOp>;
  map["ReduceMin"] = convertReduce<eff::ReduceMinOp>;
}
