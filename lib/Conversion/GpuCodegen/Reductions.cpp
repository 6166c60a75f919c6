//===- Reductions.cpp - how a linalg.generic reduces, for GPU kernels -----===//

#include "effopt/Conversion/GpuCodegen/Reductions.h"
#include "effopt/Conversion/GpuCodegen/RowGroups.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace effopt {

static std::optional<gpu::AllReduceOperation> reduceKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<gpu::AllReduceOperation>>(
             op)
      .Case<arith::AddFOp, arith::AddIOp>(
          [](auto) { return gpu::AllReduceOperation::ADD; })
      .Case<arith::MulFOp, arith::MulIOp>(
          [](auto) { return gpu::AllReduceOperation::MUL; })
      .Case([](arith::MaximumFOp) { return gpu::AllReduceOperation::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return gpu::AllReduceOperation::MINIMUMF; })
      .Case([](arith::MaxNumFOp) { return gpu::AllReduceOperation::MAXNUMF; })
      .Case([](arith::MinNumFOp) { return gpu::AllReduceOperation::MINNUMF; })
      .Case([](arith::MaxSIOp) { return gpu::AllReduceOperation::MAXSI; })
      .Case([](arith::MinSIOp) { return gpu::AllReduceOperation::MINSI; })
      .Case([](arith::MaxUIOp) { return gpu::AllReduceOperation::MAXUI; })
      .Case([](arith::MinUIOp) { return gpu::AllReduceOperation::MINUI; })
      .Case([](arith::AndIOp) { return gpu::AllReduceOperation::AND; })
      .Case([](arith::OrIOp) { return gpu::AllReduceOperation::OR; })
      .Case([](arith::XOrIOp) { return gpu::AllReduceOperation::XOR; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The value `x` with `x combine identity == x` for every x.
static TypedAttr identityOf(gpu::AllReduceOperation kind, Type type) {
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    switch (kind) {
    case gpu::AllReduceOperation::ADD:
      return FloatAttr::get(type, llvm::APFloat::getZero(sem));
    case gpu::AllReduceOperation::MUL:
      return FloatAttr::get(type, llvm::APFloat::getOne(sem));
    case gpu::AllReduceOperation::MAXIMUMF:
    case gpu::AllReduceOperation::MAXNUMF:
      return FloatAttr::get(type,
                            llvm::APFloat::getInf(sem, /*Negative=*/true));
    case gpu::AllReduceOperation::MINIMUMF:
    case gpu::AllReduceOperation::MINNUMF:
      return FloatAttr::get(type, llvm::APFloat::getInf(sem));
    default:
      return {};
    }
  }
  auto intType = dyn_cast<IntegerType>(type);
  if (!intType)
    return {};
  unsigned width = intType.getWidth();
  switch (kind) {
  case gpu::AllReduceOperation::ADD:
  case gpu::AllReduceOperation::OR:
  case gpu::AllReduceOperation::XOR:
  case gpu::AllReduceOperation::MAXUI:
    return IntegerAttr::get(type, llvm::APInt::getZero(width));
  case gpu::AllReduceOperation::MUL:
    return IntegerAttr::get(type, llvm::APInt(width, 1));
  case gpu::AllReduceOperation::AND:
  case gpu::AllReduceOperation::MINUI:
    return IntegerAttr::get(type, llvm::APInt::getAllOnes(width));
  case gpu::AllReduceOperation::MAXSI:
    return IntegerAttr::get(type, llvm::APInt::getSignedMinValue(width));
  case gpu::AllReduceOperation::MINSI:
    return IntegerAttr::get(type, llvm::APInt::getSignedMaxValue(width));
  default:
    return {};
  }
}

/// True when `value` (in the payload of `op`) depends on no output block
/// argument.
static bool independentOfOutputs(linalg::GenericOp op, Value value) {
  SmallVector<Value> worklist{value};
  DenseSet<Value> seen;
  Block &body = op.getRegion().front();
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == &body && arg.getArgNumber() >= op.getNumDpsInputs())
        return false;
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body)
      continue;
    if (def->getNumRegions() != 0)
      return false;
    worklist.append(def->operand_begin(), def->operand_end());
  }
  return true;
}

