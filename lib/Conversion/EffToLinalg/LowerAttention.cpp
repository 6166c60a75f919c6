//===- LowerAttention.cpp - eff.attention to the runtime's tiled kernels --===//
//
// eff.attention and eff.attention_grad (f32) become one call each of
// `effrt_attention_fwd_tiled_f32` / `effrt_attention_bwd_tiled_f32`
// (effrt/Kernels.h, runtime/src/cpu/Attention.cpp): FlashAttention-2 tiles
// with an online softmax, so the step holds no Tq x Tk buffer. The tile is
// chosen here (effrt_attention_tile: by sequence length and causality). These
// calls are made before the rest of the conversion (lowerCpuAttention), so that
// the head transposes around the ops are still eff.transpose and fold into
// the kernels' strides: operands are read in place as they lie (the
// transpose's input, any view with a contiguous last dimension; strides from
// the buffer's metadata), results are written in the layout of the
// transpose that reads them, and the transposes disappear. The results and
// the kernels' workspace are fresh buffers that the memory plan places like
// any other temporary: one slot per thread the step runs on (the policy's
// `threads`, at most one per work item) holding everything the kernels
// touch (tiles, statistics, copies of strided heads), so the plan counts
// every byte. Dropout passes the
// key eff.dropout's lowering would hash with (buildDropoutKey), so the fused
// kernel draws exactly the masks of the unfused graph.
//
// With the policy's cudaAttention (the cuda target) the calls are
// `effrt_cuda_attention_fwd_strided` / `effrt_cuda_attention_bwd_strided`
// (runtime/src/cuda/Attention.cu) on device pointers, made before the
// conversion too, with the same folding of transposes into strides:
// f16/bf16 operands of head size 64 or 128 as they are (tensor cores, f32
// accumulation), f32 of head size up to 128. Other f16/bf16 head sizes are
// widened to f32 around a call during the conversion
// (`effrt_cuda_attention_fwd` / `_bwd` on contiguous copies). The lse stays
// f32, the backward's workspace is rowsum(dO * o). Those kernels take no
// mask other than the causal one and no dropout (eff-fuse-attention
// kernels=cuda fuses nothing else).
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "effopt/Dialect/Eff/IR/EffOps.h"
#include "effopt/Support/CudaTypeCode.h"
#include "effrt/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Iterators.h"

using namespace mlir;
using namespace effopt::eff;

