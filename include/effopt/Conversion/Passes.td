//===- Passes.td - lowering eff to executable code ---------*- tablegen -*-===//

#ifndef EFFOPT_CONVERSION_PASSES_TD
#define EFFOPT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertEffToLinalgPass : Pass<"convert-eff-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lowers eff ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Every `eff` op in every function becomes destination-style code on
    tensors: elementwise ops (with numpy broadcasting folded into indexing
    maps) and reductions become `linalg.generic`, so
    `linalg-fuse-elementwise-ops` can fuse chains of them into one loop nest;
    matrix products become `linalg.matmul` / `linalg.batch_matmul` (with
    transposes as indexing maps), which `eff-linalg-to-blas` later turns into
    BLAS calls; reshapes become `tensor.collapse_shape` / `expand_shape`
    views. Module-level `eff.parameter` ops are left alone.

    f16/bf16 follow PyTorch's semantics: an elementwise op or a
    normalisation computes in f32 and rounds its result once; sums,
    poolings and statistics accumulate in f32; matrix products and
    convolutions accumulate in f32 (as PyTorch's bf16 GEMMs do), then round
    once. No product is left with an f16/bf16 accumulator.

    Where numerics are a target's choice, the options say (the target
    backend sets them; the defaults are the CPU's, PyTorch's CPU kernels):
    - `f32-accumulator`: the type f32 sums, means and statistics accumulate
      in, `f64` (PyTorch's CPU `acc_type<float>`) or `f32` (its CUDA one);
    - `low-precision-products`: `widen` converts f16/bf16 operands of
      products and convolutions to f32 temporaries and multiplies in f32 (a
      BLAS with only an f32 GEMM); `native` lets the product read them in
      their own type with an f32 accumulator (a tensor-core GEMM);
    - `convolution`: ungrouped convolutions and their gradients as `im2col`
      columns and a batched GEMM, or `direct`: linalg's named convolution op
      (the grouped one with one group) and a reduction for the filter
      gradient, which a target maps to its convolution library.

    `eff.all_reduce` becomes a call of the runtime's
    `effrt_allreduce_sum_f32` on a buffer of its own (a `memref.alloc` the
    input is copied into, returned with `bufferization.to_tensor restrict`).
    `eff.reduce_scatter`, `eff.all_gather` and `eff.shard` (ZeRO) copy their
    input into a buffer of their own the same way and call
    `effrt_reduce_scatter_sum_f32`, `effrt_all_gather_f32` or
    `effrt_shard_f32(send, recv, count)` once, into a fresh result buffer.

    An op without a lowering is an error naming the op at its location.
  }];
  let options = [
    Option<"f32Accumulator", "f32-accumulator", "std::string",
           /*default=*/"\"f64\"",
           "Type f32 sums accumulate in: f64 or f32">,
    Option<"lowPrecisionProducts", "low-precision-products", "std::string",
           /*default=*/"\"widen\"",
           "f16/bf16 products: widen (operands to f32 first) or native "
           "(operands in their type, f32 accumulator)">,
    Option<"convolution", "convolution", "std::string",
           /*default=*/"\"im2col\"",
           "Ungrouped convolutions: im2col (columns + GEMM) or direct (named "
           "convolution ops)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::mlir::scf::SCFDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::LLVM::LLVMDialect"];
}

