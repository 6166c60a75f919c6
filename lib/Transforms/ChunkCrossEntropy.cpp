//===- ChunkCrossEntropy.cpp - eff-chunk-cross-entropy --------------------===//
//
// A language model's logits are its largest tensor. After autodiff they are
// written by the LM head's product in the forward, read by the loss, held
// until the backward starts, and turned into a gradient of the same size
// that two products read (dA and dW). This pass computes all of that a
// chunk of rows at a time where the backward starts, so only one chunk's
// logits are ever live: per chunk, the logits (the product again, on that
// chunk's rows of A), the summed loss, the logits' gradient and the
// backward ops that read it. What those ops produce is put together the way
// it depends on the rows: row-wise results are concatenated, contractions
// over the rows (dW, a bias's gradient) are summed in f32 and rounded once.
//
// It runs after the passes that decide the backward's seed (accumulation,
// ZeRO, loss scaling): the chunks' gradients use the cross-entropy
// gradient's own seed operand, whatever it became.
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"
#include "effopt/Transforms/LossWeighting.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace effopt {
#define GEN_PASS_DEF_EFFCHUNKCROSSENTROPYPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt::eff;
using effopt::countTargets;
using effopt::scalarF32;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The number of rows of `type` seen as [rows, last dimension].
int64_t rowsOf(RankedTensorType type) {
  int64_t rows = 1;
  for (int64_t d : type.getShape().drop_back())
    rows *= d;
  return rows;
}

Value stripSaves(Value v) {
  while (auto save = v.getDefiningOp<SaveOp>())
    v = save.getInput();
  return v;
}

/// Whether `a` and `b` compute the same tensor: the same value (through
/// saves), or the same result of ops of one kind with equal attributes
/// (the recompute tag aside) and operands that compute the same tensors --
/// so a chain eff-remat recomputed in the backward matches its original.
bool computeSame(Value a, Value b, int depth = 0) {
  a = stripSaves(a);
  b = stripSaves(b);
  if (a == b)
    return true;
  if (depth > 16 || a.getType() != b.getType())
    return false;
  auto ra = dyn_cast<OpResult>(a), rb = dyn_cast<OpResult>(b);
  if (!ra || !rb || ra.getResultNumber() != rb.getResultNumber())
    return false;
  Operation *x = ra.getOwner(), *y = rb.getOwner();
  if (x->getName() != y->getName() || x->getNumRegions() != 0 ||
      y->getNumRegions() != 0 || x->getNumOperands() != y->getNumOperands())
    return false;
  auto attrsOf = [](Operation *op) {
    SmallVector<NamedAttribute> attrs;
    for (NamedAttribute attr : op->getAttrs())
      if (attr.getName() != kRecomputedAttrName)
        attrs.push_back(attr);
    return attrs;
  };
  if (attrsOf(x) != attrsOf(y))
    return false;
  for (auto [p, q] : llvm::zip(x->getOperands(), y->getOperands()))
    if (!computeSame(p, q, depth + 1))
      return false;
  return true;
}

bool keepsLastDim(ReshapeOp reshape) {
  return typeOf(reshape.getInput()).getShape().back() ==
         typeOf(reshape.getResult()).getShape().back();
}

/// An argument of the step that holds a parameter (trainable, frozen or a
/// buffer).
bool isParameter(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && arg.getOwner()->isEntryBlock() &&
         func.getArgAttr(arg.getArgNumber(), kParameterAttrName);
}

/// A copy of a parameter or constant made by moving or casting it (a
/// transposed bf16 weight): recomputed where it is read instead of being
/// held from the forward, as eff-autodiff does with parameter copies.
bool isCheapCopy(Value v, int depth = 0) {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8 ||
      !isa<CastOp, TransposeOp, ReshapeOp, BroadcastToOp>(def))
    return false;
  for (Value operand : def->getOperands())
    if (!isParameter(operand) && !operand.getDefiningOp<ConstantOp>() &&
        !isCheapCopy(operand, depth + 1))
      return false;
  return true;
}

