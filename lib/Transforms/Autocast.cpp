//===- Autocast.cpp - eff-autocast: mixed precision on the forward --------===//
//
// Runs on the imported @forward before eff-autodiff, so the backward
// differentiates through the casts: a low-precision GEMM gets low-precision
// gradient GEMMs, and the gradient of a fp32 master weight comes back to
// fp32 through its cast's gradient rule (gradients accumulate in fp32).
//
// Each op falls in one of three classes, after PyTorch's autocast lists:
//   - low precision: matmul, linear, conv2d;
//   - fp32: softmax, log_softmax, normalisation, losses, sums and means,
//     exp/log/pow/rsqrt/reciprocal, attention (its kernels are f32);
//   - promote: everything else runs in the widest type of its "strong"
//     float operands. Constants, rank-0 values and values computed only from
//     parameters are weak: they adopt the activation's type, as a Python
//     scalar does in PyTorch and a bias does inside autocast's linear.
// A value is cast at most once per type, right before its first use in
// that type; a cast of a parameter seen through transpose/reshape is moved
// onto the parameter itself (the movement then runs in low precision).
//
//===----------------------------------------------------------------------===//

#include "effopt/Transforms/Passes.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Dialect/Eff/IR/Provenance.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

namespace effopt {
#define GEN_PASS_DEF_EFFAUTOCASTPASS
#include "effopt/Transforms/Passes.h.inc"
} // namespace effopt

using namespace mlir;
using namespace effopt;
using namespace effopt::eff;

namespace {

enum class CastClass { LowPrecision, Fp32, Promote };

CastClass classify(Operation *op) {
  if (isa<MatmulOp, LinearOp, Conv2DOp>(op))
    return CastClass::LowPrecision;
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchNormTrainOp, BatchNormOp,
          SoftmaxCrossEntropyOp, NllLossOp, ReduceSumOp, ReduceMeanOp, ExpOp,
          LogOp, PowOp, RsqrtOp, ReciprocalOp, AttentionOp>(op))
    return CastClass::Fp32;
  return CastClass::Promote;
}

/// The float element type of a tensor value, or null.
FloatType floatElementType(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type ? dyn_cast<FloatType>(type.getElementType()) : FloatType();
}

/// Types autocast moves between; anything else (f64) is left alone.
bool isAutocastType(Type type) {
  return type && (type.isF32() || type.isBF16() || type.isF16());
}

/// The wider of two autocast types (bf16 with f16 promotes to f32, as in
/// PyTorch).
Type widest(Type a, Type b) {
  if (!a)
    return b;
  if (!b || a == b)
    return a;
  return Float32Type::get(a.getContext());
}

struct Autocaster {
  FloatType low;
  /// eff.attention in `low` (its lse stays f32) instead of f32.
  bool lowPrecisionAttention = false;
  OpBuilder builder;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
  llvm::DenseMap<Value, bool> parameterDerived;
  unsigned numCasts = 0;

  Autocaster(FloatType low) : low(low), builder(low.getContext()) {}

