//===- SplitReductions.cpp - reductions with enough parallelism for a GPU -===//
//
// A reduction with few outputs and a long reduction space becomes a
// partial reduction (its outer reduction dimensions made parallel) and a
// combine of the partials. See the pass description in Passes.td and
// docs/GpuKernels.md.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Conversion/GpuCodegen/Reductions.h"
#include "effopt/Conversion/GpuCodegen/RowGroups.h"

#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "eff-gpu-split-reductions"

namespace effopt {
#define GEN_PASS_DEF_EFFGPUSPLITREDUCTIONSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// Elements a thread of a reduction over outer dimensions walks at least
/// after a split, and the longest walk left alone.
constexpr int64_t kMinThreadWalk = 16;
constexpr int64_t kMaxSerialWalk = 64;
/// Elements a block of a row reduction combines at least after a split
/// (16 per thread of 256), and the shortest row worth splitting.
constexpr int64_t kMinBlockWalk = 4096;
constexpr int64_t kMinSplitRow = 16384;

/// Which reduction dimensions become parallel: `promoted` whole, then
/// `split` (if set) into `factor` parallel x size/factor reduced.
struct SplitChoice {
  SmallVector<unsigned> promoted;
  std::optional<unsigned> split;
  int64_t factor = 1;
  int64_t chunks = 1;
};

/// True when loop dimension `dim` appears in `op`'s indexing maps only as
/// a whole result (what tensor.expand_shape can split).
static bool onlyPlainUses(linalg::GenericOp op, unsigned dim) {
  for (AffineMap map : op.getIndexingMapsArray())
    for (AffineExpr expr : map.getResults())
      if (!isa<AffineDimExpr>(expr) && expr.isFunctionOfDim(dim))
        return false;
  return true;
}

/// The largest divisor f of n with 2 <= f <= limit and n / f >= 2, or 1.
static int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t f = std::min(limit, n / 2); f >= 2; --f)
    if (n % f == 0)
      return f;
  return 1;
}

struct EffGpuSplitReductionsPass
    : impl::EffGpuSplitReductionsPassBase<EffGpuSplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (targetThreads <= 0 || targetBlocks <= 0) {
      getOperation().emitError()
          << "eff-gpu-split-reductions: target-threads and target-blocks "
             "must be positive";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::GenericOp> logSumExps;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics() && isOnlineLogSumExp(op))
        logSumExps.push_back(op);
    });
    for (linalg::GenericOp op : logSumExps)
      if (gatherRowEpilogue(rewriter, op))
        ++numRowEpilogues;
    SmallVector<linalg::GenericOp> worklist;
    getOperation().walk([&](linalg::GenericOp op) { worklist.push_back(op); });
    SmallVector<linalg::GenericOp> firstPartials;
    while (!worklist.empty()) {
      linalg::GenericOp op = worklist.pop_back_val();
      std::optional<SplitChoice> choice = choose(op);
      if (!choice)
        continue;
      bool first = !splitCombines.contains(op);
      // The combine may still be too serial: split it again.
      if (linalg::GenericOp combine = split(rewriter, op, *choice)) {
        ++numSplits;
        if (first)
          firstPartials.push_back(lastPartial);
        splitCombines.insert(combine);
        worklist.push_back(combine);
      }
    }
    for (linalg::GenericOp partial : firstPartials)
      if (placeAfterProducer(partial))
        ++numPlacedAfterProducers;
  }

  /// The combines split creates: their partials read partials.
  llvm::DenseSet<Operation *> splitCombines;
  /// The partial reduction the last split created.
  linalg::GenericOp lastPartial;

  /// Moves `partial` (a first partial reduction, over the whole input)
  /// right after the all-parallel op whose result it reads (through
  /// reshapes), with the empty tensors, fills, constants and reshapes it
  /// reads that sit between (its fills before the op): eff-gpu-form-kernels
  /// can then run that op in
  /// the partial reduction's threads (a bias gradient's partial sums
  /// taken as its activation's backward computes the gradient), and the
  /// gradient is not read again. False when there is no such producer or
  /// something else it reads comes after it.
  static bool placeAfterProducer(linalg::GenericOp partial) {
    linalg::GenericOp producer;
    for (Value input : partial.getDpsInputs()) {
      Value source = input;
      while (Operation *def = source.getDefiningOp()) {
        if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
          break;
        source = def->getOperand(0);
      }
      auto generic = source.getDefiningOp<linalg::GenericOp>();
      if (!generic || generic.getNumReductionLoops() != 0 ||
          generic->getBlock() != partial->getBlock())
        continue;
      if (producer && producer != generic)
        return false;
      producer = generic;
    }
    if (!producer || producer->getNextNode() == partial)
      return false;
    // Everything `partial` needs from after `producer`, nearest first.
    llvm::SetVector<Operation *> moved;
    SmallVector<Operation *> worklist{partial};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!moved.insert(op))
        continue;
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != partial->getBlock() ||
            def == producer || def->isBeforeInBlock(producer))
          continue;
        if (!isa<tensor::EmptyOp, linalg::FillOp, arith::ConstantOp,
                 tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
          return false;
        worklist.push_back(def);
      }
    }
    SmallVector<Operation *> ordered(moved.begin(), moved.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    // The partial sums' fills (and what they fill) go before the producer:
    // their buffers are then live while it runs, so the memory plan puts
    // them apart from its inputs and outputs, which the threads running it
    // read and write while others already store partial sums.
    llvm::SetVector<Operation *> before;
    for (Operation *op : ordered)
      if (auto fill = dyn_cast<linalg::FillOp>(op)) {
        before.insert(fill);
        for (Value operand : fill->getOperands())
          if (Operation *def = operand.getDefiningOp(); def && moved.count(def))
            before.insert(def);
      }
    for (Operation *op : ordered)
      if (before.count(op))
        op->moveBefore(producer);
    Operation *after = producer;
    for (Operation *op : ordered) {
      if (before.count(op))
        continue;
      op->moveAfter(after);
      after = op;
    }
    return true;
  }

  /// Orders the ops after `lse`, an online log-sum-exp over rows (loops:
  /// rows..., row; static), so those that use its results per row come
  /// right after it, up to the all-parallel op over the same loops that
  /// reads its rows again (a cross-entropy's gradient): eff-gpu-form-kernels
  /// then runs them all in the log-sum-exp's blocks, each row read from
  /// DRAM once (RowEpilogue). Between the two (all moved ops free of side
  /// effects):
  /// - ops that do not use `lse`'s results move before it, but for
  ///   per-row ops the gradient needs (a chunk's weights), which stay;
  /// - ops that use them and that the gradient does not need move after
  ///   it, in their order (a mean loss's sum and division), unless they
  ///   read the rows (the gradient overwrites them in place): then a sum
  ///   over the rows into a scalar (the chunk's loss: the sum of w * (lse -
  ///   x[label]), whose gather reads the logits) becomes per-row terms
  ///   (promoted rows: each row's term from the identity), which stay,
  ///   and a combine, which moves (it sums the same terms in the order the
  ///   reduction alone would);
  /// - the gradient needs the rest: per-row ops and reshapes.
  /// False (nothing changed) when anything else sits between.
  bool gatherRowEpilogue(IRRewriter &rewriter, linalg::GenericOp lse) {
    std::optional<SmallVector<int64_t>> rowSizes = rowsOfRowReduction(lse);
    if (!rowSizes || lse.getNumDpsInputs() != 1)
      return false;
    SmallVector<int64_t> sizes = lse.getStaticLoopRanges();
    OpOperand *rowsOperand = lse.getDpsInputOperand(0);
    if (!lse.getMatchingIndexingMap(rowsOperand).isIdentity())
      return false;
    Value rowsTensor = rowsOperand->get();
    ArrayRef<int64_t> rows = *rowSizes;
    int64_t rowCount = 1;
    for (int64_t r : rows)
      rowCount *= r;
    Block *block = lse->getBlock();
    // The gradient: the first all-parallel op over the same loops after
    // `lse` that reads its rows by the identity.
    linalg::GenericOp gradient;
    for (OpOperand &use : rowsTensor.getUses()) {
      auto user = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!user || user->getBlock() != block || !lse->isBeforeInBlock(user) ||
          user.getNumReductionLoops() != 0 ||
          user.getStaticLoopRanges() != sizes || !user.isDpsInput(&use) ||
          !user.getMatchingIndexingMap(&use).isIdentity())
        continue;
      if (!gradient || user->isBeforeInBlock(gradient))
        gradient = user;
    }
    if (!gradient)
      return false;
    auto between = [&](Operation *op) {
      return op && op->getBlock() == block && lse->isBeforeInBlock(op) &&
             op->isBeforeInBlock(gradient);
    };
    // Whether `op` (its regions included) uses a result of an op in `set`.
    auto usesAny = [&](Operation *op, const DenseSet<Operation *> &set) {
      return op
          ->walk([&](Operation *nested) {
            for (Value operand : nested->getOperands())
              if (Operation *def = operand.getDefiningOp();
                  def && set.contains(def))
                return WalkResult::interrupt();
            return WalkResult::advance();
          })
          .wasInterrupted();
    };
    // The rows and their reshapes.
    DenseSet<Value> rowViews{rowsTensor};
    SmallVector<Value> views{rowsTensor};
    while (!views.empty())
      for (Operation *user : views.pop_back_val().getUsers())
        if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user) &&
            rowViews.insert(user->getResult(0)).second)
          views.push_back(user->getResult(0));
    // Whether `op` reads the rows (an operand, or a gather in its payload,
    // through reshapes): moved after the gradient, it would keep them alive
    // and the gradient could not be in place.
    auto readsRows = [&](Operation *op) {
      return op
          ->walk([&](Operation *nested) {
            return llvm::any_of(nested->getOperands(),
                                [&](Value v) { return rowViews.contains(v); })
                       ? WalkResult::interrupt()
                       : WalkResult::advance();
          })
          .wasInterrupted();
    };
    // What the gradient needs among the ops between.
    DenseSet<Operation *> needed;
    SmallVector<Operation *> worklist{gradient};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (Operation *def = operand.getDefiningOp();
              between(def) && needed.insert(def).second)
            worklist.push_back(def);
      });
    }
    // A sum over the rows into scalars.
    auto isRowTotal = [&](linalg::GenericOp op) {
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      return ranges.size() == 1 && ranges[0] == rowCount &&
             op.getNumReductionLoops() == 1 &&
             llvm::all_of(op.getDpsInits(),
                          [](Value init) {
                            return cast<ShapedType>(init.getType())
                                       .getRank() == 0;
                          }) &&
             succeeded(matchCombiners(op));
    };
    // `lse` and the ops that stay between or move after the gradient: an
    // op that uses none of them moves before `lse`.
    DenseSet<Operation *> anchored{lse};
    SmallVector<Operation *> hoisted, sunk;
    SmallVector<linalg::GenericOp> totals;
    for (Operation *op = lse->getNextNode(); op != gradient;
         op = op->getNextNode()) {
      auto generic = dyn_cast<linalg::GenericOp>(op);
      bool stays = needed.contains(op) &&
                   (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op) ||
                    (generic && isPerRowOp(generic, rows)));
      if (!usesAny(op, anchored)) {
        // A per-row op the gradient needs stays even when it does not use
        // `lse` (the rows' weights): it runs in the row epilogue, not as
        // a kernel of its own per chunk.
        if (stays) {
          anchored.insert(op);
          continue;
        }
        // Moved: only ops without side effects.
        if (!isMemoryEffectFree(op))
          return false;
        hoisted.push_back(op);
        continue;
      }
      anchored.insert(op);
      if (needed.contains(op)) {
        if (!stays)
          return false;
        continue;
      }
      if (!isMemoryEffectFree(op))
        return false;
      if (readsRows(op)) {
        if (!generic || !isRowTotal(generic))
          return false;
        totals.push_back(generic);
      }
      sunk.push_back(op);
    }
    if (sunk.empty() && hoisted.empty())
      return false;
    for (Operation *op : hoisted)
      op->moveBefore(lse);
    Operation *after = gradient;
    for (Operation *op : sunk) {
      auto total = dyn_cast<linalg::GenericOp>(op);
      if (total && llvm::is_contained(totals, total)) {
        SplitChoice choice;
        choice.promoted.push_back(0);
        choice.chunks = rowCount;
        linalg::GenericOp combine = split(rewriter, total, choice);
        startFromIdentity(rewriter, lastPartial);
        // Its partials' empty tensor goes before `lse` with the others.
        for (Value init : lastPartial.getDpsInits())
          if (Operation *def = init.getDefiningOp())
            def->moveBefore(lse);
        ++numRowTotalsSplit;
        op = combine;
      }
      op->moveAfter(after);
      after = op;
    }
    return true;
  }

  /// `partial` has no reduction loops: each output element is computed once
  /// from the fill of the combiner's identity it starts from. The payload
  /// takes the identity itself, and the outputs start from empty tensors
  /// (nothing fills them: a row epilogue's per-row member stores them).
  static void startFromIdentity(IRRewriter &rewriter,
                                linalg::GenericOp partial) {
    for (OpOperand &init : partial.getDpsInitsMutable()) {
      auto fill = init.get().getDefiningOp<linalg::FillOp>();
      if (!fill)
        continue;
      BlockArgument arg = partial.getMatchingBlockArgument(&init);
      rewriter.replaceAllUsesWith(arg, fill.getInputs()[0]);
      rewriter.modifyOpInPlace(partial,
                               [&] { init.set(fill.getOutputs()[0]); });
      if (fill->use_empty())
        rewriter.eraseOp(fill);
    }
  }

  /// The split that gives `op` about the target parallelism, or none.
  std::optional<SplitChoice> choose(linalg::GenericOp op) {
    if (!op.hasPureTensorSemantics() || op.getNumReductionLoops() == 0)
      return std::nullopt;
    SmallVector<int64_t> sizes = op.getStaticLoopRanges();
    if (llvm::any_of(sizes, ShapedType::isDynamic))
      return std::nullopt;
    if (failed(matchCombiners(op)))
      return std::nullopt;
    SmallVector<unsigned> parallelDims, reductionDims;
    op.getParallelDims(parallelDims);
    op.getReductionDims(reductionDims);
    // A combine must know every parallel dimension from an output.
    for (unsigned d : parallelDims)
      if (llvm::none_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
            return op.getMatchingIndexingMap(&init).isFunctionOfDim(d);
          }))
        return std::nullopt;
    int64_t points = 1, count = 1;
    for (unsigned d : parallelDims)
      points *= sizes[d];
    for (unsigned d : reductionDims)
      count *= sizes[d];
    std::optional<unsigned> inner = innermostAccessedDim(op);
    bool rowReduction =
        parallelDims.empty() || (inner && llvm::is_contained(reductionDims, *inner));
    int64_t maxChunks;
    if (rowReduction) {
      // eff-gpu-form-kernels: one block per output.
      if (points >= targetBlocks / 2 || count < kMinSplitRow)
        return std::nullopt;
      maxChunks = std::min<int64_t>(llvm::divideCeil(targetBlocks, points),
                           count / kMinBlockWalk);
    } else {
      // One thread per output walking the whole reduction.
      if (points >= targetThreads / 2 || count <= kMaxSerialWalk)
        return std::nullopt;
      maxChunks = std::min<int64_t>(llvm::divideCeil(targetThreads, points),
                           count / kMinThreadWalk);
    }
    if (maxChunks < 2)
      return std::nullopt;
    if (!rowReduction)
      if (std::optional<SplitChoice> rows = chooseBlockRowChunks(op))
        return rows;
    // Outermost reduction dimensions first; a row reduction keeps its
    // contiguous dimension reduced (it may only be split).
    SplitChoice choice;
    for (unsigned d : reductionDims) {
      bool contiguous = rowReduction && inner && d == *inner;
      if (!contiguous && choice.chunks * sizes[d] <= maxChunks) {
        choice.promoted.push_back(d);
        choice.chunks *= sizes[d];
        continue;
      }
      int64_t factor =
          largestDivisorAtMost(sizes[d], maxChunks / choice.chunks);
      if (factor > 1 && onlyPlainUses(op, d)) {
        choice.split = d;
        choice.factor = factor;
        choice.chunks *= factor;
      }
      break;
    }
    if (choice.chunks < 2)
      return std::nullopt;
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE << ": " << points << " outputs x "
                            << count << " -> " << choice.chunks
                            << " partials each\n");
    return choice;
  }

  /// Chunks of `block-rows` rows for the column sums (loops: rows...,
  /// columns; the rows reduced) of rows a row reduction of this block
  /// also reads (through reshapes, one of the inputs): a layer norm
  /// backward's weight and bias gradients. eff-gpu-form-kernels runs a
  /// row group one warp per row, `block-rows` rows a block, so such a
  /// partial sum joins the group (RowOpKind::ColumnPartial) and the rows
  /// are read once. None when the columns' workgroup buffers would not fit
  /// (kMaxRowGroupWorkgroupBytes) or no row reduction reads the rows.
  std::optional<SplitChoice> chooseBlockRowChunks(linalg::GenericOp op) {
    SmallVector<int64_t> sizes = op.getStaticLoopRanges();
    unsigned n = sizes.size();
    if (n < 2 || blockRows < 2 || innermostAccessedDim(op) != n - 1)
      return std::nullopt;
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    for (unsigned d = 0; d < n; ++d)
      if (linalg::isReductionIterator(iterators[d]) != (d != n - 1))
        return std::nullopt;
    int64_t columns = sizes.back();
    unsigned inner = n - 2;
    if (sizes[inner] % blockRows != 0 || sizes[inner] < 2 * blockRows ||
        !onlyPlainUses(op, inner))
      return std::nullopt;
    int64_t workgroupBytes = 0;
    for (Value init : op.getDpsInits())
      workgroupBytes +=
          blockRows * columns *
          cast<ShapedType>(init.getType()).getElementTypeBitWidth() / 8;
    if (workgroupBytes > kMaxRowGroupWorkgroupBytes)
      return std::nullopt;
    int64_t rows = 1;
    for (unsigned d = 0; d < n - 1; ++d)
      rows *= sizes[d];
    auto sourceOf = [](Value v) {
      while (Operation *def = v.getDefiningOp()) {
        if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
          break;
        v = def->getOperand(0);
      }
      return v;
    };
    // A row reduction over `rows` rows of `columns` reading `source`.
    auto readByRowReduction = [&](Value source) {
      SmallVector<Value> worklist{source};
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        for (Operation *user : v.getUsers()) {
          if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
            worklist.push_back(user->getResult(0));
            continue;
          }
          auto generic = dyn_cast<linalg::GenericOp>(user);
          if (!generic || generic == op ||
              generic->getBlock() != op->getBlock())
            continue;
          SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
          SmallVector<utils::IteratorType> its =
              generic.getIteratorTypesArray();
          if (ranges.size() < 2 || ranges.back() != columns ||
              !linalg::isReductionIterator(its.back()))
            continue;
          int64_t points = 1;
          bool parallel = true;
          for (unsigned d = 0; d + 1 < ranges.size(); ++d) {
            points *= ranges[d];
            parallel &= linalg::isParallelIterator(its[d]);
          }
          if (parallel && points == rows)
            return true;
        }
      }
      return false;
    };
    if (llvm::none_of(op.getDpsInputs(), [&](Value input) {
          return readByRowReduction(sourceOf(input));
        }))
      return std::nullopt;
    SplitChoice choice;
    for (unsigned d = 0; d < inner; ++d) {
      choice.promoted.push_back(d);
      choice.chunks *= sizes[d];
    }
    choice.split = inner;
    choice.factor = sizes[inner] / blockRows;
    choice.chunks *= choice.factor;
    ++numBlockRowSplits;
    return choice;
  }

  /// Rewrites `op` as the partial reduction and the combine; returns the
  /// combine.
  linalg::GenericOp split(IRRewriter &rewriter, linalg::GenericOp op,
                          const SplitChoice &choice) {
    MLIRContext *ctx = op.getContext();
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    SmallVector<int64_t> sizes = op.getStaticLoopRanges();
    unsigned numDims = op.getNumLoops();
    FailureOr<SmallVector<Combiner>> combiners = matchCombiners(op);
    assert(succeeded(combiners) && "checked by choose()");

    // The partial reduction's loop dimensions: the old ones, the split one
    // as (outer, inner) = (d, d + 1).
    auto newDim = [&](unsigned d) {
      return choice.split && d > *choice.split ? d + 1 : d;
    };
    unsigned partialDims = numDims + (choice.split ? 1 : 0);
    SmallVector<AffineExpr> dimReplacements;
    for (unsigned d = 0; d < numDims; ++d)
      dimReplacements.push_back(getAffineDimExpr(newDim(d), ctx));
    // Loop dimensions of the partials (new numbering) and their sizes, in
    // the order they lead each output.
    SmallVector<std::pair<unsigned, int64_t>> chunks;
    for (unsigned d : choice.promoted)
      chunks.push_back({newDim(d), sizes[d]});
    if (choice.split)
      chunks.push_back({*choice.split, choice.factor});
    llvm::sort(chunks);
    SmallVector<unsigned> chunkDims;
    SmallVector<int64_t> chunkSizes;
    for (auto [dim, size] : chunks) {
      chunkDims.push_back(dim);
      chunkSizes.push_back(size);
    }

    // Inputs: the split dimension expanded where it is read.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      Value value = input->get();
      SmallVector<AffineExpr> results;
      SmallVector<ReassociationIndices> groups;
      SmallVector<int64_t> shape;
      bool expands = false;
      auto type = dyn_cast<RankedTensorType>(value.getType());
      for (auto [i, expr] : llvm::enumerate(map.getResults())) {
        auto dim = dyn_cast<AffineDimExpr>(expr);
        if (choice.split && dim && dim.getPosition() == *choice.split) {
          expands = true;
          groups.push_back({static_cast<int64_t>(results.size()),
                            static_cast<int64_t>(results.size()) + 1});
          results.push_back(getAffineDimExpr(*choice.split, ctx));
          results.push_back(getAffineDimExpr(*choice.split + 1, ctx));
          shape.push_back(choice.factor);
          shape.push_back(type.getDimSize(i) / choice.factor);
          continue;
        }
        groups.push_back({static_cast<int64_t>(results.size())});
        results.push_back(expr.replaceDims(dimReplacements));
        if (type)
          shape.push_back(type.getDimSize(i));
      }
      if (expands)
        value = tensor::ExpandShapeOp::create(
            rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
            value, groups);
      inputs.push_back(value);
      maps.push_back(AffineMap::get(partialDims, 0, results, ctx));
    }
    // Outputs: the partials, chunk dimensions first, from the identity.
    SmallVector<Value> partialInits;
    SmallVector<AffineMap> outputMaps;
    for (auto [k, init] : llvm::enumerate(op.getDpsInitsMutable())) {
      AffineMap map = op.getMatchingIndexingMap(&init);
      SmallVector<AffineExpr> results;
      for (unsigned cd : chunkDims)
        results.push_back(getAffineDimExpr(cd, ctx));
      for (AffineExpr expr : map.getResults())
        results.push_back(expr.replaceDims(dimReplacements));
      auto type = cast<RankedTensorType>(init.get().getType());
      SmallVector<int64_t> shape(chunkSizes);
      llvm::append_range(shape, type.getShape());
      Value empty = tensor::EmptyOp::create(rewriter, loc, shape,
                                            type.getElementType());
      Value identity =
          arith::ConstantOp::create(rewriter, loc, (*combiners)[k].identity);
      partialInits.push_back(
          linalg::FillOp::create(rewriter, loc, identity, empty).getResult(0));
      outputMaps.push_back(AffineMap::get(partialDims, 0, results, ctx));
    }
    llvm::append_range(maps, outputMaps);
    SmallVector<utils::IteratorType> iterators;
    for (unsigned d = 0; d < numDims; ++d) {
      utils::IteratorType type = op.getIteratorTypesArray()[d];
      if (llvm::is_contained(choice.promoted, d))
        type = utils::IteratorType::parallel;
      if (choice.split && d == *choice.split) {
        iterators.push_back(utils::IteratorType::parallel);
        type = utils::IteratorType::reduction;
      }
      iterators.push_back(type);
    }
    SmallVector<Type> partialTypes;
    for (Value init : partialInits)
      partialTypes.push_back(init.getType());
    auto partial = linalg::GenericOp::create(rewriter, loc, partialTypes,
                                             inputs, partialInits, maps,
                                             iterators);
    lastPartial = partial;
    rewriter.cloneRegionBefore(op.getRegion(), partial.getRegion(),
                               partial.getRegion().end());
    // linalg.index of the old dimensions, in the new numbering.
    partial.getRegion().walk([&](linalg::IndexOp index) {
      unsigned d = index.getDim();
      rewriter.setInsertionPoint(index);
      Value replacement;
      if (choice.split && d == *choice.split) {
        // outer * (size / factor) + inner
        Value outer = linalg::IndexOp::create(rewriter, index.getLoc(), d);
        Value inner = linalg::IndexOp::create(rewriter, index.getLoc(), d + 1);
        Value stride = arith::ConstantIndexOp::create(
            rewriter, index.getLoc(), sizes[d] / choice.factor);
        replacement = arith::AddIOp::create(
            rewriter, index.getLoc(),
            arith::MulIOp::create(rewriter, index.getLoc(), outer, stride),
            inner);
      } else {
        replacement =
            linalg::IndexOp::create(rewriter, index.getLoc(), newDim(d));
      }
      rewriter.replaceOp(index, replacement);
    });

    // The combine: chunk dimensions reduced, then the old parallel ones.
    rewriter.setInsertionPoint(op);
    SmallVector<unsigned> parallelDims;
    op.getParallelDims(parallelDims);
    unsigned numChunks = chunkDims.size();
    unsigned combineDims = numChunks + parallelDims.size();
    SmallVector<AffineExpr> parallelReplacements(
        numDims, getAffineConstantExpr(0, ctx));
    for (auto [j, d] : llvm::enumerate(parallelDims))
      parallelReplacements[d] = getAffineDimExpr(numChunks + j, ctx);
    SmallVector<AffineMap> combineMaps;
    SmallVector<AffineMap> combineOutMaps;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      AffineMap map = op.getMatchingIndexingMap(&init);
      SmallVector<AffineExpr> results;
      for (unsigned c = 0; c < numChunks; ++c)
        results.push_back(getAffineDimExpr(c, ctx));
      for (AffineExpr expr : map.getResults())
        results.push_back(expr.replaceDims(parallelReplacements));
      combineMaps.push_back(AffineMap::get(combineDims, 0, results, ctx));
      combineOutMaps.push_back(map.replaceDimsAndSymbols(
          parallelReplacements, {}, combineDims, 0));
    }
    llvm::append_range(combineMaps, combineOutMaps);
    SmallVector<utils::IteratorType> combineIterators(
        numChunks, utils::IteratorType::reduction);
    combineIterators.append(parallelDims.size(),
                            utils::IteratorType::parallel);
    SmallVector<Value> inits(op.getDpsInits());
    auto combine = linalg::GenericOp::create(
        rewriter, loc, op.getResultTypes(), partial.getResults(), inits,
        combineMaps, combineIterators,
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          unsigned n = combiners->size();
          SmallVector<Value> yielded;
          for (auto [k, c] : llvm::enumerate(*combiners)) {
            BlockArgument out = op.getMatchingBlockArgument(
                &op.getDpsInitsMutable()[k]);
            IRMapping mapping;
            for (Value operand : c.combiner->getOperands())
              mapping.map(operand, operand == out ? args[n + k] : args[k]);
            yielded.push_back(b.clone(*c.combiner, mapping)->getResult(0));
          }
          linalg::YieldOp::create(b, nloc, yielded);
        });
    rewriter.replaceOp(op, combine.getResults());
    return combine;
  }
};

} // namespace
} // namespace effopt
