//===- EffOps.td - eff dialect ops --------------------------*- tablegen -*-===//
//
// Ops are grouped by family, one file each; this file is the single entry
// point that tablegen reads.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFOPS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFOPS_TD

include "effopt/Dialect/Eff/IR/EffBase.td"
include "effopt/Dialect/Eff/IR/EffAttrs.td"
include "effopt/Dialect/Eff/IR/EffInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Base class of every eff op.
class Eff_Op<string mnemonic, list<Trait> traits = []> :
    Op<Eff_Dialect, mnemonic, traits>;

/// A side-effect-free tensor op with a cost.
class Eff_PureOp<string mnemonic, list<Trait> traits = []> :
    Eff_Op<mnemonic, !listconcat([Pure,
        DeclareOpInterfaceMethods<Eff_CostOpInterface>], traits)>;

include "effopt/Dialect/Eff/IR/EffModelOps.td"
include "effopt/Dialect/Eff/IR/EffElementwiseOps.td"
include "effopt/Dialect/Eff/IR/EffShapeOps.td"
include "effopt/Dialect/Eff/IR/EffReductionOps.td"
include "effopt/Dialect/Eff/IR/EffContractionOps.td"
include "effopt/Dialect/Eff/IR/EffConvolutionOps.td"
include "effopt/Dialect/Eff/IR/EffNormalizationOps.td"
include "effopt/Dialect/Eff/IR/EffAttentionOps.td"
include "effopt/Dialect/Eff/IR/EffLossOps.td"
include "effopt/Dialect/Eff/IR/EffGradientOps.td"
include "effopt/Dialect/Eff/IR/EffOptimizerOps.td"
include "effopt/Dialect/Eff/IR/EffLossScaleOps.td"
include "effopt/Dialect/Eff/IR/EffCollectiveOps.td"

#endif // EFFOPT_DIALECT_EFF_IR_EFFOPS_TD
