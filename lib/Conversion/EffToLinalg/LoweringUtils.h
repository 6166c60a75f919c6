//===- LoweringUtils.h - building blocks of the eff lowering ----*- C++ -*-===//
//
// The lowering of every eff op is written with these few builders, so that
// broadcasting, reductions and reshapes are expressed one way everywhere and
// fusion sees uniform `linalg.generic` ops.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_CONVERSION_EFFTOLINALG_LOWERINGUTILS_H
#define EFFOPT_LIB_CONVERSION_EFFTOLINALG_LOWERINGUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
class TypeConverter;
} // namespace mlir

namespace effopt::lowering {

/// Numerics the lowering leaves to the target: convert-eff-to-linalg's
/// options, which the target backend chooses (docs/Architecture.md).
struct LoweringPolicy {
  /// f32 sums, means and statistics accumulate in f64 (PyTorch's CPU
  /// acc_type<float>) instead of f32 (its CUDA one).
  bool f32SumsInF64 = true;
  /// f16/bf16 matrix products and convolutions read their operands in their
  /// own type with an f32 accumulator (a tensor-core GEMM) instead of first
  /// widening them to f32 temporaries (a BLAS that only has an f32 GEMM).
  bool nativeLowPrecisionProducts = false;
  /// Ungrouped convolutions as im2col + a batched GEMM (a library product)
  /// instead of linalg's named convolution ops (loops, or a target's
  /// convolution library).
  bool im2colConvolutions = true;
  /// f32 convolutions and their gradients as calls of the runtime's
  /// convolution library (effrt_conv2d_*_f32, oneDNN); the others as
  /// `im2colConvolutions` says.
  bool libraryConvolutions = false;
  /// f32/f16/bf16 convolutions and their gradients as calls of the CUDA
  /// runtime's cuDNN convolutions (effrt_cuda_conv2d_*, device pointers,
  /// the device's library workspace); the others as `im2colConvolutions`
  /// says.
  bool cudnnConvolutions = false;
  /// eff.attention as calls of the CUDA runtime's kernels
  /// (effrt_cuda_attention_*, device pointers, f32/f16/bf16) instead of the
  /// CPU's (effrt_attention_*_f32).
  bool cudaAttention = false;
  /// Collectives as calls of the CUDA runtime (effrt_cuda_*_f32, device
  /// pointers, queued on the GPU) instead of the CPU's (effrt_*_f32).
  bool cudaCollectives = false;
  /// A cross-entropy's long rows take their max and sum of exponentials in
  /// one online pass (cuda: one block reduction instead of two).
  bool onlineLogSumExp = false;
  /// The most threads the step runs on: the CPU attention kernels get one
  /// workspace slot per thread (up to their number of work items).
  int64_t threads = 16;
};

/// A call of a runtime kernel (effrt/Kernels.h) from the lowered step:
/// operand buffers are read in place, results and workspaces are fresh
/// buffers the memory plan places like any other temporary. Buffers are
/// recorded as they come and their addresses taken only in `call`, after
/// every allocation: the memory plan ends an operand's life at its last use
/// (the address), so the call's outputs and workspace are then placed apart
/// from its operands.
struct RuntimeCall {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Type ptrType;
  llvm::SmallVector<mlir::Value> args;
  llvm::SmallVector<bool> isBuffer;
  /// For each argument of addStridedInput, the dimensions whose strides
  /// follow its pointer.
  llvm::DenseMap<unsigned, llvm::SmallVector<int64_t>> stridedDims;

  RuntimeCall(mlir::OpBuilder &b, mlir::Location loc);

