//===- Passes.td - effopt training passes ------------------*- tablegen -*-===//

#ifndef EFFOPT_TRANSFORMS_PASSES_TD
#define EFFOPT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def EffAutodiffPass : Pass<"eff-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: forward + loss to a joint forward/backward";
  let description = [{
    Expects a module with `func.func @forward` as the ONNX importer builds
    it: parameters are arguments tagged `eff.parameter = @name`, result 0 is
    the scalar loss. Replaces it with `func.func @forward_backward` taking the
    same arguments and returning the forward results followed by one
    gradient per `trainable` parameter that the loss depends on, tagged
    `eff.gradient = @name`.

    Gradients come from each op's `GradientOpInterface`; the pass itself has
    no per-op knowledge. Fan-out sums gradients (a tied embedding gets the
    sum of both uses); integer values, buffers, frozen parameters and values
    the loss does not depend on get none. Parameters that receive no gradient
    are listed in the function attribute `eff.no_gradient` (like PyTorch's
    `grad is None`: the optimizer leaves them untouched).

    Every forward value the backward reads goes through one `eff.save`, so
    what is kept for the backward is explicit; `eff-remat` later decides
    which saved values to recompute instead. The exception, under every
    remat policy: values computed from parameters and constants by data
    movement and casts only (a transposed weight, autocast's bf16 copy of a
    weight; `ParameterCopies`) are never saved. Their producer chain is
    cloned right before the first backward reader (tagged `eff.recomputed`,
    like eff-remat's clones), so no weight-sized copy lives from the forward
    to the backward; the clones round and move the same bits, so this is
    bit-identical to saving them.

    An op without a gradient rule on a path from a trainable parameter to
    the loss is an error naming the op.
  }];
  let dependentDialects = ["::effopt::eff::EffDialect",
                           "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numSavedValues", "saved-values",
              "Number of forward values saved for the backward">,
    Statistic<"numBackwardOps", "backward-ops",
              "Number of ops the backward pass consists of">,
    Statistic<"numRecomputedCopies", "recomputed-parameter-copies",
              "Ops cloned into the backward to recompute copies of parameters">
  ];
}