FailureOr<SmallVector<Combiner>> matchCombiners(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  SmallVector<Combiner> combiners;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument arg = op.getMatchingBlockArgument(&init);
    unsigned k = init.getOperandNumber() - op.getNumDpsInputs();
    if (!arg.hasOneUse())
      return failure();
    Operation *user = *arg.getUsers().begin();
    if (user->getBlock() != &body || user->getNumOperands() != 2 ||
        user->getNumResults() != 1)
      return failure();
    std::optional<gpu::AllReduceOperation> kind = reduceKind(user);
    if (!kind)
      return failure();
    Value result = user->getResult(0);
    if (!result.hasOneUse() || yield.getValues()[k] != result)
      return failure();
    Value other =
        user->getOperand(0) == arg ? user->getOperand(1) : user->getOperand(0);
    if (other == arg || !independentOfOutputs(op, other))
      return failure();
    TypedAttr identity = identityOf(*kind, arg.getType());
    if (!identity)
      return failure();
    combiners.push_back({user, *kind, identity});
  }
  return combiners;
}

std::optional<unsigned> innermostAccessedDim(linalg::GenericOp op) {
  OpOperand *widest = nullptr;
  int64_t widestRank = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<ShapedType>(input->get().getType());
    if (type && type.getRank() > widestRank) {
      widest = input;
      widestRank = type.getRank();
    }
  }
  if (!widest)
    return std::nullopt;
  AffineMap map = op.getMatchingIndexingMap(widest);
  if (auto dim = dyn_cast<AffineDimExpr>(map.getResults().back()))
    return dim.getPosition();
  return std::nullopt;
}

bool isOnlineLogSumExp(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 2 || op.getNumReductionLoops() == 0)
    return false;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  BlockArgument m = op.getMatchingBlockArgument(op.getDpsInitOperand(0));
  BlockArgument s = op.getMatchingBlockArgument(op.getDpsInitOperand(1));
  if (!m.getType().isF32() || !s.getType().isF32())
    return false;
  // m' = max(m, x), x from the inputs.
  auto newMax = yield.getOperand(0).getDefiningOp<arith::MaximumFOp>();
  if (!newMax || newMax.getLhs() != m ||
      !independentOfOutputs(op, newMax.getRhs()))
    return false;
  Value x = newMax.getRhs();
  // s' = s * rescale + term: s read once, by that product.
  auto newSum = yield.getOperand(1).getDefiningOp<arith::AddFOp>();
  if (!newSum || !s.hasOneUse())
    return false;
  auto scaled = newSum.getLhs().getDefiningOp<arith::MulFOp>();
  if (!scaled || scaled.getLhs() != s)
    return false;
  // rescale = m == m' ? 1 : exp(m - m'); term = m' == -inf ? 0 : exp(x - m').
  auto expOf = [&](Value v, Value a, Value b) {
    auto select = v.getDefiningOp<arith::SelectOp>();
    if (!select)
      return false;
    auto exp = select.getFalseValue().getDefiningOp<math::ExpOp>();
    auto sub = exp ? exp.getOperand().getDefiningOp<arith::SubFOp>()
                   : arith::SubFOp();
    return sub && sub.getLhs() == a && sub.getRhs() == b &&
           select.getCondition().getDefiningOp<arith::CmpFOp>();
  };
  if (!expOf(scaled.getRhs(), m, newMax) ||
      !expOf(newSum.getRhs(), x, newMax))
    return false;
  // m feeds only m', the rescale's compare and its difference.
  return llvm::all_of(m.getUsers(), [&](Operation *user) {
    return user == newMax.getOperation() || isa<arith::CmpFOp>(user) ||
           isa<arith::SubFOp>(user);
  });
}

bool isCombinedAcrossThreads(linalg::GenericOp op) {
  if (op.getNumReductionLoops() == 0 || failed(matchCombiners(op)))
    return false;
  if (op.getNumParallelLoops() == 0)
    return true;
  std::optional<unsigned> inner = innermostAccessedDim(op);
  return inner &&
         op.getIteratorTypesArray()[*inner] == utils::IteratorType::reduction;
}

/// The bytes of a contiguous memref with a static shape, if known.
static std::optional<int64_t> staticBytes(MemRefType type) {
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      !type.getElementType().isIntOrFloat())
    return std::nullopt;
  return type.getNumElements() *
         llvm::divideCeil(type.getElementType().getIntOrFloatBitWidth(), 8);
}