/// How a backward op reads the logits' gradient (or a row-wise function
/// of it).
enum class Use {
  // Its result's rows come from the same rows.
  RowWise,
  // A product summing over the rows (dW): eff.linear with transpose_a, or
  // eff.matmul of a transposed operand.
  Contraction,
  // eff.reduce_sum over the rows (a bias's gradient).
  RowSum,
};

class Chunker {
public:
  Chunker(func::FuncOp func, int64_t requested)
      : dominance(func), requested(requested) {}

  /// Chunks the loss whose gradient `grad` computes; returns the number of
  /// chunks (0: left as it is).
  int64_t run(SoftmaxCrossEntropyGradOp grad);

private:
  bool match(SoftmaxCrossEntropyGradOp grad);
  bool productOf(Value logits);
  bool canMaterialize(Value v, int depth = 0);
  Value gatheredTwin(Operation *def);
  Value materialize(OpBuilder &b, Value v);
  int64_t chunkCount(int64_t rows, int64_t contracted, int64_t classes);

  DominanceInfo dominance;
  int64_t requested;

  // The match.
  Operation *ip = nullptr; // where the chunks go: the gradient op
  SoftmaxCrossEntropyOp loss;
  Operation *product = nullptr;        // eff.matmul or eff.linear
  SmallVector<Operation *> chain;      // casts/reshapes, product -> logits
  llvm::SetVector<Operation *> doomed; // erased when dead
  llvm::SetVector<Operation *> cone;
  llvm::MapVector<Operation *, Use> uses;
  llvm::DenseMap<Operation *, std::pair<Value, Value>> contractionOperands;
  llvm::SetVector<Value> escaping;
  llvm::DenseMap<Value, Value> materialized;
  /// Readers of the loss before the gradient, moved after the chunks.
  llvm::SetVector<Operation *> lateReaders;
};

/// The forward's gather that `def` (eff-remat's recomputation of it, a
/// ZeRO-3 parameter gathered again for the backward) repeats, when it is
/// defined before the chunks: they read that one rather than gather the
/// parameter a third time.
Value Chunker::gatheredTwin(Operation *def) {
  auto gather = dyn_cast_or_null<AllGatherOp>(def);
  if (!gather || !gather->hasAttr(kRecomputedAttrName))
    return {};
  for (Operation *user : gather.getInput().getUsers()) {
    auto twin = dyn_cast<AllGatherOp>(user);
    if (twin && twin != gather && !twin->hasAttr(kRecomputedAttrName) &&
        twin.getType() == gather.getType() &&
        twin.getWorldSize() == gather.getWorldSize() &&
        dominance.properlyDominates(twin.getOperation(), ip))
      return twin.getResult();
  }
  return {};
}

bool Chunker::canMaterialize(Value v, int depth) {
  if (isCheapCopy(v))
    return true;
  if (dominance.properlyDominates(v, ip))
    return true;
  if (gatheredTwin(v.getDefiningOp()))
    return true;
  // Movement ops, and what eff-remat recomputes in the backward (clones
  // of forward ops on kept values), can run earlier.
  Operation *def = v.getDefiningOp();
  if (!def || depth > 16 || def->getNumRegions() != 0 ||
      !(isa<CastOp, TransposeOp, ReshapeOp, BroadcastToOp, SliceOp, SaveOp,
            ConstantOp>(def) ||
        def->hasAttr(kRecomputedAttrName)))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return canMaterialize(operand, depth + 1);
  });
}

