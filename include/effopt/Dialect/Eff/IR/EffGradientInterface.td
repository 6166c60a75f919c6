//===- EffGradientInterface.td - reverse-mode gradient rules -*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFGRADIENTINTERFACE_TD
#define EFFOPT_DIALECT_EFF_IR_EFFGRADIENTINTERFACE_TD

include "mlir/IR/OpBase.td"

def Eff_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let description = [{
    The reverse-mode rule of a differentiable op: given the gradients of its
    results, build the gradients of its operands. `eff-autodiff` is one
    generic pass over this interface.

    Rules are attached to the ops as external models (one file per op family
    under `lib/Dialect/Eff/Gradients`), registered with
    `registerGradientInterfaceModels`. Ops without the interface (constants,
    comparisons, shape queries) are not differentiable; autodiff reports one
    that sits on a path from a trainable parameter to the loss.
  }];
  let cppNamespace = "::effopt::eff";
  let methods = [
    InterfaceMethod<
      "Whether operand `index` can receive a gradient (default: it is a "
      "floating-point tensor).",
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), [{}], [{
        return ::effopt::eff::detail::isFloatTensor(
            $_op->getOperand(index).getType());
      }]>,
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the gradients of the
        operands. `resultGradients[i]` is the gradient of result `i` (same
        type as the result) or null when none flows; `needed[i]` says whether
        operand `i` needs a gradient. Sets `operandGradients[i]` (sized to
        the operands, same type as operand `i`) for the needed operands;
        leaves the others null.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGradients,
           "::llvm::ArrayRef<bool>":$needed,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>,
  ];
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFGRADIENTINTERFACE_TD
