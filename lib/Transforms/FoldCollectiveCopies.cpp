//===- FoldCollectiveCopies.cpp - producers write into collective buffers -===//
//
// The CPU lowering of a collective copies its inputs into a buffer of its
// own (eff.collective_buffer): an all-reduce's bucket holds each input in a
// contiguous slice, so that one MPI call sums them all; a scatter or gather
// sends from a buffer the runtime may read while the step goes on. After
// bufferization, the input is usually a buffer of its own, written by its
// producer and read by nothing but that copy: the gradients of a bucket
// then live twice, in their buffers and in the bucket. This pass gives such
// a buffer the bytes of its slice instead (a memref.view of the collective's
// buffer, turned into bytes for that), so the producer writes the slice,
// and erases the copy. Same bits in the same places when the collective
// runs; one copy of them in the plan.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Analysis/MemoryPlan.h"
#include "effopt/Analysis/MemoryReport.h"
#include "effopt/Dialect/Eff/IR/EffDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace effopt {
#define GEN_PASS_DEF_EFFFOLDCOLLECTIVECOPIESPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt;

/// Integer attribute on a collective buffer while the pass runs: which of
/// the function's buffers it is (its copies are folded or kept together).
static constexpr llvm::StringLiteral kFoldGroupAttrName = "eff.fold_group";

/// The static byte offset of `type`'s first element from its base pointer
/// when it is a static, contiguous row-major memref of a sized element type.
static std::optional<int64_t> contiguousByteOffset(MemRefType type) {
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return std::nullopt;
  int64_t expected = 1;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    if (type.getDimSize(d) != 1 && strides[d] != expected)
      return std::nullopt;
    expected *= type.getDimSize(d);
  }
  return offset * type.getElementTypeBitWidth() / 8;
}

/// The collective buffer `dst` is a contiguous slice of, and the slice's
/// byte offset in it: `dst` reached from the tagged allocation through
/// views (subview, reshapes; memref.view adds its constant shift).
static memref::AllocOp collectiveBufferOf(Value dst, int64_t &shift) {
  auto type = dyn_cast<MemRefType>(dst.getType());
  std::optional<int64_t> offset = type ? contiguousByteOffset(type)
                                       : std::nullopt;
  if (!offset)
    return {};
  shift = *offset;
  Value v = dst;
  while (Operation *def = v.getDefiningOp()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(def))
      return alloc->hasAttr(kCollectiveBufferAttrName) ? alloc
                                                       : memref::AllocOp();
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      std::optional<int64_t> bytes = getConstantIntValue(view.getByteShift());
      if (!bytes || !view.getSizes().empty())
        return {};
      shift += *bytes;
      v = view.getSource();
      continue;
    }
    // Views that keep the base pointer: their layout's offset counts from it.
    if (!isa<memref::SubViewOp, memref::ExpandShapeOp,
             memref::CollapseShapeOp>(def))
      return {};
    v = cast<ViewLikeOpInterface>(def).getViewSource();
  }
  return {};
}

/// The allocation `src` is, or is a contiguous reshape of, with its whole
/// contents in `src`'s element order.
static memref::AllocOp reshapedAlloc(Value src) {
  auto type = dyn_cast<MemRefType>(src.getType());
  std::optional<int64_t> offset = type ? contiguousByteOffset(type)
                                       : std::nullopt;
  if (!offset || *offset != 0)
    return {};
  Value v = src;
  while (Operation *def = v.getDefiningOp()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(def)) {
      if (alloc.getType().getNumElements() != type.getNumElements() ||
          !alloc.getType().getLayout().isIdentity() ||
          !alloc.getDynamicSizes().empty() || !alloc.getSymbolOperands().empty())
        return {};
      return alloc;
    }
    if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def))
      return {};
    v = def->getOperand(0);
  }
  return {};
}

