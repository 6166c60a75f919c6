//===- RowGroups.cpp - chains of row ops one warp per row can run ---------===//
//
// See RowGroups.h. The legality rests on one property: a warp runs every
// member over its row with one lane per element (or per vector of
// elements), the same for all members, so a dependency between two
// members is safe when both touch the memory at the same address for the
// same (row, element): the same thread wrote it, earlier in program order.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/GpuCodegen/RowGroups.h"

#include "effopt/Conversion/GpuCodegen/Reductions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace effopt {
namespace {

/// The byte address a member's operand touches, as an affine function of
/// the row space (row dims..., the element in the row) over one root.
struct RowAddress {
  Value root;
  int64_t constant = 0;
  SmallVector<int64_t> coefficients;
  Type element;

  bool operator==(const RowAddress &other) const {
    return root == other.root && constant == other.constant &&
           coefficients == other.coefficients && element == other.element;
  }
};

} // namespace

/// How `op` iterates the row space `rows` x `rowLength`, if it does.
static std::optional<RowOpKind> classify(linalg::GenericOp op,
                                         ArrayRef<int64_t> rows,
                                         int64_t rowLength) {
  if (!op.hasPureBufferSemantics())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  size_t k = rows.size();
  if (ranges.size() < k || ranges.size() > k + 1 ||
      ArrayRef<int64_t>(ranges).take_front(k) != rows ||
      !llvm::all_of(ArrayRef<utils::IteratorType>(iterators).take_front(k),
                    linalg::isParallelIterator))
    return std::nullopt;
  if (ranges.size() == k)
    return RowOpKind::PerRow;
  bool reduces = linalg::isReductionIterator(iterators[k]);
  if (ranges[k] == rowLength)
    return reduces ? RowOpKind::Reduction : RowOpKind::Elementwise;
  if (ranges[k] == 1 && !reduces)
    return RowOpKind::PerRow;
  return std::nullopt;
}

/// The address function of memref operand `operand` of `op` (of kind
/// `kind` over `numRows` row dims), if its map is dims and constants and
/// its layout static.
static std::optional<RowAddress> rowAddress(linalg::GenericOp op,
                                            OpOperand &operand, RowOpKind kind,
                                            unsigned numRows) {
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  if (!type || !type.getElementType().isIntOrFloat() ||
      type.getElementTypeBitWidth() % 8 != 0)
    return std::nullopt;
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  ByteRange range = byteRangeOf(operand.get());
  RowAddress address{range.root, range.begin + offset * bytes,
                     SmallVector<int64_t>(numRows + 1, 0),
                     type.getElementType()};
  AffineMap map = op.getMatchingIndexingMap(&operand);
  for (auto [j, expr] : llvm::enumerate(map.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      unsigned d = dim.getPosition();
      // A per-row op's trailing unit loop is always 0.
      if (d == numRows && kind == RowOpKind::PerRow)
        continue;
      address.coefficients[d] += strides[j] * bytes;
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(expr);
    if (!c)
      return std::nullopt;
    address.constant += c.getValue() * strides[j] * bytes;
  }
  return address;
}

/// Whether the bytes `address` touches for distinct rows are disjoint:
/// row-major nesting, each row dim's step at least the extent of the dims
/// inside it (the element's run included).
static bool rowsDisjoint(const RowAddress &address, ArrayRef<int64_t> rows,
                         int64_t rowLength) {
  int64_t bytes = address.element.getIntOrFloatBitWidth() / 8;
  int64_t inner = address.coefficients.back();
  if (inner < 0)
    return false;
  int64_t extent = inner * (rowLength - 1) + bytes;
  for (int64_t i = static_cast<int64_t>(rows.size()) - 1; i >= 0; --i) {
    if (rows[i] == 1)
      continue;
    int64_t step = address.coefficients[i];
    if (step < extent)
      return false;
    extent += step * (rows[i] - 1);
  }
  return true;
}

/// Whether `op` reads operand `operand`: an input its payload uses, or an
/// output whose old value it uses (a reduction's initial value).
static bool reads(linalg::GenericOp op, OpOperand &operand) {
  return !op.getMatchingBlockArgument(&operand).use_empty() ||
         (op.isDpsInit(&operand) && op.getNumReductionLoops() != 0);
}

/// Whether each output of `op` has one writer per element: a projected
/// permutation naming every loop of a size other than 1 (for a reduction,
/// every parallel loop).
static bool writesOncePerPoint(linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return false;
    for (unsigned d = 0; d < map.getNumDims(); ++d)
      if (ranges[d] != 1 && linalg::isParallelIterator(iterators[d]) &&
          !map.isFunctionOfDim(d))
        return false;
  }
  return true;
}

