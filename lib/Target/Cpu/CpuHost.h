//===- CpuHost.h - host code the CPU device runs ----------------*- C++ -*-===//
//
// What the CPU target and the cuda-emulated target share: the lowering of
// loops to LLVM with PyTorch's f16/bf16 numerics, and the .effx host-code
// section the runtime's CPU device loads.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_LIB_TARGET_CPU_CPUHOST_H
#define EFFOPT_LIB_TARGET_CPU_CPUHOST_H

#include "effopt/Target/TargetBackend.h"

#include "mlir/Pass/PassManager.h"

namespace effopt {

/// Loops (scf, affine, memref, arith, math) to the LLVM dialect: f16/bf16
/// arithmetic in f32 with one rounding per op, bf16 conversions as integer
/// code, math functions through libm or, with `polynomialMath`, exp, erf
/// and tanh as polynomials whose loops vectorise.
void addCpuHostLowering(mlir::OpPassManager &pm, bool polynomialMath);

/// The LLVM-dialect `module` as one ELF shared object for `options.arch`,
/// in a host-code section for the CPU device (target "cpu-<arch>").
mlir::FailureOr<TargetArtifacts>
serializeCpuHostStep(mlir::ModuleOp module, const CodegenOptions &options);

} // namespace effopt

#endif // EFFOPT_LIB_TARGET_CPU_CPUHOST_H