  /// Computed only from parameters and constants (weights, their
  /// transposes): no activation flows in.
  bool isParameterDerived(Value value) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      return func && func.getArgAttr(arg.getArgNumber(), kParameterAttrName);
    }
    auto [it, inserted] = parameterDerived.try_emplace(value, false);
    if (!inserted)
      return it->second;
    Operation *producer = value.getDefiningOp();
    bool derived = isa<ConstantOp>(producer) ||
                   (producer->getNumOperands() > 0 &&
                    llvm::all_of(producer->getOperands(), [&](Value operand) {
                      return isParameterDerived(operand);
                    }));
    parameterDerived[value] = derived;
    return derived;
  }

  bool isWeak(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    return type.getRank() == 0 || isParameterDerived(value);
  }

  /// `value` as element type `type`: one cast per (value, type), placed
  /// before `user`, the first op that needs it.
  Value castTo(Value value, Type type, Operation *user) {
    auto tensorType = cast<RankedTensorType>(value.getType());
    if (tensorType.getElementType() == type)
      return value;
    auto key = std::make_pair(value, type);
    if (Value cached = casts.lookup(key))
      return cached;
    Value result;
    // A parameter's transpose or reshape: cast the parameter and move the
    // low-precision copy instead (half the bytes moved, one cast shared by
    // every view of the weight).
    Operation *producer = value.getDefiningOp();
    if (isa_and_nonnull<TransposeOp, ReshapeOp>(producer) &&
        isParameterDerived(value) &&
        isAutocastType(floatElementType(producer->getOperand(0)))) {
      Value source = castTo(producer->getOperand(0), type, user);
      builder.setInsertionPoint(user);
      Operation *moved = builder.clone(*producer);
      moved->setOperand(0, source);
      moved->getResult(0).setType(tensorType.clone(type));
      result = moved->getResult(0);
    } else {
      builder.setInsertionPoint(user);
      // A parameter has no node of its own: its cast is its first user's
      // (the memory report names it, eff-remat puts it in that block).
      Location loc = isa<BlockArgument>(value) ? user->getLoc() : value.getLoc();
      result = CastOp::create(builder, withProvenance(loc, Provenance::Cast),
                              tensorType.clone(type), value);
      ++numCasts;
    }
    casts[key] = result;
    return result;
  }

  /// The type `op` computes in, from its class and its operands' current
  /// types; null to leave it alone.
  Type computeType(Operation *op) {
    Type strong, weak;
    bool any = false;
    for (Value operand : op->getOperands()) {
      FloatType type = floatElementType(operand);
      if (!type)
        continue;
      if (!isAutocastType(type))
        return Type(); // f64 math stays as written
      any = true;
      if (isWeak(operand))
        weak = widest(weak, type);
      else
        strong = widest(strong, type);
    }
    if (!any)
      return Type();
    if (isa<AttentionOp>(op) && lowPrecisionAttention)
      return low;
    switch (classify(op)) {
    case CastClass::LowPrecision:
      return low;
    case CastClass::Fp32:
      return Float32Type::get(op->getContext());
    case CastClass::Promote:
      return strong ? strong : weak;
    }
    llvm_unreachable("cast class");
  }

  /// Runs `op` in `type`: float operands cast, float results retyped.
  /// Returns false (op unchanged) when the op does not verify in that type.
  bool retype(Operation *op, Type type) {
    SmallVector<Value> oldOperands(op->getOperands());
    SmallVector<Type> oldResultTypes(op->getResultTypes());
    for (OpOperand &operand : op->getOpOperands())
      if (floatElementType(operand.get()))
        operand.set(castTo(operand.get(), type, op));
    for (OpResult result : op->getResults()) {
      // The log-sum-exp of attention is f32 in every precision.
      if (isa<AttentionOp>(op) && result.getResultNumber() == 1)
        continue;
      if (FloatType resultType = floatElementType(result);
          resultType && isAutocastType(resultType))
        result.setType(cast<RankedTensorType>(result.getType()).clone(type));
    }
    ScopedDiagnosticHandler quiet(op->getContext(),
                                  [](Diagnostic &) { return success(); });
    if (succeeded(verify(op)))
      return true;
    for (auto [operand, old] : llvm::zip(op->getOpOperands(), oldOperands))
      operand.set(old);
    for (auto [result, old] : llvm::zip(op->getResults(), oldResultTypes))
      result.setType(old);
    return false;
  }

  void run(func::FuncOp func) {
    Block &body = func.getBody().front();
    auto f32 = Float32Type::get(func.getContext());
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (isa<ConstantOp, CastOp, ShapeOfOp, func::ReturnOp>(op) ||
          !llvm::all_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>))
        continue;
      Type type = computeType(&op);
      if (!type || retype(&op, type))
        continue;
      // Not expressible in this type: run it as imported (fp32).
      if (type != f32)
        retype(&op, f32);
    }
    // The function keeps its signature: results go back to their types.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (auto [operand, type] :
         llvm::zip(ret->getOpOperands(), func.getResultTypes()))
      if (operand.get().getType() != type)
        operand.set(castTo(operand.get(),
                           cast<RankedTensorType>(type).getElementType(), ret));
  }
};

struct EffAutocastPass : effopt::impl::EffAutocastPassBase<EffAutocastPass> {
  using EffAutocastPassBase::EffAutocastPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    FloatType low;
    if (precision == "fp32")
      return;
    if (precision == "bf16")
      low = BFloat16Type::get(ctx);
    else if (precision == "fp16")
      low = Float16Type::get(ctx);
    else {
      module.emitError("eff-autocast: precision must be fp32, bf16 or fp16, "
                       "got '")
          << precision << "'";
      return signalPassFailure();
    }
    auto forward = module.lookupSymbol<func::FuncOp>(kForwardFuncName);
    if (!forward || forward.isExternal()) {
      module.emitError("eff-autocast expects func.func @forward as the ONNX "
                       "importer builds it (run it before eff-autodiff)");
      return signalPassFailure();
    }
    Autocaster autocaster(low);
    autocaster.lowPrecisionAttention = lowPrecisionAttention;
    autocaster.run(forward);
    numCasts += autocaster.numCasts;
  }
};

} // namespace