namespace effopt::lowering {
namespace {

constexpr StringLiteral kForwardKernel = "effrt_attention_fwd_tiled_f32";
constexpr StringLiteral kBackwardKernel = "effrt_attention_bwd_tiled_f32";
constexpr StringLiteral kCudaForwardKernel = "effrt_cuda_attention_fwd";
constexpr StringLiteral kCudaBackwardKernel = "effrt_cuda_attention_bwd";
constexpr StringLiteral kCudaForwardStrided =
    "effrt_cuda_attention_fwd_strided";
constexpr StringLiteral kCudaBackwardStrided =
    "effrt_cuda_attention_bwd_strided";

/// The shape of the problem: leading dimensions as [B1, B2] (rank 3: B1 =
/// 1), and the mask's element strides against [B1, B2, Tq, Tk].
struct AttentionShape {
  int64_t b1, b2, tq, tk, d, dv;
  int64_t maskStrides[4] = {0, 0, 0, 0};
  int32_t maskKind = EFFRT_ATTENTION_MASK_NONE;
};

AttentionShape shapeOf(Value query, Value key, Value value, Value mask) {
  auto q = cast<RankedTensorType>(query.getType());
  auto v = cast<RankedTensorType>(value.getType());
  int64_t rank = q.getRank();
  AttentionShape s;
  s.b1 = rank == 4 ? q.getDimSize(0) : 1;
  s.b2 = q.getDimSize(rank - 3);
  s.tq = q.getDimSize(rank - 2);
  s.d = q.getDimSize(rank - 1);
  s.tk = cast<RankedTensorType>(key.getType()).getDimSize(rank - 2);
  s.dv = v.getDimSize(rank - 1);
  if (!mask)
    return s;
  auto m = cast<RankedTensorType>(mask.getType());
  s.maskKind = m.getElementType().isInteger(1) ? EFFRT_ATTENTION_MASK_BOOL
                                               : EFFRT_ATTENTION_MASK_ADD;
  // Right-aligned against [B1, B2, Tq, Tk]; size-1 dimensions broadcast.
  int64_t stride = 1;
  for (int64_t i = 0; i < m.getRank(); ++i) {
    int64_t dim = m.getRank() - 1 - i;
    int64_t size = m.getDimSize(dim);
    s.maskStrides[3 - i] = size == 1 ? 0 : stride;
    stride *= size;
  }
  if (rank == 3)
    s.maskStrides[0] = 0; // B1 is 1
  return s;
}

/// The shared trailing arguments: mask, shape, scale, causal, dropout.
template <typename OpTy>
LogicalResult addOptions(RuntimeCall &call, OpTy op,
                         const AttentionShape &s, RewriterBase &rewriter) {
  if (Value mask = op.getMask())
    call.addInput(mask);
  else
    call.addNull();
  call.addI32(s.maskKind);
  for (int64_t stride : s.maskStrides)
    call.addI64(stride);
  for (int64_t v : {s.b1, s.b2, s.tq, s.tk, s.d, s.dv})
    call.addI64(v);
  call.addF32(op.getScale().convertToDouble());
  call.addI32(op.getCausal() ? 1 : 0);
  double ratio = op.getDropout().convertToDouble();
  if (ratio > 0.0) {
    FailureOr<Value> key = buildDropoutKey(
        rewriter, op.getLoc(), op, static_cast<uint64_t>(op.getSeed()));
    if (failed(key))
      return failure();
    call.add(*key);
    // eff.dropout's threshold on the top 24 bits of the hash.
    call.addI64(static_cast<int64_t>(ratio * double(1 << 24)));
    call.addF32(1.0 / (1.0 - ratio));
  } else {
    call.addI64(0);
    call.addI64(0);
    call.addF32(0.0);
  }
  return success();
}

/// The tile, then the workspace: one slot of `floatsPerSlot` floats per
/// thread the step runs on, no more than there are work items (a thread
/// computes each item it takes whole in its slot, so results do not depend
/// on the number of slots).
void addWorkspace(RuntimeCall &call, int64_t tile, int64_t items,
                  int64_t threads, int64_t floatsPerSlot) {
  call.addI64(tile);
  int64_t slots = std::max<int64_t>(1, std::min(threads, items));
  call.addWorkspace(
      RankedTensorType::get({slots * floatsPerSlot}, call.b.getF32Type()));
  call.addI64(slots);
}

/// Where an operand's elements lie: logical dimension i of the operand is
/// dimension perm[i] of `source`.
struct Layout {
  Value source;
  SmallVector<int64_t> perm;

  /// The source dimensions of the kernel's B1, B2 and T (-1: B1 of a rank-3
  /// operand, which is 1).
  SmallVector<int64_t> kernelDims() const {
    if (perm.size() == 3)
      return {-1, perm[0], perm[1]};
    return {perm[0], perm[1], perm[2]};
  }
};

/// A transpose the kernels can read or write through strides: it keeps the
/// last (head) dimension contiguous.
bool foldable(TransposeOp transpose) {
  ArrayRef<int64_t> perm = transpose.getPermutation();
  return !perm.empty() &&
         perm.back() == static_cast<int64_t>(perm.size()) - 1;
}

/// An input read in place: through eff.save (a marker) and a foldable
/// transpose to the tensor that holds the elements (the [B, T, H, D]
/// projection that exporters transpose to [B, H, T, D]).
Layout inputLayout(Value v) {
  if (auto save = v.getDefiningOp<SaveOp>())
    v = save.getInput();
  if (auto transpose = v.getDefiningOp<TransposeOp>(); transpose &&
                                                       foldable(transpose))
    return {transpose.getInput(), llvm::to_vector(transpose.getPermutation())};
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  return {v, llvm::to_vector(llvm::seq<int64_t>(0, rank))};
}

/// An output the kernel writes, when a user transposes it (foldably): in
/// that transpose's layout, so the transpose becomes the buffer itself.
struct OutputLayout {
  RankedTensorType physical;
  /// The transpose's permutation (empty: the result's own layout).
  SmallVector<int64_t> perm;
  Value buffer;