ByteRange byteRangeOf(Value value) {
  ByteRange range{value, 0, std::nullopt};
  auto type = dyn_cast<MemRefType>(value.getType());
  if (type)
    range.size = staticBytes(type);
  for (int depth = 0; depth < 16; ++depth) {
    Operation *def = range.root.getDefiningOp();
    if (!def)
      break;
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
      if (!shift)
        return {range.root, 0, std::nullopt};
      range.begin += *shift;
      range.root = view.getSource();
      continue;
    }
    // A subview with a static layout of a source that starts at its base:
    // the span from its first to its last element (the step's labels,
    // sliced per loss chunk).
    if (auto subview = dyn_cast<memref::SubViewOp>(def)) {
      MemRefType sourceType = subview.getSourceType();
      MemRefType resultType = subview.getType();
      SmallVector<int64_t> strides;
      int64_t offset, sourceOffset;
      SmallVector<int64_t> sourceStrides;
      if (failed(sourceType.getStridesAndOffset(sourceStrides, sourceOffset)) ||
          sourceOffset != 0 ||
          failed(resultType.getStridesAndOffset(strides, offset)) ||
          ShapedType::isDynamic(offset) || !resultType.hasStaticShape() ||
          llvm::any_of(strides, ShapedType::isDynamic) ||
          !resultType.getElementType().isIntOrFloat())
        return {range.root, 0, std::nullopt};
      int64_t elementBytes =
          llvm::divideCeil(resultType.getElementTypeBitWidth(), 8);
      int64_t last = 0;
      for (auto [size, stride] : llvm::zip(resultType.getShape(), strides))
        last += (size - 1) * stride;
      range.begin += offset * elementBytes;
      // Reached through reshapes only when contiguous: then the outer
      // size is its size.
      if (depth == 0 || !range.size)
        range.size = (last + 1) * elementBytes;
      range.root = subview.getSource();
      continue;
    }
    if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp>(
            def)) {
      // Same elements, same bytes (contiguous layouts only).
      auto sourceType = dyn_cast<MemRefType>(def->getOperand(0).getType());
      auto resultType = dyn_cast<MemRefType>(def->getResult(0).getType());
      if (!sourceType || !resultType ||
          !memref::isStaticShapeAndContiguousRowMajor(sourceType) ||
          !memref::isStaticShapeAndContiguousRowMajor(resultType))
        return {def->getOperand(0), 0, std::nullopt};
      range.root = def->getOperand(0);
      continue;
    }
    break;
  }
  return range;
}

/// Whether `root` is an object of its own: no other root shares its memory.
static bool isDistinctObject(Value root) {
  if (auto arg = dyn_cast<BlockArgument>(root))
    return isa<func::FuncOp>(arg.getOwner()->getParentOp()) &&
           arg.getOwner()->isEntryBlock();
  return isa_and_nonnull<memref::AllocOp, memref::AllocaOp,
                         memref::GetGlobalOp>(root.getDefiningOp());
}

bool mayOverlap(Value a, Value b) {
  ByteRange ra = byteRangeOf(a), rb = byteRangeOf(b);
  if (ra.root != rb.root) {
    auto globalA = ra.root.getDefiningOp<memref::GetGlobalOp>();
    auto globalB = rb.root.getDefiningOp<memref::GetGlobalOp>();
    if (globalA && globalB)
      return globalA.getName() == globalB.getName();
    return !isDistinctObject(ra.root) || !isDistinctObject(rb.root);
  }
  if (!ra.size || !rb.size)
    return true;
  return ra.begin < rb.begin + *rb.size && rb.begin < ra.begin + *ra.size;
}

/// The scalar an all-parallel generic stores into every element of its one
/// output (a generalized linalg.fill), else null.
static Value filledValue(linalg::GenericOp op) {
  if (op.getNumReductionLoops() != 0 || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || !op.hasPureBufferSemantics())
    return {};
  OpOperand *input = op.getDpsInputOperand(0);
  if (isa<ShapedType>(input->get().getType()))
    return {};
  if (!op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isPermutation())
    return {};
  auto yield = cast<linalg::YieldOp>(op.getRegion().front().getTerminator());
  if (yield.getValues().size() != 1 ||
      yield.getValues()[0] != op.getMatchingBlockArgument(input))
    return {};
  return input->get();
}

