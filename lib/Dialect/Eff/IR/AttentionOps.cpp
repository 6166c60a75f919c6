//===- AttentionOps.cpp - scaled dot-product attention --------------------===//

#include "OpUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"

using namespace mlir;
using namespace effopt::eff;

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(shape, os, "x");
  return text;
}

/// The operand rules eff.attention and eff.attention_grad share: q, k, v of
/// rank 3 or 4 with the same leading dimensions, k and q of one head size,
/// v as many rows as k, and a mask that broadcasts to [.., Tq, Tk].
static LogicalResult verifyAttentionOperands(Operation *op, Value query,
                                             Value key, Value value,
                                             Value mask, double dropout) {
  auto q = tensorType(query), k = tensorType(key), v = tensorType(value);
  int64_t rank = q.getRank();
  if (rank != 3 && rank != 4)
    return op->emitOpError("query must have rank 3 or 4 ([.., T, D]), got ")
           << q;
  if (k.getRank() != rank || v.getRank() != rank)
    return op->emitOpError("key and value must have the query's rank ")
           << rank << ", got " << k << " and " << v;
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType())
    return op->emitOpError("query, key and value must have one element type");
  ArrayRef<int64_t> batch = q.getShape().drop_back(2);
  if (k.getShape().drop_back(2) != batch || v.getShape().drop_back(2) != batch)
    return op->emitOpError("key ")
           << k << " and value " << v
           << " must have the query's leading (batch, head) dimensions";
  if (k.getShape().back() != q.getShape().back())
    return op->emitOpError("key's head size ")
           << k.getShape().back() << " differs from the query's "
           << q.getShape().back();
  if (v.getDimSize(rank - 2) != k.getDimSize(rank - 2))
    return op->emitOpError("value has ")
           << v.getDimSize(rank - 2) << " rows but key has "
           << k.getDimSize(rank - 2);
  if (mask) {
    auto m = tensorType(mask);
    if (!m.getElementType().isInteger(1) &&
        m.getElementType() != q.getElementType())
      return op->emitOpError("mask must be i1 or the query's element type, "
                             "got ")
             << m.getElementType();
    SmallVector<int64_t> scores(batch);
    scores.push_back(q.getDimSize(rank - 2));
    scores.push_back(k.getDimSize(rank - 2));
    if (m.getRank() > rank)
      return op->emitOpError("mask ") << m << " has more dimensions than the "
                                      << "scores";
    for (int64_t i = 0; i < m.getRank(); ++i) {
      int64_t d = m.getDimSize(m.getRank() - 1 - i);
      int64_t s = scores[rank - 1 - i];
      if (d != 1 && d != s)
        return op->emitOpError("mask ")
               << m << " does not broadcast to the scores ["
               << shapeString(scores) << "]";
    }
  }
  if (!(dropout >= 0.0 && dropout < 1.0))
    return op->emitOpError("dropout probability ")
           << dropout << " is outside [0, 1)";
  return success();
}

/// lse: f32 shaped like the query without its last dimension.
static LogicalResult verifyLse(Operation *op, Value query, Value lse) {
  auto q = tensorType(query), l = tensorType(lse);
  if (!l.getElementType().isF32() || l.getShape() != q.getShape().drop_back())
    return op->emitOpError("lse must be f32 [")
           << shapeString(q.getShape().drop_back()) << "], got "
           << l;
  return success();
}

static RankedTensorType outputTypeOf(Value query, Value value) {
  auto q = tensorType(query), v = tensorType(value);
  SmallVector<int64_t> shape(q.getShape());
  shape.back() = v.getShape().back();
  return q.clone(shape);
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQuery(), getKey(), getValue(),
                                     getMask(),
                                     getDropout().convertToDouble())))
    return failure();
  RankedTensorType expected = outputTypeOf(getQuery(), getValue());
  if (getOutput().getType() != expected)
    return emitOpError("output must be ")
           << expected << ", got " << getOutput().getType();
  return verifyLse(*this, getQuery(), getLse());
}

int64_t AttentionOp::getNumScores() {
  auto q = tensorType(getQuery());
  return q.getNumElements() / q.getShape().back() *
         tensorType(getKey()).getShape().drop_back().back();
}

int64_t AttentionOp::getFlops() {
  // scale * q k^T, softmax (max, subtract, exp, sum, normalise), p v.
  int64_t d = tensorType(getQuery()).getShape().back();
  int64_t dv = tensorType(getValue()).getShape().back();
  return getNumScores() * (2 * d + 5 + 2 * dv);
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQuery(), getKey(), getValue(),
                                     getMask(),
                                     getDropout().convertToDouble())) ||
      failed(verifyLse(*this, getQuery(), getLse())))
    return failure();
  RankedTensorType expected = outputTypeOf(getQuery(), getValue());
  if (getOutput().getType() != expected ||
      getOutputGrad().getType() != expected)
    return emitOpError("output and output_grad must be ") << expected;
  if (getQueryGrad().getType() != getQuery().getType() ||
      getKeyGrad().getType() != getKey().getType() ||
      getValueGrad().getType() != getValue().getType())
    return emitOpError("the gradients must have the types of query, key and "
                       "value");
  return success();
}

int64_t AttentionGradOp::getFlops() {
  // Recomputed scores and probabilities, dV = P^T dO, dP = dO V^T,
  // dS = P (dP - D), dQ = dS K, dK = dS^T Q.
  auto q = tensorType(getQuery());
  int64_t d = q.getShape().back();
  int64_t dv = tensorType(getValue()).getShape().back();
  int64_t scores = q.getNumElements() / d *
                   tensorType(getKey()).getShape().drop_back().back();
  return scores * (2 * d + 3 + 2 * dv + 2 * dv + 3 + 4 * d) +
         2 * tensorType(getOutput()).getNumElements();
}