def EffLinalgToBlasPass : Pass<"eff-linalg-to-blas", "::mlir::ModuleOp"> {
  let summary = "Replaces bufferized f32 matrix products by calls to the runtime's GEMM";
  let description = [{
    Runs after bufferization. `linalg.matmul` and `linalg.batch_matmul` on
    f32 memrefs whose inner dimension is contiguous (transposed operands
    included, as their indexing maps say) become calls to
    `effrt_sgemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc)` and
    `effrt_sgemm_batched(..., batch, strideA, strideB, strideC)`, which
    `libeffrt` implements with the BLAS it was built with (OpenBLAS on CPU).
    An operand broadcast over the batch (a 2-D operand of a batched
    product, as im2col convolutions share their filter) has batch stride 0;
    `linalg.batch_reduce_matmul` (a convolution's filter gradient) is the
    batched call with `strideC = 0`, which accumulates the batches in order.
    A `linalg.fill` of +0.0 writing exactly C right before the product (only
    reshape views and constants between) is dropped and the call gets
    `beta = 0`: BLAS then writes C without reading it, saving a pass over C.
    The generated code therefore never embeds a GEMM of its own, and the
    same IR can target cuBLASLt. Products it cannot express stay as linalg
    loops.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numGemmCalls", "gemm-calls", "Number of GEMM calls emitted">,
    Statistic<"numFillsFolded", "fills-folded",
              "Number of zero fills of C replaced by beta = 0">
  ];
}


def EffStepEntryPass : Pass<"eff-step-entry", "::mlir::ModuleOp"> {
  let summary = "Wraps the bufferized @train_step into the C entry point effx_step";
  let description = [{
    Runs after bufferization, the last step shared by every target before
    the memory plan. Builds
    `func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>,
    %io: memref<?xi8>)` with `llvm.emit_c_interface`: each argument of
    `@train_step` becomes a `memref.view` of its region at the offset
    `eff-step-abi` recorded; the loss (result 0) is copied to its place in
    `io`, and every other result is copied into the argument its
    `eff.updates_arg` names, a copy that folds away when bufferization
    updated the argument in place. The call
    is inlined and `@train_step` removed, so `eff-memory-plan` sees one
    schedule; the function is tagged `eff.arena_arg = 1`. Strided
    `memref.copy` ops become `linalg.copy` loops (the runtime has no
    `memrefCopy` library function). Module-level
    `eff.parameter` declarations are removed (their initial values travel in
    the `.effx`, not in the code).

    On a module tagged `eff.step_kind = "forward"` (`eff-step-abi
    {mode=forward}`) it wraps `@forward` instead: every result is copied to
    the place in `io` its `eff.offset` result attribute gives.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}


def EffOutlineKernelsPass : Pass<"eff-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Outlines every top-level loop nest of the step into its own kernel function";
  let description = [{
    Runs on functions tagged `eff.arena_arg` after `convert-linalg-to-loops`:
    each top-level `scf.for` / `scf.parallel` nest (one fused group) becomes a
    private `func.func @<step>_kernel_N` taking the buffers it touches and is
    replaced by a call (the CPU code generator keeps kernels out of line). The step stays a flat schedule of
    kernel and library calls: LLVM optimises each kernel on its own (one huge
    function makes loop passes superlinear), and the same kernels are the
    unit a GPU target launches or a thread pool splits.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect"];
  let statistics = [
    Statistic<"numKernels", "kernels", "Number of kernels outlined">
  ];
}

def EffParallelLoopsPass : Pass<"eff-parallel-loops"> {
  let summary = "Keeps threads for the outermost parallel loop of large nests; every other scf.parallel becomes scf.for";
  let description = [{
    Runs after `convert-linalg-to-parallel-loops`, before
    `eff-outline-kernels` and `convert-scf-to-openmp`. A top-level
    `scf.parallel` (directly in a function body) whose nest runs at least
    `min-work` innermost iterations (static trip counts; unknown ones count
    as large) stays parallel over as few leading dimensions as give
    `min-chunks` independent chunks; its other dimensions become `scf.for`
    loops inside it, so the innermost loop stays a plain loop LLVM
    vectorises. Every other `scf.parallel` (nested in another loop, or too
    small to pay for waking threads) becomes sequential `scf.for` loops.

    Reductions are never split: `convert-linalg-to-parallel-loops` leaves
    reduction dimensions as `scf.for`, so each output element is computed
    by one thread with the same instructions in the same order, and results
    are bit-identical for any number of threads. `scf.parallel` ops with
    results (`scf.reduce`) are left alone.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"32768",
           "Innermost iterations below which a nest stays sequential">,
    Option<"minChunks", "min-chunks", "int64_t", /*default=*/"8",
           "Parallel iterations the threaded loop should have at least">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
  let statistics = [
    Statistic<"numParallel", "parallel-nests", "Number of nests left to threads">,
    Statistic<"numSequential", "sequential-loops",
              "Number of scf.parallel made sequential">
  ];
}

def EffVectorizableMathPass : Pass<"eff-vectorizable-math"> {
  let summary = "Rewrites f32 exp, erf and tanh as polynomials LLVM vectorises";
  let description = [{
    Runs in the CPU pipeline after `math-extend-to-supported-types` (so
    bf16/f16 math is already f32) and before `convert-math-to-libm`. Each
    f32 (scalar or vector) `math.exp`, `math.erf` and `math.tanh` named in
    `ops` becomes upstream's polynomial approximation
    (`populateMathPolynomialApproximationPatterns`): arithmetic, fma, floor
    and bit casts only, so the loop around it vectorises, where a libm call
    per element kept it scalar (glibc's `erff` and `expf` were 8% of a GPT
    training step). Every `math.fma` and `math.floor` (those of the
    approximations and any other) becomes LLVM's `llvm.intr.fma` /
    `llvm.intr.floor` here, since `convert-math-to-libm` would turn them
    into calls of `fmaf` / `floorf`. f64 exp/erf/tanh and the other math
    functions are left to libm.

    Accuracy (upstream's): exp has a relative error below 2^-22 and
    returns 0 where the true result is subnormal (x < -87.3); erf is within
    2.5e-7 of the exact value; tanh within a few ulp, and exactly +-1 for
    |x| > 7.9. PyTorch's own vectorised CPU kernels (SLEEF, 1 ulp) round
    differently too; the end-to-end tests compare training with PyTorch
    within their usual tolerances.
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "Math functions to rewrite (exp, erf, tanh; default: all three)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def EffExpandBF16ConversionsPass : Pass<"eff-expand-bf16-conversions"> {
  let summary = "Writes f32 <-> bf16 conversions as integer arithmetic (round to nearest even)";
  let description = [{
    Runs in the CPU pipeline after `arith-emulate-unsupported-floats`
    (which leaves arithmetic on f16/bf16 as `extf`, the op in f32, and one
    `truncf`), before the conversion to LLVM. Every `arith.extf` from bf16
    to f32 becomes a 16-bit shift and every `arith.truncf` from f32 to bf16
    becomes the integer rounding PyTorch's `c10::BFloat16` uses: round to
    nearest even on the upper 16 bits, infinities and overflow to
    infinity, any NaN to the quiet NaN 0x7fc0, subnormals kept. The
    expansion is upstream's (`populateExpandBFloat16Patterns`); unlike
    `arith-expand{include-bf16}` this pass rewrites nothing else (that pass
    also turns every f32 `maximumf` into compares and selects).

    Why: LLVM lowers a scalar or vector `fptrunc float to bfloat` to the
    libcall `__truncsfbf2` unless the target has AVX512-BF16, and Debian
    12's libgcc has no such function (it came with GCC 13), so the step
    would not load; and AVX512-BF16's `vcvtneps2bf16` flushes subnormals
    to zero, which PyTorch does not. The integer form vectorises on any
    x86-64 and gives PyTorch's bits. f16 conversions are left to LLVM
    (F16C instructions, or compiler-rt's `__truncsfhf2`/`__extendhfsf2`,
    which are IEEE round-to-nearest-even too).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def EffFuseElementwisePass : Pass<"eff-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "Fuses producer/consumer chains of elementwise linalg.generic ops";
  let description = [{
    Runs on linalg on tensors after `convert-eff-to-linalg`. A
    `linalg.generic` whose result feeds only one other `linalg.generic` is
    fused into it, so a chain of elementwise ops (and an elementwise producer
    of a reduction) becomes one loop nest with no intermediate tensor.
    Unlike upstream `linalg-fuse-elementwise-ops` it never propagates reshapes
    through contractions: a `linalg.matmul` behind a collapse stays a named
    product that `eff-linalg-to-blas` can hand to the GEMM, and a producer with
    several uses is not recomputed. A rank-0 producer (an optimizer's
    per-step scalars, bias corrections with `pow`) is not fused into a loop
    nest either: it would be recomputed for every element.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // EFFOPT_CONVERSION_PASSES_TD
