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
#include "effopt/Dialect/Eff/IR/EffDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

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

/// Whether `op` sums columns over chunks of `blockRows` rows of the row
/// space (RowOpKind::ColumnPartial).
static bool isColumnPartial(linalg::GenericOp op, ArrayRef<int64_t> rows,
                            int64_t rowLength, int64_t blockRows) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  size_t k = rows.size();
  if (ranges.size() != k + 2 || blockRows < 2 ||
      ArrayRef<int64_t>(ranges).take_front(k - 1) != rows.drop_back() ||
      ranges[k] != blockRows || ranges[k - 1] * blockRows != rows.back() ||
      ranges[k + 1] != rowLength)
    return false;
  for (auto [d, iterator] : llvm::enumerate(iterators))
    if (linalg::isReductionIterator(iterator) != (d == k))
      return false;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (map.isFunctionOfDim(k))
      return false;
    for (unsigned d = 0; d < k + 2; ++d)
      if (d != k && !map.isFunctionOfDim(d))
        return false;
  }
  return succeeded(matchCombiners(op));
}

/// How `op` iterates the row space `rows` x `rowLength`, if it does.
static std::optional<RowOpKind> classify(linalg::GenericOp op,
                                         ArrayRef<int64_t> rows,
                                         int64_t rowLength,
                                         int64_t blockRows) {
  if (!op.hasPureBufferSemantics())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  size_t k = rows.size();
  if (isColumnPartial(op, rows, rowLength, blockRows))
    return RowOpKind::ColumnPartial;
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
/// its layout static. A column partial sum's input is a function of the
/// row space when its chunk dims compose the split row (the outer dim's
/// coefficient `blockRows` times the inner's); its outputs have none.
static std::optional<RowAddress> rowAddress(linalg::GenericOp op,
                                            OpOperand &operand, RowOpKind kind,
                                            unsigned numRows,
                                            int64_t blockRows = 0) {
  if (kind == RowOpKind::ColumnPartial) {
    if (op.isDpsInit(&operand))
      return std::nullopt;
    // The same operand seen over the row space: loops (rows..., element)
    // with the split row dim as one.
    std::optional<RowAddress> split =
        rowAddress(op, operand, RowOpKind::Elementwise, numRows + 1);
    if (!split)
      return std::nullopt;
    SmallVector<int64_t> &c = split->coefficients;
    if (c[numRows - 1] != blockRows * c[numRows])
      return std::nullopt;
    c.erase(c.begin() + numRows - 1);
    return split;
  }
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

/// Whether `a` and `b` touch common memory where one of them writes.
static bool conflicts(linalg::GenericOp a, linalg::GenericOp b) {
  for (OpOperand &x : a->getOpOperands())
    for (OpOperand &y : b->getOpOperands())
      if (touchesMemory(x.get()) && touchesMemory(y.get()) &&
          (a.isDpsInit(&x) || b.isDpsInit(&y)) && mayOverlap(x.get(), y.get()))
        return true;
  return false;
}

/// The temporary buffer `value` views: a `memref.alloc`, or a `memref.view`
/// of the step's arena (the argument `eff.arena_arg` names), whose bytes
/// hold nothing once its last reader ran. Null for anything else (state,
/// inputs, globals: their bytes outlive the step).
static Value temporaryBufferOf(Value value) {
  for (int depth = 0; depth < 16; ++depth) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return {};
    if (isa<memref::AllocOp>(def))
      return value;
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      auto arg = dyn_cast<BlockArgument>(view.getSource());
      auto func =
          arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
      auto arena =
          func ? func->getAttrOfType<IntegerAttr>(eff::kArenaArgAttrName)
               : IntegerAttr();
      if (arena && arg.getOwner()->isEntryBlock() &&
          arena.getInt() == static_cast<int64_t>(arg.getArgNumber()))
        return value;
      return {};
    }
    auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
    if (!viewLike)
      return {};
    value = viewLike.getViewSource();
  }
  return {};
}