/// `v` at the chunks' insertion point: itself where it is defined before,
/// else (and for cheap copies of parameters) its chain of movement and
/// recomputed ops cloned there (the originals stay for their other
/// readers).
Value Chunker::materialize(OpBuilder &b, Value v) {
  if (Value done = materialized.lookup(v))
    return done;
  if (auto save = v.getDefiningOp<SaveOp>())
    if (dominance.properlyDominates(save.getInput(), ip))
      return materialize(b, save.getInput());
  bool copy = isCheapCopy(v);
  if (!copy && dominance.properlyDominates(v, ip)) {
    // A forward value: read through its eff.save where it has one.
    for (Operation *user : v.getUsers())
      if (isa<SaveOp>(user) && dominance.properlyDominates(user, ip))
        return user->getResult(0);
    return v;
  }
  Operation *def = v.getDefiningOp();
  if (Value twin = gatheredTwin(def)) {
    materialized[v] = twin;
    // The gather again and the views of it are erased if nothing else
    // reads them once the chunks replace the backward's products.
    SmallVector<Operation *> views{def};
    while (!views.empty()) {
      Operation *op = views.pop_back_val();
      doomed.insert(op);
      for (Operation *user : op->getUsers())
        if (isa<ReshapeOp, TransposeOp, CastOp, SaveOp>(user))
          views.push_back(user);
    }
    return twin;
  }
  IRMapping mapping;
  for (Value operand : def->getOperands())
    mapping.map(operand, materialize(b, operand));
  Operation *clone = b.clone(*def, mapping);
  clone->setLoc(withProvenance(def->getLoc(), Provenance::Recomputed));
  clone->setAttr(kRecomputedAttrName, b.getUnitAttr());
  Value result = clone->getResult(cast<OpResult>(v).getResultNumber());
  materialized[v] = result;
  return result;
}

/// The logits `x`: a product (eff.matmul with a rank-2 right operand, or
/// eff.linear without transpose_a) seen through casts and reshapes that keep
/// the class dimension (and saves). Sets `chain` (product -> logits order)
/// and `product`.
bool Chunker::productOf(Value x) {
  chain.clear();
  product = nullptr;
  Block *block = ip->getBlock();
  Value v = stripSaves(x);
  while (true) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != block)
      return false;
    if (auto reshape = dyn_cast<ReshapeOp>(def)) {
      if (!keepsLastDim(reshape))
        return false;
    } else if (!isa<CastOp>(def)) {
      break;
    }
    chain.push_back(def);
    v = stripSaves(def->getOperand(0));
  }
  std::reverse(chain.begin(), chain.end());
  Operation *def = v.getDefiningOp();
  Value a;
  if (auto matmul = dyn_cast<MatmulOp>(def)) {
    if (typeOf(matmul.getRhs()).getRank() != 2)
      return false;
    a = matmul.getLhs();
  } else if (auto linear = dyn_cast<LinearOp>(def)) {
    if (linear.getTransposeA())
      return false;
    a = linear.getA();
  } else {
    return false;
  }
  if (rowsOf(typeOf(a)) != typeOf(x).getShape()[0] ||
      !isa<FloatType>(typeOf(a).getElementType()))
    return false;
  product = def;
  return true;
}