std::optional<FoldableFill> matchFoldableFill(linalg::GenericOp fill) {
  Value value = filledValue(fill);
  if (!value)
    return std::nullopt;
  Value buffer = fill.getDpsInitOperand(0)->get();
  auto bufferType = cast<MemRefType>(buffer.getType());
  if (value.getType() != bufferType.getElementType() ||
      !bufferType.hasStaticShape())
    return std::nullopt;
  // The first later op that touches the buffer, past address arithmetic
  // and ops that touch other memory only (bufferization puts the fill of a
  // split reduction's result before the partial sums' fill and loop).
  auto touchesBuffer = [&](linalg::GenericOp op) {
    return llvm::any_of(op->getOperands(),
                        [&](Value v) {
                          return isa<MemRefType>(v.getType()) &&
                                 mayOverlap(v, buffer);
                        }) ||
           llvm::any_of(gatheredMemrefs(op),
                        [&](Value v) { return mayOverlap(v, buffer); });
  };
  constexpr int kMaxOpsBetween = 16;
  linalg::GenericOp reduction;
  int between = 0;
  for (Operation *next = fill->getNextNode(); next && !reduction;
       next = next->getNextNode()) {
    if (isMemoryEffectFree(next) && next->getNumRegions() == 0)
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(next);
    if (!generic || !generic.hasPureBufferSemantics() ||
        ++between > kMaxOpsBetween)
      return std::nullopt;
    if (touchesBuffer(generic))
      reduction = generic;
  }
  if (!reduction || reduction.getNumReductionLoops() == 0)
    return std::nullopt;
  std::optional<unsigned> output;
  for (OpOperand &init : reduction.getDpsInitsMutable()) {
    if (init.get() != buffer)
      continue;
    if (output)
      return std::nullopt;
    output = init.getOperandNumber() - reduction.getNumDpsInputs();
  }
  if (!output)
    return std::nullopt;
  // Every element of the buffer is a point of the reduction's output.
  OpOperand *init = reduction.getDpsInitOperand(*output);
  AffineMap map = reduction.getMatchingIndexingMap(init);
  if (!map.isProjectedPermutation() ||
      map.getNumResults() != bufferType.getRank())
    return std::nullopt;
  SmallVector<int64_t> ranges = reduction.getStaticLoopRanges();
  for (auto [expr, size] : llvm::zip(map.getResults(), bufferType.getShape()))
    if (ranges[cast<AffineDimExpr>(expr).getPosition()] != size)
      return std::nullopt;
  // No other operand reads or writes the buffer's memory.
  for (OpOperand &operand : reduction->getOpOperands()) {
    if (&operand == init || !isa<MemRefType>(operand.get().getType()))
      continue;
    if (mayOverlap(operand.get(), buffer))
      return std::nullopt;
  }
  return FoldableFill{reduction, *output, value};
}

bool sameMemory(Value a, Value b) {
  if (a == b)
    return true;
  ByteRange ra = byteRangeOf(a), rb = byteRangeOf(b);
  return ra.root == rb.root && ra.begin == rb.begin && ra.size && rb.size &&
         a.getType() == b.getType();
}

