//===- CpuObject.h - native code for the CPU target -------------*- C++ -*-===//

#ifndef EFFOPT_LIB_TARGET_CPU_CPUOBJECT_H
#define EFFOPT_LIB_TARGET_CPU_CPUOBJECT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace effopt {

struct CpuCodegenOptions {
  /// LLVM CPU name; "native" is the host's CPU and features.
  std::string cpu = "native";
  unsigned optLevel = 3;
  /// False: LLVM's -O0 instruction selection and register allocation after
  /// the optLevel IR pipeline. For host code that only computes addresses
  /// and calls (the cuda step: launches and library calls), where greedy
  /// register allocation over one function with hundreds of calls costs
  /// most of the compile and saves nothing at run time.
  bool optimizeMachineCode = true;
};

struct CpuCode {
  std::vector<char> sharedObject; // ELF .so bytes
  std::string cpu;                // the CPU the code was generated for
  std::string triple;
};

/// Translates an LLVM-dialect module to LLVM IR, optimises it, generates a
/// native object in process and links it into a shared object with ld.lld.
/// Errors are emitted as diagnostics on the module.
mlir::FailureOr<CpuCode> emitCpuSharedObject(mlir::ModuleOp module,
                                             const CpuCodegenOptions &options);

} // namespace effopt

#endif // EFFOPT_LIB_TARGET_CPU_CPUOBJECT_H