  void add(mlir::Value v, bool buffer = false) {
    args.push_back(v);
    isBuffer.push_back(buffer);
  }
  void addI64(int64_t v);
  void addI32(int64_t v);
  void addF32(double v);
  /// A null pointer (an absent optional operand).
  void addNull();
  /// `tensor`'s buffer, read in place.
  void addInput(mlir::Value tensor);
  /// `tensor`'s buffer read in place as it lies (a view: any offset and
  /// strides, the last dimension contiguous, else bufferization copies),
  /// followed by the element strides of its dimensions `dims` (-1: a 0
  /// stride), read from the buffer's metadata at the call.
  void addStridedInput(mlir::Value tensor, llvm::ArrayRef<int64_t> dims);
  /// A fresh buffer of `type` the call writes; returns it.
  mlir::Value addOutput(mlir::RankedTensorType type);
  /// `view`, a view of a buffer the caller allocated, written by the call
  /// in place, followed by the element strides of its dimensions `dims`.
  void addStridedOutput(mlir::Value view, llvm::ArrayRef<int64_t> dims);
  /// A fresh buffer of `type` only the call uses, reported as workspace by
  /// the memory report; returns it.
  mlir::Value addWorkspace(mlir::RankedTensorType type);
  /// `buffer` (one the call wrote) as a tensor of `type`.
  mlir::Value asTensor(mlir::Value buffer, mlir::Type type);
  /// Emits the call of `name` (declared in `module` on first use).
  void call(mlir::ModuleOp module, llvm::StringRef name);

private:
  mlir::Value pointerOf(mlir::Value buffer);
  /// Appends the first element's address and the strides of `dims`.
  void appendStrided(mlir::Value buffer, llvm::ArrayRef<int64_t> dims,
                     llvm::SmallVectorImpl<mlir::Value> &operands);
};

/// A lowering pattern that follows the target's policy.
template <typename OpTy>
struct PolicyPattern : mlir::OpRewritePattern<OpTy> {
  PolicyPattern(mlir::MLIRContext *context, const LoweringPolicy &policy)
      : mlir::OpRewritePattern<OpTy>(context), policy(policy) {}
  LoweringPolicy policy;
};

/// Computes one result element from one element of each operand.
using ScalarFn = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;
/// Computes several result elements from one element of each operand.
using MultiScalarFn = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// `body` applied to every element, the operands numpy-broadcast to
/// `resultType` (the broadcast is an indexing map, nothing is materialised).
/// f16/bf16 operands reach `body` extended to f32, and each result is
/// converted to its element type once, at the end: an op on low-precision
/// floats computes in f32 and rounds once, as PyTorch's CPU kernels do.
/// `body` must therefore take scalar types from its arguments.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             mlir::ValueRange operands, ScalarFn body);

/// Several results of the same shape from one loop nest (e.g. an optimizer
/// update producing the parameter and its moments).
llvm::SmallVector<mlir::Value>
buildElementwiseMulti(mlir::OpBuilder &b, mlir::Location loc,
                      llvm::ArrayRef<mlir::RankedTensorType> resultTypes,
                      mlir::ValueRange operands, MultiScalarFn body);

/// Reduces `input` over the (normalised, sorted) `axes`: the result drops
/// them. As in buildElementwise, f16/bf16 arguments (the accumulator too)
/// reach `combine` in f32 and its result is converted to `init`'s type. `combine(element, accumulator)` returns the new accumulator.
/// Extra `operands` broadcast to the input's shape are passed to `combine`
/// before the accumulator: `combine(element, extras..., accumulator)`.
mlir::Value buildReduction(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value input, llvm::ArrayRef<int64_t> axes,
                           mlir::Value init, ScalarFn combine,
                           mlir::ValueRange operands = {});

/// f16 or bf16: types the CPU stores but computes on in f32.
bool isLowPrecisionFloat(mlir::Type type);

/// The type arithmetic on `type` is carried out in: f32 for f16/bf16 (one
/// rounding per eff op, as PyTorch's CPU kernels do), `type` otherwise.
mlir::Type computeType(mlir::Type type);

/// `values` converted to their compute types (f16/bf16 extended to f32,
/// exactly; others unchanged).
llvm::SmallVector<mlir::Value> widenScalars(mlir::OpBuilder &b,
                                            mlir::Location loc,
                                            mlir::ValueRange values);

/// `tensor` with every element converted to `elementType` (eff.cast
/// semantics); `tensor` itself when it already has that type.
mlir::Value convertElements(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value tensor, mlir::Type elementType);

/// The type a float sum of `type` accumulates in: for f32, f64 (as
/// PyTorch's CPU reductions, whose acc_type<float> is double) or f32 as
/// `policy` says; f32 for f16/bf16; any other type is its own.
mlir::Type accumulatorType(mlir::Type type, const LoweringPolicy &policy);

/// sum over `axes` of `term(element, extras...)` (`term` returns a value of
/// the input's element type, or `resultElementType` if given), accumulated
/// in `accumulatorType` and, when `divisor` is not 1, divided by it there
/// (means), then rounded once to the result type. A long fp32 sum
/// accumulated in fp32 loses ~n eps of its terms' size (2e-3 relative for a
/// batch-norm channel of 32x56x56); in f64 it is exact to fp32's precision.
mlir::Value buildSum(mlir::OpBuilder &b, mlir::Location loc,
                     const LoweringPolicy &policy, mlir::Value input,
                     llvm::ArrayRef<int64_t> axes, ScalarFn term,
                     mlir::ValueRange operands = {}, double divisor = 1.0,
                     mlir::Type resultElementType = {});

/// `shape[axes]` removed; what `buildReduction` returns.
llvm::SmallVector<int64_t> reducedShape(llvm::ArrayRef<int64_t> shape,
                                        llvm::ArrayRef<int64_t> axes);

/// A tensor of `type` filled with the scalar `value`.
mlir::Value buildFill(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::RankedTensorType type, mlir::Value value);

/// `value` (same number of elements) viewed with `type`'s shape, as
/// collapse/expand_shape (views, no copy after bufferization).
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value value, mlir::RankedTensorType type);

