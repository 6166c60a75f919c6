//===- EffCollectiveOps.td - sums and gathers across ranks --*- tablegen -*-===//
//
// Collectives of a data-parallel step (eff-zero): every rank runs the same
// compiled step on its own rows and they meet at these ops. The compiled
// code calls the runtime, which runs them on the run's engine (MPI across
// CPU processes; one rank: nothing to do).
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFCOLLECTIVEOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFCOLLECTIVEOPS_TD

def Eff_AllReduceOp : Eff_PureOp<"all_reduce", [InferTypeOpAdaptor]> {
  let summary = "elementwise sums of tensors over the ranks of the run";
  let description = [{
    Returns, for each input, the elementwise sum over the `world_size` ranks
    of every rank's input (MPI_Allreduce with MPI_SUM). Several inputs form
    one bucket: they are summed by one collective over one contiguous
    buffer that holds them in order (fewer, larger messages). Every rank
    runs the same step, so every rank reaches the same all-reduces in the
    same order; that is why the op can be pure (CSE and DCE act alike on
    every rank). It has no gradient rule: eff-zero places it after the
    backward.

    Its cost is the bytes a rank moves in a ring all-reduce:
    `2 (N - 1) / N` times the bucket's bytes (`getBytesMoved`), and
    `(N - 1) / N` of its elements in additions.

    ```mlir
    %gw, %gb = eff.all_reduce %dw, %db {world_size = 2 : i64}
        : tensor<64x32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Variadic<TensorOf<[F32]>>:$inputs, I64Attr:$world_size);
  let results = (outs Variadic<TensorOf<[F32]>>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes one rank sends (and receives) in a ring all-reduce.
    int64_t getBytesMoved();
  }];
  let extraClassDefinition = [{
    int64_t $cppClass::getBytesMoved() {
      int64_t n = getWorldSize();
      return 2 * (n - 1) *
             ::effopt::eff::detail::sumTensorBytes(getInputs()) / n;
    }
    int64_t $cppClass::getFlops() {
      int64_t n = getWorldSize(), elements = 0;
      for (::mlir::Value v : getInputs())
        elements += ::effopt::eff::detail::numElements(v.getType());
      return (n - 1) * elements / n;
    }
  }];
}

def Eff_ReduceScatterOp : Eff_PureOp<"reduce_scatter"> {
  let summary = "this rank's block of the elementwise sum over the ranks";
  let description = [{
    The input, a 1-D f32 tensor of N*S elements (N = `world_size`), is
    summed elementwise over the ranks, and rank r keeps elements
    `[r*S, (r+1)*S)` of the sum (MPI_Reduce_scatter_block with MPI_SUM).
    ZeRO stage 2 (`eff-zero stage=2`) reduce-scatters every flattened,
    padded gradient, so a rank holds only the gradient shard its optimizer
    state updates. Like `eff.all_reduce` it is pure: every rank runs the
    same step and reaches the same collectives in the same order.

    Its gradient is the all-gather of the result's gradient (the ranks'
    losses add up).

    Its cost is the bytes a rank moves in a ring reduce-scatter:
    `(N - 1) / N` of the input's bytes (`getBytesMoved`), and as many
    additions as elements it receives.

    ```mlir
    %shard = eff.reduce_scatter %g {world_size = 2 : i64}
        : tensor<2048xf32> -> tensor<1024xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$input, I64Attr:$world_size);
  let results = (outs 1DTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes one rank sends (and receives) in a ring reduce-scatter.
    int64_t getBytesMoved();
  }];
  let extraClassDefinition = [{
    int64_t $cppClass::getBytesMoved() {
      int64_t n = getWorldSize();
      return (n - 1) *
             ::effopt::eff::detail::tensorBytes(getInput().getType()) / n;
    }
    int64_t $cppClass::getFlops() {
      int64_t n = getWorldSize();
      return (n - 1) *
             ::effopt::eff::detail::numElements(getInput().getType()) / n;
    }
  }];
}

def Eff_AllGatherOp : Eff_PureOp<"all_gather"> {
  let summary = "every rank's tensor, concatenated in rank order";
  let description = [{
    The input, a 1-D f32 tensor of S elements, is gathered from the N =
    `world_size` ranks: elements `[r*S, (r+1)*S)` of the result are rank
    r's input (MPI_Allgather). ZeRO stages 1 and 2 (`eff-zero`) gather the
    parameter shards each rank updated, so every rank has the whole
    updated parameters again.

    Its gradient is the reduce-scatter of the result's gradient (the ranks'
    losses add up).

    Its cost is the bytes a rank moves in a ring all-gather: `(N - 1)`
    times the input's bytes (`getBytesMoved`); no arithmetic.

    ```mlir
    %full = eff.all_gather %shard {world_size = 2 : i64}
        : tensor<1024xf32> -> tensor<2048xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$input, I64Attr:$world_size);
  let results = (outs 1DTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes one rank receives in a ring all-gather.
    int64_t getBytesMoved();
  }];
  let extraClassDefinition = [{
    int64_t $cppClass::getBytesMoved() {
      return (getWorldSize() - 1) *
             ::effopt::eff::detail::tensorBytes(getInput().getType());
    }
    int64_t $cppClass::getFlops() { return 0; }
  }];
}

def Eff_ShardOp : Eff_PureOp<"shard"> {
  let summary = "this rank's block of a tensor every rank holds";
  let description = [{
    The input, a 1-D f32 tensor of N*S elements (N = `world_size`) that is
    the same on every rank, gives rank r elements `[r*S, (r+1)*S)`: no
    communication, only the rank's own copy. ZeRO stages 1 and 2 take the
    shard of each (flattened, padded) parameter that the rank's optimizer
    state updates, and in stage 1 the shard of the all-reduced gradient.
    It has no gradient rule (the rule depends on the rank).

    ```mlir
    %mine = eff.shard %w {world_size = 2 : i64}
        : tensor<2048xf32> -> tensor<1024xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$input, I64Attr:$world_size);
  let results = (outs 1DTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() { return 0; }
  }];
}

