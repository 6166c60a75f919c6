//===- ReductionOps.cpp - reductions: types and verifiers -----------------===//

#include "OpUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

using namespace mlir;
using namespace effopt::eff;

/// The reduced shape, or a diagnostic naming the bad axis.
static LogicalResult inferReducedType(const RuleDiagnoser &emitError,
                                      Value inputValue, ArrayRef<int64_t> axes,
                                      bool keepDims,
                                      SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> input =
      getRankedType(emitError, inputValue, "input");
  if (failed(input))
    return failure();
  int64_t rank = input->getRank();
  SmallVector<bool> reduced(rank, false);
  for (int64_t axis : axes) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized)
      return emitError(formatAxisOutOfRange(axis, rank));
    if (reduced[*normalized])
      return emitError("axes ", formatShape(axes), " name dimension ",
                       *normalized, " twice");
    reduced[*normalized] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      shape.push_back(input->getDimSize(d));
    else if (keepDims)
      shape.push_back(1);
  }
  types.push_back(input->clone(shape));
  return success();
}

#define EFF_REDUCE_OP(Op)                                                      \
  LogicalResult Op::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferReducedType(loc, adaptor.getInput(), adaptor.getAxes(),        \
                            adaptor.getKeepDims(), types);                     \
  }                                                                            \
  LogicalResult Op::verify() {                                                 \
    SmallVector<Type> types;                                                   \
    return inferReducedType(getOperation(), getInput(), getAxes(),             \
                            getKeepDims(), types);                             \
  }

EFF_REDUCE_OP(ReduceSumOp)
EFF_REDUCE_OP(ReduceMeanOp)
EFF_REDUCE_OP(ReduceMaxOp)
EFF_REDUCE_OP(ReduceMinOp)
#undef EFF_REDUCE_OP
