//===- LinalgToBlas.cpp - f32 matrix products to the runtime's GEMM -------===//
//
// After bufferization a product is a linalg.matmul / batch_matmul /
// batch_reduce_matmul on memrefs. When every operand has a unit inner
// stride, it is exactly a (strided, possibly transposed, possibly batched,
// possibly broadcast over the batch) GEMM: it becomes a call to
// `effrt_sgemm` / `effrt_sgemm_batched`, implemented by libeffrt with its
// BLAS. The generated code then carries no GEMM of its own and the choice of
// BLAS stays with the runtime.
//
// abi=cuda calls effrt_cuda_gemm / effrt_cuda_gemm_batched instead (cuBLASLt
// in libeffrt's CUDA device): the same arguments followed by the element
// types of A/B and C, so f16/bf16 products run on tensor cores with f32
// accumulation.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"
#include "effopt/Support/CudaTypeCode.h"
#include "effopt/Support/StorageBytes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace effopt {
#define GEN_PASS_DEF_EFFLINALGTOBLASPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

constexpr StringLiteral kGemm = "effrt_sgemm";
constexpr StringLiteral kGemmBatched = "effrt_sgemm_batched";
constexpr StringLiteral kCudaGemm = "effrt_cuda_gemm";
constexpr StringLiteral kCudaGemmBatched = "effrt_cuda_gemm_batched";
constexpr StringLiteral kCudaGemmBias = "effrt_cuda_gemm_bias";

/// The (A/B, C) type codes of a product the cuda GEMM computes: A and B of
/// one type; f32 operands with an f32 C, f16/bf16 operands with C f32 or
/// their own type (what cuBLASLt's f32-compute GEMMs take).
std::optional<std::pair<int32_t, int32_t>>
cudaGemmTypes(Type a, Type b, Type c) {
  std::optional<int32_t> ab = cudaTypeCode(a), cc = cudaTypeCode(c);
  if (a != b || !ab || !cc)
    return std::nullopt;
  if (*ab == 0 ? *cc != 0 : (*cc != 0 && *cc != *ab))
    return std::nullopt;
  return std::make_pair(*ab, *cc);
}

/// Static strides of a memref, or nothing when they are not static.
std::optional<SmallVector<int64_t>> staticStrides(Value v) {
  auto type = cast<MemRefType>(v.getType());
  auto [strides, offset] = type.getStridesAndOffset();
  (void)offset;
  if (llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  return strides;
}

/// The address of a memref's first element as an LLVM pointer.
Value firstElementPointer(OpBuilder &b, Location loc, Value memref) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, metadata.getBaseBuffer());
  int64_t bytes =
      storageBytes(cast<MemRefType>(memref.getType()).getElementType(), 1);
  Value offsetBytes = arith::MulIOp::create(
      b, loc, metadata.getOffset(), arith::ConstantIndexOp::create(b, loc, bytes));
  Value address = arith::AddIOp::create(b, loc, base, offsetBytes);
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, loc,
                                  LLVM::LLVMPointerType::get(b.getContext()),
                                  asInt);
}

/// How a product's operand is laid out for a row-major GEMM.
struct GemmOperand {
  Value memref;
  bool transposed;
  int64_t leadingDim;  // row stride
  int64_t batchStride; // 0 when not batched
};

/// Reads the operand's role from the indexing map over (…, m|n, k) loops:
/// `rowLoop`/`colLoop` are the loop dims expected as rows and columns when
/// not transposed. Fails when the inner dimension is not contiguous.
std::optional<GemmOperand> classify(Value memref, AffineMap map,
                                    unsigned rowLoop, unsigned colLoop,
                                    bool batched) {
  auto strides = staticStrides(memref);
  if (!strides)
    return std::nullopt;
  unsigned rank = map.getNumResults();
  // A batched product's operand is [batch, rows, cols], or [rows, cols]
  // broadcast over the batch (batch stride 0): a filter shared by every
  // sample, or the accumulator of a batch_reduce_matmul.
  int64_t batchStride = 0;
  if (batched && rank == 3) {
    auto b = dyn_cast<AffineDimExpr>(map.getResult(0));
    if (!b || b.getPosition() != 0)
      return std::nullopt;
    batchStride = (*strides)[0];
  } else if (rank != 2) {
    return std::nullopt;
  }
  auto dimAt = [&](unsigned i) -> std::optional<unsigned> {
    if (auto d = dyn_cast<AffineDimExpr>(map.getResult(i)))
      return d.getPosition();
    return std::nullopt;
  };
  auto r = dimAt(rank - 2), c = dimAt(rank - 1);
  if (!r || !c || (*strides)[rank - 1] != 1)
    return std::nullopt;
  GemmOperand op{memref, false, (*strides)[rank - 2], batchStride};
  if (*r == rowLoop && *c == colLoop)
    op.transposed = false;
  else if (*r == colLoop && *c == rowLoop)
    op.transposed = true;
  else
    return std::nullopt;
  return op;
}