/// The uses of `buffer` and of the views of it, view ops themselves left
/// out.
static SmallVector<OpOperand *> usesOfBuffer(Value buffer) {
  SmallVector<OpOperand *> uses;
  SmallVector<Value> worklist{buffer};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      auto view = dyn_cast<ViewLikeOpInterface>(use.getOwner());
      if (view && view.getViewSource() == v) {
        llvm::append_range(worklist, use.getOwner()->getResults());
        continue;
      }
      uses.push_back(&use);
    }
  }
  return uses;
}

/// Whether the per-row output `init` of `op` (a reduction or per-row
/// member) may go unstored if every later reader joins the group and takes
/// it from the register: it is a row-local value (no element-of-row
/// stride) of a temporary buffer that nothing before `op` touches.
static bool mayGoUnstored(linalg::GenericOp op, OpOperand &init,
                          RowOpKind kind, unsigned numRows,
                          const llvm::DenseSet<Value> &stored,
                          const RowGroupQueries &queries) {
  if (kind == RowOpKind::Elementwise || kind == RowOpKind::ColumnPartial ||
      queries.storesAll(op))
    return false;
  Value buffer = temporaryBufferOf(init.get());
  if (!buffer || stored.contains(buffer))
    return false;
  std::optional<RowAddress> address = rowAddress(op, init, kind, numRows);
  if (!address || address->coefficients.back() != 0)
    return false;
  Block *block = op->getBlock();
  for (OpOperand *use : usesOfBuffer(buffer)) {
    Operation *user = block->findAncestorOpInBlock(*use->getOwner());
    if (!user || (user != op && user->isBeforeInBlock(op)))
      return false;
  }
  return true;
}

