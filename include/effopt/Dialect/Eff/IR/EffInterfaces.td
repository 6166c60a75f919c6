//===- EffInterfaces.td - eff op interfaces ----------------*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFINTERFACES_TD
#define EFFOPT_DIALECT_EFF_IR_EFFINTERFACES_TD

include "mlir/IR/OpBase.td"

def Eff_CostOpInterface : OpInterface<"CostOpInterface"> {
  let description = [{
    The cost of executing an op once: floating-point operations and the bytes
    it reads and writes, computed from static shapes. Planners
    (rematerialization, fusion, the memory report) use these numbers, so they
    are exact counts for the naive algorithm, not hardware estimates: a
    multiply-add counts as two FLOPs; a transcendental counts as one.
  }];
  let cppNamespace = "::effopt::eff";
  let methods = [
    InterfaceMethod<
      "Floating-point (or integer arithmetic) operations of one execution.",
      "int64_t", "getFlops">,
    InterfaceMethod<
      "Bytes read from operands. Defaults to every operand read once.",
      "int64_t", "getBytesRead", (ins), [{}], [{
        return ::effopt::eff::detail::sumTensorBytes($_op->getOperands());
      }]>,
    InterfaceMethod<
      "Bytes written to results. Defaults to every result written once.",
      "int64_t", "getBytesWritten", (ins), [{}], [{
        return ::effopt::eff::detail::sumTensorBytes($_op->getResults());
      }]>,
  ];
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFINTERFACES_TD