/// Whether every use of `alloc` (and of its views) in its block comes
/// before `copy`, or is `copy`.
static bool usedOnlyBefore(memref::AllocOp alloc, Operation *copy) {
  Block *block = alloc->getBlock();
  SmallVector<Value> worklist{alloc.getResult()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == copy)
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == v) {
        llvm::append_range(worklist, user->getResults());
        continue;
      }
      Operation *top = block->findAncestorOpInBlock(*user);
      if (!top || isa<memref::DeallocOp>(user) || !top->isBeforeInBlock(copy))
        return false;
    }
  }
  return true;
}

namespace {

struct EffFoldCollectiveCopiesPass
    : effopt::impl::EffFoldCollectiveCopiesPassBase<
          EffFoldCollectiveCopiesPass> {
  void runOnOperation() override;
  /// Folds every copy into a collective buffer under `root` that can be
  /// (only into the buffers tagged `group`, if given); returns (copies,
  /// bytes) folded. With `foldable`, folds nothing and collects the tags of
  /// the buffers that have copies to fold instead.
  std::pair<int64_t, int64_t>
  fold(Operation *root, std::optional<int64_t> group,
       llvm::SetVector<int64_t> *foldable = nullptr);
  /// `buffer` as bytes (memref<Kxi8>), viewed as its old type where it was
  /// used; the byte allocation is returned (`buffer` itself if it is bytes).
  memref::AllocOp asBytes(memref::AllocOp buffer);
};

} // namespace

memref::AllocOp EffFoldCollectiveCopiesPass::asBytes(memref::AllocOp buffer) {
  MemRefType type = buffer.getType();
  if (type.getRank() == 1 && type.getElementType().isInteger(8))
    return buffer;
  OpBuilder builder(buffer);
  Location loc = buffer.getLoc();
  int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
  auto raw = memref::AllocOp::create(
      builder, loc, MemRefType::get({bytes}, builder.getI8Type()),
      buffer.getAlignmentAttr());
  raw->setDiscardableAttrs(buffer->getDiscardableAttrDictionary());
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value view = memref::ViewOp::create(builder, loc, type, raw, zero,
                                      ValueRange{});
  buffer.getResult().replaceAllUsesWith(view);
  buffer.erase();
  return raw;
}

/// Marks every collective buffer under `root` with its index, the group
/// of copies decided together (the tag survives asBytes and clones).
static int64_t tagCollectiveBuffers(Operation *root) {
  int64_t groups = 0;
  root->walk([&](memref::AllocOp alloc) {
    if (alloc->hasAttr(kCollectiveBufferAttrName))
      alloc->setAttr(
          kFoldGroupAttrName,
          IntegerAttr::get(IntegerType::get(alloc.getContext(), 64), groups++));
  });
  return groups;
}

void EffFoldCollectiveCopiesPass::runOnOperation() {
  ModuleOp module = getOperation();
  int64_t alignment = EffStepAbiPassOptions().alignment;
  if (auto recorded = module->getAttrOfType<IntegerAttr>(
          eff::kAlignmentAttrName))
    alignment = recorded.getInt();
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  for (func::FuncOp func : funcs) {
    if (func.isExternal())
      continue;
    auto [copies, bytes] = std::pair<int64_t, int64_t>{0, 0};
    if (!func->hasAttr(eff::kArenaArgAttrName)) {
      std::tie(copies, bytes) = fold(func, std::nullopt);
    } else {
      // A folded buffer lives from its first writer on, which may be where
      // the arena peaks (a bucket's first gradient, early in the backward):
      // keep the folds only where the planned arena does not grow. All at
      // once if that holds; otherwise buffer by buffer, in order, each kept
      // if the arena with it (and the folds kept before it) does not grow.
      tagCollectiveBuffers(func);
      auto arenaOf = [&](func::FuncOp f) {
        return MemoryPlan::compute(f.getBody().front(), alignment).arenaBytes();
      };
      int64_t before = arenaOf(func);
      func::FuncOp folded = func.clone();
      std::tie(copies, bytes) = fold(folded, std::nullopt);
      if (copies && arenaOf(folded) <= before) {
        func.getBody().takeBody(folded.getBody());
        folded.erase();
      } else {
        folded.erase();
        copies = bytes = 0;
        llvm::SetVector<int64_t> groups;
        fold(func, std::nullopt, &groups);
        for (int64_t group : groups) {
          func::FuncOp trial = func.clone();
          auto [groupCopies, groupBytes] = fold(trial, group);
          int64_t after = groupCopies ? arenaOf(trial) : before + 1;
          if (groupCopies && after <= before) {
            func.getBody().takeBody(trial.getBody());
            before = after;
            copies += groupCopies;
            bytes += groupBytes;
          } else if (groupCopies) {
            ++numKeptCopies;
          }
          trial.erase();
        }
      }
      func.walk([&](memref::AllocOp alloc) {
        alloc->removeAttr(kFoldGroupAttrName);
      });
    }
    numFoldedCopies += copies;
    numFoldedBytes += bytes;
  }
}

