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

#endif // EFFOPT_DIALECT_EFF_IR_EFFCOLLECTIVEOPS_TD
