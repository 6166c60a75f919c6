//===- CpuBackend.h - the CPU target ----------------------------*- C++ -*-===//

#ifndef EFFOPT_TARGET_CPU_CPUBACKEND_H
#define EFFOPT_TARGET_CPU_CPUBACKEND_H

#include "llvm/ADT/StringRef.h"

namespace effopt {

/// The CPU target's name: the default target of effc and TrainStepOptions.
inline constexpr llvm::StringLiteral kCpuTargetName = "cpu";

/// Registers the CPU backend: native code from LLVM for this machine (or
/// --cpu NAME), loops on OpenMP threads, GEMMs through the runtime's BLAS.
void registerCpuTargetBackend();

} // namespace effopt

#endif // EFFOPT_TARGET_CPU_CPUBACKEND_H
