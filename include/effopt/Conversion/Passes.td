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
      gradient, or `library`: every f32 convolution and gradient (grouped
      and depthwise too) as one call of the runtime's oneDNN kernels
      `effrt_conv2d_fwd_f32` / `effrt_conv2d_bwd_data_f32` /
      `effrt_conv2d_bwd_weights_f32` with the shape as arguments and a
      workspace buffer (oneDNN's scratchpad and blocked operand copies,
      sized at compile time by the runtime's own
      `effrt_conv2d_workspace_bytes`) that the memory plan places; what
      oneDNN cannot run, and other types, lower as `im2col`. Only in a build
      with oneDNN (libdnnl-dev); elsewhere `library` is an error. Or
      `cudnn` (target cuda): every convolution and gradient whose tensors
      are all f32, all f16 or all bf16 (grouped, depthwise, strided,
      dilated, asymmetrically padded) as one call of the CUDA runtime's
      `effrt_cuda_conv2d_fwd` / `_bwd_data` / `_bwd_weights` on the
      unpadded device tensors with the shape and the type code as
      arguments; cuDNN's workspace is the device's library workspace,
      which the plan already holds, so the call adds no buffer. A bias is
      added by the compiled code after the call. Mixed types lower as
      `im2col`.

    `eff.all_reduce` becomes a call of the runtime's
    `effrt_allreduce_sum_f32` on a buffer of its own (a `memref.alloc` the
    input is copied into, returned with `bufferization.to_tensor restrict`).
    `eff.reduce_scatter`, `eff.all_gather` and `eff.shard` (ZeRO) copy their
    input into a buffer of their own the same way and call
    `effrt_reduce_scatter_sum_f32`, `effrt_all_gather_f32` or
    `effrt_shard_f32(send, recv, count)` once, into a fresh result buffer.
    A started collective (`eff.all_reduce_start`, ...; eff-overlap-
    collectives) lowers the same way at the start, calling the `_start`
    variant (`effrt_allreduce_sum_f32_start`, ...), which returns a request
    (i64); its `eff.wait` becomes `effrt_collective_wait(request, send,
    recv)`, after which the results are read. The wait names the buffers,
    so the memory plan holds them while the collective runs.

    `collectives=cuda` names the CUDA runtime's entry points instead
    (`effrt_cuda_allreduce_sum_f32`, `effrt_cuda_reduce_scatter_sum_f32`,
    `effrt_cuda_all_gather_f32`, `effrt_cuda_shard_f32`, their `_start`
    variants and `effrt_cuda_collective_wait`), with the same arguments on
    device pointers: the runtime queues them on the GPU (NCCL) in stream
    order with the step's kernels.

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
           "Convolutions: im2col (columns + GEMM), direct (named "
           "convolution ops), library (oneDNN calls) or cudnn (CUDA "
           "runtime calls)">,
    Option<"attention", "attention", "std::string", /*default=*/"\"cpu\"",
           "The runtime kernels eff.attention lowers to: cpu "
           "(effrt_attention_*_f32) or cuda (effrt_cuda_attention_*: "
           "f32/f16/bf16, no mask, no dropout)">,
    Option<"onlineLogSumExp", "online-log-sum-exp", "bool", /*default=*/"false",
           "A softmax cross-entropy's rows of more than 4096 classes take "
           "their max and sum of exponentials in one pass (online: the sum "
           "rescaled whenever the max grows) instead of two; eff-gpu-form-"
           "kernels runs it as one block reduction (cuda)">,
    Option<"collectives", "collectives", "std::string", /*default=*/"\"cpu\"",
           "The runtime entry points collectives lower to: cpu "
           "(effrt_allreduce_sum_f32, ...: host memory, MPI) or cuda "
           "(effrt_cuda_allreduce_sum_f32, ...: device memory, NCCL)">,
    Option<"threads", "threads", "int64_t", /*default=*/"16",
           "The most threads the step runs on: the CPU attention kernels "
           "get one planned workspace slot per thread (at most one per "
           "work item)">
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

    With `abi=cuda` (the cuda target) the calls are `effrt_cuda_gemm` and
    `effrt_cuda_gemm_batched` of docs/CudaBackend.md: the same arguments
    plus the operands' and C's element types as trailing `i32` codes (0 f32,
    1 f16, 2 bf16), pointers being device addresses. Products whose A and B
    are both f16 or both bf16 then become calls too (tensor cores, f32
    accumulation), with C f32 or of the operands' type; `abi=cpu` calls the
    f32 BLAS only. With `abi=cuda`, a 2-D product whose C was written right
    before it by a `linalg.generic` that repeats a vector of C's type over
    C's rows (`eff-gpu-fold-bias-into-products`) becomes
    `effrt_cuda_gemm_bias(transA, transB, M, N, K, alpha, A, lda, B, ldb, C,
    ldc, bias, abType, cType)` (cuBLASLt's bias epilogue: C = A B + bias,
    C not read) and the broadcast is dropped.
  }];
  let options = [
    Option<"abi", "abi", "std::string", /*default=*/"\"cpu\"",
           "The runtime GEMM to call: cpu (effrt_sgemm, f32) or cuda "
           "(effrt_cuda_gemm, f32/f16/bf16 operands)">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numGemmCalls", "gemm-calls", "Number of GEMM calls emitted">,
    Statistic<"numFillsFolded", "fills-folded",
              "Number of zero fills of C replaced by beta = 0">,
    Statistic<"numBiasEpilogues", "bias-epilogues",
              "Number of row broadcasts into C replaced by a bias epilogue">
  ];
}