linalg::GenericOp matchEpilogue(linalg::GenericOp reduction,
                                ArrayRef<Value> sizes,
                                ArrayRef<unsigned> parallelDims) {
  if (parallelDims.empty())
    return {};
  Operation *next = reduction->getNextNode();
  while (next && isMemoryEffectFree(next) && next->getNumRegions() == 0)
    next = next->getNextNode();
  auto epilogue = dyn_cast_or_null<linalg::GenericOp>(next);
  // Gathers read memory no operand shows: left to kernels of their own.
  if (!epilogue || !gatheredMemrefs(reduction).empty() ||
      !gatheredMemrefs(epilogue).empty() ||
      !epilogue.hasPureBufferSemantics() ||
      epilogue.getNumReductionLoops() != 0 ||
      epilogue.getNumLoops() != parallelDims.size())
    return {};
  // The same points, in the same order.
  SmallVector<int64_t> ranges = epilogue.getStaticLoopRanges();
  for (auto [i, d] : llvm::enumerate(parallelDims)) {
    std::optional<int64_t> size = getConstantIntValue(sizes[d]);
    if (!size || ranges[i] != *size)
      return {};
  }
  // Output k of the reduction as the epilogue's loops index it: its map
  // with each parallel dim renumbered to its epilogue loop.
  MLIRContext *context = reduction.getContext();
  auto pointMap = [&](OpOperand *init) -> std::optional<AffineMap> {
    SmallVector<AffineExpr> results;
    for (AffineExpr expr :
         reduction.getMatchingIndexingMap(init).getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim)
        return std::nullopt;
      auto it = llvm::find(parallelDims, dim.getPosition());
      if (it == parallelDims.end())
        return std::nullopt;
      results.push_back(
          getAffineDimExpr(std::distance(parallelDims.begin(), it), context));
    }
    return AffineMap::get(parallelDims.size(), 0, results, context);
  };
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    if (!isa<MemRefType>(input->get().getType()))
      continue;
    OpOperand *source = nullptr;
    for (OpOperand &init : reduction.getDpsInitsMutable())
      if (init.get() == input->get())
        source = &init;
    if (!source) {
      // Other memory (an optimizer update's parameter and moments beside
      // the gradient the reduction sums): loaded where the epilogue runs,
      // if the reduction writes none of it and the epilogue writes it only
      // at the point it reads (in place).
      for (OpOperand &init : reduction.getDpsInitsMutable())
        if (mayOverlap(init.get(), input->get()))
          return {};
      AffineMap read = epilogue.getMatchingIndexingMap(input);
      for (OpOperand &output : epilogue.getDpsInitsMutable())
        if (mayOverlap(output.get(), input->get()) &&
            (!sameMemory(output.get(), input->get()) ||
             epilogue.getMatchingIndexingMap(&output) != read))
          return {};
      continue;
    }
    std::optional<AffineMap> at = pointMap(source);
    if (!at || *at != epilogue.getMatchingIndexingMap(input))
      return {};
  }
  for (OpOperand &output : epilogue.getDpsInitsMutable()) {
    AffineMap map = epilogue.getMatchingIndexingMap(&output);
    if (!map.isPermutation())
      return {};
    // The payload may read its output's old value: not in an epilogue.
    if (!epilogue.getMatchingBlockArgument(&output).use_empty())
      return {};
    for (OpOperand *input : reduction.getDpsInputOperands())
      if (isa<MemRefType>(input->get().getType()) &&
          mayOverlap(input->get(), output.get()))
        return {};
    for (OpOperand &init : reduction.getDpsInitsMutable()) {
      if (!mayOverlap(init.get(), output.get()))
        continue;
      std::optional<AffineMap> at = pointMap(&init);
      if (!sameMemory(init.get(), output.get()) || !at || *at != map)
        return {};
    }
  }
  return epilogue;
}

/// The row-major linear index of `map`'s results into `shape`.
static AffineExpr linearIndex(AffineMap map, ArrayRef<int64_t> shape) {
  AffineExpr linear = getAffineConstantExpr(0, map.getContext());
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    linear = linear + map.getResult(i) * stride;
    stride *= shape[i];
  }
  return simplifyAffineExpr(linear, map.getNumDims(), map.getNumSymbols());
}

/// Whether `map` (of a member's loops, rows first) points at the row's
/// linear index in a contiguous buffer of `type` holding one value per row.
static bool indexesRow(AffineMap map, MemRefType type, ArrayRef<int64_t> rows) {
  int64_t count = 1;
  for (int64_t r : rows)
    count *= r;
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getNumElements() != count || map.getNumDims() < rows.size())
    return false;
  AffineMap rowMap = AffineMap::getMultiDimIdentityMap(map.getNumDims(),
                                                       map.getContext())
                         .getSubMap(llvm::to_vector(llvm::seq<unsigned>(
                             0, static_cast<unsigned>(rows.size()))));
  return linearIndex(map, type.getShape()) == linearIndex(rowMap, rows);
}