  /// The physical dimension of logical dimension i: inverse(perm)[i].
  SmallVector<int64_t> kernelDims(int64_t rank) const {
    SmallVector<int64_t> logical(rank);
    for (int64_t i = 0; i < rank; ++i)
      logical[i] = i;
    for (auto [j, p] : llvm::enumerate(perm))
      logical[p] = j;
    if (rank == 3)
      return {-1, logical[0], logical[1]};
    return {logical[0], logical[1], logical[2]};
  }
};

OutputLayout outputLayout(Value result) {
  for (Operation *user : result.getUsers())
    if (auto transpose = dyn_cast<TransposeOp>(user);
        transpose && foldable(transpose))
      return {cast<RankedTensorType>(transpose.getType()),
              llvm::to_vector(transpose.getPermutation()), Value()};
  return {cast<RankedTensorType>(result.getType()), {}, Value()};
}

/// Allocates the output and passes it with its static strides.
void addOutput(RuntimeCall &call, OutputLayout &out) {
  out.buffer = call.addOutput(out.physical);
  int64_t rank = out.physical.getRank();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * out.physical.getDimSize(i + 1);
  for (int64_t d : out.kernelDims(rank))
    call.addI64(d < 0 ? 0 : strides[d]);
}

/// Replaces `result` by the buffer the kernel wrote: the folded transposes
/// by the buffer itself, any other use by its transpose back to the
/// result's layout (an eff.transpose the later lowering materialises, or
/// the next attention_grad reads through).
void replaceOutput(RewriterBase &rewriter, RuntimeCall &call, Value result,
                   const OutputLayout &out) {
  Value physical = call.asTensor(out.buffer, out.physical);
  if (out.perm.empty()) {
    rewriter.replaceAllUsesWith(result, physical);
    return;
  }
  Value logical;
  for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
    auto transpose = dyn_cast<TransposeOp>(use.getOwner());
    if (transpose && transpose.getPermutation() == ArrayRef(out.perm)) {
      rewriter.replaceOp(transpose, physical);
      continue;
    }
    if (!logical) {
      SmallVector<int64_t> inverse(out.perm.size());
      for (auto [j, p] : llvm::enumerate(out.perm))
        inverse[p] = j;
      logical = TransposeOp::create(rewriter, result.getLoc(), physical,
                                    inverse);
    }
    rewriter.modifyOpInPlace(use.getOwner(), [&] { use.set(logical); });
  }
}

void addStrided(RuntimeCall &call, Value v) {
  Layout layout = inputLayout(v);
  call.addStridedInput(layout.source, layout.kernelDims());
}

/// The operands both targets' strided forward calls start with: q, k, v
/// read in place, the output in its transposing user's layout, the lse.
struct ForwardOperands {
  OutputLayout output;
  Value lse;
};
ForwardOperands addForwardOperands(RuntimeCall &call, AttentionOp op) {
  for (Value v : {op.getQuery(), op.getKey(), op.getValue()})
    addStrided(call, v);
  ForwardOperands operands{outputLayout(op.getOutput()), Value()};
  addOutput(call, operands.output);
  operands.lse =
      call.addOutput(cast<RankedTensorType>(op.getLse().getType()));
  return operands;
}

/// Calls `kernel` and replaces the op's results by what it wrote.
void finishForward(RewriterBase &rewriter, RuntimeCall &call, AttentionOp op,
                   const ForwardOperands &operands, StringRef kernel) {
  call.call(op->getParentOfType<ModuleOp>(), kernel);
  replaceOutput(rewriter, call, op.getOutput(), operands.output);
  rewriter.replaceAllUsesWith(
      op.getLse(), call.asTensor(operands.lse, op.getLse().getType()));
  rewriter.eraseOp(op);
}

/// Where the gradients of the fused projection are assembled: autodiff of
/// the q/k/v split of one [B, T, 3HD] projection (GPT's c_attn) concatenates
/// dq, dk and dv, each transposed back to [B, T, H, D] and reshaped to
/// [B, T, HD], along the last axis. The kernel then writes each gradient
/// into its slice of the concatenation, and the three copies (a read and a
/// write of every gradient) and the separate buffers disappear.
struct GradientConcat {
  ConcatOp concat;
  /// Per result of the op: its transpose, its reshape, and its first
  /// element along the concatenation's last axis.
  SmallVector<TransposeOp> transposes;
  SmallVector<ReshapeOp> reshapes;
  SmallVector<int64_t> offsets;
};

/// The op's GradientConcat: every gradient's only user a foldable
/// transpose (its OutputLayout), whose only user merges the last two
/// (head, head size) dimensions, whose only user is one concatenation
/// along the last axis of exactly these three; else nothing.
std::optional<GradientConcat> gradientConcat(AttentionGradOp op,
                                             ArrayRef<OutputLayout> grads) {
  GradientConcat found;
  for (auto [result, grad] : llvm::zip_equal(op.getResults(), grads)) {
    if (grad.perm.empty() || !result.hasOneUse())
      return std::nullopt;
    auto transpose = dyn_cast<TransposeOp>(*result.getUsers().begin());
    if (!transpose || !transpose->hasOneUse())
      return std::nullopt;
    auto reshape = dyn_cast<ReshapeOp>(*transpose->getUsers().begin());
    if (!reshape || !reshape->hasOneUse())
      return std::nullopt;
    ArrayRef<int64_t> physical = grad.physical.getShape();
    int64_t rank = physical.size();
    SmallVector<int64_t> merged(physical.drop_back(2));
    merged.push_back(physical[rank - 2] * physical[rank - 1]);
    if (cast<RankedTensorType>(reshape.getType()).getShape() !=
        ArrayRef(merged))
      return std::nullopt;
    auto concat = dyn_cast<ConcatOp>(*reshape->getUsers().begin());
    if (!concat || (found.concat && concat != found.concat) ||
        concat.getAxis() != static_cast<uint64_t>(rank - 2) ||
        concat.getInputs().size() != op.getNumResults())
      return std::nullopt;
    found.concat = concat;
    found.transposes.push_back(transpose);
    found.reshapes.push_back(reshape);
  }
  for (ReshapeOp reshape : found.reshapes) {
    int64_t offset = 0;
    bool seen = false;
    for (Value input : found.concat.getInputs()) {
      if (input == reshape.getResult()) {
        seen = true;
        break;
      }
      offset += cast<RankedTensorType>(input.getType()).getShape().back();
    }
    if (!seen)
      return std::nullopt;
    found.offsets.push_back(offset);
  }
  // Each input once (two results cannot share a reshape: one use each).
  return found;
}

/// Allocates the concatenation and passes each gradient as its slice,
/// viewed in the gradient's physical [.., H, D] layout, with its strides.
Value addConcatOutputs(RuntimeCall &call, ArrayRef<OutputLayout> grads,
                       GradientConcat &concat) {
  OpBuilder &b = call.b;
  auto type = cast<RankedTensorType>(concat.concat.getResult().getType());
  Value whole = memref::AllocOp::create(
      b, call.loc, MemRefType::get(type.getShape(), type.getElementType()));
  int64_t rank = type.getRank();
  for (auto [grad, offset] : llvm::zip_equal(grads, concat.offsets)) {
    ArrayRef<int64_t> physical = grad.physical.getShape();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        sizes, strides(rank, b.getIndexAttr(1));
    offsets.back() = b.getIndexAttr(offset);
    for (int64_t size : type.getShape().drop_back())
      sizes.push_back(b.getIndexAttr(size));
    sizes.push_back(b.getIndexAttr(physical[rank - 1] * physical[rank]));
    Value slice =
        memref::SubViewOp::create(b, call.loc, whole, offsets, sizes, strides);
    SmallVector<ReassociationIndices> reassociation;
    for (int64_t i = 0; i < rank - 1; ++i)
      reassociation.push_back({i});
    reassociation.push_back({rank - 1, rank});
    Value view = memref::ExpandShapeOp::create(b, call.loc, physical, slice,
                                               reassociation);
    call.addStridedOutput(view, grad.kernelDims(rank + 1));
  }
  return whole;
}

/// The operands both targets' strided backward calls start with: q, k, v
/// and o in place, the lse, dO in place, dq, dk, dv in their users'
/// layouts (returned), or written into their concatenation (`whole`).
struct BackwardOperands {
  SmallVector<OutputLayout> grads;
  std::optional<GradientConcat> concat;
  Value whole;
};
BackwardOperands addBackwardOperands(RuntimeCall &call, AttentionGradOp op) {
  for (Value v : {op.getQuery(), op.getKey(), op.getValue(), op.getOutput()})
    addStrided(call, v);
  call.addInput(op.getLse());
  addStrided(call, op.getOutputGrad());
  BackwardOperands operands;
  for (Value result : op.getResults())
    operands.grads.push_back(outputLayout(result));
  operands.concat = gradientConcat(op, operands.grads);
  if (operands.concat) {
    operands.whole = addConcatOutputs(call, operands.grads, *operands.concat);
    return operands;
  }
  for (OutputLayout &grad : operands.grads)
    addOutput(call, grad);
  return operands;
}

/// Calls `kernel` and replaces the op's gradients by what it wrote.
void finishBackward(RewriterBase &rewriter, RuntimeCall &call,
                    AttentionGradOp op, const BackwardOperands &operands,
                    StringRef kernel) {
  call.call(op->getParentOfType<ModuleOp>(), kernel);
  if (std::optional<GradientConcat> concat = operands.concat) {
    rewriter.replaceOp(concat->concat,
                       call.asTensor(operands.whole, concat->concat.getType()));
    for (ReshapeOp reshape : concat->reshapes)
      rewriter.eraseOp(reshape);
    for (TransposeOp transpose : concat->transposes)
      rewriter.eraseOp(transpose);
  } else {
    for (auto [result, grad] : llvm::zip_equal(op.getResults(), operands.grads))
      replaceOutput(rewriter, call, result, grad);
  }
  rewriter.eraseOp(op);
}

/// eff.attention -> effrt_attention_fwd_strided_f32.
LogicalResult lowerForward(RewriterBase &rewriter, AttentionOp op,
                           const LoweringPolicy &policy) {
  AttentionShape s =
      shapeOf(op.getQuery(), op.getKey(), op.getValue(), op.getMask());
  rewriter.setInsertionPoint(op);
  RuntimeCall call(rewriter, op.getLoc());
  ForwardOperands operands = addForwardOperands(call, op);
  if (failed(addOptions(call, op, s, rewriter)))
    return op.emitOpError("dropout needs a static micro-batch trip count");
  int64_t tile = effrt_attention_tile(s.tq, s.tk, op.getCausal());
  int64_t tiles = (s.tq + tile - 1) / tile;
  addWorkspace(call, tile, s.b1 * s.b2 * tiles, policy.threads,
               effrt_attention_fwd_slot_floats(tile, s.d, s.dv));
  finishForward(rewriter, call, op, operands, kForwardKernel);
  return success();
}

/// eff.attention_grad -> effrt_attention_bwd_strided_f32.
LogicalResult lowerBackward(RewriterBase &rewriter, AttentionGradOp op,
                            const LoweringPolicy &policy) {
  AttentionShape s =
      shapeOf(op.getQuery(), op.getKey(), op.getValue(), op.getMask());
  rewriter.setInsertionPoint(op);
  RuntimeCall call(rewriter, op.getLoc());
  BackwardOperands operands = addBackwardOperands(call, op);
  if (failed(addOptions(call, op, s, rewriter)))
    return op.emitOpError("dropout needs a static micro-batch trip count");
  int64_t tile = effrt_attention_tile(s.tq, s.tk, op.getCausal());
  addWorkspace(call, tile, s.b1 * s.b2, policy.threads,
               effrt_attention_bwd_slot_floats(tile, s.tq, s.tk, s.d, s.dv));
  finishBackward(rewriter, call, op, operands, kBackwardKernel);
  return success();
}

/// The f32 check of the CPU kernels, as an error on the op.
LogicalResult checkF32(Operation *op, ValueRange values) {
  for (Value v : values) {
    if (!v)
      continue;
    Type element = cast<RankedTensorType>(v.getType()).getElementType();
    if (!element.isF32() && !element.isInteger(1))
      return op->emitOpError("the CPU attention kernels take f32 (eff-autocast "
                             "keeps attention in f32)");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// cuda
//===----------------------------------------------------------------------===//

/// What of `op` the CUDA kernels cannot run, or "".
template <typename OpTy>
std::string cudaRefusal(OpTy op, const AttentionShape &s) {
  Type element =
      cast<RankedTensorType>(op.getQuery().getType()).getElementType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return "no element type other than f32, f16 and bf16";
  if (op.getMask())
    return "no mask other than the causal one";
  if (op.getDropout().convertToDouble() > 0.0)
    return "no dropout";
  if (s.d != s.dv)
    return "no values of another head size than the queries'";
  if (s.d > 128)
    return "no head size above 128";
  return "";
}

/// The type the CUDA kernels run in: f16/bf16 of head size 64 or 128 (the
/// tensor-core kernels) and f32 as they are; other f16/bf16 in f32.
Type cudaRunType(Type element, int64_t d) {
  if ((element.isF16() || element.isBF16()) && (d == 64 || d == 128))
    return element;
  return Float32Type::get(element.getContext());
}

/// The shape, scale, causal flag and type code every CUDA call ends with.
template <typename OpTy>
void addCudaOptions(RuntimeCall &call, OpTy op, const AttentionShape &s,
                    Type run) {
  for (int64_t v : {s.b1, s.b2, s.tq, s.tk, s.d, s.dv})
    call.addI64(v);
  call.addF32(op.getScale().convertToDouble());
  call.addI32(op.getCausal() ? 1 : 0);
  // The kernels run f32, f16 or bf16 (cudaRefusal).
  call.addI32(cudaTypeCode(run).value_or(0));
}

/// What both CUDA lowerings need of an attention op: its shape, its
/// element type and the type the kernels run in.
struct CudaAttentionPlan {
  AttentionShape shape;
  Type element;
  Type run;
};

/// The op's plan, or an error naming what the kernels cannot run.
template <typename OpTy>
FailureOr<CudaAttentionPlan> planCudaAttention(OpTy op) {
  AttentionShape s =
      shapeOf(op.getQuery(), op.getKey(), op.getValue(), op.getMask());
  if (std::string why = cudaRefusal(op, s); !why.empty())
    return op.emitOpError("the CUDA attention kernels take ") << why;
  Type element =
      cast<RankedTensorType>(op.getQuery().getType()).getElementType();
  return CudaAttentionPlan{s, element, cudaRunType(element, s.d)};
}

RankedTensorType withElement(Value v, Type element) {
  return cast<RankedTensorType>(v.getType()).clone(element);
}

/// eff.attention -> effrt_cuda_attention_fwd.
struct CudaAttentionLowering : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<CudaAttentionPlan> plan = planCudaAttention(op);
    if (failed(plan))
      return failure();
    auto [s, element, run] = *plan;
    Location loc = op.getLoc();
    SmallVector<Value> operands;
    for (Value v : {op.getQuery(), op.getKey(), op.getValue()})
      operands.push_back(convertElements(rewriter, loc, v, run));
    RuntimeCall call(rewriter, loc);
    for (Value v : operands)
      call.addInput(v);
    RankedTensorType outputType = withElement(op.getOutput(), run);
    Value output = call.addOutput(outputType);
    Value lse = call.addOutput(cast<RankedTensorType>(op.getLse().getType()));
    addCudaOptions(call, op, s, run);
    call.call(op->getParentOfType<ModuleOp>(), kCudaForwardKernel);
    Value result = convertElements(rewriter, loc,
                                   call.asTensor(output, outputType), element);
    rewriter.replaceOp(op, {result, call.asTensor(lse, op.getLse().getType())});
    return success();
  }
};

/// eff.attention_grad -> effrt_cuda_attention_bwd.
struct CudaAttentionGradLowering : OpRewritePattern<AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<CudaAttentionPlan> plan = planCudaAttention(op);
    if (failed(plan))
      return failure();
    auto [s, element, run] = *plan;
    Location loc = op.getLoc();
    SmallVector<Value> operands;
    for (Value v : {op.getQuery(), op.getKey(), op.getValue(), op.getOutput(),
                    op.getLse(), op.getOutputGrad()})
      operands.push_back(
          v == op.getLse() ? v : convertElements(rewriter, loc, v, run));
    RuntimeCall call(rewriter, loc);
    for (Value v : operands)
      call.addInput(v);
    SmallVector<Value> grads;
    SmallVector<RankedTensorType> gradTypes;
    for (Value result : op.getResults()) {
      gradTypes.push_back(withElement(result, run));
      grads.push_back(call.addOutput(gradTypes.back()));
    }
    call.addWorkspace(RankedTensorType::get(
        {effrt_cuda_attention_bwd_workspace(s.b1, s.b2, s.tq)},
        rewriter.getF32Type()));
    addCudaOptions(call, op, s, run);
    call.call(op->getParentOfType<ModuleOp>(), kCudaBackwardKernel);
    SmallVector<Value> results;
    for (auto [buffer, type] : llvm::zip_equal(grads, gradTypes))
      results.push_back(
          convertElements(rewriter, loc, call.asTensor(buffer, type), element));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// eff.attention -> effrt_cuda_attention_fwd_strided: operands read in
/// place, the output written in its transposing user's layout.
LogicalResult lowerCudaForward(RewriterBase &rewriter, AttentionOp op,
                               const CudaAttentionPlan &plan) {
  rewriter.setInsertionPoint(op);
  RuntimeCall call(rewriter, op.getLoc());
  ForwardOperands operands = addForwardOperands(call, op);
  addCudaOptions(call, op, plan.shape, plan.run);
  finishForward(rewriter, call, op, operands, kCudaForwardStrided);
  return success();
}

/// eff.attention_grad -> effrt_cuda_attention_bwd_strided.
LogicalResult lowerCudaBackward(RewriterBase &rewriter, AttentionGradOp op,
                                const CudaAttentionPlan &plan) {
  const AttentionShape &s = plan.shape;
  rewriter.setInsertionPoint(op);
  RuntimeCall call(rewriter, op.getLoc());
  BackwardOperands operands = addBackwardOperands(call, op);
  call.addWorkspace(RankedTensorType::get(
      {effrt_cuda_attention_bwd_workspace(s.b1, s.b2, s.tq)},
      rewriter.getF32Type()));
  addCudaOptions(call, op, s, plan.run);
  finishBackward(rewriter, call, op, operands, kCudaBackwardStrided);
  return success();
}

} // namespace