bool Chunker::match(SoftmaxCrossEntropyGradOp grad) {
  // Values the chunks read, checked against the insertion point at the end.
  SmallVector<Value> needed{grad.getLabels(), grad.getLossGrad()};
  auto need = [&](Value v) {
    needed.push_back(v);
    return true;
  };
  if (grad.getWeight() || (grad.getReduction() != LossReduction::Mean &&
                           grad.getReduction() != LossReduction::Sum))
    return false;
  auto logitsType = typeOf(grad.getInput());
  if (logitsType.getRank() != 2 || typeOf(grad.getLabels()).getRank() != 1 ||
      typeOf(grad.getLossGrad()).getRank() != 0)
    return false;
  int64_t classes = logitsType.getShape()[1];
  Block *block = grad->getBlock();

  // The forward loss computing the same function.
  for (Operation &op : *block) {
    auto candidate = dyn_cast<SoftmaxCrossEntropyOp>(op);
    if (!candidate || candidate.getWeight() ||
        candidate.getReduction() != grad.getReduction() ||
        candidate.getIgnoreIndex() != grad.getIgnoreIndex() ||
        !computeSame(candidate.getInput(), grad.getInput()) ||
        !computeSame(candidate.getLabels(), grad.getLabels()))
      continue;
    if (loss)
      return false; // two losses of the same logits: ambiguous
    loss = candidate;
  }
  if (!loss || !loss->isBeforeInBlock(grad))
    return false;

  // What the backward does with the logits' gradient.
  SmallVector<Value> worklist{grad.getResult()};
  llvm::DenseSet<Value> coneValues{grad.getResult()};
  auto inCone = [&](Value x) { return coneValues.contains(x); };
  // `op` computes left^T right over the rows, one side a row-wise function
  // of the gradient, the other a row-aligned [rows, k] value.
  auto contraction = [&](Operation *op, Value left, Value right) {
    Value other = inCone(left) ? right : left;
    Type element = typeOf(other).getElementType();
    if (typeOf(other).getShape()[0] != logitsType.getShape()[0] ||
        !(element.isF32() || element.isF16() || element.isBF16()) ||
        !need(other))
      return false;
    uses[op] = Use::Contraction;
    contractionOperands[op] = {left, right};
    return true;
  };
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (uses.count(user))
        continue;
      if (user->getBlock() != block)
        return false;
      auto rowWise = [&]() {
        uses[user] = Use::RowWise;
        coneValues.insert(user->getResult(0));
        worklist.push_back(user->getResult(0));
      };
      // A widening cast of a narrower value (dA to f32) is left outside:
      // the chunks' results are put together in the narrower type.
      auto widens = [&](Operation *op) {
        auto in = typeOf(op->getOperand(0)), out = typeOf(op->getResult(0));
        return in.getShape().back() != classes &&
               in.getElementTypeBitWidth() < out.getElementTypeBitWidth();
      };
      if (isa<CastOp>(user) && !widens(user)) {
        rowWise();
      } else if (auto reshape = dyn_cast<ReshapeOp>(user);
                 reshape && keepsLastDim(reshape)) {
        rowWise();
      } else if (auto matmul = dyn_cast<MatmulOp>(user);
                 matmul && matmul.getLhs() == value &&
                 !inCone(matmul.getRhs()) &&
                 typeOf(matmul.getRhs()).getRank() == 2 &&
                 need(matmul.getRhs())) {
        rowWise();
      } else if (auto linear = dyn_cast<LinearOp>(user);
                 linear && !linear.getBias() && !linear.getTransposeA() &&
                 linear.getA() == value && !inCone(linear.getB()) &&
                 need(linear.getB())) {
        rowWise();
      } else if (linear && !linear.getBias() && linear.getTransposeA() &&
                 !linear.getTransposeB() &&
                 linear.getAlpha().convertToDouble() == 1.0 &&
                 inCone(linear.getA()) != inCone(linear.getB())) {
        if (!contraction(user, linear.getA(), linear.getB()))
          return false;
      } else if (auto transposed =
                     matmul ? matmul.getLhs().getDefiningOp<TransposeOp>()
                            : TransposeOp();
                 transposed && matmul.getRhs() == value &&
                 typeOf(transposed.getInput()).getRank() == 2 &&
                 !inCone(transposed.getInput())) {
        // matmul(transpose(O), Y): autodiff's dW of a rank-2 matmul.
        if (!contraction(user, transposed.getInput(), value))
          return false;
      } else if (auto sum = dyn_cast<ReduceSumOp>(user);
                 sum && !sum.getKeepDims() &&
                 llvm::equal(
                     sum.getAxes(),
                     llvm::seq<int64_t>(0, typeOf(value).getRank() - 1)) &&
                 isa<FloatType>(typeOf(value).getElementType())) {
        uses[user] = Use::RowSum;
      } else {
        // Read whole: a row-wise value rebuilt from its chunks, unless it
        // is as large as the logits (then chunking saves nothing).
        if (typeOf(value).getShape().back() == classes)
          return false;
        escaping.insert(value);
      }
    }
  }
  // The chunks go where the backward starts, the product recomputed from
  // the chain the gradient reads (the forward's, or eff-remat's
  // recomputation of it); what they read must be available or recomputable
  // there.
  ip = grad;
  if (!productOf(grad.getInput()))
    return false;
  SmallVector<Value> reads(product->getOperands());
  reads.append(needed);
  if (!llvm::all_of(reads, [&](Value v) { return canMaterialize(v); }))
    return false;
  // The loss is defined there from now on. Its readers before the
  // gradient (eff-zero starts the loss's all-reduce in the forward: the
  // weighted loss, its where, the start) move after the chunks, with
  // whatever reads them before the gradient; nothing the chunks or the
  // gradient read may be among them.
  lateReaders.clear();
  SmallVector<Operation *> readers(loss->getUsers().begin(),
                                   loss->getUsers().end());
  while (!readers.empty()) {
    Operation *ancestor =
        block->findAncestorOpInBlock(*readers.pop_back_val());
    if (!ancestor || ancestor == grad.getOperation())
      return false;
    if (grad->isBeforeInBlock(ancestor) || !lateReaders.insert(ancestor))
      continue;
    for (Value result : ancestor->getResults())
      llvm::append_range(readers, result.getUsers());
  }
  for (Operation *late : lateReaders)
    for (Value result : late->getResults())
      if (llvm::is_contained(reads, result) ||
          llvm::any_of(result.getUsers(), [&](Operation *user) {
            Operation *ancestor = block->findAncestorOpInBlock(*user);
            return !ancestor || ancestor == grad.getOperation() ||
                   uses.count(ancestor);
          }))
        return false;

  for (auto &entry : uses)
    cone.insert(entry.first);
  SmallVector<Operation *> ordered(cone.begin(), cone.end());
  llvm::sort(ordered,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  cone = llvm::SetVector<Operation *>(ordered.begin(), ordered.end());

  // Erased when dead once the chunks replace them.
  for (Operation *op : llvm::reverse(cone))
    doomed.insert(op);
  // With each loss op, the chain of its logits down to the product.
  for (Operation *lossOp : {grad.getOperation(), loss.getOperation()}) {
    doomed.insert(lossOp);
    for (Value x = lossOp->getOperand(0); Operation *def = x.getDefiningOp();) {
      if (!isa<SaveOp, CastOp, ReshapeOp, MatmulOp, LinearOp>(def))
        break;
      doomed.insert(def);
      if (isa<MatmulOp, LinearOp>(def))
        break;
      x = def->getOperand(0);
    }
  }
  return true;
}

