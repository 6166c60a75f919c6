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

#endif // EFFOPT_DIALECT_EFF_IR_EFFCOLLECTIVEOPS_TD