bool readsRowValue(Value read, AffineMap map, Value written,
                   ArrayRef<int64_t> rows) {
  auto readType = dyn_cast<MemRefType>(read.getType());
  auto writtenType = dyn_cast<MemRefType>(written.getType());
  if (!readType || !writtenType ||
      readType.getElementType() != writtenType.getElementType() ||
      !writtenType.getLayout().isIdentity())
    return false;
  ByteRange a = byteRangeOf(read), b = byteRangeOf(written);
  return a.root == b.root && a.begin == b.begin && a.size && a.size == b.size &&
         indexesRow(map, readType, rows);
}

SmallVector<Value> gatheredMemrefs(linalg::GenericOp op) {
  SmallVector<Value> memrefs;
  op.getRegion().walk([&](memref::LoadOp load) {
    if (!op->isAncestor(load.getMemRef().getParentRegion()->getParentOp()))
      memrefs.push_back(load.getMemRef());
  });
  return memrefs;
}

/// Whether every load of `memory` in `op`'s payload indexes its leading
/// `rows` dims by the op's first `rows` loops (linalg.index 0, 1, ...):
/// it reads only its own row.
static bool gathersOwnRow(linalg::GenericOp op, Value memory, size_t rows) {
  bool own = true;
  op.getRegion().walk([&](memref::LoadOp load) {
    if (load.getMemRef() != memory)
      return;
    if (load.getIndices().size() < rows) {
      own = false;
      return;
    }
    for (size_t d = 0; d < rows; ++d) {
      auto index = load.getIndices()[d].getDefiningOp<linalg::IndexOp>();
      if (!index || index.getDim() != d)
        own = false;
    }
  });
  return own;
}

std::optional<SmallVector<int64_t>>
rowsOfRowReduction(linalg::GenericOp op) {
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if (sizes.size() < 2 || llvm::any_of(sizes, ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < sizes.size(); ++d)
    if (linalg::isReductionIterator(iterators[d]) != (d + 1 == sizes.size()))
      return std::nullopt;
  sizes.pop_back();
  return sizes;
}

bool isPerRowOp(linalg::GenericOp op, ArrayRef<int64_t> rows) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (op.getNumReductionLoops() != 0 || ranges.size() < rows.size() ||
      ArrayRef<int64_t>(ranges).take_front(rows.size()) != rows)
    return false;
  return llvm::all_of(ArrayRef<int64_t>(ranges).drop_front(rows.size()),
                      [](int64_t r) { return r == 1; });
}

