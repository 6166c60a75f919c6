//===- GradientRule.h - shared machinery of the gradient rules --*- C++ -*-===//
//
// A rule is a function `LogicalResult rule(OpTy op, GradientContext &ctx)`
// attached to its op as a `GradientOpInterface` external model with
// `attachRule<OpTy, rule>`. `GradientContext` holds the result gradients,
// which operands need a gradient, and helpers that build eff ops.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_DIALECT_EFF_GRADIENTS_GRADIENTRULE_H
#define EFFOPT_LIB_DIALECT_EFF_GRADIENTS_GRADIENTRULE_H

#include "effopt/Dialect/Eff/IR/EffGradientInterface.h"
#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"

#include "mlir/IR/Builders.h"

namespace effopt::eff::gradients {

class GradientContext {
public:
  GradientContext(mlir::Operation *op, mlir::OpBuilder &builder,
                  llvm::ArrayRef<mlir::Value> resultGradients,
                  llvm::ArrayRef<bool> needed,
                  llvm::SmallVectorImpl<mlir::Value> &operandGradients)
      : op(op), b(builder),
        loc(withProvenance(op->getLoc(), Provenance::Backward)),
        resultGradients(resultGradients),
        needed(needed), operandGradients(operandGradients) {}

  mlir::Operation *op;
  mlir::OpBuilder &b;
  mlir::Location loc;

  /// Gradient of result `i` (null if none flows).
  mlir::Value resultGrad(unsigned i = 0) const {
    return i < resultGradients.size() ? resultGradients[i] : mlir::Value();
  }
  /// Whether operand `i` needs a gradient.
  bool need(unsigned i) const { return i < needed.size() && needed[i]; }
  /// Sets operand `i`'s gradient, reduced to its shape if it was broadcast.
  void setGrad(unsigned i, mlir::Value grad);

  //===--- Building ------------------------------------------------------===//

  mlir::RankedTensorType typeOf(mlir::Value v) const {
    return llvm::cast<mlir::RankedTensorType>(v.getType());
  }
  /// A scalar constant of `elementType` (broadcasts against anything).
  mlir::Value scalar(double value, mlir::Type elementType);
  mlir::Value zerosLike(mlir::Value v);
  template <typename OpTy, typename... Args>
  mlir::Value create(Args &&...args) {
    return OpTy::create(b, loc, std::forward<Args>(args)...).getResult();
  }
  mlir::Value add(mlir::Value x, mlir::Value y) { return create<AddOp>(x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return create<SubOp>(x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return create<MulOp>(x, y); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return create<DivOp>(x, y); }
  mlir::Value neg(mlir::Value x) { return create<NegOp>(x); }
  mlir::Value scale(mlir::Value x, double factor) {
    return mul(x, scalar(factor, typeOf(x).getElementType()));
  }
  mlir::Value cmp(CmpPredicate predicate, mlir::Value x, mlir::Value y) {
    return create<CmpOp>(predicate, x, y);
  }
  mlir::Value select(mlir::Value condition, mlir::Value x, mlir::Value y) {
    return create<WhereOp>(condition, x, y);
  }
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value broadcastTo(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value castTo(mlir::Value x, mlir::Type elementType);
  /// Sums `grad` over the dimensions that broadcasting added or expanded so
  /// that it gets `shape` (numpy broadcasting in reverse).
  mlir::Value reduceToShape(mlir::Value grad, llvm::ArrayRef<int64_t> shape);
  /// Swaps the last two dimensions.
  mlir::Value transposeLastTwo(mlir::Value x);

private:
  llvm::ArrayRef<mlir::Value> resultGradients;
  llvm::ArrayRef<bool> needed;
  llvm::SmallVectorImpl<mlir::Value> &operandGradients;
};

template <typename OpTy>
using RuleFn = mlir::LogicalResult (*)(OpTy, GradientContext &);
using DifferentiableFn = bool (*)(unsigned index);

/// The external model that runs a rule function.
template <typename OpTy, RuleFn<OpTy> Rule, DifferentiableFn Differentiable>
struct RuleModel
    : GradientOpInterface::ExternalModel<RuleModel<OpTy, Rule, Differentiable>,
                                         OpTy> {
  bool isDifferentiableOperand(mlir::Operation *op, unsigned index) const {
    if (Differentiable)
      return Differentiable(index) &&
             detail::isFloatTensor(op->getOperand(index).getType());
    return detail::isFloatTensor(op->getOperand(index).getType());
  }
  mlir::LogicalResult
  buildGradients(mlir::Operation *op, mlir::OpBuilder &builder,
                 llvm::ArrayRef<mlir::Value> resultGradients,
                 llvm::ArrayRef<bool> needed,
                 llvm::SmallVectorImpl<mlir::Value> &operandGradients) const {
    operandGradients.assign(op->getNumOperands(), mlir::Value());
    GradientContext ctx(op, builder, resultGradients, needed,
                        operandGradients);
    return Rule(llvm::cast<OpTy>(op), ctx);
  }
};

/// Operand filters shared by the rules: only operand 0 (the data, the
/// logits) is differentiable.
inline bool onlyFirstOperand(unsigned index) { return index == 0; }

/// Attaches `Rule` to `OpTy`; only the operands `Differentiable` accepts (all
/// float operands if null) can receive gradients.
template <typename OpTy, RuleFn<OpTy> Rule,
          DifferentiableFn Differentiable = nullptr>
void attachRule(mlir::MLIRContext *context) {
  OpTy::template attachInterface<RuleModel<OpTy, Rule, Differentiable>>(
      *context);
}

void registerElementwiseGradients(mlir::MLIRContext *context);
void registerShapeGradients(mlir::MLIRContext *context);
void registerContractionGradients(mlir::MLIRContext *context);
void registerNormalizationGradients(mlir::MLIRContext *context);
void registerAttentionGradients(mlir::MLIRContext *context);
void registerLossGradients(mlir::MLIRContext *context);

} // namespace effopt::eff::gradients

#endif // EFFOPT_LIB_DIALECT_EFF_GRADIENTS_GRADIENTRULE_H