def EffCudaFatbinPass : Pass<"eff-cuda-fatbin", "::mlir::ModuleOp"> {
  let summary = "Compiles every gpu.module to one CUDA fatbin (SASS per arch + PTX) held by a gpu.binary";
  let description = [{
    The cuda target's device code step (lib/Target/Cuda). Expects outlined
    `gpu.module`s already lowered to the NVVM dialect (convert-gpu-to-nvvm).
    For each module: LLVM's NVPTX back end (through the `#nvvm.target`
    serializer, libdevice linked from the toolkit) emits PTX for every
    architecture of `archs`; the toolkit's `ptxas` assembles each into SASS
    and `fatbinary` packs the SASS of every arch plus the PTX of the last
    (so newer GPUs JIT it) into one fatbin. The module is replaced by a
    `gpu.binary` of the same name holding that fatbin (format `fatbin`),
    which `gpu-to-llvm` and the LLVM translation embed in the host object
    and load through `mgpuModuleLoad`. Every image is compressed (the
    driver decompresses at load): fatbinary's default compresses only some
    (GPT-2's 18 MB of SASS stayed as it was; 0.4 MB compressed).

    The toolkit is `toolkit` (effc: `$EFFOPT_CUDA_TOOLKIT`, else
    `/usr/local/cuda`); a missing toolkit, `ptxas` or `fatbinary` is one
    error naming it. With `keep-ptx` the gpu.binary also gets the PTX of
    each arch as a discardable attribute (for tests).
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "CUDA toolkit directory (bin/ptxas, bin/fatbinary, "
           "nvvm/libdevice); empty: $EFFOPT_CUDA_TOOLKIT or /usr/local/cuda">,
    ListOption<"archs", "archs", "std::string",
               "SASS architectures, lowest first (sm_80,sm_90); the PTX is "
               "the last one's">,
    Option<"optLevel", "opt-level", "unsigned", /*default=*/"3",
           "NVPTX and ptxas optimization level">,
    Option<"compress", "compress", "bool", /*default=*/"true",
           "Compress every image of the fatbin (fatbinary --compress-all; "
           "false: fatbinary's default, for tests that read the SASS)">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect"];
  let statistics = [
    Statistic<"numFatbins", "fatbins", "gpu.modules compiled to a fatbin">
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

    A module with `eff.host_bytes` (state placed in host memory by
    `eff-offload-optimizer`) gets a fourth argument, `%host: memref<?xi8>`,
    and the arguments `eff-step-abi` placed in region `"host"` are views of
    it.

    On a module tagged `eff.step_kind = "forward"` (`eff-step-abi
    {mode=forward}`) it wraps `@forward` instead: every result is copied to
    the place in `io` its `eff.offset` result attribute gives.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}


def EffHostTaskLifetimesPass
    : Pass<"eff-host-task-lifetimes", "::mlir::ModuleOp"> {
  let summary = "Keeps the buffers a host task reads alive until the task is waited for";
  let description = [{
    Runs on the entry point before `eff-memory-plan`, on a step with a host
    region. For every op that `eff-host-tasks` will run as a task (a
    top-level `linalg` op touching the host region), finds the first later
    op, other than such an op, that touches one of its buffers (the same
    allocation, or overlapping bytes of a region), or the end of the step,
    and places a `memref.dealloc` of each allocation the op reads or writes
    right before it. The memory plan then keeps those buffers alive until
    there -- so their slots are not handed to the ops the task overlaps --
    and drops the deallocations.

    With `abi=cuda` (the device's regions are GPU memory, which only host
    tasks reach) a `memref.copy` that touches the host region first becomes
    the `linalg.copy` it is (Adafactor's state), as `eff-host-tasks
    abi=cuda` does, so that its buffers are kept alive like any task's.

    With `hoist` (effc sets it on a GPU, where the update always runs as
    host tasks) it first moves each such op, and each `linalg` op of the
    optimizer's (provenance `optimizer`: the learning rate, the bias
    corrections), up to right after the last earlier op it depends on: one
    that writes bytes it reads or writes, or reads bytes it writes (the
    same allocation or overlapping region bytes; a linalg op reads its
    inputs and writes its outputs, any other op, and one whose buffers are
    not traced, counts as reading and writing everything it may touch), or
    defines a value it uses. The views and constants it reads are copied
    along, the allocations it uses moved up. So the updates run in the
    order their gradients complete (the last layer's first), each as soon
    as its gradient is, and the host computes it while the device goes on
    with the backward (ZeRO-Offload's overlap); every op still follows
    everything it depends on through memory.
  }];
  let options = [
    Option<"abi", "abi", "std::string", /*default=*/"\"cpu\"",
           "Where the regions live, as eff-host-tasks' abi: with cuda a "
           "memref.copy that touches the host region becomes the linalg.copy "
           "it is, a task like the optimizer's other ops">,
    Option<"hoist", "hoist", "bool", /*default=*/"false",
           "Move each host task and optimizer op up to right after the last "
           "op it depends on">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numExtended", "extended", "Buffers kept alive for a host task">,
    Statistic<"numHoisted", "hoisted",
              "Host tasks and optimizer ops moved up (hoist)">
  ];
}

def EffHostTasksPass : Pass<"eff-host-tasks", "::mlir::ModuleOp"> {
  let summary = "Runs the ops that touch host-resident state on a host worker, overlapped with the rest of the step";
  let description = [{
    Runs on the entry point after `eff-memory-plan`, on a step with a host
    region (`eff-offload-optimizer`: its fourth argument). Every top-level
    `linalg` op that reads or writes the host region -- the optimizer's
    update of a parameter, its bias corrections, the step counter's
    increment -- becomes a task: the op moves into a private function
    `@<step>_host_task_N(%state, %arena, %io, %host)` that rebuilds the
    views it reads from the region arguments, and in its place the step
    calls `effrt_host_task_start(@<step>_host_task_N) -> handle`. The
    runtime runs the tasks in order on one worker thread while the step
    goes on (docs/CpuBackend.md).

    Every op is placed by the byte ranges it touches, which the memory
    plan fixed: before the first later op whose ranges overlap a pending
    task's (it writes a slot the task still reads, or reads what the task
    writes) the step calls `effrt_host_task_wait(handle)` for the latest
    such task (tasks finish in order); before it returns it waits for the
    last one. An op whose buffers cannot be traced to a region waits for
    every task. Tasks among themselves need no wait (one worker, in order).
    So every value is the one the synchronous step computes: the same ops,
    in an order that respects every dependence through memory.

    With `abi=cuda` the state, arena and io regions are GPU memory, which
    the host cannot address. The task function then reads and writes
    pinned host copies of the device bytes it touches: each `memref.view`
    of a device region it rebuilds becomes a view of its first argument,
    the runtime's staging buffer, at the view's place in the task's
    staging layout (overlapping views share one slot). Before the start,
    one call per slot, `effrt_cuda_host_task_copy(to_host, region, offset,
    staging_offset, bytes)`, names what the runtime copies to the host
    before the task (every slot the op reads, or writes only in part) and
    back to the device after it (every slot it writes);
    `effrt_cuda_host_task_start` and `effrt_cuda_host_task_wait` replace
    the CPU's calls. The runtime queues the copies and the task (a host
    function) on a second stream forked from the step stream where the
    task starts, and joins the step stream to it where the task is waited
    for. The module gets `eff.host_staging_bytes`: the largest task's
    staging layout (tasks run in order, so they share one buffer). Every
    op that touches the host region must become a task: one that cannot
    (a buffer not traced to a region, a view not rebuildable) is an error.
  }];
  let options = [
    Option<"abi", "abi", "std::string", /*default=*/"\"cpu\"",
           "Where the regions live: cpu (host and device are one memory: "
           "the task reads the regions themselves) or cuda (the device's "
           "regions are GPU memory: the task works on pinned copies of the "
           "bytes it touches, effrt_cuda_host_task_*)">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numStagedBytes", "staged-bytes",
              "Bytes of device memory copied to and from the host per step "
              "(abi=cuda)">,
    Statistic<"numTasks", "tasks", "Ops run as host tasks">,
    Statistic<"numWaits", "waits", "Waits for host tasks placed in the step">
  ];
}

def EffOutlineKernelsPass : Pass<"eff-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Outlines every top-level loop nest of the step into its own kernel function";
  let description = [{
    Runs on functions tagged `eff.arena_arg` after `convert-linalg-to-loops`:
    each top-level `scf.for` / `scf.parallel` nest (one fused group) becomes a
    private `func.func @<step>_kernel_N` (with `_<node name>` appended when
    the nest carries a name location, e.g. the ONNX node it came from, so a
    profile names the op) taking the buffers it touches and is
    replaced by a call (the CPU code generator keeps kernels out of line). The step stays a flat schedule of
    kernel and library calls: LLVM optimises each kernel on its own (one huge
    function makes loop passes superlinear), and the same kernels are the
    unit a GPU target launches or a thread pool splits.

    Kernels whose bodies are identical (the same ops, attributes, types and
    use-def structure, locations aside) are one function, the first one
    outlined, called from every site: repeated blocks and the forward and
    backward of the same layer shapes make the same nests again and again
    (MobileNet v2: 1245 nests, 307 distinct kernels), and LLVM compiles
    each once. A profile then shows the shared kernel under its first
    site's name.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect"];
  let statistics = [
    Statistic<"numKernels", "kernels", "Number of kernels outlined">,
    Statistic<"numShared", "shared-kernels",
              "Number of outlined nests that call an identical earlier kernel">
  ];
}

def EffShapeLoopNestsPass : Pass<"eff-shape-loop-nests"> {
  let summary = "Gives bufferized linalg.generic ops long innermost loops and outer parallel loops (scalar operands hoisted, parallel dimensions outward, contiguous dimensions collapsed)";
  let description = [{
    Runs on buffers after bufferization, before
    `convert-linalg-to-parallel-loops` (whose loop nests follow the
    iteration dimensions in order, LLVM vectorising only the innermost
    loop). Rewrites each `linalg.generic` (and each `linalg.fill` of rank
    2 or more, generalized) without changing any computed value or the
    order of any sum:

    - a 0-d buffer input that is not also an output (a learning rate, a
      step counter) is loaded once before the op and read as a scalar
      operand: as a load in the loop body, from memory the loop's stores
      may alias, it kept LLVM from vectorising the loop;
    - when the innermost dimension is a reduction, the parallel dimensions
      move outside all reduction dimensions, each kind keeping its order
      (`linalg::interchangeGenericOp`): the statistics of a batch norm
      over N, H, W of an NCHW tensor become a loop over channels that
      `eff-parallel-loops` threads, where before the channel loop sat
      inside the batch loop and ran on one thread. Each output's sum runs
      over the same elements in the same order. A nest whose innermost
      dimension is parallel keeps its order (its inner loop vectorises
      across outputs);
    - adjacent dimensions of the same kind that every operand indexes
      together, in order, with contiguous strides, collapse into one
      (`linalg::collapseOpIterationDims`, `memref.collapse_shape` views):
      the SGD update of a `[512, 256, 3, 3]` filter becomes one loop of
      1179648 elements instead of an innermost loop of 3, and a
      `[16, 512, 1, 1]` activation one loop of 8192. Inputs broadcast over
      size-1 dimensions (a batch norm's `[1, C, 1, 1]` scale over NCHW,
      indexed `(0, c, 0, 0)`) are read through views without them first
      (indexed `(c)`), so H and W of such nests collapse too.

    Ops with window indexing (not projected permutations) are left
    uncollapsed. Results are bit-identical to the unshaped nests.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numScalarsHoisted", "scalars-hoisted",
              "Number of ops whose 0-d inputs were hoisted">,
    Statistic<"numReordered", "reordered",
              "Number of reductions with parallel dimensions moved outward">,
    Statistic<"numCollapsed", "collapsed",
              "Number of ops with dimensions collapsed">,
    Statistic<"numBroadcastsNarrowed", "broadcasts-narrowed",
              "Number of ops whose broadcast inputs lost their size-1 dimensions">
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
    product that `eff-linalg-to-blas` can hand to the GEMM. A producer that
    only widens (`arith.extf`, bf16 -> f32) fuses into every reader, each
    widening the narrow values it reads, so the wide copy is never stored;
    a `tensor.extract` of its result reads the narrow tensor and widens the
    element. A rank-0 producer (an optimizer's per-step scalars, bias
    corrections with `pow`) is not fused into a loop nest: it would be
    recomputed for every element.

    A second round then computes a producer with several uses again in its
    elementwise readers (upstream's fusion clones it into each), when that
    neither keeps a buffer alive longer nor costs much: the producer has
    one result, computed from its inputs alone (not an update in place,
    such as max pooling's backward keeps per window tap), with at most 16
    `arith` ops without division, each reader reads it in the
    producer's own order (every element computed once, by the same
    operations, so bitwise the stored value) and no more than two large
    tensors on top of its own inputs, and the producer's large inputs are
    live at the reader anyway, or take no more bytes than its results,
    which every reader then computes (one set of buffers replaces the
    other). Reductions are not given recomputed producers (a batch norm's
    f64 sums are sequential chains, where extra work per element costs
    more than a read). A ReLU6 after a batch norm, two compares whose
    masks the backward keeps and two selects, becomes one forward pass
    that stores no mask, and its backward recomputes the masks from the
    batch norm's input, which it reads anyway.

    With `max-kernel-argument-bytes` (a GPU target's limit on one kernel's
    parameters; 0, the default, means none), a fusion whose op would take
    more bytes of arguments once it is a kernel (a tensor becomes a memref
    descriptor of 8 * (3 + 2 * rank) bytes, a scalar 8) is not made: the
    chain of ORs over every gradient's "found inf" flag that fp16 loss
    scaling builds is one op otherwise, 24 bytes a gradient, past CUDA's
    4352 bytes of kernel parameters at about 180 parameters.
  }];
  let options = [
    Option<"maxKernelArgumentBytes", "max-kernel-argument-bytes", "int64_t",
           /*default=*/"0",
           "The most bytes of kernel arguments a fused op may take (0: no limit)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def EffMergeSiblingReductionsPass
    : Pass<"eff-merge-sibling-reductions", "::mlir::ModuleOp"> {
  let summary = "Merges reductions over outer dimensions that read one input "
                "into one reduction with several outputs";
  let description = [{
    Runs on linalg on tensors after `eff-fuse-elementwise`, before
    `eff-gpu-split-reductions` (the cuda target's tensor pipeline). A
    LayerNorm's scale and bias gradients are two column sums over one
    output gradient (GPT-2: 32768 x 768 in bf16, 25 times a step); each
    reads it in full. Two `linalg.generic` reductions of one block with the
    same static loop ranges and iterator types, whose innermost loop is
    parallel (a column sum: row reductions are warp and row-group kernels),
    that read one input through the same map, become one generic with the
    outputs of both (the first's, then the second's) and each payload as it
    was, placed where the second was: every output is summed in the same
    order as before, so the bits do not change. The second may not use the
    first's results; ops between the two that do (reshapes, roundings) move
    after it. Reductions carrying discardable attributes are left alone.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numMerged", "merged", "Reductions merged into a sibling">
  ];
}

def EffMergeEqualReductionsPass
    : Pass<"eff-merge-equal-reductions", "::mlir::ModuleOp"> {
  let summary = "Computes a reduction the step makes twice once, when its "
                "result is small, and a scalar computation made twice once";
  let description = [{
    Runs on linalg on tensors after `eff-fuse-elementwise`. The backward
    often makes a reduction again that the forward already made: the
    gradient of a cross-entropy needs each row's max and sum of
    exponentials over the logits, which the loss computed too (GPT-2: two
    extra passes over 32768 x 50304 logits). A reducing `linalg.generic`
    equal to an earlier one in the same block (same inputs, maps, iterator
    types and body; its outputs the same values or fills of the same
    constant into empty tensors of one type) is replaced by it, and so are
    equal `tensor.expand_shape` / `tensor.collapse_shape` of one value (so
    reductions that read them match too).

    Only reductions whose results take at most 1/16 of the bytes they read
    are merged: the merged result stays alive from the forward to its last
    reader, which costs little when it is one value per row; a large value
    that `eff-remat` chose to recompute is left recomputed (this is why the
    lowering pipeline runs no general CSE after `convert-eff-to-linalg`).

    Equal scalar computations (a rank-0 `linalg.generic` of rank-0 operands,
    outputs empty tensors of one type) are merged too: each Adam update
    derives its bias corrections from the learning rate and the step count,
    and once the memory-aware order puts each update right after its
    gradient, each would be its own kernel launch on a GPU.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numMerged", "merged",
              "Reductions and scalar computations merged into an equal one">
  ];
}

def EffGpuStageConstantsPass
    : Pass<"eff-gpu-stage-constants", "::mlir::ModuleOp"> {
  let summary = "Copies the constants a library call reads into the arena "
                "right before the call";
  let description = [{
    Runs on the bufferized step of a GPU target, after the library calls
    are formed (`eff-linalg-to-blas`, the runtime calls of
    `convert-eff-to-linalg`) and before `eff-memory-plan`. A constant is a
    `memref.get_global`; a kernel reads it from the GPU module
    (`eff-gpu-form-kernels` re-creates it inside the kernel), but a library
    call (cuBLASLt, cuDNN, the attention kernels) is handed an address on
    the host, and a host global's address is not device memory.

    Each host use of a constant -- an address computation
    (`memref.extract_strided_metadata`,
    `memref.extract_aligned_pointer_as_index`) or a call taking the memref,
    reached from the global directly or through views -- reads instead a
    new buffer that a `memref.copy` from the global fills right before
    that use (the copy becomes a kernel, which reads the global on the
    device); the views are re-created on the buffer. The buffer lives from
    the copy to the use, so `eff-memory-plan` counts it like any other
    temporary. Bilinear `Resize` writes its interpolation as products with
    constant matrices: a U-Net's upsampling reaches cuBLASLt this way.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numStaged", "staged", "Constant reads given a device copy">
  ];
}

def EffGpuNarrowProductsPass
    : Pass<"eff-gpu-narrow-products", "::mlir::ModuleOp"> {
  let summary = "Lets f16/bf16 GEMMs write their own type when every reader "
                "rounds the f32 result to it";
  let description = [{
    Runs on tensors after `eff-fuse-elementwise`, for the cuda target. A
    `linalg.matmul` or `linalg.batch_matmul` of two bf16 (or two f16)
    operands into a zero-filled f32 tensor, written through an identity
    map, whose every reader is an input of a `linalg.generic` that only
    ever rounds it to the operands' type (`arith.truncf`: autocast's cast
    of a product's result), becomes a product into a zero-filled tensor of
    the operands' type, and the readers take its value as it is.

    The product is the same computation: `eff-linalg-to-blas` hands it to
    cuBLASLt with an f32 accumulator and a bf16 C, which rounds the
    accumulator once, as the truncf did. What changes is memory: the f32
    result is never stored. Autocast computes a loss in f32 from a bf16
    product (GPT-2's logits: the reader widens the rounded value again),
    so the widening reads the bf16 product, and `eff-fuse-elementwise`,
    run again after this pass, moves that widening into each of its
    readers: 32768 x 50304 logits are stored once in bf16 (3.3 GB)
    instead of twice in f32 (12.6 GB).

    A narrowed product must become a library call; `eff-linalg-to-blas`
    refuses one it cannot hand to cuBLASLt rather than accumulate in bf16.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numNarrowed", "narrowed", "Products narrowed to f16/bf16">
  ];
}

def EffGpuFoldBiasIntoProductsPass
    : Pass<"eff-gpu-fold-bias-into-products", "::mlir::ModuleOp"> {
  let summary = "Lets a GEMM add the per-column bias its reader adds, as "
                "cuBLASLt's bias epilogue";
  let description = [{
    Runs on tensors after `eff-gpu-narrow-products` and
    `eff-fuse-elementwise`, for the cuda target. A 2-D `linalg.matmul` into
    a zero-filled tensor of type T (f32, or bf16/f16 after narrowing), whose
    every reader (through reshapes that keep its last dimension) is a
    `linalg.generic` with an identity map for it, whose block argument is
    used once, in `c + v` (for bf16/f16: `truncf(extf(c) + v)` to T), where
    `v` is computed only from inputs indexed by the last loop alone (a
    per-column vector such as a bias, with autocast's rounding of an f32
    bias: `v = extf(x)` with `x` of type T), the same `v` in every reader
    (the forward's GELU and its gradient both add the bias to the saved
    product), becomes:

    - a 1-D `linalg.generic` computing `x` per column (the bias in T),
    - a `linalg.generic` broadcasting it over the rows: the product's init,
    - the product into that init (`bias + A B`),

    and each reader takes its block argument where it took the sum. A
    reader that is then a copy canonicalizes away (GPT's query/key/value
    projection). `eff-linalg-to-blas abi=cuda` turns a product whose C was
    just filled with a row broadcast of a vector into one call of
    `effrt_cuda_gemm_bias`: cuBLASLt's `CUBLASLT_EPILOGUE_BIAS`, which adds
    the bias to the f32 accumulator and rounds once (PyTorch's
    `F.linear` under autocast does the same), and the product's output
    never goes through another kernel to get its bias.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numFolded", "folded", "Biases folded into products">
  ];
}

def EffGpuAlignWorkgroupMemoryPass
    : Pass<"eff-gpu-align-workgroup-memory", "::mlir::ModuleOp"> {
  let summary = "Aligns every kernel's workgroup buffers for vector access";
  let description = [{
    Runs after `gpu-kernel-outlining`: each workgroup attribution of each
    `gpu.func` gets `llvm.align` of at least `alignment` bytes, which
    `convert-gpu-to-nvvm` gives the shared-memory global. Without it the
    global is aligned to its element only, while NVPTX merges neighbouring
    scalar accesses into 16-byte ones (a row group's column partial sums:
    four f32 of a lane in a row), which need the 16.

    Error: an `alignment` that is not a power of two.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"16",
           "Bytes every workgroup buffer is aligned to at least">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def EffGpuShareKernelsPass : Pass<"eff-gpu-share-kernels", "::mlir::ModuleOp"> {
  let summary = "One gpu.module for each set of identical outlined kernels";
  let description = [{
    Runs after `gpu-kernel-outlining`: `gpu.module`s whose contents are the
    same (every op, attribute, type and use-def structure; locations and
    the kernels' own names aside) become one, the first, and every
    `gpu.launch_func` of the others launches its kernel. A network's
    repeated blocks make the same kernels over and over (GPT-2's 12 layers:
    each layer's kernels once per layer), and NVPTX and ptxas then compile
    each once for every arch: the fatbin and the compile shrink by the
    repetition. Constants and other symbols a module holds are part of
    what is compared, so a kernel that reads a different constant table,
    or a workgroup buffer of another size or alignment, stays its own. A
    profile shows a shared kernel under its first launch's name.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
  let statistics = [
    Statistic<"numShared", "shared-modules",
              "gpu.modules erased for an identical earlier one">
  ];
}

def EffGpuEmulateLaunchesPass
    : Pass<"eff-gpu-emulate-launches", "::mlir::ModuleOp"> {
  let summary = "Runs each gpu.launch as host loops over its blocks and "
                "threads (GPU kernels checked on a CPU)";
  let description = [{
    Every 1-D `gpu.launch` that `eff-gpu-form-kernels` formed becomes
    `scf.for` loops over its blocks and threads, so the CPU pipeline runs
    the kernel: lit checks a kernel's values against the same function
    lowered for the CPU, and the `cuda-emulated` target runs a whole
    training step's kernels on the CPU against PyTorch (docs/GpuKernels.md,
    "Emulated").

    A body with uniform `gpu.all_reduce`s runs in phases: every thread
    computes its operands, combined in thread order, then the ops that use
    a total run once as thread 0 (dependent all_reduces, an online
    log-sum-exp, one phase each); a top-level barrier after the last
    all_reduce (a log-sum-exp's row epilogue) ends what runs as thread 0,
    and the ops after it run for every thread in turn with the block's
    values (a value that depends on the thread's id used across it is an
    error). A body with top-level `gpu.shuffle xor`s
    (warp reductions, row groups) runs one phase per shuffle plus a last
    one: phase j runs every thread up to shuffle j and keeps what it sends;
    later phases recompute the body and read each earlier shuffle's result
    from its source lane, as the hardware exchanges them (the same
    combination order, so the same bits); stores run in the first phase
    that reaches them; top-level barriers after the last shuffle split the
    last phase (the code after each runs thread by thread once every
    thread ran the code before it). A body with `gpu.barrier`s and no
    shuffles runs the code between barriers thread by thread. Workgroup
    memory (1-D, static, integer or float) becomes host buffers whose
    bits are all ones when a block starts.

    Errors (one line, the op named): a launch over more than one dimension
    of blocks or threads, a multi-block body, a shuffle other than xor or
    not at the body's top level, a non-uniform all_reduce, a write before
    a dependent all_reduce or (other than a store) before the last
    shuffle, a barrier inside anything but an `scf.for` with uniform
    bounds (or, with shuffles, anywhere but the top level after the last
    one), a thread's value used across a barrier, workgroup memory other
    than 1-D static integer or float buffers, a module that declares
    `write` or `abort` (which the access checks call) with other types
    than libc's.

    Blocks and threads run in ascending order of their ids, or descending
    with `descending=true`. A kernel correct on a GPU is correct in every
    order; a race between two threads or blocks (one writes what the other
    reads, with no barrier or launch between) gives the right values in
    one order at most, so running a step both ways shows the races the
    ascending order hides (`effc --emulated-order=descending`). The totals
    of `gpu.all_reduce` are then combined in descending order too.

    Every load and store of a kernel (`memref` and `vector`) gets checks in
    the emulation's loops: each index within its dimension (a 1-D vector's
    last element too), and for a vector access that claims an alignment,
    its address (the view's offset and strides, the buffer's aligned
    pointer). One that fails -- out of bounds, or misaligned, which faults
    on a GPU -- writes one line to stderr and aborts.
  }];
  let options = [
    Option<"descending", "descending", "bool", /*default=*/"false",
           "Run blocks and threads in descending order of their ids (races "
           "the ascending order hides show)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def EffGpuEmulatedLibraryCallsPass
    : Pass<"eff-gpu-emulated-library-calls", "::mlir::ModuleOp"> {
  let summary = "Points the cuda step's library calls at the CPU runtime's "
                "stand-ins (the cuda-emulated target)";
  let description = [{
    Renames every declaration `@effrt_cuda_X` (and its calls) to
    `@effrt_emulated_cuda_X`, which the CPU runtime defines with the same
    arguments on host memory (runtime/src/cpu/EmulatedCuda.cpp): the
    GEMMs, the attention kernels, the convolutions and the collectives. A
    call with no stand-in (the host tasks of `--offload optimizer`) is an
    error naming it.
  }];
}

def EffGpuSplitReductionsPass
    : Pass<"eff-gpu-split-reductions", "::mlir::ModuleOp"> {
  let summary = "Splits reductions that would leave a GPU idle into a "
                "parallel partial reduction and a combine";
  let description = [{
    Runs on tensors, before bufferization (so the partial results are
    temporaries the memory plan counts). `eff-gpu-form-kernels` gives a
    reduction whose contiguous dimension is parallel (a bias or LayerNorm
    weight gradient: 768 columns summed over 32768 rows) one thread per
    output, and one whose contiguous dimension is reduced one block per
    output: with few outputs and long reductions either leaves most of the
    GPU idle, each thread walking tens of thousands of elements serially.

    This pass rewrites such a `linalg.generic` (static shapes, every
    output's combiner recognised: `addf`, `mulf`, max/min, integer ops) as
    two: the partial reduction, where the outermost reduction dimensions
    (whole, then one split by a divisor through `tensor.expand_shape` of
    the inputs that read it) become parallel and each output gains those
    dimensions in front, starting from the combiner's identity; and the
    combine, which reduces the partials into the original outputs with the
    same combine op. It repeats on the combine while it is still too
    serial (32768 rows: 32768 -> 1024 -> 64 partials). Results are exact
    for integers and deterministic for floats (a fixed order, another
    order than one thread's: f32 sums differ from it in the last bits).

    Chosen so the partial reduction has about `target-threads` threads
    (reductions over outer dimensions, each thread walking at least 16
    elements) or `target-blocks` blocks (row reductions, each block at
    least 4096 elements); reductions that already have that much
    parallelism, that are short, whose shapes are dynamic, or whose
    combiner is not recognised are left as they are.

    The first partial reduction of a reduction whose input is the result of
    an all-parallel `linalg.generic` of the same block (through reshapes)
    moves right after that op, with the empty tensors, fills, constants and
    reshapes it reads from between them (else it stays): there
    `eff-gpu-form-kernels` runs the producer in the partial reduction's
    threads (a bias gradient summed as the activation's backward computes
    the gradient it sums, which is then not read again).

    A column sum (loops: rows..., columns, the rows reduced) whose rows a
    row reduction of the same block also reads (through reshapes) is split
    into chunks of `block-rows` rows (the innermost row dimension split,
    the outer ones parallel), when the chunk's values fit a block's
    workgroup memory (48 KiB: `block-rows` x columns x the outputs'
    element bytes): `eff-gpu-form-kernels` runs such a partial sum inside
    the row group over those rows (a layer norm backward and its weight
    and bias gradients read x and dy once). The combine splits as above.

    First, for each online log-sum-exp over rows (a cross-entropy over a
    large vocabulary, `isOnlineLogSumExp`), the ops up to the next
    all-parallel op over the same loops that reads its rows again (the
    logits' gradient) are ordered so the per-row ops that use its results
    come right after it: ops that do not use them move before it (but for
    per-row ops the gradient needs, which stay: a chunk's weights); ops that
    use them but that the gradient does not need move after it (an
    unchunked mean loss's sum and division), and where such an op reads
    the logits, which the gradient overwrites in place, it must be a sum
    over the rows (the chunk's loss, whose gather reads each target's
    logit): it becomes per-row terms (each row's from the identity), which
    stay, and a combine, which moves. `eff-gpu-form-kernels` then runs
    the per-row ops and the gradient in the log-sum-exp's blocks: each row
    of logits is read from DRAM once. Nothing changes when another kind of
    op sits between, or one with side effects would move.
  }];
  let options = [
    Option<"targetThreads", "target-threads", "int64_t", /*default=*/"524288",
           "Threads a reduction over outer dimensions should have "
           "(2 waves of 132 SMs x 2048)">,
    Option<"targetBlocks", "target-blocks", "int64_t", /*default=*/"2048",
           "Blocks a row reduction should have">,
    Option<"blockRows", "block-rows", "int64_t", /*default=*/"8",
           "Rows a block of eff-gpu-form-kernels' row groups runs (its "
           "block-size / 32): the chunk of column sums over rows a row "
           "reduction also reads">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numSplits", "splits", "Reductions split in two">,
    Statistic<"numBlockRowSplits", "block-row-splits",
              "Column sums split into chunks of a row group's block of rows">,
    Statistic<"numPlacedAfterProducers", "placed-after-producers",
              "Partial reductions moved right after their input's producer">,
    Statistic<"numRowEpilogues", "row-epilogues",
              "Online log-sum-exps followed by their per-row ops and the "
              "op that reads their rows again">,
    Statistic<"numRowTotalsSplit", "row-totals-split",
              "Sums over the rows split into per-row terms and a combine "
              "after a log-sum-exp's row epilogue">
  ];
}

def EffGpuFormKernelsPass : Pass<"eff-gpu-form-kernels", "::mlir::ModuleOp"> {
  let summary = "Turns every memory access of the memory-planned step into a gpu.launch kernel";
  let description = [{
    Runs on the step functions (tagged `eff.arena_arg`) that
    `eff-memory-plan` leaves (memrefs viewed from the
    three regions, `linalg` ops, `memref.copy`, library `func.call`s, maybe
    in host `scf.for` loops) and makes it a CUDA step: afterwards the host
    code only computes addresses, calls library functions and launches
    kernels; every read and write of memory is inside a `gpu.launch` (not
    outlined: `gpu-kernel-outlining` runs next).

    One kernel per fusion group: each `linalg` op (named ops are generalized
    first) and each `memref.copy` becomes exactly one `gpu.launch`, except
    a fill whose buffer the next op, a warp or block reduction, overwrites
    entirely with nothing else of it reading the buffer's memory (the
    reduction starts from the fill's value and the fill launches nothing),
    and an all-parallel op right after a warp or block reduction that only
    reads the reduction's outputs at the points it stores them (it runs in
    the storing thread's epilogue; docs/GpuKernels.md has the conditions):
    - all-parallel ops: a flat grid-stride loop over the linearised
      iteration space, delinearised innermost-fastest so neighbouring
      threads touch neighbouring elements; `block-size` threads per block,
      at most `max-blocks` blocks;
    - reductions whose innermost accessed dimension is reduced (softmax,
      layer norm and cross-entropy rows, norms, full reductions to rank 0):
      rows of a static size of at most 4096 elements (and more than one
      output) take one warp each, `block-size / 32` rows a block: the lanes
      stride over the linearised reduction space from the combiner's
      identity (`vector-bytes` of contiguous, aligned neighbours at a time
      where the layout allows), a butterfly of `gpu.shuffle xor` combines them with the
      payload's combine op and lane 0 folds in the initial value and
      stores. Other rows take one block per output element (fewer threads
      for short rows, 1024 for a single output), threads stride over the
      linearised reduction space from the combiner's identity (16 bytes of
      contiguous, aligned neighbours at a time where the layout allows, as
      the warps), then
      `gpu.all_reduce` (warp shuffles and workgroup memory) combines them
      and thread 0 folds in the initial value. Both combine in a tree fixed
      by the shapes (the same bits on every run). Each output's combiner (`addf`, `mulf`, `maximumf`,
      `minimumf`, `maxnumf`, `minnumf`, `addi`, `muli`, `andi`, `ori`,
      `xori`, signed/unsigned `max`/`min`) is recognised with its identity,
      for any element type (f64 accumulators included);
    - reductions whose innermost accessed dimension is parallel (bias
      gradients summing over rows): one thread per output element looping
      over the reduction dims, already coalesced; so are reductions whose
      combiner is not recognised (correct, slow; with `remarks` a remark
      says so).
    Chains of row ops over one static row space (rows of at most 4096
    elements: layer norm forward and backward, softmax rows) run as one
    **row group** kernel, one warp per row: each member in turn over the
    warp's row, reductions combined by shuffles into every lane, per-row
    ops in registers, elementwise ops with the lanes striding over the
    row; every dependency between members is at one address per (row,
    element), so the lane that wrote an element reads it (no barrier);
    ops between the members run before the kernel when they touch none of
    the earlier members' memory, else after it when they touch none of the
    later members' (`row-groups`; docs/GpuKernels.md). A per-row value of a
    temporary that only later members read (a layer norm's sum of squares)
    is not stored at all, so its writer joins even where the plan put its
    bytes over what an earlier member reads. A column partial sum over
    the block's `block-size / 32` rows (`eff-gpu-split-reductions`'
    chunks for a layer norm's weight and bias gradients) joins too: each
    lane stores what its elements add in a workgroup buffer, and after a
    barrier the block combines its warps in row order (the same bits as
    the op alone).
    An online log-sum-exp (a cross-entropy over a large vocabulary: one
    block per row) runs the per-row ops after it and then the all-parallel
    op over its loops that reads its rows again (the logits' gradient) in
    its blocks (`row-epilogues`): every thread computes the per-row values
    from the block's totals (thread 0 stores them), a barrier, then the
    threads walk the row again, from L2 where the log-sum-exp just read
    it, so each row of logits is read from DRAM once.
    Neighbouring independent all-parallel ops of at most 65536 points
    (vectors) each share one launch (`small-batches`), and an
    all-parallel op recomputing what an earlier op stored in the same
    memory, none of it written in between, launches nothing.
    A `memref.copy` from a splat constant `memref.get_global` is a fill.
    `memref.get_global`s a kernel reads are re-created inside it, so
    outlining copies the constant into the GPU module.

    `scf.for` loops that contain library calls (the gradient-accumulation
    loop, NF4 tile loops) stay on the host with their bodies converted;
    any other loop nest becomes one kernel whose loops are spread over
    threads where every written buffer is indexed by the loop's induction
    variable in all its accesses (iterations touch disjoint elements), the
    rest run serially in each thread (an embedding-gradient scatter keeps
    the token loops serial and spreads the feature loop). When the serial
    loops write rows chosen by data (every access to a written buffer in
    the innermost body, at one index list whose only value computed in the
    nest is the row), the rows are partitioned ("owner computes"), so every
    element has one writer applying its updates in the serial order — the
    same bits as the serial loops, no atomics on the data. With static
    loops and a row that only the serial loops pick, one block per
    partition (rows owned by `row mod 512`) walks the serial iterations
    blockDim at a time, each thread computing one iteration's row and
    flagging it in a workgroup bitmask, then every thread applies the
    chunk's hits in order at its spread points ("compacted-scatter");
    otherwise the rows are split into ranges, one more thread dimension
    (about 2^17 threads) whose threads each run the serial loops and
    update only the rows of their range. Other nests stay as they are,
    with a remark saying why.

    Anything that would still read or write memory on the host afterwards
    (an unknown op with memory effects, a host `memref.load` whose value the
    host uses, a constant global passed to a library) is an error naming
    the op.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block of elementwise kernels and the most threads "
           "of a row-reduction block">,
    Option<"maxBlocks", "max-blocks", "int64_t", /*default=*/"1056",
           "Grid cap of grid-stride kernels (132 SMs x 8 blocks: one full "
           "wave of an H100)">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark per kernel naming its strategy">,
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"16",
           "Bytes an elementwise thread loads and stores at a time where "
           "layouts allow (0 or the element size: one element per thread)">,
    Option<"rowGroups", "row-groups", "bool", /*default=*/"true",
           "Run chains of row reductions and row-wise ops (layer norm, "
           "softmax and their backward) as one kernel, one warp per row">,
    Option<"rowEpilogues", "row-epilogues", "bool", /*default=*/"true",
           "Run the per-row ops and the elementwise op over the rows after "
           "an online log-sum-exp (a cross-entropy's gradient) in its "
           "blocks">,
    Option<"smallBatches", "small-batches", "bool", /*default=*/"true",
           "Run neighbouring independent elementwise ops of at most 65536 "
           "points (vectors) each as one launch">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect"];
  let statistics = [
    Statistic<"numKernels", "kernels", "Number of gpu.launch kernels formed">,
    Statistic<"numVectorized", "vectorized",
              "Elementwise kernels whose threads take 16 bytes at a time">,
    Statistic<"numBlockReductions", "block-reductions",
              "Reductions combined across a block">,
    Statistic<"numVectorizedBlockReductions", "vectorized-block-reductions",
              "Block reductions whose threads take 16 bytes of a row at a time">,
    Statistic<"numWarpReductions", "warp-reductions",
              "Short-row reductions combined within a warp, several rows a block">,
    Statistic<"numFoldedFills", "folded-fills",
              "Fills folded into the next reduction's initial value (no kernel)">,
    Statistic<"numFusedEpilogues", "fused-epilogues",
              "Elementwise ops run in the epilogue of the reduction before them">,
    Statistic<"numRowEpilogues", "row-epilogues",
              "Online log-sum-exps that ran their row epilogue">,
    Statistic<"numFusedPrologues", "fused-prologues",
              "Elementwise ops run in the threads of the reduction after them">,
    Statistic<"numSerialFallbacks", "serial-fallbacks",
              "Reductions whose combiner was not recognised (thread per output)">,
    Statistic<"numRowGroups", "row-groups",
              "Chains of row ops run as one kernel, one warp per row">,
    Statistic<"numRowGroupMembers", "row-group-ops",
              "Ops run inside row groups">,
    Statistic<"numRowGroupColumnPartials", "row-group-column-partials",
              "Column partial sums run inside row groups (combined per "
              "block)">,
    Statistic<"numUnstoredRowValues", "unstored-row-values",
              "Per-row outputs of row-group members only later members read "
              "(from registers): not stored">,
    Statistic<"numRecomputations", "recomputations",
              "Ops recomputing what an earlier op stored in the same memory (no kernel)">,
    Statistic<"numSmallBatches", "small-batches",
              "Launches running several small independent elementwise ops">,
    Statistic<"numSmallBatchOps", "small-batch-ops",
              "Ops run inside small batches">
  ];
}

#endif // EFFOPT_CONVERSION_PASSES_TD