/// The buffer `c` of `product` viewed as it was written right before it,
/// and the op that wrote it: only views of it (collapse/expand) and
/// constants may come between.
std::pair<Value, Operation *> writerBefore(Operation *product, Value c) {
  Value root = c;
  while (Operation *def = root.getDefiningOp()) {
    if (auto v = dyn_cast<memref::CollapseShapeOp>(def))
      root = v.getSrc();
    else if (auto v = dyn_cast<memref::ExpandShapeOp>(def))
      root = v.getSrc();
    else
      break;
  }
  for (Operation *prev = product->getPrevNode(); prev;
       prev = prev->getPrevNode()) {
    if (isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(prev) ||
        prev->hasTrait<OpTrait::ConstantLike>())
      continue;
    return {root, prev};
  }
  return {root, nullptr};
}

/// The linalg.fill with +0.0 that writes exactly the buffer `c` of `product`
/// right before it: only views of it (collapse/expand) and constants may
/// come between, so nothing reads the zeros but the product.
linalg::FillOp zeroFillOf(Operation *product, Value c) {
  auto [root, prev] = writerBefore(product, c);
  auto fill = dyn_cast_or_null<linalg::FillOp>(prev);
  if (!fill || !fill.hasPureBufferSemantics() ||
      fill.getDpsInits()[0] != root)
    return {};
  auto type = dyn_cast<MemRefType>(root.getType());
  if (!type || !type.getLayout().isIdentity() ||
      type.getNumElements() != cast<MemRefType>(c.getType()).getNumElements())
    return {};
  auto value = fill.getDpsInputs()[0].getDefiningOp<arith::ConstantFloatOp>();
  if (!value || !value.value().isPosZero())
    return {};
  return fill;
}

/// The linalg.generic right before `product` that fills all of its C with
/// a vector of `n` elements repeated over the rows (eff-gpu-fold-bias-
/// into-products: a bias for cuBLASLt's epilogue), or null.
linalg::GenericOp rowBroadcastOf(Operation *product, Value c, int64_t n) {
  auto [root, prev] = writerBefore(product, c);
  auto generic = dyn_cast_or_null<linalg::GenericOp>(prev);
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getDpsInits()[0] != root ||
      generic.getNumReductionLoops() != 0)
    return {};
  auto type = dyn_cast<MemRefType>(root.getType());
  auto cType = cast<MemRefType>(c.getType());
  Value vector = generic.getDpsInputs()[0];
  auto vectorType = dyn_cast<MemRefType>(vector.getType());
  if (!type || !type.getLayout().isIdentity() ||
      type.getNumElements() != cType.getNumElements() ||
      type.getShape().back() != n || !vectorType ||
      vectorType.getRank() != 1 || vectorType.getDimSize(0) != n ||
      !vectorType.getLayout().isIdentity() ||
      vectorType.getElementType() != cType.getElementType())
    return {};
  unsigned loops = generic.getNumLoops();
  AffineMap in = generic.getIndexingMapsArray()[0];
  AffineMap out = generic.getIndexingMapsArray()[1];
  AffineDimExpr last =
      in.getNumResults() == 1 ? dyn_cast<AffineDimExpr>(in.getResult(0))
                              : AffineDimExpr(nullptr);
  if (!out.isIdentity() || !last || last.getPosition() != loops - 1)
    return {};
  // The body yields the vector's element as it is.
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  if (yield.getNumOperands() != 1 ||
      yield.getOperand(0) != generic.getBody()->getArgument(0))
    return {};
  return generic;
}

func::FuncOp declare(ModuleOp module, StringRef name, FunctionType type) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name, type);
  f.setPrivate();
  return f;
}

