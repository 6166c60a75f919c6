//===- EffReductionOps.td - reductions -----------------------*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFREDUCTIONOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFREDUCTIONOPS_TD

/// A reduction costs one operation per input element (`+=`, `max`, `min`);
/// `extraFlops` adds what the op does per result element.
class Eff_ReduceOp<string mnemonic, string what, string extraFlops = ""> :
    Eff_PureOp<mnemonic, [InferTypeOpAdaptor]> {
  let summary = what # " over the given axes";
  let description = "Reduces `axes` (distinct, each in `[-rank, rank)`); "
    # "`keep_dims` keeps them with size 1.\n\n```mlir\n%y = eff." # mnemonic
    # " %x {axes = array<i64: 1>, keep_dims = true}"
    # " : tensor<8x16xf32> -> tensor<8x1xf32>\n```";
  let arguments = (ins Eff_Tensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs Eff_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return ::effopt::eff::detail::numElements(getInput().getType())}]
      # extraFlops # [{;
    }
  }];
}

def Eff_ReduceSumOp : Eff_ReduceOp<"reduce_sum", "sum">;
def Eff_ReduceMeanOp : Eff_ReduceOp<"reduce_mean", "arithmetic mean",
    " + ::effopt::eff::detail::numElements(getType())">;
def Eff_ReduceMaxOp : Eff_ReduceOp<"reduce_max", "maximum">;
def Eff_ReduceMinOp : Eff_ReduceOp<"reduce_min", "minimum">;

#endif // EFFOPT_DIALECT_EFF_IR_EFFREDUCTIONOPS_TD