/// The ranked tensor type of a value the lowering knows is one.
inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// A zero-filled tensor of `type`.
mlir::Value zeros(mlir::OpBuilder &b, mlir::Location loc,
                  mlir::RankedTensorType type);

/// Static offsets/sizes/strides for slice ops.
llvm::SmallVector<mlir::OpFoldResult> indexAttrs(mlir::OpBuilder &b,
                                                 llvm::ArrayRef<int64_t> values);

/// -inf of a float `type`, the identity of max.
mlir::Value negativeInfinity(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Type type);

/// A scalar constant of a float or integer `type`.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);

/// Converts a scalar between element types with eff.cast semantics.
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value value, mlir::Type to);

/// `axes` made non-negative and sorted.
llvm::SmallVector<int64_t> normalizeAxes(llvm::ArrayRef<int64_t> axes,
                                         int64_t rank);

/// An axis attribute (stored unsigned, meant signed) made non-negative.
int64_t normalizeAxis(int64_t axis, int64_t rank);

/// The number of elements of a static shape.
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// Populate functions of the op families (one file each).
/// splitmix64's finaliser on an i64 value (dropout's hash).
mlir::Value mix64(mlir::OpBuilder &b, mlir::Location loc, mlir::Value z);
/// The training step counter of `op`'s step function (`@optimizer.step`),
/// or null outside a training step.
mlir::Value stepCounter(mlir::Operation *op);
/// The i64 key of the dropout masks `op` draws with `seed` in this step
/// (eff.dropout's hash: mask bit = f(key, element index)); fails in a
/// micro-batch loop without a static trip count.
llvm::FailureOr<mlir::Value> buildDropoutKey(mlir::OpBuilder &b,
                                             mlir::Location loc,
                                             mlir::Operation *op,
                                             uint64_t seed);

void populateElementwiseLowering(mlir::RewritePatternSet &patterns);
void populateReductionLowering(mlir::RewritePatternSet &patterns,
                               const LoweringPolicy &policy);