/// matchRowGroup with the temporaries in `stored` always stored. Sets
/// `mustStore` (and returns nothing) when a buffer the group left unstored
/// turns out to be read where no register reaches: by an op outside the
/// group, or by a member from memory.
static std::optional<RowGroup>
matchRowGroupOnce(linalg::GenericOp seed, int64_t maxRowLength,
                  int64_t blockRows, const RowGroupQueries &queries,
                  const llvm::DenseSet<Value> &stored, Value &mustStore) {
  if (!seed.hasPureBufferSemantics())
    return std::nullopt;
  SmallVector<int64_t> ranges = seed.getStaticLoopRanges();
  if (ranges.size() < 2 || llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  RowGroup group;
  group.rows.assign(ranges.begin(), ranges.end() - 1);
  group.rowLength = ranges.back();
  group.blockRows = blockRows;
  if (group.rowLength < 2 || group.rowLength > maxRowLength)
    return std::nullopt;
  unsigned numRows = group.rows.size();
  auto addressOf = [&](linalg::GenericOp op, OpOperand &operand,
                       RowOpKind kind) {
    return rowAddress(op, operand, kind, numRows, blockRows);
  };
  // Elementwise ops and column partial sums: each lane runs the payload at
  // its elements, `width` at a time.
  auto perElement = [](RowOpKind kind) {
    return kind == RowOpKind::Elementwise || kind == RowOpKind::ColumnPartial;
  };
  int64_t workgroupBytes = 0;
  // Whether `op` loads the old value of `operand` from memory: as `reads`,
  // except a reduction's output that starts from a folded fill (a column
  // partial sum stores such an output after the barrier and never loads
  // it; a row reduction's lanes take the fill's value).
  auto loadsOldValue = [&](linalg::GenericOp op, OpOperand &operand) {
    if (op.isDpsInit(&operand) && op.getNumReductionLoops() != 0 &&
        queries.startsFromFill(op, operand.getOperandNumber() -
                                       op.getNumDpsInputs()))
      return false;
    return reads(op, operand);
  };

  // Whether `op` (of kind `kind`) can join the members so far; fills in
  // what it reads from them in registers.
  // Whether a member overwrote what an earlier reduction member read: no
  // reduction may follow (see below).
  bool reductionInputOverwritten = false;
  auto joins = [&](linalg::GenericOp op, RowOpKind kind,
                   DenseMap<unsigned, ForwardedRowValue> &forwarded,
                   SmallVector<unsigned> &unstored,
                   bool &overwritesReductionInput) {
    unstored.clear();
    overwritesReductionInput = false;
    if (kind == RowOpKind::Reduction && reductionInputOverwritten)
      return false;
    for (OpOperand &init : op.getDpsInitsMutable())
      if (mayGoUnstored(op, init, kind, numRows, stored, queries))
        unstored.push_back(init.getOperandNumber());
    // A write that does not happen races with nothing.
    auto writes = [&](OpOperand &operand) {
      return op.isDpsInit(&operand) &&
             !llvm::is_contained(unstored, operand.getOperandNumber());
    };
    if (kind == RowOpKind::Reduction && !queries.isWarpReduction(op))
      return false;
    // One lane per element (or vector) of the row in every member, each
    // reduction in its own order.
    if (kind == RowOpKind::Reduction) {
      int64_t width = queries.ownWidth(op, kind);
      if (group.width != 0 && width != group.width)
        return false;
      if (group.width == 0)
        for (auto [member, memberKind] :
             llvm::zip(group.members, group.kinds))
          if (perElement(memberKind) &&
              queries.ownWidth(member, memberKind) < width)
            return false;
    } else if (perElement(kind) && group.width != 0 &&
               queries.ownWidth(op, kind) < group.width) {
      return false;
    }
    if (kind == RowOpKind::ColumnPartial) {
      int64_t bytes = 0;
      for (Value init : op.getDpsInits())
        bytes += blockRows * group.rowLength *
                 cast<MemRefType>(init.getType()).getElementTypeBitWidth() / 8;
      if (workgroupBytes + bytes > kMaxRowGroupWorkgroupBytes)
        return false;
    }
    if (!writesOncePerPoint(op))
      return false;
    // A reduction's threads read the row while lane 0 writes the result.
    if (kind == RowOpKind::Reduction)
      for (OpOperand *input : op.getDpsInputOperands())
        for (OpOperand &init : op.getDpsInitsMutable())
          if (touchesMemory(input->get()) && writes(init) &&
              mayOverlap(input->get(), init.get()))
            return false;
    for (Operation *later : group.deferred)
      for (OpOperand &x : later->getOpOperands())
        for (OpOperand &m : op->getOpOperands()) {
          if (!touchesMemory(x.get()) || !touchesMemory(m.get()))
            continue;
          // An unstored output: the deferred op cannot read it (then it
          // would not go unstored) and writing its bytes harms nothing.
          if (op.isDpsInit(&m) && !writes(m))
            continue;
          bool xWrites = cast<DestinationStyleOpInterface>(later).isDpsInit(&x);
          if ((xWrites || writes(m)) && mayOverlap(x.get(), m.get()))
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
          bool mWrites = writes(m);
          // An unstored output of `op` over what a member touched: no
          // store, no race.
          if (op.isDpsInit(&m) && !mWrites)
            continue;
          if (!aWrites && !mWrites)
            continue;
          // What `op` writes over a member's unstored output races with no
          // store; what it reads there must come from the register (below).
          if (aWrites && !loadsOldValue(op, m) &&
              llvm::is_contained(group.unstored[j], a.getOperandNumber()))
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
            // So did a reduction member's lane (all members take the same
            // elements in each lane), but its partial sums reach its
            // shuffles, which a later reduction's phase would replay from
            // the overwritten memory: then no reduction may follow (the
            // hardware would be right; the emulation would not).
            std::optional<RowAddress> read = addressOf(member, a, group.kinds[j]);
            std::optional<RowAddress> written = addressOf(op, m, kind);
            bool sameLane = read && written && *read == *written &&
                            rowsDisjoint(*read, group.rows, group.rowLength);
            if (sameLane && perElement(group.kinds[j]))
              continue;
            if (sameLane && group.kinds[j] == RowOpKind::Reduction &&
                kind != RowOpKind::Reduction) {
              overwritesReductionInput = true;
              continue;
            }
            return false;
          }
          std::optional<RowAddress> written =
              addressOf(member, a, group.kinds[j]);
          std::optional<RowAddress> touched = addressOf(op, m, kind);
          if (!written || !touched || !(*written == *touched) ||
              !rowsDisjoint(*written, group.rows, group.rowLength))
            return false;
          // A per-row value read: from the register of the latest writer
          // (lane 0 stored it; the other lanes never load it).
          if (!reads(op, m) || written->coefficients.back() != 0)
            continue;
          AffineMap map = op.getMatchingIndexingMap(&m);
          unsigned element =
              kind == RowOpKind::ColumnPartial ? numRows + 1 : numRows;
          if (kind != RowOpKind::PerRow && map.isFunctionOfDim(element))
            return false;
          forwarded[m.getOperandNumber()] = ForwardedRowValue{
              static_cast<unsigned>(j),
              static_cast<unsigned>(a.getOperandNumber() -
                                    member.getNumDpsInputs())};
        }
      }
    }
    // Every lane of a per-row op loads the per-row inputs no register
    // holds, then lane 0 stores the outputs: an output over such an input
    // (a mean written in place over the saved row sum it divides) would be
    // stored while other lanes may still load it.
    // Likewise a reduction's initial value: every lane needs the total, so
    // every lane would load an output no fill or register gives while
    // lane 0 stores over it.
    if (kind == RowOpKind::Reduction)
      for (OpOperand &init : op.getDpsInitsMutable())
        if (!forwarded.count(init.getOperandNumber()) &&
            !queries.startsFromFill(op, init.getOperandNumber() -
                                            op.getNumDpsInputs()))
          return false;
    if (kind == RowOpKind::PerRow)
      for (OpOperand *input : op.getDpsInputOperands())
        if (touchesMemory(input->get()) &&
            !forwarded.count(input->getOperandNumber()))
          for (OpOperand &init : op.getDpsInitsMutable())
            if (writes(init) && mayOverlap(input->get(), init.get()))
              return false;
    return true;
  };

  auto add = [&](linalg::GenericOp op, RowOpKind kind,
                 DenseMap<unsigned, ForwardedRowValue> forwarded,
                 SmallVector<unsigned> unstored,
                 bool overwritesReductionInput) {
    reductionInputOverwritten |= overwritesReductionInput;
    if (kind == RowOpKind::ColumnPartial)
      for (Value init : op.getDpsInits())
        workgroupBytes +=
            blockRows * group.rowLength *
            cast<MemRefType>(init.getType()).getElementTypeBitWidth() / 8;
    if (kind == RowOpKind::Reduction && group.width == 0)
      group.width = queries.ownWidth(op, kind);
    group.members.push_back(op);
    group.kinds.push_back(kind);
    group.forwarded.push_back(std::move(forwarded));
    group.unstored.push_back(std::move(unstored));
  };

  std::optional<RowOpKind> seedKind =
      classify(seed, group.rows, group.rowLength, blockRows);
  if (!seedKind || *seedKind == RowOpKind::PerRow ||
      *seedKind == RowOpKind::ColumnPartial)
    return std::nullopt;
  {
    DenseMap<unsigned, ForwardedRowValue> none;
    SmallVector<unsigned> unstored;
    bool overwrites = false;
    if (!joins(seed, *seedKind, none, unstored, overwrites))
      return std::nullopt;
    add(seed, *seedKind, std::move(none), std::move(unstored), overwrites);
  }

  // Enough for a layer norm backward's column sums and the AdamW updates
  // the memory-aware order puts between its members (GPT-2: about a dozen).
  constexpr size_t kMaxDeferred = 32;
  for (Operation *op = seed->getNextNode(); op; op = op->getNextNode()) {
    if (isMemoryEffectFree(op) && op->getNumRegions() == 0)
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(op);
    // A gather (a cross-entropy's target logit) reads memory the checks
    // below, which follow operands, do not see: the group ends before it.
    if (!generic || !generic.hasPureBufferSemantics() ||
        !gatheredMemrefs(generic).empty())
      break;
    std::optional<RowOpKind> kind =
        classify(generic, group.rows, group.rowLength, blockRows);
    DenseMap<unsigned, ForwardedRowValue> forwarded;
    SmallVector<unsigned> unstored;
    bool overwrites = false;
    if (kind && joins(generic, *kind, forwarded, unstored, overwrites)) {
      SmallVector<linalg::GenericOp> members(group.members);
      members.push_back(generic);
      if (kernelArgumentBytes(members) > kMaxKernelArgumentBytes)
        break;
      add(generic, *kind, std::move(forwarded), std::move(unstored),
          overwrites);
      continue;
    }
    if (group.hoisted.size() + group.deferred.size() == kMaxDeferred)
      break;
    // Before the kernel when nothing before it in the group (members,
    // deferred ops) touches its memory where either writes: that leaves
    // later members free to write what it reads.
    bool independent =
        llvm::none_of(group.members,
                      [&](linalg::GenericOp member) {
                        return conflicts(member, generic);
                      }) &&
        llvm::none_of(group.deferred, [&](Operation *deferred) {
          return conflicts(cast<linalg::GenericOp>(deferred), generic);
        });
    (independent ? group.hoisted : group.deferred).push_back(op);
  }
  // Ops after the last member stay where they are.
  Operation *last = group.members.back();
  for (SmallVector<Operation *> *between : {&group.hoisted, &group.deferred})
    while (!between->empty() && last->isBeforeInBlock(between->back()))
      between->pop_back();
  // One reduction and per-row ops after it are a warp reduction with an
  // epilogue already.
  size_t reductions = llvm::count(group.kinds, RowOpKind::Reduction);
  if (reductions == 0 ||
      (reductions == 1 && llvm::none_of(group.kinds, perElement)))
    return std::nullopt;
  // Every read of an unstored buffer is a member's, from the register.
  DenseMap<Operation *, unsigned> memberIndex;
  for (auto [i, member] : llvm::enumerate(group.members))
    memberIndex[member] = i;
  for (auto [i, member] : llvm::enumerate(group.members))
    for (unsigned n : group.unstored[i]) {
      Value buffer = temporaryBufferOf(member->getOperand(n));
      for (OpOperand *use : usesOfBuffer(buffer)) {
        auto found = memberIndex.find(use->getOwner());
        bool fromRegister =
            found != memberIndex.end() &&
            (found->second == i ||
             group.forwarded[found->second].count(use->getOperandNumber()) ||
             (group.members[found->second].isDpsInit(use) &&
              !reads(group.members[found->second], *use)));
        if (!fromRegister) {
          mustStore = buffer;
          return std::nullopt;
        }
      }
    }
  // The seed's gathers (no later op gathers: the scan stops there) may
  // not read what the group's ops write.
  SmallVector<Operation *> all(group.members.begin(), group.members.end());
  llvm::append_range(all, group.hoisted);
  llvm::append_range(all, group.deferred);
  for (Operation *op : all)
    for (Value gathered : gatheredMemrefs(cast<linalg::GenericOp>(op)))
      for (Operation *writer : all)
        for (Value out : cast<linalg::GenericOp>(writer).getDpsInits())
          if (mayOverlap(out, gathered))
            return std::nullopt;
  return group;
}

std::optional<RowGroup> matchRowGroup(linalg::GenericOp seed,
                                      int64_t maxRowLength, int64_t blockRows,
                                      const RowGroupQueries &queries) {
  // Each retry stores one more buffer, so this ends.
  llvm::DenseSet<Value> stored;
  while (true) {
    Value mustStore;
    std::optional<RowGroup> group = matchRowGroupOnce(
        seed, maxRowLength, blockRows, queries, stored, mustStore);
    if (!mustStore)
      return group;
    stored.insert(mustStore);
  }
}

} // namespace effopt