//===----------------------------------------------------------------------===//
// Split collectives: start now, wait later (eff-overlap-collectives)
//===----------------------------------------------------------------------===//

/// The collectives' side-effect resource (effopt::eff::CollectiveResource):
/// the run's one ordered stream of collectives. A start enqueues on it and a
/// wait dequeues from it, so no pass reorders, merges or drops them, and
/// every rank issues them in the same order.
def Eff_CollectiveResource : Resource<"::effopt::eff::CollectiveResource">;

/// A collective that starts now and whose results are in flight: only the
/// one `eff.wait` that takes all of them may read them.
class Eff_CollectiveStartOp<string mnemonic, list<Trait> traits = []> :
    Eff_Op<mnemonic, !listconcat([
        MemoryEffects<[MemWrite<Eff_CollectiveResource>]>,
        DeclareOpInterfaceMethods<Eff_CostOpInterface>], traits)>;

def Eff_AllReduceStartOp : Eff_CollectiveStartOp<"all_reduce_start",
    [InferTypeOpAdaptor]> {
  let summary = "starts an eff.all_reduce; its sums are read after eff.wait";
  let description = [{
    `eff.all_reduce` split in two: this op starts summing its bucket over the
    ranks and returns at once; its results, the sums, are in flight until
    the one `eff.wait` that takes all of them, in order, and only that op
    may read them. The ranks run the same collective as `eff.all_reduce`
    (the same call on the same buffer), so the sums are bit-identical to the
    blocking op's; in between, the step computes. `eff-overlap-collectives`
    splits every `eff.all_reduce` this way: the start right after the last
    of its tensors is produced, the wait right before the first reader of a
    sum. The memory plan keeps the bucket's buffer live from the start to
    its last reader after the wait.

    Its cost is that of `eff.all_reduce`.

    ```mlir
    %sw, %sb = eff.all_reduce_start %dw, %db {world_size = 2 : i64}
        : tensor<64x32xf32>, tensor<32xf32>
    // ... the rest of the backward ...
    %gw, %gb = eff.wait %sw, %sb : tensor<64x32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Variadic<TensorOf<[F32]>>:$inputs, I64Attr:$world_size);
  let results = (outs Variadic<TensorOf<[F32]>>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      int64_t n = getWorldSize(), elements = 0;
      for (::mlir::Value v : getInputs())
        elements += ::effopt::eff::detail::numElements(v.getType());
      return (n - 1) * elements / n;
    }
  }];
}

def Eff_ReduceScatterStartOp : Eff_CollectiveStartOp<"reduce_scatter_start"> {
  let summary = "starts an eff.reduce_scatter; its block is read after eff.wait";
  let description = [{
    `eff.reduce_scatter` split in two, as `eff.all_reduce_start`: the result
    (this rank's block of the sum) is in flight until its `eff.wait`.

    ```mlir
    %f = eff.reduce_scatter_start %g {world_size = 2 : i64}
        : tensor<2048xf32> -> tensor<1024xf32>
    %shard = eff.wait %f : tensor<1024xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$input, I64Attr:$world_size);
  let results = (outs 1DTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      int64_t n = getWorldSize();
      return (n - 1) *
             ::effopt::eff::detail::numElements(getInput().getType()) / n;
    }
  }];
}

def Eff_AllGatherStartOp : Eff_CollectiveStartOp<"all_gather_start"> {
  let summary = "starts an eff.all_gather; the whole tensor is read after eff.wait";
  let description = [{
    `eff.all_gather` split in two, as `eff.all_reduce_start`: the result
    (every rank's block, in rank order) is in flight until its `eff.wait`.
    In ZeRO stage 3 `eff-overlap-collectives` starts the gather of a
    parameter `prefetch` gathers ahead (one layer ahead by default), so it
    runs while the layer before computes; the plan holds that extra
    gathered copy from its start.

    ```mlir
    %f = eff.all_gather_start %shard {world_size = 2 : i64}
        : tensor<1024xf32> -> tensor<2048xf32>
    %whole = eff.wait %f : tensor<2048xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$input, I64Attr:$world_size);
  let results = (outs 1DTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() { return 0; }
  }];
}

def Eff_WaitOp : Eff_Op<"wait", [
    MemoryEffects<[MemRead<Eff_CollectiveResource>,
                   MemWrite<Eff_CollectiveResource>]>,
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Eff_CostOpInterface,
                              ["getBytesRead", "getBytesWritten"]>]> {
  let summary = "waits for a started collective; its results are then ready";
  let description = [{
    Takes every result of one `eff.all_reduce_start`,
    `eff.reduce_scatter_start` or `eff.all_gather_start`, in order, and
    returns them once the collective has finished on this rank: the same
    values, now readable. It is the only reader of a start's results, and
    is in the same block after it. At run time it blocks until the
    runtime's communication thread has run the collective (and every one
    started before it: the collectives run in the order they start).

    ```mlir
    %gw, %gb = eff.wait %sw, %sb : tensor<64x32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Variadic<TensorOf<[F32]>>:$inputs);
  let results = (outs Variadic<TensorOf<[F32]>>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The start whose results this op waits for.
    ::mlir::Operation *getStart();
  }];
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() { return 0; }
    int64_t $cppClass::getBytesRead() { return 0; }
    int64_t $cppClass::getBytesWritten() { return 0; }
  }];
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFCOLLECTIVEOPS_TD
