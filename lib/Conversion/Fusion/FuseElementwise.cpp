//===- FuseElementwise.cpp - one loop nest per elementwise chain ----------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace effopt {
#define GEN_PASS_DEF_EFFFUSEELEMENTWISEPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// The element op of a generic that only widens its one input
/// (`arith.extf` of each element, every loop parallel, its output written
/// through a permutation), or null.
arith::ExtFOp wideningOf(linalg::GenericOp op) {
  if (!op || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumLoops() == 0 || op.getNumLoops() != op.getNumParallelLoops() ||
      !op.getIndexingMapsArray().back().isPermutation())
    return {};
  Block *body = op.getBody();
  if (body->getOperations().size() != 2)
    return {};
  auto ext = dyn_cast<arith::ExtFOp>(body->front());
  if (!ext || ext.getIn() != body->getArgument(0) ||
      body->getTerminator()->getOperand(0) != ext.getResult())
    return {};
  return ext;
}

/// Most operations a producer with other users may have to be computed
/// again in a consumer (its body, terminator excluded).
constexpr unsigned kMaxRecomputedOps = 16;
/// Most large inputs a reader that recomputes a producer may read on top of
/// its own, in place of the producer's one stored result: reading more
/// would move more bytes than storing the result once and reading it back
/// (a residual gradient summed from four branches stays stored).
constexpr unsigned kMaxNewReads = 2;

/// Whether `value` is live at `consumer` without `producer`: a block
/// argument (a step argument lives for the whole step), a constant, or used
/// at or after `consumer` by an op other than `producer`.
static bool liveAt(Value value, Operation *consumer, Operation *producer) {
  if (isa<BlockArgument>(value) ||
      value.getDefiningOp()->hasTrait<OpTrait::ConstantLike>())
    return true;
  Block *block = consumer->getBlock();
  for (Operation *user : value.getUsers()) {
    if (user == producer)
      continue;
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (ancestor &&
        (ancestor == consumer || consumer->isBeforeInBlock(ancestor)))
      return true;
  }
  return false;
}

/// Whether fusing `fused`'s producer into its owner keeps the step's memory
/// and arithmetic, in the second round of fusion, where a producer with
/// other users is computed again in each reader (upstream's fusion clones
/// it into the consumer and leaves it for its other users), and a producer
/// that became single-use that way moves into its last reader. Allowed
/// when:
/// - a producer with other users has one result, computed from its inputs
///   alone (no update in place), with a few `arith` ops without division,
///   read through its own result map by an elementwise consumer (each
///   element computed once, by the same operations in the same order, so
///   bitwise the stored value), and adds at most kMaxNewReads large inputs
///   to what the consumer reads. Not into reductions: batch-norm sums run
///   one sequential f64 chain per channel, and work added to each element
///   there cost more than reading a stored tensor (EfficientNet-B0's SiLU
///   gradient recomputed in its batch norms' sums: +8% CPU time a step);
/// - its inputs larger than an eighth of its result are live at the
///   consumer anyway, or take no more bytes than its results, which every
///   reader then computes itself (one set of buffers replaces the other).
/// The case it is for: a ReLU6 after a batch norm is two compares whose
/// masks the backward keeps and two selects, all from the normalised
/// values. The forward becomes one pass that stores no mask, and the
/// backward recomputes the masks from the batch norm's input, which it
/// reads anyway; a ReLU's mask of a tensor nothing else keeps stays stored
/// (an i1 mask instead of the f32 tensor).
static bool recomputesCheaply(OpOperand *fused, bool onlyUser) {
  auto producer = cast<linalg::GenericOp>(fused->get().getDefiningOp());
  auto consumer = cast<linalg::GenericOp>(fused->getOwner());
  if (producer.getNumLoops() == 0)
    return false;
  if (!onlyUser) {
    // One result computed from inputs alone: an update in place (max
    // pooling's backward, its running maximum and tap) reads its outputs,
    // and a producer of several results would compute all of them again.
    if (producer->getNumResults() != 1 ||
        llvm::any_of(producer.getDpsInitsMutable(), [&](OpOperand &init) {
          return producer.payloadUsesValueFromOperand(&init);
        }))
      return false;
    if (consumer.getNumReductionLoops() != 0 ||
        consumer.getMatchingIndexingMap(fused) !=
            producer.getIndexingMapMatchingResult(
                cast<OpResult>(fused->get())))
      return false;
    unsigned ops = 0;
    for (Operation &op : producer.getBody()->without_terminator()) {
      if (++ops > kMaxRecomputedOps ||
          !isa<arith::ArithDialect>(op.getDialect()) ||
          isa<arith::DivFOp, arith::RemFOp, arith::DivSIOp, arith::DivUIOp,
              arith::RemSIOp, arith::RemUIOp>(op))
        return false;
    }
  }
  auto resultType = cast<RankedTensorType>(fused->get().getType());
  int64_t extended = 0;
  unsigned newReads = 0;
  for (Value input : producer.getDpsInputs()) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    if (!type || 8 * type.getNumElements() <= resultType.getNumElements())
      continue;
    if (!llvm::is_contained(consumer.getDpsInputs(), input))
      ++newReads;
    if (!liveAt(input, consumer, producer))
      extended += storageBytes(type);
  }
  if (!onlyUser && newReads > kMaxNewReads)
    return false;
  if (extended == 0)
    return true;
  // Inputs kept alive longer are paid for by the producer's results only if
  // those go away: every reader must be able to compute them itself.
  int64_t results = 0;
  for (OpResult result : producer->getResults()) {
    results += storageBytes(result.getType());
    AffineMap map = producer.getIndexingMapMatchingResult(result);
    for (OpOperand &use : result.getUses()) {
      auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!reader || !reader.isDpsInput(&use) ||
          reader.getMatchingIndexingMap(&use) != map ||
          (!onlyUser && reader.getNumReductionLoops() != 0))
        return false;
    }
  }
  return extended <= results;
}