std::pair<int64_t, int64_t>
EffFoldCollectiveCopiesPass::fold(Operation *root, std::optional<int64_t> group,
                                  llvm::SetVector<int64_t> *foldable) {
  int64_t folded = 0, foldedBytes = 0;
  // The copies: memref.copy, and linalg.copy on buffers (eff-step-entry's
  // form of a copy into a strided view).
  SmallVector<Operation *> copies;
  root->walk([&](Operation *op) {
    if (isa<memref::CopyOp>(op) ||
        (isa<linalg::CopyOp>(op) &&
         cast<linalg::CopyOp>(op).hasPureBufferSemantics()))
      copies.push_back(op);
  });
  for (Operation *copy : copies) {
    // Source and target read now: a fold before may have replaced a
    // collective buffer this copy reads (a bucket of one gradient, copied
    // whole into a shard's buffer) by its byte view.
    Value from, to;
    if (auto memrefCopy = dyn_cast<memref::CopyOp>(copy)) {
      from = memrefCopy.getSource();
      to = memrefCopy.getTarget();
    } else {
      auto linalgCopy = cast<linalg::CopyOp>(copy);
      from = linalgCopy.getInputs().front();
      to = linalgCopy.getOutputs().front();
    }
    int64_t shift = 0;
    memref::AllocOp buffer = collectiveBufferOf(to, shift);
    memref::AllocOp source = reshapedAlloc(from);
    if (group && buffer) {
      auto tag = buffer->getAttrOfType<IntegerAttr>(kFoldGroupAttrName);
      if (!tag || tag.getInt() != *group)
        continue;
    }
    if (!buffer || !source || source == buffer ||
        source->hasAttr(kCollectiveBufferAttrName) ||
        source->hasAttr(kWorkspaceAttrName) ||
        buffer->getBlock() != copy->getBlock() ||
        source->getBlock() != copy->getBlock() ||
        cast<MemRefType>(from.getType()).getElementType() !=
            cast<MemRefType>(to.getType()).getElementType() ||
        cast<MemRefType>(from.getType()).getShape() !=
            cast<MemRefType>(to.getType()).getShape() ||
        !usedOnlyBefore(source, copy))
      continue;
    // The slice is written by the source's writers from the first on: the
    // buffer must exist there.
    if (foldable) {
      if (auto tag = buffer->getAttrOfType<IntegerAttr>(kFoldGroupAttrName))
        foldable->insert(tag.getInt());
      continue;
    }
    memref::AllocOp raw = asBytes(buffer);
    if (source->isBeforeInBlock(raw))
      raw->moveBefore(source);
    OpBuilder builder(source);
    Location loc = source.getLoc();
    Value at = arith::ConstantIndexOp::create(builder, loc, shift);
    Value view = memref::ViewOp::create(builder, loc, source.getType(), raw,
                                        at, ValueRange{});
    MemRefType sourceType = source.getType();
    foldedBytes += sourceType.getNumElements() *
                   sourceType.getElementTypeBitWidth() / 8;
    ++folded;
    source.getResult().replaceAllUsesWith(view);
    source.erase();
    copy->erase();
  }
  return {folded, foldedBytes};
}