struct EffLinalgToBlasPass
    : impl::EffLinalgToBlasPassBase<EffLinalgToBlasPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (abi != "cpu" && abi != "cuda") {
      module.emitError("eff-linalg-to-blas: abi must be cpu or cuda, got '")
          << abi << "'";
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> products;
    module.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp,
              linalg::BatchReduceMatmulOp>(op) &&
          op.hasPureBufferSemantics())
        products.push_back(op);
    });
    for (linalg::LinalgOp op : products) {
      if (succeeded(rewrite(module, op))) {
        ++numGemmCalls;
        continue;
      }
      // A product of f16/bf16 that writes its own type
      // (eff-gpu-narrow-products) means "accumulate in f32, round once":
      // only the library call does that; as loops it would accumulate in
      // the narrow type.
      Type c = getElementTypeOrSelf(op.getDpsInits()[0].getType());
      Type a = getElementTypeOrSelf(op.getDpsInputs()[0].getType());
      Type b = getElementTypeOrSelf(op.getDpsInputs()[1].getType());
      if (abi == "cuda" && (c.isF16() || c.isBF16()) && a == c && b == c) {
        op.emitError("eff-linalg-to-blas: a product that writes ")
            << c << " must become a GEMM call (strided or transposed C?)";
        return signalPassFailure();
      }
    }
  }

  LogicalResult rewrite(ModuleOp module, linalg::LinalgOp op) {
    bool batched = isa<linalg::BatchMatmulOp, linalg::BatchReduceMatmulOp>(op);
    Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1];
    Value c = op.getDpsInits()[0];
    Type aElement = cast<MemRefType>(a.getType()).getElementType();
    Type bElement = cast<MemRefType>(bm.getType()).getElementType();
    Type cElement = cast<MemRefType>(c.getType()).getElementType();
    bool cuda = abi == "cuda";
    std::optional<std::pair<int32_t, int32_t>> cudaTypes;
    if (cuda) {
      cudaTypes = cudaGemmTypes(aElement, bElement, cElement);
      if (!cudaTypes)
        return failure();
    } else if (!cElement.isF32() || !aElement.isF32() || !bElement.isF32()) {
      return failure();
    }
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    // Loops: [batch,] m, n, k.
    unsigned base = batched ? 1 : 0;
    unsigned m = base, n = base + 1, k = base + 2;
    auto ga = classify(a, maps[0], m, k, batched);
    auto gb = classify(bm, maps[1], k, n, batched);
    auto gc = classify(c, maps[2], m, n, batched);
    if (!ga || !gb || !gc || gc->transposed)
      return failure();
    // Only a batch_reduce_matmul accumulates every batch into one C.
    if (batched && (gc->batchStride == 0) !=
                       isa<linalg::BatchReduceMatmulOp>(op.getOperation()))
      return failure();

    // Before any op is created in front of the product.
    linalg::FillOp fill = zeroFillOf(op, c);
    SmallVector<int64_t> loops = op.getStaticLoopRanges();
    // cuda: C filled with a bias over the rows is cuBLASLt's bias epilogue
    // (the GEMM adds it to its accumulator; nothing fills C).
    linalg::GenericOp bias;
    if (cuda && !batched && !fill)
      bias = rowBroadcastOf(op, c, loops[n]);
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto i32 = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, v, 32);
    };
    auto i64 = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, v, 64);
    };
    Value one = arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                               APFloat(1.0f));
    SmallVector<Value> args{i32(ga->transposed), i32(gb->transposed)};
    if (batched)
      args.push_back(i64(loops[0]));
    args.append({i64(loops[m]), i64(loops[n]), i64(loops[k]), one,
                 firstElementPointer(b, loc, a), i64(ga->leadingDim)});
    if (batched)
      args.push_back(i64(ga->batchStride));
    args.append({firstElementPointer(b, loc, bm), i64(gb->leadingDim)});
    if (batched)
      args.push_back(i64(gb->batchStride));
    if (bias) {
      // effrt_cuda_gemm_bias: no beta (C is not read), the vector after C.
      args.append({firstElementPointer(b, loc, c), i64(gc->leadingDim),
                   firstElementPointer(b, loc, bias.getDpsInputs()[0]),
                   i32(cudaTypes->first), i32(cudaTypes->second)});
      bias->erase();
      ++numBiasEpilogues;
      auto callee = declare(module, kCudaGemmBias,
                            b.getFunctionType(ValueRange(args).getTypes(), {}));
      func::CallOp::create(b, loc, callee, args);
      op->erase();
      return success();
    }
    // linalg products accumulate into C: beta = 1, or 0 when C was just
    // zero-filled (the fill is dropped: BLAS does not read C then).
    Value beta = one;
    if (fill) {
      fill->erase();
      beta = arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                            APFloat(0.0f));
      ++numFillsFolded;
    }
    args.append({beta, firstElementPointer(b, loc, c), i64(gc->leadingDim)});
    if (batched)
      args.push_back(i64(gc->batchStride));
    if (cuda)
      args.append({i32(cudaTypes->first), i32(cudaTypes->second)});
    StringRef name = cuda ? (batched ? kCudaGemmBatched : kCudaGemm)
                          : (batched ? kGemmBatched : kGemm);
    auto callee = declare(module, name,
                          b.getFunctionType(ValueRange(args).getTypes(), {}));
    func::CallOp::create(b, loc, callee, args);
    op->erase();
    return success();
  }
};

} // namespace
} // namespace effopt