std::optional<RowEpilogue> matchRowEpilogue(linalg::GenericOp lse) {
  if (!lse.hasPureBufferSemantics() || !isOnlineLogSumExp(lse))
    return std::nullopt;
  std::optional<SmallVector<int64_t>> rowSizes = rowsOfRowReduction(lse);
  if (!rowSizes)
    return std::nullopt;
  SmallVector<int64_t> sizes = lse.getStaticLoopRanges();
  ArrayRef<int64_t> rows = *rowSizes;
  // Per-row values written so far (memrefs), and memory read from memory.
  SmallVector<Value> written;
  SmallVector<Value> loaded(lse.getDpsInputs());
  for (OpOperand &init : lse.getDpsInitsMutable()) {
    if (!indexesRow(lse.getMatchingIndexingMap(&init),
                    cast<MemRefType>(init.get().getType()), rows))
      return std::nullopt;
    written.push_back(init.get());
  }
  // Whether operand `operand` of `member` reads a per-row value written
  // so far (else it must overlap none of them).
  auto forwarded = [&](linalg::GenericOp member, OpOperand &operand) {
    return llvm::any_of(written, [&](Value w) {
      return readsRowValue(operand.get(), member.getMatchingIndexingMap(&operand),
                           w, rows);
    });
  };
  auto overlapsWritten = [&](Value v) {
    return llvm::any_of(written, [&](Value w) { return mayOverlap(v, w); });
  };
  // Loads a member makes; false when one overlaps a per-row output.
  auto collectLoads = [&](linalg::GenericOp member, bool elementwise) {
    for (OpOperand *input : member.getDpsInputOperands()) {
      if (!isa<MemRefType>(input->get().getType()))
        continue;
      if (forwarded(member, *input))
        continue;
      if (overlapsWritten(input->get()))
        return false;
      loaded.push_back(input->get());
    }
    for (Value gathered : gatheredMemrefs(member)) {
      if (overlapsWritten(gathered))
        return false;
      // A per-row member's gathers run before the barrier, so the
      // elementwise op may overwrite what they read; its own may not.
      if (elementwise &&
          llvm::any_of(member.getDpsInits(),
                       [&](Value out) { return mayOverlap(out, gathered); }))
        return false;
      loaded.push_back(gathered);
    }
    for (OpOperand &init : member.getDpsInitsMutable())
      if (!member.getMatchingBlockArgument(&init).use_empty())
        return false;
    return true;
  };
  RowEpilogue epilogue;
  for (Operation *next = lse->getNextNode(); next; next = next->getNextNode()) {
    if (isMemoryEffectFree(next) && next->getNumRegions() == 0)
      continue;
    auto member = dyn_cast<linalg::GenericOp>(next);
    if (!member || !member.hasPureBufferSemantics() ||
        member.getNumReductionLoops() != 0)
      return std::nullopt;
    SmallVector<int64_t> ranges = member.getStaticLoopRanges();
    if (ranges == sizes) {
      if (!collectLoads(member, /*elementwise=*/true))
        return std::nullopt;
      epilogue.elementwise = member;
      break;
    }
    if (!isPerRowOp(member, rows) ||
        !collectLoads(member, /*elementwise=*/false))
      return std::nullopt;
    for (OpOperand &init : member.getDpsInitsMutable()) {
      if (!indexesRow(member.getMatchingIndexingMap(&init),
                      cast<MemRefType>(init.get().getType()), rows))
        return std::nullopt;
      // Rewriting an earlier per-row value is fine (readers after take the
      // new one); overlapping it otherwise is not.
      for (Value w : written)
        if (mayOverlap(init.get(), w) &&
            !readsRowValue(init.get(), member.getMatchingIndexingMap(&init),
                           w, rows))
          return std::nullopt;
      written.push_back(init.get());
    }
    epilogue.perRow.push_back(member);
  }
  linalg::GenericOp elementwise = epilogue.elementwise;
  if (!elementwise)
    return std::nullopt;
  // Every per-row output apart from what is read from memory.
  for (Value w : written)
    for (Value l : loaded)
      if (mayOverlap(w, l))
        return std::nullopt;
  // The elementwise op's outputs: identity-indexed, apart from the per-row
  // values and its per-row inputs; over the rows' inputs only in place.
  Value rowsInput = lse.getDpsInputOperand(0)->get();
  for (OpOperand &init : elementwise.getDpsInitsMutable()) {
    if (!elementwise.getMatchingIndexingMap(&init).isIdentity() ||
        overlapsWritten(init.get()))
      return std::nullopt;
    for (OpOperand *input : elementwise.getDpsInputOperands()) {
      if (!isa<MemRefType>(input->get().getType()) ||
          !mayOverlap(init.get(), input->get()))
        continue;
      if (!sameMemory(init.get(), input->get()) ||
          !elementwise.getMatchingIndexingMap(input).isIdentity())
        return std::nullopt;
    }
    if (mayOverlap(init.get(), rowsInput) &&
        (!sameMemory(init.get(), rowsInput) ||
         !lse.getMatchingIndexingMap(lse.getDpsInputOperand(0)).isIdentity()))
      return std::nullopt;
    // Other blocks still run their per-row members while this one writes
    // its row: what those read from memory lies apart from the output, but
    // for a gather of the row's own elements of it (the target's logit of
    // an in-place gradient), which this block's barrier orders.
    for (linalg::GenericOp member : epilogue.perRow) {
      for (OpOperand *input : member.getDpsInputOperands())
        if (isa<MemRefType>(input->get().getType()) &&
            mayOverlap(init.get(), input->get()))
          return std::nullopt;
      for (Value gathered : gatheredMemrefs(member))
        if (mayOverlap(init.get(), gathered) &&
            (!sameMemory(init.get(), gathered) ||
             !gathersOwnRow(member, gathered, rows.size())))
          return std::nullopt;
    }
  }
  SmallVector<linalg::GenericOp> all{lse};
  llvm::append_range(all, epilogue.perRow);
  all.push_back(elementwise);
  if (kernelArgumentBytes(all) > kMaxKernelArgumentBytes)
    return std::nullopt;
  return epilogue;
}

} // namespace effopt