/// The bytes of kernel arguments a value takes once outlined: a tensor
/// becomes a memref descriptor (two pointers, an offset, sizes and
/// strides), a scalar one 8-byte word.
static int64_t argumentBytes(Value value) {
  if (auto shaped = dyn_cast<ShapedType>(value.getType()))
    return 8 * (3 + 2 * shaped.getRank());
  return 8;
}

/// The bytes of kernel arguments of the op that fusing `fused`'s producer
/// into its owner makes: each distinct input of both but the fused value,
/// every output of the consumer, and the producer's outputs the fused op
/// keeps (upstream's prediction: results with other users).
static int64_t fusedArgumentBytes(OpOperand *fused) {
  auto producer = cast<linalg::GenericOp>(fused->get().getDefiningOp());
  auto consumer = cast<linalg::GenericOp>(fused->getOwner());
  SmallVector<Value> inputs;
  auto addInput = [&](Value input) {
    if (!llvm::is_contained(inputs, input))
      inputs.push_back(input);
  };
  for (OpOperand *input : consumer.getDpsInputOperands())
    if (input != fused)
      addInput(input->get());
  for (Value input : producer.getDpsInputs())
    addInput(input);
  int64_t bytes = 0;
  for (Value input : inputs)
    bytes += argumentBytes(input);
  // Outputs are separate buffers even where they share an empty tensor.
  for (Value init : consumer.getDpsInits())
    bytes += argumentBytes(init);
  for (int index : linalg::getPreservedProducerResults(producer, consumer,
                                                        fused))
    bytes += argumentBytes(producer->getResult(index));
  return bytes;
}

/// Fuse a generic producer into a generic consumer when the consumer is its
/// only user and the producer has loops: named ops stay named. With
/// `recompute` (the second round), only where recomputesCheaply. A producer
/// that only widens (bf16 -> f32) fuses into every consumer: each reads the
/// narrow values and widens them itself, and the wide copy is never stored.
/// With `maxArgumentBytes` > 0, never into an op that would take more bytes
/// of kernel arguments.
bool shouldFuse(OpOperand *fused, bool recompute, int64_t maxArgumentBytes) {
  Operation *producer = fused->get().getDefiningOp();
  Operation *consumer = fused->getOwner();
  if (!isa_and_nonnull<linalg::GenericOp>(producer) ||
      !isa<linalg::GenericOp>(consumer))
    return false;
  if (maxArgumentBytes > 0 && fusedArgumentBytes(fused) > maxArgumentBytes)
    return false;
  if (wideningOf(cast<linalg::GenericOp>(producer)))
    return true;
  bool onlyUser = llvm::all_of(producer->getUsers(), [&](Operation *user) {
    return user == consumer;
  });
  if (!recompute ? !onlyUser : !recomputesCheaply(fused, onlyUser))
    return false;
  // A rank-0 producer (the per-step scalars of an optimizer update: bias
  // corrections with pow) stays a loop of its own: fused into a loop nest
  // it would be recomputed for every element.
  if (cast<linalg::GenericOp>(producer).getNumLoops() == 0 &&
      cast<linalg::GenericOp>(consumer).getNumLoops() != 0)
    return false;
  return true;
}

/// `tensor.extract` of a widening generic's result reads the narrow
/// source and widens the one element (a loss's gather of the target's
/// logit), so the wide tensor has no reader left.
struct ExtractThroughWidening : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractOp extract,
                                PatternRewriter &rewriter) const override {
    auto producer = extract.getTensor().getDefiningOp<linalg::GenericOp>();
    arith::ExtFOp ext = wideningOf(producer);
    if (!ext)
      return failure();
    // The source element at the extracted output position: input map
    // composed with the inverse of the output permutation.
    AffineMap outMap = producer.getIndexingMapsArray().back();
    AffineMap inMap = producer.getIndexingMapsArray().front();
    if (!inMap.isProjectedPermutation())
      return failure();
    AffineMap sourceOfOutput = inMap.compose(inversePermutation(outMap));
    SmallVector<Value> indices;
    for (AffineExpr expr : sourceOfOutput.getResults())
      indices.push_back(
          extract.getIndices()[cast<AffineDimExpr>(expr).getPosition()]);
    Location loc = extract.getLoc();
    Value narrow = tensor::ExtractOp::create(
        rewriter, loc, producer.getDpsInputs()[0], indices);
    rewriter.replaceOpWithNewOp<arith::ExtFOp>(extract, ext.getType(), narrow);
    return success();
  }
};

struct EffFuseElementwisePass
    : impl::EffFuseElementwisePassBase<EffFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t maxBytes = maxKernelArgumentBytes;
    // Single-use chains first: recomputing a producer needs its inputs live
    // at the consumer, which they often are only once the chains that read
    // them have been fused into their last readers.
    for (bool recompute : {false, true}) {
      RewritePatternSet patterns(&getContext());
      linalg::populateElementwiseOpsFusionPatterns(
          patterns,
          [recompute, maxBytes](OpOperand *fused) {
            return shouldFuse(fused, recompute, maxBytes);
          });
      linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
      patterns.add<ExtractThroughWidening>(&getContext());
      if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace effopt