void populateShapeLowering(mlir::RewritePatternSet &patterns);
/// C += op(A) op(B) on rank-2 tensors: a linalg.matmul with the transposes
/// in its indexing maps (a GEMM with transpose flags after
/// eff-linalg-to-blas).
mlir::Value buildMatmul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value a,
                        mlir::Value bm, mlir::Value c, bool transposeA,
                        bool transposeB);

/// eff.linear's accumulator (of `type`) before the product: beta * bias
/// broadcast when alpha is 1 (the product then adds onto it), else zeros.
mlir::Value buildLinearInit(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::RankedTensorType type, mlir::Value bias,
                            double alpha, double beta);

/// eff.linear's value from the accumulated product: the product itself
/// when alpha is 1 (buildLinearInit added the bias), else alpha * product
/// + beta * bias.
mlir::Value buildLinearEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::RankedTensorType type,
                                mlir::Value product, mlir::Value bias,
                                double alpha, double beta);

/// `operand` in the type a product reads it in under `policy`: its own with
/// native low-precision products, else `accumulator`.
mlir::Value productOperand(mlir::OpBuilder &b, mlir::Location loc,
                           const LoweringPolicy &policy, mlir::Value operand,
                           mlir::Type accumulator);

/// The lowering's type conversion: every type is itself, except a tensor
/// with the #eff.nf4 encoding, which becomes its four storage tensors.
void addNF4TypeConversion(mlir::TypeConverter &converter);
/// eff.nf4_pack and eff.linear with an NF4 weight (LowerQuantized.cpp).
void populateQuantizedLowering(mlir::RewritePatternSet &patterns,
                               const mlir::TypeConverter &converter,
                               const LoweringPolicy &policy);

void populateContractionLowering(mlir::RewritePatternSet &patterns,
                                 const LoweringPolicy &policy);
void populateNormalizationLowering(mlir::RewritePatternSet &patterns,
                                   const LoweringPolicy &policy);
void populateLossLowering(mlir::RewritePatternSet &patterns,
                          const LoweringPolicy &policy);
void populateOptimizerLowering(mlir::RewritePatternSet &patterns);
/// Adam's per-step scalars {lr / (1 - beta1^t), sqrt(1 - beta2^t),
/// 1 - lr * weight_decay} (t = step + 1), computed once in f64 and rounded
/// to `t` (LowerOptimizer.cpp); shared by eff.adam_update and
/// eff.adam8bit_update.
llvm::SmallVector<mlir::Value>
buildAdamStepScalars(mlir::OpBuilder &builder, mlir::Location loc,
                     mlir::Value lr, mlir::Value step, double beta1,
                     double beta2, double weightDecay, mlir::Type t);
void populateOptimizer8bitLowering(mlir::RewritePatternSet &patterns);
void populateConvolutionLowering(mlir::RewritePatternSet &patterns,
                                 const LoweringPolicy &policy);
void populateLossScaleLowering(mlir::RewritePatternSet &patterns);
void populateCollectiveLowering(mlir::RewritePatternSet &patterns,
                                const LoweringPolicy &policy);
void populateAttentionLowering(mlir::RewritePatternSet &patterns,
                               const LoweringPolicy &policy);
/// Lowers every eff.attention / eff.attention_grad under `root` to the CPU
/// kernels, or with the policy's cudaAttention to the CUDA ones (those the
/// kernels run in the op's own type), before the other eff ops are lowered,
/// folding the transposes around them (their operands', outputs' and
/// gradients') into the kernels' strides. Fails (with an error on the op)
/// on what the kernels cannot run.
mlir::LogicalResult lowerAttentionCalls(mlir::Operation *root,
                                        const LoweringPolicy &policy);

} // namespace effopt::lowering

#endif // EFFOPT_LIB_CONVERSION_EFFTOLINALG_LOWERINGUTILS_H