void populateAttentionLowering(RewritePatternSet &patterns,
                               const LoweringPolicy &policy) {
  // The CPU kernels, and the CUDA ones in their own type, are called
  // before the conversion (lowerAttentionCalls); what is left here is CUDA
  // attention widened to f32.
  if (policy.cudaAttention)
    patterns.add<CudaAttentionLowering, CudaAttentionGradLowering>(
        patterns.getContext());
}

LogicalResult lowerAttentionCalls(Operation *root,
                                  const LoweringPolicy &policy) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<AttentionOp, AttentionGradOp>(op))
      ops.push_back(op);
  });
  IRRewriter rewriter(root->getContext());
  // In program order: a forward's output is replaced before the gradient
  // that reads it looks through to its buffer.
  for (Operation *op : ops) {
    if (policy.cudaAttention) {
      FailureOr<CudaAttentionPlan> plan =
          isa<AttentionOp>(op) ? planCudaAttention(cast<AttentionOp>(op))
                               : planCudaAttention(cast<AttentionGradOp>(op));
      if (failed(plan))
        return failure();
      // Widened to f32: contiguous copies, during the conversion.
      if (plan->run != plan->element)
        continue;
      LogicalResult lowered =
          isa<AttentionOp>(op)
              ? lowerCudaForward(rewriter, cast<AttentionOp>(op), *plan)
              : lowerCudaBackward(rewriter, cast<AttentionGradOp>(op), *plan);
      if (failed(lowered))
        return failure();
      continue;
    }
    if (failed(checkF32(op, op->getOperands())))
      return failure();
    LogicalResult lowered =
        isa<AttentionOp>(op)
            ? lowerForward(rewriter, cast<AttentionOp>(op), policy)
            : lowerBackward(rewriter, cast<AttentionGradOp>(op), policy);
    if (failed(lowered))
      return failure();
  }
  // The transposes and saves that fed the calls, now unused: the
  // conversion would otherwise lower them to copies nobody reads.
  root->walk<WalkOrder::PostOrder, mlir::ReverseIterator>([&](Operation *op) {
    if (isa<TransposeOp, SaveOp, ReshapeOp>(op) && isOpTriviallyDead(op))
      rewriter.eraseOp(op);
  });
  return success();
}

} // namespace effopt::lowering