int64_t kernelArgumentBytes(ArrayRef<linalg::GenericOp> ops) {
  llvm::SetVector<Value> passed;
  for (linalg::GenericOp op : ops)
    for (Value v : op->getOperands())
      if (!v.getDefiningOp<arith::ConstantOp>())
        passed.insert(v);
  int64_t bytes = 0;
  for (Value v : passed) {
    auto type = dyn_cast<MemRefType>(v.getType());
    bytes += type ? 8 * (3 + 2 * type.getRank()) : 8;
  }
  return bytes;
}

static bool touchesMemory(Value value) {
  return isa<MemRefType>(value.getType());
}

std::optional<RowGroup>
matchRowGroup(linalg::GenericOp seed, int64_t maxRowLength,
              llvm::function_ref<bool(linalg::GenericOp)> isWarpReduction,
              llvm::function_ref<int64_t(linalg::GenericOp, RowOpKind)>
                  ownWidth) {
  if (!seed.hasPureBufferSemantics())
    return std::nullopt;
  SmallVector<int64_t> ranges = seed.getStaticLoopRanges();
  if (ranges.size() < 2 || llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  RowGroup group;
  group.rows.assign(ranges.begin(), ranges.end() - 1);
  group.rowLength = ranges.back();
  if (group.rowLength < 2 || group.rowLength > maxRowLength)
    return std::nullopt;
  unsigned numRows = group.rows.size();

  // Whether `op` (of kind `kind`) can join the members so far; fills in
  // what it reads from them in registers.
  auto joins = [&](linalg::GenericOp op, RowOpKind kind,
                   DenseMap<unsigned, ForwardedRowValue> &forwarded) {
    if (kind == RowOpKind::Reduction && !isWarpReduction(op))
      return false;
    // One lane per element (or vector) of the row in every member, each
    // reduction in its own order.
    if (kind == RowOpKind::Reduction) {
      int64_t width = ownWidth(op, kind);
      if (group.width != 0 && width != group.width)
        return false;
      if (group.width == 0)
        for (auto [member, memberKind] :
             llvm::zip(group.members, group.kinds))
          if (memberKind == RowOpKind::Elementwise &&
              ownWidth(member, memberKind) < width)
            return false;
    } else if (kind == RowOpKind::Elementwise && group.width != 0 &&
               ownWidth(op, kind) < group.width) {
      return false;
    }
    if (!writesOncePerPoint(op))
      return false;
    // A reduction's threads read the row while lane 0 writes the result.
    if (kind == RowOpKind::Reduction)
      for (OpOperand *input : op.getDpsInputOperands())
        for (OpOperand &init : op.getDpsInitsMutable())
          if (touchesMemory(input->get()) &&
              mayOverlap(input->get(), init.get()))
            return false;
    for (Operation *later : group.deferred)
      for (OpOperand &x : later->getOpOperands())
        for (OpOperand &m : op->getOpOperands()) {
          if (!touchesMemory(x.get()) || !touchesMemory(m.get()))
            continue;
          bool xWrites = cast<DestinationStyleOpInterface>(later).isDpsInit(&x);
          if ((xWrites || op.isDpsInit(&m)) && mayOverlap(x.get(), m.get()))
            return false;
        }
    for (auto [j, member] : llvm::enumerate(group.members)) {
      for (OpOperand &a : member->getOpOperands()) {
        if (!touchesMemory(a.get()))
          continue;
        bool aWrites = member.isDpsInit(&a);
        for (OpOperand &m : op->getOpOperands()) {
          if (!touchesMemory(m.get()))
            continue;
          bool mWrites = op.isDpsInit(&m);
          if (!aWrites && !mWrites)
            continue;
          if (!mayOverlap(a.get(), m.get()))
            continue;
          // Writing what an earlier member reads: lanes of one row are not
          // ordered without a barrier, and the CPU emulation of warps
          // replays the code before each shuffle. A per-row value the
          // earlier member took from a register is no read of memory.
          if (!aWrites) {
            if (group.forwarded[j].count(a.getOperandNumber()))
              continue;
            // An elementwise member's lane read the element before the
            // same lane writes it (the planner puts a layer norm's output
            // over the GEMM output the residual add read); its values only
            // reach its own stores, so the emulation's replays stay exact.
            std::optional<RowAddress> read =
                rowAddress(member, a, group.kinds[j], numRows);
            std::optional<RowAddress> written =
                rowAddress(op, m, kind, numRows);
            if (group.kinds[j] == RowOpKind::Elementwise && read && written &&
                *read == *written &&
                rowsDisjoint(*read, group.rows, group.rowLength))
              continue;
            return false;
          }
          std::optional<RowAddress> written =
              rowAddress(member, a, group.kinds[j], numRows);
          std::optional<RowAddress> touched =
              rowAddress(op, m, kind, numRows);
          if (!written || !touched || !(*written == *touched) ||
              !rowsDisjoint(*written, group.rows, group.rowLength))
            return false;
          // A per-row value read: from the register of the latest writer
          // (lane 0 stored it; the other lanes never load it).
          if (!reads(op, m) || written->coefficients.back() != 0)
            continue;
          AffineMap map = op.getMatchingIndexingMap(&m);
          if (kind != RowOpKind::PerRow && map.isFunctionOfDim(numRows))
            return false;
          forwarded[m.getOperandNumber()] = ForwardedRowValue{
              static_cast<unsigned>(j),
              static_cast<unsigned>(a.getOperandNumber() -
                                    member.getNumDpsInputs())};
        }
      }
    }
    return true;
  };

  auto add = [&](linalg::GenericOp op, RowOpKind kind,
                 DenseMap<unsigned, ForwardedRowValue> forwarded) {
    if (kind == RowOpKind::Reduction && group.width == 0)
      group.width = ownWidth(op, kind);
    group.members.push_back(op);
    group.kinds.push_back(kind);
    group.forwarded.push_back(std::move(forwarded));
  };

  std::optional<RowOpKind> seedKind =
      classify(seed, group.rows, group.rowLength);
  if (!seedKind || *seedKind == RowOpKind::PerRow)
    return std::nullopt;
  {
    DenseMap<unsigned, ForwardedRowValue> none;
    if (!joins(seed, *seedKind, none))
      return std::nullopt;
    add(seed, *seedKind, std::move(none));
  }

  constexpr size_t kMaxDeferred = 8;
  for (Operation *op = seed->getNextNode(); op; op = op->getNextNode()) {
    if (isMemoryEffectFree(op) && op->getNumRegions() == 0)
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic || !generic.hasPureBufferSemantics())
      break;
    std::optional<RowOpKind> kind =
        classify(generic, group.rows, group.rowLength);
    DenseMap<unsigned, ForwardedRowValue> forwarded;
    if (kind && joins(generic, *kind, forwarded)) {
      SmallVector<linalg::GenericOp> members(group.members);
      members.push_back(generic);
      if (kernelArgumentBytes(members) > kMaxKernelArgumentBytes)
        break;
      add(generic, *kind, std::move(forwarded));
      continue;
    }
    if (group.deferred.size() == kMaxDeferred)
      break;
    group.deferred.push_back(op);
  }
  // Ops after the last member stay where they are.
  Operation *last = group.members.back();
  while (!group.deferred.empty() &&
         last->isBeforeInBlock(group.deferred.back()))
    group.deferred.pop_back();
  // One reduction and per-row ops after it are a warp reduction with an
  // epilogue already.
  size_t reductions = llvm::count(group.kinds, RowOpKind::Reduction);
  if (reductions == 0 ||
      (reductions == 1 && !llvm::is_contained(group.kinds,
                                              RowOpKind::Elementwise)))
    return std::nullopt;
  return group;
}

} // namespace effopt