int64_t Chunker::chunkCount(int64_t rows, int64_t contracted, int64_t classes) {
  if (requested > 0)
    return std::min(requested, rows);
  // Worth it only for a classifier wider than its input (an LM head); each
  // chunk keeps at least 2 x K rows, so the f32 accumulator a chunk reads
  // and writes stays small next to the logits it computes.
  if (classes < 4 * contracted)
    return 1;
  int64_t chunks = 1;
  while (chunks * 2 <= rows / (2 * contracted))
    chunks *= 2;
  return chunks;
}

int64_t Chunker::run(SoftmaxCrossEntropyGradOp grad) {
  if (!match(grad))
    return 0;
  Value a = isa<MatmulOp>(product) ? product->getOperand(0)
                                   : cast<LinearOp>(product).getA();
  auto aType = typeOf(a);
  int64_t rows = rowsOf(aType), contracted = aType.getShape().back();
  int64_t classes = typeOf(grad.getInput()).getShape()[1];
  int64_t chunks = chunkCount(rows, contracted, classes);
  if (chunks <= 1)
    return 0;
  int64_t chunkRows = (rows + chunks - 1) / chunks;
  chunks = (rows + chunkRows - 1) / chunkRows;

  OpBuilder b(ip);
  Location loc = grad.getLoc();
  Location forwardLoc = withProvenance(loss.getLoc(), Provenance::Recomputed);
  Type f32 = b.getF32Type();
  auto i64s = [&](ArrayRef<int64_t> values) {
    return b.getDenseI64ArrayAttr(values);
  };
  auto rowSlice = [&](Value whole, int64_t begin, int64_t end) -> Value {
    auto type = typeOf(whole);
    SmallVector<int64_t> starts(type.getRank(), 0), limits(type.getShape()),
        strides(type.getRank(), 1);
    starts[0] = begin;
    limits[0] = end;
    return SliceOp::create(b, loc, whole, i64s(starts), i64s(limits),
                           i64s(strides));
  };
  auto asRows = [&](Value x) -> Value {
    auto type = typeOf(x);
    if (type.getRank() == 2)
      return x;
    return ReshapeOp::create(
        b, loc, type.clone({rowsOf(type), type.getShape().back()}), x);
  };

  // Shared by every chunk.
  Value aRows = asRows(materialize(b, a));
  Value weight, bias;
  if (auto linear = dyn_cast<LinearOp>(product)) {
    weight = materialize(b, linear.getB());
    if (linear.getBias())
      bias = materialize(b, linear.getBias());
  } else {
    weight = materialize(b, product->getOperand(1));
  }
  Value labels = materialize(b, grad.getLabels());
  Value seed = materialize(b, grad.getLossGrad());
  std::optional<int64_t> ignoreIndex = grad.getIgnoreIndex();
  Value count; // mean: the number of counted targets, in f32
  if (grad.getReduction() == LossReduction::Mean)
    count = ignoreIndex ? countTargets(b, loc, labels, *ignoreIndex)
                        : scalarF32(b, loc, static_cast<double>(rows));
  auto inType = [&](Value x, RankedTensorType type) -> Value {
    if (typeOf(x) == type)
      return x;
    return CastOp::create(b, loc, type, x);
  };
  // The loss and the gradient are computed from f32 logits (widened
  // exactly where the logits are narrower): the chunks' losses then add up
  // in f32 and round once, as the whole loss did.
  Type logitsElement = typeOf(grad.getInput()).getElementType();
  Type wide = logitsElement.getIntOrFloatBitWidth() < 32 ? f32 : logitsElement;
  auto scalarWide = RankedTensorType::get({}, wide);
  Value chunkSeed = inType(seed, scalarWide);
  if (count)
    chunkSeed = DivOp::create(b, loc, chunkSeed, inType(count, scalarWide));
  Value zero; // the first f32 accumulator of every contraction

  Value lossSum;
  llvm::MapVector<Value, SmallVector<Value>> pieces;
  llvm::MapVector<Operation *, Value> sums; // contraction / row sum -> f32
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    int64_t begin = chunk * chunkRows;
    int64_t end = std::min(rows, begin + chunkRows), n = end - begin;
    auto flat = [&](Value original) {
      auto type = typeOf(original);
      return RankedTensorType::get({n, type.getShape().back()},
                                   type.getElementType());
    };
    // The chunk's logits.
    b.setInsertionPoint(ip);
    Value aChunk = rowSlice(aRows, begin, end);
    Value logits;
    if (auto linear = dyn_cast<LinearOp>(product))
      logits = LinearOp::create(b, forwardLoc, aChunk, weight, bias,
                                linear.getTransposeAAttr(),
                                linear.getTransposeBAttr(),
                                linear.getAlphaAttr(), linear.getBetaAttr());
    else
      logits = MatmulOp::create(b, forwardLoc, aChunk, weight);
    for (Operation *op : chain)
      if (isa<CastOp>(op))
        logits = CastOp::create(b, forwardLoc, flat(op->getResult(0)), logits);
    Value labelChunk = rowSlice(labels, begin, end);
    auto logitsType = typeOf(logits);
    Value wideLogits = logits;
    if (logitsType.getElementType() != wide)
      wideLogits =
          CastOp::create(b, forwardLoc, logitsType.clone(wide), logits);
    Value chunkLoss = SoftmaxCrossEntropyOp::create(
        b, forwardLoc, wideLogits, labelChunk, Value(), LossReduction::Sum,
        grad.getIgnoreIndexAttr());
    lossSum = lossSum ? Value(AddOp::create(b, forwardLoc, lossSum, chunkLoss))
                      : chunkLoss;

    // Its gradient and the backward ops that read it.
    llvm::DenseMap<Value, Value> chunkOf;
    chunkOf[grad.getResult()] = inType(
        SoftmaxCrossEntropyGradOp::create(
            b, loc, wideLogits.getType(), wideLogits, labelChunk, chunkSeed,
            Value(), LossReduction::Sum, grad.getIgnoreIndexAttr()),
        logitsType);
    for (Operation *op : cone) {
      Location l = op->getLoc();
      Use use = uses.lookup(op);
      if (use == Use::RowWise) {
        Value in = chunkOf.lookup(op->getOperand(0));
        Value out;
        if (isa<CastOp>(op))
          out = CastOp::create(b, l, flat(op->getResult(0)), in);
        else if (isa<ReshapeOp>(op))
          out = in;
        else if (auto matmul = dyn_cast<MatmulOp>(op))
          out = MatmulOp::create(b, l, in, materialize(b, matmul.getRhs()));
        else {
          auto linear = cast<LinearOp>(op);
          out = LinearOp::create(b, l, in, materialize(b, linear.getB()),
                                 Value(), linear.getTransposeAAttr(),
                                 linear.getTransposeBAttr(),
                                 linear.getAlphaAttr(), linear.getBetaAttr());
        }
        chunkOf[op->getResult(0)] = out;
        continue;
      }
      // Partial sums are the backward's temporaries; the last one (or its
      // rounding) takes the op's place and its provenance (a parameter's
      // gradient, for the memory report).
      l = withProvenance(l, Provenance::Backward);
      Value &sum = sums[op];
      if (use == Use::Contraction) {
        auto operand = [&](Value x) -> Value {
          if (Value c = chunkOf.lookup(x))
            return c;
          return rowSlice(materialize(b, x), begin, end);
        };
        auto [left, right] = contractionOperands.lookup(op);
        if (!sum && !zero)
          zero = scalarF32(b, loc, 0.0);
        sum = LinearOp::create(b, l, operand(left), operand(right),
                               sum ? sum : zero, b.getBoolAttr(true),
                               b.getBoolAttr(false), b.getF64FloatAttr(1.0),
                               b.getF64FloatAttr(1.0));
        continue;
      }
      // Use::RowSum
      Value in = chunkOf.lookup(op->getOperand(0));
      Value wide = inType(in, typeOf(in).clone(f32));
      Value partial =
          ReduceSumOp::create(b, l, typeOf(op->getResult(0)).clone(f32), wide,
                              i64s({0}), b.getBoolAttr(false));
      sum = sum ? Value(AddOp::create(b, l, sum, partial)) : partial;
    }
    for (Value value : escaping)
      pieces[value].push_back(chunkOf.lookup(value));
  }

  // Put the results together.
  Value total = lossSum;
  if (count)
    total =
        DivOp::create(b, forwardLoc, lossSum, inType(count, typeOf(lossSum)));
  loss.getResult().replaceAllUsesWith(inType(total, typeOf(loss.getResult())));
  SmallVector<Operation *> late(lateReaders.begin(), lateReaders.end());
  llvm::sort(late,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  for (Operation *op : late)
    op->moveBefore(ip);
  for (auto &[value, parts] : pieces) {
    auto type = typeOf(value);
    Value whole =
        ConcatOp::create(b, loc,
                         RankedTensorType::get({rows, type.getShape().back()},
                                               type.getElementType()),
                         parts, b.getI64IntegerAttr(0));
    if (type.getRank() != 2)
      whole = ReshapeOp::create(b, loc, type, whole);
    value.replaceUsesWithIf(whole, [&](OpOperand &operand) {
      return !cone.contains(operand.getOwner());
    });
  }
  for (auto &[op, sum] : sums) {
    Value result = inType(sum, typeOf(op->getResult(0)));
    result.getDefiningOp()->setLoc(op->getLoc());
    op->getResult(0).replaceAllUsesWith(result);
  }

  // Erase what the chunks replace.
  llvm::SmallPtrSet<Operation *, 16> erased;
  for (bool progress = true; progress;) {
    progress = false;
    for (Operation *op : doomed) {
      if (!erased.contains(op) && op->use_empty()) {
        erased.insert(op);
        op->erase();
        progress = true;
      }
    }
  }
  return chunks;
}

struct ChunkCrossEntropyPass
    : effopt::impl::EffChunkCrossEntropyPassBase<ChunkCrossEntropyPass> {
  using EffChunkCrossEntropyPassBase::EffChunkCrossEntropyPassBase;

  void runOnOperation() override {
    if (chunks < 0) {
      getOperation().emitError("eff-chunk-cross-entropy: chunks must be >= 0 "
                               "(0 chooses, 1 is off), got ")
          << chunks;
      return signalPassFailure();
    }
    if (chunks == 1)
      return;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      SmallVector<SoftmaxCrossEntropyGradOp> grads;
      func.walk([&](SoftmaxCrossEntropyGradOp op) { grads.push_back(op); });
      for (SoftmaxCrossEntropyGradOp grad : grads) {
        Chunker chunker(func, chunks);
        int64_t used = chunker.run(grad);
        if (!used)
          continue;
        ++numChunkedLosses;
        numChunks += used;
      }
    }
  }
};

} // namespace