def EffRematPass : Pass<"eff-remat", "::mlir::ModuleOp"> {
  let summary = "Rematerialization: recompute saved activations in the backward";
  let description = [{
    Runs after `eff-autodiff` (before or after `eff-optimizer`). Every forward
    value the backward reads is an `eff.save`; by `policy` each is kept or
    recomputed. A recomputed value's producer chain is cloned right before
    its first backward reader, from kept values (which get an `eff.save` if
    they had none), parameters, batch inputs and constants; clones are tagged
    `eff.recomputed` in their location, newly kept producers `eff.saved`.
    The clones are the same ops on the same inputs (dropout masks depend only
    on seed, step and index), so training is bit-identical to `none`.

    Policies:
    - `none`: keep everything.
    - `selective` (Korthikanti et al. 2022): keep the outputs of GEMMs and
      convolutions with a weight operand and every value that more than one
      forward op reads (the residual stream, so each recomputed chain stays
      between two kept values); recompute the rest (elementwise ops,
      softmax, dropout, normalisation, ...) and products of two activations
      larger than their inputs (attention scores). Low-rank pairs (LoRA's
      adapters from `eff-lora`: a GEMM with a weight projecting to at most
      1/8 of its input, read only by one expanding at least 8x) are cheap
      to recompute: the expansion is recomputed, and the projection does
      not count as a second reader of its input.
    - `full`: keep only values that cross a block boundary and recompute the
      rest of each block in its backward. Blocks are the repeated scopes of
      the ONNX node names (`/blocks.3/...`, `/layers/2/...`) where they
      give any; otherwise they come from the graph itself (ForwardBlocks):
      the gaps of the forward that a single float tensor crosses
      (separators: everything after reads what came before only through
      it), about sqrt(activation bytes / separator bytes) blocks balanced
      by the bytes the ops write (Chen et al. 2016); a block between two
      separators worth more than two (a dense block) is cut further where
      at most one tensor crosses besides those every cut there keeps. With `boundary=REGEX`,
      segments of the forward that start at each op whose node name
      matches. A forward with none of these is an error.
    - `sqrt`: the forward cut into ceil(sqrt(n)) segments of equal op count
      (Chen et al. 2016), then as `full`.
    - `budget`: the set of saved values whose recomputation frees at least
      `free-bytes` with the fewest recomputed FLOPs (cost interface), by
      dynamic programming over the saved values (0/1 knapsack; a value is
      recomputed through its chain of unsaved producers back to saved values,
      arguments and constants, and costs the chain's FLOPs). Each repeated
      block (as for `full`) is also a candidate as a whole: everything that
      stays inside it, recomputed from what enters it, FLOPs counted once --
      so full checkpointing's choice is among the plans it weighs, and when
      no plan frees enough it recomputes every block as a whole. `effc
      --remat budget:BYTES` runs it with what the memory plan says is
      missing until the planned peak fits.
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"none\"",
           "none, selective, full or sqrt">,
    Option<"freeBytes", "free-bytes", "int64_t", /*default=*/"0",
           "budget: saved bytes to free">,
    Option<"boundary", "boundary", "std::string", /*default=*/"\"\"",
           "full: a block starts at each forward op whose ONNX node name "
           "matches this regex">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect"];
  let statistics = [
    Statistic<"numRecomputedValues", "recomputed-values",
              "Saved values recomputed in the backward">,
    Statistic<"numNewlySavedValues", "newly-saved-values",
              "Values saved because a recomputation reads them">,
    Statistic<"numRecomputedOps", "recomputed-ops",
              "Forward ops cloned into the backward">
  ];
}

def EffGradAccumPass : Pass<"eff-grad-accum", "::mlir::ModuleOp"> {
  let summary = "Gradient accumulation: K micro-batches per optimizer step, in a loop";
  let description = [{
    Runs on `func.func @forward_backward` after `eff-autodiff` (and
    `eff-remat`), before `eff-loss-scaling` and `eff-optimizer`, and keeps
    its contract: the loss first, one gradient per trainable parameter
    (`eff.gradient`), the buffer updates (`eff.buffer_update`). With
    `steps=K` (K > 1) every batch input takes K*B rows (its leading
    dimension, B as compiled, times K) and the old body runs once per
    micro-batch in an `scf.for` tagged `eff.accumulation` (a loop, not K
    copies): iteration k reads rows `[k*B, (k+1)*B)` (`tensor.extract_slice`).
    The loop carries fp32 gradient accumulators, the weighted loss sum, the
    weight sum and every BN-style buffer (each micro-batch updates the running
    statistics in turn, as a PyTorch accumulation loop does); each carried
    value is updated in place (`bufferization.materialize_in_destination`
    into its iteration argument). After the loop the sums are divided by the
    weight sum, so gradients and loss are the mean over the K*B rows:

    - a mean-reduced `softmax_cross_entropy` / `nll_loss` with `ignore_index`
      (found from the loss through casts and reshapes) weighs each
      micro-batch by its count of non-ignored targets and divides by the
      global count (a micro-batch with none adds nothing);
    - a sum-reduced one adds up the micro-batches (no division);
    - any other loss is the plain mean of the K micro-batch results.

    Other forward outputs (logits) are per micro-batch and are not returned.
    Pure ops that compute something independent of the micro-batch (casts
    of the master weights, constants, the backward seed `eff.loss_seed`) are
    hoisted out of the loop (`hoist`, on by default): they run once per
    optimizer step. Pure data movement (zero FLOPs, like a transposed copy
    of a weight) stays in the loop: hoisted, its copy would be live across
    all micro-batches for no arithmetic saved. Dropout masks mix the
    iteration into the step counter (`step * K + k`), so every micro-batch
    draws a different mask and recomputations stay identical.

    `steps=1` leaves the function as it is. `steps < 1`, a batch input of rank
    0 (no batch dimension) and a class-weighted mean loss are errors.
  }];
  let options = [
    Option<"steps", "steps", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step (K)">,
    Option<"hoist", "hoist", "bool", /*default=*/"true",
           "Hoist loop-invariant pure ops out of the micro-batch loop">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numHoistedOps", "hoisted-ops",
              "Loop-invariant ops moved out of the micro-batch loop">
  ];
}

def EffZeroPass : Pass<"eff-zero", "::mlir::ModuleOp"> {
  let summary = "Data parallel across ranks: gradients summed over the run";
  let description = [{
    Runs on `func.func @forward_backward` after `eff-grad-accum` and before
    `eff-loss-scaling` and `eff-optimizer`, and keeps its contract. Every
    rank runs the same step on its own B rows (K*B with `eff-grad-accum`),
    so N ranks together see N*B; the step then updates every rank's
    parameters with the mean over all of them, like one process with
    `eff-grad-accum steps=N`. Stage 0 (plain data parallel): every gradient
    (`eff.gradient` result) is summed over the ranks and divided by N, and
    the loss (result 0) too, so every rank logs the global mean loss. The
    sums are `eff.all_reduce` ops over buckets: the loss (with the count of
    targets, below) in a bucket of its own, then the gradients in the order
    the backward finishes them (as DDP's buckets in reverse parameter
    order), a bucket closing before the tensor that would take it past
    `bucket-bytes` or past 1/`min-buckets` of all the summed gradient bytes.
    Each all-reduce (stage 2: each reduce-scatter) and what follows it is
    placed right after the last of its tensors is produced, in the middle
    of the rest of the backward, not after all of it. The
    module gets `eff.world_size = N`, which the manifest records and the
    runtime checks against the ranks it runs on.

    The ranks combine as eff-grad-accum's micro-batches: a mean-reduced
    `softmax_cross_entropy` / `nll_loss` with `ignore_index` weighs each
    rank by its count of non-ignored targets (from the labels argument of
    the step, computed at the start of the step, so each gradient is
    weighted as soon as it is final) and divides the sums by the
    all-reduced count, so the mean is global (a rank with none adds
    nothing); a sum-reduced one adds up; any other
    loss is the plain mean of the N results. Buffers (BatchNorm running
    statistics) stay per rank, as in PyTorch DDP without SyncBatchNorm.
    `world-size=1` leaves the step as it is (all-reduces of one rank).

    Stages 1 and 2 (ZeRO) set `eff.zero_stage` on the module: eff-optimizer
    then keeps one 1/N shard of every optimizer state tensor per rank
    (flattened, zero-padded to a multiple of N), updates this rank's shard
    of each parameter with it and all-gathers the updated shards. Stage 1
    sums the gradients as stage 0; stage 2 reduce-scatters each gradient
    (flattened and zero-padded) instead, so its `eff.gradient` result is
    this rank's 1-D shard of S = ceil(numel / N) elements, and only the
    loss (and the counted targets) are all-reduced.

    Stage 3 also shards the parameters: the step argument of every f32
    trainable parameter (and its `eff.parameter` declaration, which gets
    `eff.shard_of` with the whole shape and keeps the whole initial value)
    becomes this rank's 1-D block of S elements, and every reader reads a
    whole copy gathered right before it (`eff.all_gather`, then the
    padding sliced off and the shape restored): one gather in front of the
    first forward reader of each block and, by default, another in front
    of the first backward (or recomputed) reader, tagged `eff.recomputed`
    so that CSE does not merge it into the forward's. Each copy lives from
    its gather to its last reader, which the memory plan sees.
    `keep-gathered` gathers once per block and keeps the copy from the
    forward to the backward instead (half the gathers, the whole
    parameters live through the step). Gradients are reduce-scattered as
    in stage 2, and eff-optimizer updates the shard in place. Frozen
    parameters and buffers stay whole on every rank.

    What one rank's shard holds whole is `shard-unit`, which must be the
    one eff-optimizer's optimizer needs (the driver sets it from
    `--optimizer`): `element` (S = ceil(numel / N); sgd, adam, adamw),
    `quant-block` (S a multiple of `quant-block-size` for tensors of at
    least `min-8bit-size` elements, so each rank owns whole quantization
    blocks of adam8bit / adamw8bit), `row` (adafactor: a matrix, the last
    two dimensions R x C, whose leading dimensions are all 1 is cut by
    whole rows, S a multiple of C; a stack of B > 1 matrices by whole
    matrices, S a multiple of R x C; vectors by element). S is the
    smallest such multiple that covers the tensor over N ranks.

    Errors: `stage` outside 0-3, `world-size < 1`, an unknown
    `shard-unit`, a stage-3 parameter that is not f32.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"0",
           "ZeRO stage (0: plain data parallel; 1: sharded optimizer "
           "state; 2: and gradients; 3: and parameters)">,
    Option<"keepGathered", "keep-gathered", "bool", /*default=*/"false",
           "Stage 3: gather each parameter once per block and keep it from "
           "the forward to the backward (default: gathered again for the "
           "backward)">,
    Option<"worldSize", "world-size", "int64_t", /*default=*/"1",
           "Ranks of the run (N)">,
    Option<"oneRankCollectives", "one-rank-collectives", "bool",
           /*default=*/"false",
           "At world-size 1, place the collectives anyway (sums and gathers "
           "over one rank, shards of the whole tensor) instead of none, and "
           "mark the module so that eff-optimizer and eff-loss-scaling do "
           "too: the step of N ranks run on one, to check a collective "
           "engine (NCCL) on one GPU">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "Largest bucket of tensors summed by one all-reduce (25 MiB, as "
           "DDP; a larger tensor is a bucket of its own)">,
    Option<"minBuckets", "min-buckets", "int64_t", /*default=*/"1",
           "Cut the summed gradients into at least this many buckets "
           "(each then at most 1/min-buckets of their bytes, and at most "
           "bucket-bytes), so that a model smaller than one bucket still "
           "sums them during the backward (effc: 8)">,
    Option<"shardUnit", "shard-unit", "std::string", /*default=*/"\"element\"",
           "What a rank's shard holds whole (stages 2-3): element, "
           "quant-block (adam8bit/adamw8bit) or row (adafactor)">,
    Option<"quantBlockSize", "quant-block-size", "int64_t", /*default=*/"256",
           "shard-unit=quant-block: elements per absmax block">,
    Option<"min8bitSize", "min-8bit-size", "int64_t", /*default=*/"4096",
           "shard-unit=quant-block: tensors with fewer elements shard by "
           "element (they keep fp32 moments)">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect",
                           "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numAllReduces", "all-reduces",
              "eff.all_reduce ops placed (one per bucket)">,
    Statistic<"numAllReducedBytes", "all-reduced-bytes",
              "Bytes all-reduced (or reduce-scattered) per step">,
    Statistic<"numReduceScatters", "reduce-scatters",
              "eff.reduce_scatter ops placed (stage 2: one per gradient)">,
    Statistic<"numAllGathers", "all-gathers",
              "eff.all_gather ops placed before parameter readers (stage 3)">,
    Statistic<"numShardedParameters", "sharded-parameters",
              "Parameters sharded across the ranks (stage 3)">
  ];
}

def EffOptimizerPass : Pass<"eff-optimizer", "::mlir::ModuleOp"> {
  let summary = "Turns the joint forward/backward into a training step";
  let description = [{
    Expects `func.func @forward_backward` from `eff-autodiff`. Builds
    `func.func @train_step`: the same arguments plus one per optimizer state
    tensor and the step counter (all `eff.parameter optimizer_state`,
    zero-initialised, named `optimizer.<param>.<slot>` and `optimizer.step`),
    returning the loss and the other forward outputs, then the new value of
    every updated piece of persistent state tagged `eff.update = @name`:
    parameters, buffers, optimizer state, the step counter.

    Updates follow `torch.optim` exactly: `sgd` (momentum, dampening,
    nesterov, coupled weight decay; the momentum buffer equals the gradient
    on the first step), `adam` (coupled weight decay) and `adamw` (decoupled),
    both with bias correction and optional `amsgrad`. The learning rate is
    computed in the step from the step counter (`constant`, `linear_warmup`,
    `cosine` with warmup); `clip-grad-norm` rescales all gradients by their
    global 2-norm first, as `torch.nn.utils.clip_grad_norm_`. Parameters
    matching `no-weight-decay` get no weight decay (a second parameter
    group). Parameters without a gradient are left untouched.

    A result tagged `eff.skip_step` (a boolean from `eff-loss-scaling`:
    the gradients overflowed) makes every update this pass builds -- the
    parameters, the optimizer state and the step counter -- keep its old
    value on that step (`eff.where`); buffer updates are not affected.

    `adam8bit` and `adamw8bit` are `adam` and `adamw` with block-wise 8-bit
    moments (`eff.adam8bit_update`, bitsandbytes' blockwise 8-bit Adam):
    each moment is four state tensors, `optimizer.<param>.exp_avg_codes`
    (i8, the parameter's shape), `exp_avg_absmax` (f32, one per block of
    `quant-block-size` elements), `exp_avg_sq_codes`, `exp_avg_sq_absmax`.
    Parameters with fewer than `min-8bit-size` elements keep fp32
    `exp_avg`/`exp_avg_sq` and the ordinary update, as bitsandbytes does.

    `adafactor` is `torch.optim.Adafactor` (PyTorch >= 2.5, single-tensor,
    not maximizing), composed of eff ops: a parameter of rank >= 2 keeps a
    row and a column factor of its second moment over its last two
    dimensions (`optimizer.<param>.row_var`, `.col_var`), a vector or scalar
    keeps a full one (`.variance`); the relative step
    `max(eps2, RMS(param)) * min(lr, 1/sqrt(t))`, update clipping by
    `clip-threshold` (torch's `d`) and decoupled weight decay `lr * wd`, with
    `lr` the scheduled learning rate.

    ZeRO: on a module `eff-zero` marked `eff.zero_stage` >= 1 with
    `eff.world_size` N > 1, every optimizer state tensor of a parameter is
    one rank's shard: 1-D, tagged `eff.shard_of` with the whole shape, of
    the parameter flattened, zero-padded to N x S and cut into N blocks of
    S elements. S is the smallest multiple of a granule that covers the
    parameter: one element (sgd, adam, adamw: S = ceil(elements / N)), a
    quantization block for `adam8bit` / `adamw8bit` tensors of at least
    `min-8bit-size` elements (each rank owns whole blocks: their i8 codes
    and their absmax, so its blocks update bit for bit as in one process),
    and for `adafactor` a row of a matrix whose leading dimensions are all
    1 (its row factor sharded by rows; its column factor kept whole on
    every rank, from an all-reduce of every rank's partial column sums, and
    the row factor's mean likewise) or a whole matrix of a stack (both
    factors local). Adafactor's RMS(param) and RMS(update) sum every rank's
    squares (`eff.all_reduce`); vectors shard by element. The update runs
    on this rank's block of the parameter (`eff.shard`) and of the gradient
    (`eff.shard` of the summed gradient; at stage 2 the gradient result
    already is the block), and `eff.all_gather` rebuilds the whole
    parameter from every rank's updated block (stage 3: the parameter
    argument is the block, updated in place). eff-zero must have cut
    gradients and parameters the same way (its `shard-unit`); a gradient or
    parameter shard of another size is an error naming the shard-unit. At
    stage 2 the global norm of `clip-grad-norm` sums every rank's squares.
    A non-f32 parameter is an error.
  }];
  let dependentDialects = ["::effopt::eff::EffDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, adam, adamw, adam8bit, adamw8bit or adafactor">,
    Option<"lr", "lr", "::effopt::ExactDouble", /*default=*/"1.0e-3", "Peak learning rate">,
    Option<"momentum", "momentum", "::effopt::ExactDouble", /*default=*/"0.0",
           "SGD momentum">,
    Option<"dampening", "dampening", "::effopt::ExactDouble", /*default=*/"0.0",
           "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "SGD Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "::effopt::ExactDouble", /*default=*/"0.0",
           "Weight decay (coupled for sgd and adam, decoupled for adamw)">,
    Option<"beta1", "beta1", "::effopt::ExactDouble", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "::effopt::ExactDouble", /*default=*/"0.999", "Adam beta2">,
    Option<"eps", "eps", "::effopt::ExactDouble", /*default=*/"1.0e-8", "Adam epsilon">,
    Option<"amsgrad", "amsgrad", "bool", /*default=*/"false", "Adam AMSGrad">,
    Option<"beta2Decay", "beta2-decay", "::effopt::ExactDouble",
           /*default=*/"-0.8",
           "Adafactor: the second moment averages with weight t^beta2-decay">,
    Option<"eps1", "eps1", "::effopt::ExactDouble", /*default=*/"-1.0",
           "Adafactor epsilon1, the floor of the second moment's RMS "
           "(negative: the parameter type's machine epsilon, torch's None)">,
    Option<"eps2", "eps2", "::effopt::ExactDouble", /*default=*/"1.0e-3",
           "Adafactor epsilon2, the floor of RMS(param) in the relative step">,
    Option<"clipThreshold", "clip-threshold", "::effopt::ExactDouble",
           /*default=*/"1.0",
           "Adafactor update clipping threshold (torch's d)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"constant\"",
           "constant, linear_warmup or cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Linear warmup steps">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "Steps of the cosine schedule (warmup included)">,
    Option<"minLr", "min-lr", "::effopt::ExactDouble", /*default=*/"0.0",
           "Final learning rate of the cosine schedule">,
    Option<"clipGradNorm", "clip-grad-norm", "::effopt::ExactDouble", /*default=*/"0.0",
           "Clip gradients to this global 2-norm (0: off)">,
    Option<"noWeightDecay", "no-weight-decay", "std::string",
           /*default=*/"\"\"",
           "Regex of parameter names that get no weight decay">,
    Option<"quantBlockSize", "quant-block-size", "int64_t", /*default=*/"256",
           "adam8bit/adamw8bit: elements per absmax block">,
    Option<"min8bitSize", "min-8bit-size", "int64_t", /*default=*/"4096",
           "adam8bit/adamw8bit: parameters with fewer elements keep fp32 "
           "moments">
  ];
}


def EffLoraPass : Pass<"eff-lora", "::mlir::ModuleOp"> {
  let summary = "LoRA: freeze the model, train low-rank adapters beside its GEMMs";
  let description = [{
    Runs on the imported `func.func @forward`, before `eff-autocast` and
    `eff-autodiff`. Every `trainable` parameter becomes `frozen` (no
    gradient, no optimizer state). For every weight that a GEMM reads and
    whose name matches `targets` (a regex searched in the parameter name;
    empty: every GEMM weight) it adds two trainable parameters, named as
    peft names them: `<module>.lora_A.weight` (rank x in, Kaiming-uniform
    with a = sqrt(5) as `peft` initialises it: uniform in
    [-1/sqrt(in), 1/sqrt(in)], from `seed`) and `<module>.lora_B.weight`
    (out x rank, zeros), where `<module>` is the weight's name without its
    `.weight` suffix (`attn.in_proj_weight` gives `attn.in_proj`; a name
    with neither suffix is the module itself). Each GEMM reading the weight
    then computes

        y = W x + (alpha / rank) * B (A dropout(x))

    with the adapter path beside the base GEMM, which is left as it was
    (so a later pass can change the frozen weight's storage). The GEMMs
    recognised are the forms PyTorch 1.13 exports `nn.Linear` and
    hand-written linears as: `eff.linear %x, %W` (ONNX `Gemm`, with
    `transpose_b`: W is out x in; without: in x out), `eff.matmul %x,
    (eff.transpose %W)` (W out x in) and `eff.matmul %x, %W` (`x @ W`: W is
    in x out). A weight read by anything else as well (a tied embedding) is
    left without an adapter, with a warning. `dropout` > 0 uses
    `eff.dropout` (seeded per adapter) on the adapter's input only.

    The module gets `eff.lora`: for every adapted weight its name, the two
    adapter names, the scale alpha/rank and whether the weight is stored
    in x out (`transposed`), for merging W + (alpha/rank) B A after
    training (`effrun --merge-lora`).

    It is an error when `targets` is not a valid regex, or matches no GEMM
    weight.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"8",
           "Adapter rank r (peft's default 8)">,
    Option<"alpha", "alpha", "::effopt::ExactDouble", /*default=*/"8.0",
           "Scale numerator: the adapter output is scaled by alpha/rank "
           "(peft's lora_alpha, default 8)">,
    Option<"dropout", "dropout", "::effopt::ExactDouble", /*default=*/"0.0",
           "Dropout on the adapter's input (peft's lora_dropout)">,
    Option<"targets", "targets", "std::string", /*default=*/"\"\"",
           "Regex of the weight names to adapt (empty: every GEMM weight)">,
    Option<"seed", "seed", "int64_t", /*default=*/"0",
           "Seed of the A initialisation and of the dropout masks">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect",
                           "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numAdapters", "adapters", "Weights given an adapter">,
    Statistic<"numAdaptedGemms", "adapted-gemms", "GEMMs given an adapter path">,
    Statistic<"numFrozen", "frozen", "Parameters frozen">
  ];
}

def EffFuseAttentionPass : Pass<"eff-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "Recognise exported attention chains as one eff.attention";
  let description = [{
    Runs on the imported model, before `eff-autocast` and `eff-autodiff`.
    Rewrites `matmul(dropout?(softmax(mask?(scale?(matmul(q, k^T))))), v)`
    -- what PyTorch 1.13 exports for hand-written attention,
    `nn.MultiheadAttention` and `nn.TransformerEncoderLayer` -- into one
    `eff.attention`, so that the backward reads q, k, v, the output and one
    log-sum-exp per row instead of the Tq x Tk probabilities, and the
    lowering runs FlashAttention-2 tiles (`docs/Attention.md`).

    - scale: `Div` or `Mul` by a splat constant, of the scores, of q or of
      k^T;
    - masks: `Where(m, -inf, s)` (a boolean mask, `true` masked),
      `Where(keep, s, -inf)` with a constant `keep` (torch.where; inverted
      into a masked-out constant) and
      `Add(s, m)` (a float mask), at most one of each; a constant mask that is
      exactly the causal one (`j > i` masked) becomes `causal = true`;
    - dropout on the probabilities keeps its ratio and seed: the fused op
      draws the very masks `eff.dropout` would.

    It leaves a chain alone where the fused op would compute something else:
    an intermediate read elsewhere (attention weights returned), a softmax
    not over the keys, a `Where` with a finite fill, a float mask computed
    from a trainable parameter (a learned bias needs its Tq x Tk gradient), leading
    dimensions that broadcast, rank other than 3 or 4.

    With `kernels=cuda` (effc --target cuda) it fuses only what
    effrt's CUDA attention kernels run: no mask other than the causal one,
    no dropout, the values' head size the queries', at most 128; any other
    chain stays unfused (batched products and softmax kernels).
  }];
  let options = [
    Option<"kernels", "kernels", "std::string", /*default=*/"\"cpu\"",
           "The attention kernels the fused ops will run on: cpu (every "
           "mask, dropout, head size) or cuda (causal or no mask, no "
           "dropout, one head size up to 128)">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect"];
  let statistics = [
    Statistic<"numFused", "attention-ops", "eff.attention ops after fusion">
  ];
}

def EffAutocastPass : Pass<"eff-autocast", "::mlir::ModuleOp"> {
  let summary = "Mixed precision: casts that run GEMMs and convolutions in bf16/fp16";
  let description = [{
    Runs on the imported `func.func @forward`, before `eff-autodiff`, so the
    backward differentiates through the casts it inserts: the gradient GEMMs
    of a low-precision GEMM run in low precision too, and every parameter
    (an fp32 master weight) gets its gradient back in fp32 through the
    gradient rule of its cast. Parameters stay fp32 and are cast once per
    step (one cast per value and type, shared by every use).

    Ops fall in three classes, after PyTorch's autocast op lists:
    - low precision (`precision`): `matmul`, `linear`, `conv2d`;
    - fp32: `softmax`, `log_softmax`, `layer_norm`, `batch_norm*`, the
      losses, `reduce_sum`, `reduce_mean`, `exp`, `log`, `pow`, `rsqrt`,
      `reciprocal`, and `attention` (the CPU kernels are f32) unless
      `low-precision-attention`, which runs it in low precision as
      PyTorch's autocast runs `scaled_dot_product_attention` (its
      log-sum-exp stays f32; for the cuda target's kernels);
    - promote: every other op runs in the widest float type of its strong
      operands (bf16 with fp16 gives fp32). Constants, rank-0 tensors and
      values computed only from parameters are weak: they take the other
      operands' type, as a Python scalar does in PyTorch and as the bias
      does inside autocast's `linear` (an exported `MatMul` + `Add(bias)`
      stays in low precision).
    A cast of a parameter seen through `transpose`/`reshape` moves onto the
    parameter, so the view is taken of the low-precision copy. An op that
    does not verify in the chosen type stays in fp32. Results of `@forward`
    keep their types (the loss stays fp32). Casts carry the `eff.cast`
    provenance, so the memory report attributes their bytes. `fp32` is a
    no-op; f64 ops are left alone.
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "bf16, fp16 or fp32 (no change)">,
    Option<"lowPrecisionAttention", "low-precision-attention", "bool",
           /*default=*/"false",
           "eff.attention in `precision` too (lse f32), for attention "
           "kernels that take f16/bf16 (cuda's)">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect"];
  let statistics = [
    Statistic<"numCasts", "casts", "Casts inserted">
  ];
}

def EffLossScalingPass : Pass<"eff-loss-scaling", "::mlir::ModuleOp"> {
  let summary = "Dynamic (or static) loss scaling inside the training step";
  let description = [{
    Runs on `func.func @forward_backward` (after `eff-autodiff`, `eff-remat`
    and `eff-grad-accum`, before `eff-optimizer`). The backward is seeded
    with the loss scale instead of 1 (the seed constant `eff-autodiff` marks
    `eff.loss_seed`, also inside an accumulation loop), so low-precision
    gradients are computed scaled; then one `eff.unscale_gradients` divides
    every gradient by the scale and checks them all for inf/NaN in the same
    pass over memory. The new result `eff.skip_step` tells `eff-optimizer`
    to leave parameters, optimizer state and the step counter (so the
    learning-rate schedule) untouched on overflow.

    The scale lives in the step as persistent state (`eff.parameter
    optimizer_state`, saved in checkpoints, read by `effrun --log`):
    `loss_scale.scale` (f32, `init-scale`), `loss_scale.growth_tracker`
    (finite steps since the last change), `loss_scale.hysteresis` (overflows
    still tolerated before backing off), `loss_scale.skipped_steps` (total)
    and `loss_scale.last_step_skipped` (0/1). `eff.update_loss_scale`
    implements `torch.cuda.amp.GradScaler.update` — x`growth-factor` after
    `growth-interval` finite steps in a row, x`backoff-factor` on overflow —
    with DeepSpeed's `hysteresis` (back off only after that many overflows
    since the last finite step; 1 = PyTorch) and `min-scale` (the scale
    never goes below it). With `static` the scale stays `init-scale`;
    overflowing steps are still skipped.
  }];
  let options = [
    Option<"initScale", "init-scale", "::effopt::ExactDouble", /*default=*/"65536.0",
           "Initial loss scale (2^16, as GradScaler)">,
    Option<"growthFactor", "growth-factor", "::effopt::ExactDouble", /*default=*/"2.0",
           "Scale multiplier after growth-interval finite steps">,
    Option<"backoffFactor", "backoff-factor", "::effopt::ExactDouble", /*default=*/"0.5",
           "Scale multiplier on overflow">,
    Option<"growthInterval", "growth-interval", "int64_t", /*default=*/"2000",
           "Finite steps in a row before the scale grows">,
    Option<"hysteresis", "hysteresis", "int64_t", /*default=*/"1",
           "Overflows tolerated before backing off (DeepSpeed; 1 = PyTorch)">,
    Option<"minScale", "min-scale", "::effopt::ExactDouble", /*default=*/"0.0",
           "Lower bound of the scale (0: none)">,
    Option<"staticScale", "static", "bool", /*default=*/"false",
           "Keep the scale at init-scale (still skip overflowing steps)">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect",
                           "::mlir::func::FuncDialect"];
}

def EffChunkCrossEntropyPass
    : Pass<"eff-chunk-cross-entropy", "::mlir::ModuleOp"> {
  let summary = "Classifier product and softmax cross-entropy, forward and "
                "backward, a chunk of rows at a time";
  let description = [{
    A language model's logits are its largest tensor: GPT-2 at batch 32 x
    1024 tokens has 1.6 G of them (3.1 GiB in bf16), held from the LM head's
    product through the cross-entropy's gradient. When the loss is a
    softmax cross-entropy (mean or sum, no class weights) of `A x W` (an
    `eff.matmul` with a rank-2 right operand or an `eff.linear`, seen
    through casts and reshapes that keep the class dimension), and what
    the backward does with the logits' gradient is row-wise (casts,
    reshapes, products with a right operand, as for dA) or a contraction
    over the rows (`eff.linear` with `transpose_a`, as for dW; a sum over
    the rows, as for a bias), this pass computes, for each chunk of rows
    in turn: the chunk's logits, its summed loss, its logits' gradient and
    their products, where the backward starts. Only one chunk's logits are
    ever live. Contractions accumulate across chunks in f32 (a
    GEMM with an f32 C) and are rounded once, row-wise results are
    concatenated, and the loss is the chunks' sum divided by the count of
    non-ignored targets (`mean`). The seed of the backward (loss scale,
    micro-batch weights) is the cross-entropy gradient's own operand, so the
    pass runs after eff-grad-accum, eff-zero and eff-loss-scaling.

    The cost: the logits product runs again over the same FLOPs (the
    forward's is removed), and each chunk reads and writes the f32
    weight-gradient accumulator once. `chunks=0` (the default) picks the
    largest power of two that leaves at least 2 x K rows per chunk (K the
    product's contracted size), and only when the classes outnumber 4 x K
    (an LM head, not a small classifier): 16 chunks of 2048 rows for GPT-2
    at batch 32. `chunks=1` leaves the step as it is; any other value is
    the chunk count (at most the number of rows). Losses that do not match
    stay as they are.

    Data-parallel steps (`--world-size`, `--zero`) are chunked too. The
    loss's readers before the backward (eff-zero sums the loss and the
    count of targets over the ranks right after the loss) move after the
    chunks, where the loss is now defined, with whatever reads them there.
    A ZeRO-3 parameter that eff-remat gathers again for the backward (the
    LM head's weight, for dA) is read from the forward's gather instead, and
    the backward's gather, then unread, is removed: the chunks do not
    gather it a third time.
  }];
  let options = [
    Option<"chunks", "chunks", "int64_t", /*default=*/"0",
           "Row chunks (0: chosen from the shapes, 1: off)">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect"];
  let statistics = [
    Statistic<"numChunkedLosses", "chunked-losses",
              "Cross-entropies computed a chunk of rows at a time">,
    Statistic<"numChunks", "chunks", "Chunks over all chunked losses">
  ];
}

def EffQuantizeFrozenPass : Pass<"eff-quantize-frozen", "::mlir::ModuleOp"> {
  let summary = "Stores frozen GEMM weights as 4-bit NormalFloat (the storage half of QLoRA)";
  let description = [{
    Runs on `func.func @train_step` after `eff-optimizer` and before
    `eff-step-abi` (so the state layout sees the packed tensors). A frozen
    f32 parameter whose every read is the weight of a matrix product -- the
    `b` operand of `eff.linear`, or the rank-2 right operand of
    `eff.matmul`, possibly through `eff.transpose` ([1, 0]) and `eff.save`
    -- is quantized at compile time from its initial value to NF4 with
    double-quantized block statistics, exactly as bitsandbytes'
    `quantize_4bit(quant_type="nf4", blocksize=64,
    compress_statistics=True)` (docs/Quantization.md). The parameter `@W`
    is replaced by four frozen parameters holding that storage:

    - `@"W.nf4"`: the packed codes, `tensor<ceil(n/2) x i8>`;
    - `@"W.absmax"`: the 8-bit block absmax codes, `tensor<nb x i8>`;
    - `@"W.nested_absmax"`: their scales, `tensor<ceil(nb/256) x f32>`;
    - `@"W.nested_offset"`: the mean absmax, `tensor<f32>`;

    which `eff.nf4_pack` views as one `tensor<..., #eff.nf4<...>>`; every
    product reading the weight becomes an `eff.linear` whose `b` is that
    packed value (transposes folded into `transpose_b`; a batched left
    operand of `eff.matmul` reshaped to rows and back). The saved or
    transposed copies of the weight the backward used to read are gone.

    Which weights: every frozen parameter when `names` is empty -- one that
    cannot be quantized (a non-GEMM read such as a tied embedding's gather,
    a non-f32 element type) stays as it is, with a remark saying why; with
    `names` (a regex over parameter names), exactly the frozen parameters
    it matches, and any of them that cannot be quantized is an error
    naming it and the op that reads it. A parameter without an initial
    value (a plan from shapes alone) gets storage without one.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"nf4\"",
           "The storage format (nf4)">,
    Option<"names", "names", "std::string", /*default=*/"\"\"",
           "Regex of the frozen parameters to quantize (empty: every frozen "
           "parameter that can be; others are skipped with a remark)">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"64",
           "Elements per NF4 block (one absmax each)">,
    Option<"nestedBlockSize", "nested-block-size", "int64_t",
           /*default=*/"256",
           "Block absmax values per 8-bit block of the double quantization">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect"];
  let statistics = [
    Statistic<"numQuantized", "quantized", "Number of weights stored as NF4">,
    Statistic<"numSkipped", "skipped",
              "Number of frozen parameters left as they were">
  ];
}

def EffOffloadOptimizerPass
    : Pass<"eff-offload-optimizer", "::mlir::ModuleOp"> {
  let summary = "Keeps the optimizer's state in host memory, out of the "
                "device's regions (ZeRO-Offload's placement)";
  let description = [{
    Expects `func.func @train_step` from `eff-optimizer` (and the passes
    after it up to the layout); runs right before `eff-step-abi`. Marks
    every argument of the step that holds the optimizer's persistent state
    -- an `eff.parameter optimizer_state` named `optimizer.*`, the names
    `eff-optimizer` gives it: momentum buffers, Adam's moments (fp32 or
    8-bit codes and block absmax), Adafactor's factors, the step counter --
    with the unit argument attribute `eff.host`. `eff-step-abi` then lays
    those arguments out in a third byte region, `host` (module attribute
    `eff.host_bytes`), instead of `state`; the rest of the state (parameters,
    BatchNorm buffers, the loss scale, which the forward and backward read)
    stays in `state`. The entry point (`eff-step-entry`) then takes the host
    region as a fourth argument, the `.effx` manifest lists the region and
    marks those entries `"region": "host"`, and the memory report counts
    them as host bytes, apart from the device's.

    The optimizer's update ops are the only readers and writers of that
    state. On the CPU target host and device are the same memory and the
    update runs where it is, synchronously inside the step; on the cuda
    target those ops run on the host as tasks (`eff-host-tasks abi=cuda`:
    the gradients they read copied down, the parameters they write copied
    up).

    With `master-weights` (effc sets it under `--precision bf16|fp16`),
    the fp32 parameters that are master weights -- a trainable parameter
    that the forward and backward read only through `eff.cast`s to one
    low-precision type (autocast's GEMM and convolution weights), the
    optimizer's ops aside -- move to the host region too. The device keeps
    a persistent low-precision copy instead, a new `eff.parameter buffer
    @<param>.bf16` (or `.f16`) initialised to the cast of the initial value,
    which every one of those casts reads, and which the step updates to the
    cast of the updated parameter. The cast of a weight is the same value
    whether made at the start of a step or at the end of the one before,
    so training is bit-identical; the device holds 2 bytes per such
    parameter instead of 4. Parameters read in fp32 (LayerNorm weights, an
    embedding gathered in fp32) stay on the device.

    With `keep-device-read` (effc sets it for a GPU target, whose kernels
    do not read host memory), optimizer state that an op other than the
    optimizer's reads stays in `state`, and so does the step counter
    (`@optimizer.step`, 8 bytes), which the lowering of `eff.dropout`
    reads to vary its masks from step to step.

    Fails, with one error, on a step whose optimizer state is sharded by
    `eff-zero` (stage 1 or more): offloading shards is not supported yet.
  }];
  let options = [
    Option<"masterWeights", "master-weights", "bool", /*default=*/"false",
           "Also keep the fp32 master weights of autocast's low-precision "
           "GEMM/convolution weights in host memory, with a persistent "
           "low-precision copy on the device">,
    Option<"keepDeviceRead", "keep-device-read", "bool", /*default=*/"false",
           "Keep on the device the optimizer state that ops other than the "
           "optimizer's read (the step counter dropout seeds read)">
  ];
  let statistics = [
    Statistic<"numHostTensors", "host-tensors",
              "Optimizer state tensors placed in host memory">,
    Statistic<"numHostBytes", "host-bytes",
              "Bytes of optimizer state placed in host memory">,
    Statistic<"numMasterWeights", "master-weights",
               "fp32 master weights placed in host memory, with a "
               "low-precision copy on the device">
  ];
}

def EffStepAbiPass : Pass<"eff-step-abi", "::mlir::ModuleOp"> {
  let summary = "Fixes the binary interface of @train_step for the runtime";
  let description = [{
    Expects `func.func @train_step` from `eff-optimizer`. Keeps the loss
    (result 0) and drops the other forward outputs, so their computation is
    dead. Every update (`eff.update = @name`) is written into its own
    argument with `bufferization.materialize_in_destination`, so after
    bufferization parameters, buffers and optimizer state are updated in
    place and only the loss is returned; arguments that are never updated
    are marked `bufferization.writable = false` so nothing writes them.

    Places every argument in one of two byte regions, recorded as argument
    attributes `eff.region` (`"state"` for `eff.parameter` arguments,
    `"io"` for batch inputs; `"host"`, a third region, for arguments that
    `eff-offload-optimizer` marked `eff.host`, with the module attribute
    `eff.host_bytes`) and `eff.offset` (aligned to `alignment`, the
    target's: every region offset and size is a multiple of it); the loss
    follows the inputs in `io` (result attribute `eff.offset`). The module
    gets `eff.state_bytes`, `eff.io_bytes` and `eff.alignment` (which
    `eff-memory-plan` aligns the arena's buffers to). The runtime and the
    `.effx` manifest use exactly this layout; the dialect verifies these
    attributes (docs/Effx.md, "The step ABI").

    With `mode=forward` it lays out the imported `func.func @forward`
    instead (inference, `effc --mode forward`): no autodiff, no optimizer.
    `eff.parameter` arguments go to `state` and are read-only (`writable =
    false`), graph inputs to `io`, and then EVERY result (any count, shape
    and dtype) gets its own aligned place in `io` after the inputs
    (result attributes `eff.region = "io"` and `eff.offset`). The module is
    tagged `eff.step_kind = "forward"`; it has no `eff.loss_offset`.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"train\"",
           "train (lay out @train_step) or forward (lay out @forward, "
           "every result written to io)">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every offset and region size (the target's; "
           "a power of two)">
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def EffScheduleMemoryPass : Pass<"eff-schedule-memory", "::mlir::ModuleOp"> {
  let summary = "Reorders the training step's ops to lower its peak memory";
  let description = [{
    Runs on every function body at the eff level, after `eff-step-abi` (or
    anywhere before lowering): the ops have value semantics, so any order
    that respects the data flow computes the same values -- the pass moves
    ops and changes nothing else (same ops, same operands), so training
    stays bit-identical. Lowering keeps the order, and the memory plan's
    lifetimes follow it.

    Memory model: every statically shaped tensor result is one buffer, live
    from its op to its last reader; `eff.save` and `eff.reshape` results are
    views of their operand (they lower to nothing or to a view); block
    arguments, constants and values written into an argument
    (`bufferization.materialize_in_destination`, the in-place state updates)
    take no temporary memory.

    Two moves, each lowering (or keeping) the live bytes at every position
    it passes:
    - Free early: an op that frees more bytes than it allocates (it is the
      last reader of its inputs), like a parameter's optimizer update once
      its gradient is final or the sum of two gradient contributions, runs
      as soon as its inputs are ready, pulling along up to a few cheap ops
      it waits for (the learning rate). A recomputed op that frees what it
      allocates stays next to its backward reader. Whether the gradient is final, and whether anything global (a
      gradient-norm clip, an overflow check) needs all gradients first, is
      the data flow itself: no op is special-cased by name.
    - Sink: an op that allocates more than it frees moves down to just
      before its first reader (recomputed chains, gradients of weights
      computed long before their update).
    An op that writes its result into an argument in place runs after every
    other reader of that argument, so bufferization never needs a copy. Ops
    with regions (loops over micro-batches) and ops with side effects stay
    where they are, and nothing moves across or into them.

    The pass builds two orders by these moves, tried in turn: one that
    lets an early free pull up whatever it waits for (up to what it frees),
    then one that pulls up only scalars (at most 4 KiB: the learning rate).
    The first frees more where the pulled ops free in turn; the second is
    the fallback where the pulled chain's results would be live together,
    just before the free, above a peak the old order avoided. Then each of
    the two again after the old order's peak only: the old order up to its
    peak (every position before it unchanged), the remaining ops in the
    candidate's order, for steps where the moves raise the peak somewhere
    (interleaving the chunks of a loss that the old order ran one after the
    other) but still free early after it (ZeRO's gradients sharded as
    their sums arrive). The first of the four that beats the old order on
    the model (a lower peak, or the same peak with fewer live bytes summed
    over the step) replaces it; otherwise the old order stays.
  }];
  let dependentDialects = ["::effopt::eff::EffDialect"];
  let statistics = [
    Statistic<"numMovedOps", "moved-ops", "Ops placed elsewhere">,
    Statistic<"numModelPeakBytesBefore", "peak-bytes-before",
              "Peak live temporary bytes of the old order (the pass's model)">,
    Statistic<"numModelPeakBytesAfter", "peak-bytes-after",
              "Peak live temporary bytes of the new order (the pass's model)">
  ];
}

def EffOverlapCollectivesPass
    : Pass<"eff-overlap-collectives", "::mlir::ModuleOp"> {
  let summary = "Splits each collective into a start and a wait, so that it "
                "runs while the step computes";
  let description = [{
    Runs on every function body at the eff level, last before lowering
    (after `eff-schedule-memory`, whose order it keeps except where it says
    below). Every `eff.all_reduce`, `eff.reduce_scatter` and
    `eff.all_gather` becomes `eff.all_reduce_start` /
    `eff.reduce_scatter_start` / `eff.all_gather_start` and an `eff.wait`
    on its results; the runtime runs the collective on its communication
    thread between the two, so the ops in between compute while it moves.
    Values are unchanged: the same collective on the same buffer, and the
    collectives still run in one order that every rank shares (the order
    of the starts), so training is bit-identical to the blocking ops.

    Placement, block by block (a micro-batch loop's body is its own block):
    - a sum's start (all-reduce, reduce-scatter) goes right after the last
      producer of its tensors: a bucket starts as soon as its gradients are
      final;
    - a gather's start goes right after the wait of the gather `prefetch`
      gathers before it in the block (or after its input's producer, if
      later), and after the gather before it (gathers keep their order):
      ZeRO-3 gathers the next parameter while the layer before computes.
      The first gather of a block stays where it was, the next
      `prefetch - 1` start right after it;
    - a wait, and every op after it that depends on its results, moves
      down: a sum's to just after the next sum's start, a gather's to just
      before the next gather's start, or else to just before the next op
      with regions or the end of the block -- and never past an in-place
      write (`bufferization.materialize_in_destination`) into a tensor
      that one of the moved ops reads. The wait is right before the first
      reader of its results, and a sum moves while the next stretch of the
      backward computes (the optimizer updates that read it follow the
      wait): at most two sums are in flight, and at most `prefetch`
      gathered copies are held ahead of their readers. Where that next
      start reads what the moved ops compute (a sum whose result weighs
      the next bucket), only the wait moves, to right before its first
      reader: the readers stay where they were.
    The memory plan sees a buffer in flight as live from its start to its
    last reader after the wait (the wait names the buffers), so it stays
    exact; the extra bytes of overlap (a bucket's or a gradient's buffer
    held through the next stretch of backward, a prefetched parameter) are
    in the plan.

    `eff.shard` is local and stays as it is. A module without collectives
    is left unchanged.
  }];
  let options = [
    Option<"prefetch", "prefetch", "int64_t", /*default=*/"1",
           "Gathers started ahead of the one being waited for (ZeRO-3: "
           "parameters gathered one ahead); 0 starts each gather where it "
           "was">
  ];
  let dependentDialects = ["::effopt::eff::EffDialect"];
  let statistics = [
    Statistic<"numSplit", "split-collectives",
              "Collectives split into a start and a wait">,
    Statistic<"numOverlappedOps", "overlapped-ops",
              "Ops between a start and its wait (they run while it moves)">
  ];
}

def EffFoldCollectiveCopiesPass
    : Pass<"eff-fold-collective-copies", "::mlir::ModuleOp"> {
  let summary = "Lets the producers of a collective's inputs write into its "
                "buffer, so the copy into it goes away";
  let description = [{
    Runs after bufferization, before `eff-memory-plan`. The CPU lowering of
    a collective copies its inputs into a buffer of its own (tagged
    `eff.collective_buffer`): an all-reduce's bucket, where each input has
    its contiguous slice, or a scatter's or gather's send buffer. A copy
    (`memref.copy %src, %dst`, or `linalg.copy` on buffers) into such a buffer is folded when `%src` is (a
    contiguous reshape of) a `memref.alloc` of the same block whose every
    use comes before the copy: the allocation becomes a `memref.view` of
    the collective's buffer at the slice's byte offset (the buffer turns
    into bytes, `memref<Kxi8>`, viewed as its f32 type where it was used),
    so whatever wrote the tensor writes its slice directly, and the copy is
    erased. The values are the same bits; the duplicate bytes are gone: a
    bucket's gradients count once, not twice (their own buffers and the
    bucket), as in DDP's `gradient_as_bucket_view`. The price is that a
    bucket lives from its first tensor's producer on, not from the copy:
    in a function with an arena (`eff.arena_arg`) the folds are kept only
    if the planned arena (the `eff-memory-plan` placement, without
    `in-place`) does not grow: all of them if that holds, else collective
    buffer by buffer in order, each kept if the arena with it and the
    folds kept before it does not grow.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numFoldedCopies", "folded-copies",
              "Copies into collective buffers folded into their producers">,
    Statistic<"numFoldedBytes", "folded-bytes", "Bytes those copies moved">,
    Statistic<"numKeptCopies", "buffers-kept",
              "Collective buffers whose copies were kept: folded, the arena "
              "would grow">
  ];
}

def EffMemoryPlanPass : Pass<"eff-memory-plan", "::mlir::ModuleOp"> {
  let summary = "Places every temporary buffer at a static offset in one arena";
  let description = [{
    Runs after bufferization on functions with the attribute
    `eff.arena_arg = N` (argument N is the `memref<?xi8>` arena). Every
    `memref.alloc` with a static shape in the function body is live from its
    position in the schedule (the order of the body's operations) to the last
    operation that uses it or any view of it. Buffers are placed greedily,
    largest first, at the lowest offset aligned to the module's
    `eff.alignment` (the target's, recorded by `eff-step-abi`; `eff-step-abi`'s
    default when absent) that does not
    overlap a buffer whose lifetime intersects; each alloc becomes a
    `memref.view` of the arena at its offset. The function gets
    `eff.arena_bytes`, the exact size the runtime allocates once.

    With `print`, the plan is printed to stderr as a table (offset, bytes, first and
    last schedule position, type). With `report`, the memory report of the
    arena is printed instead: bytes by category (activations saved for the
    backward, gradients, temporaries) at the peak of live bytes, where the
    peak falls, and the buffers live there with the ONNX node that produced
    each, its provenance (see docs/MemoryReport.md) and its last reader.
  }];
  let options = [
    Option<"inPlace", "in-place", "bool", /*default=*/"false",
           "Let an elementwise op that reads a buffer element for element "
           "for the last time write over it (the cuda target: its kernels "
           "read before they write; on CPU, LLVM's runtime alias checks "
           "send such loops down their scalar path)">,
    Option<"print", "print", "bool", /*default=*/"false",
           "Print the plan as a table">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Print the memory report of the arena (categories, the peak, the "
           "buffers live there with their ONNX nodes and provenance)">,
    Option<"attachReport", "attach-report", "bool", /*default=*/"false",
           "Attach the memory report as JSON to the module "
           "(`eff.memory_report`), for effc --report">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numPlacedBuffers", "placed-buffers", "Buffers placed in the arena">
  ];
}

#endif // EFFOPT_TRANSFORMS_PASSES_TD
