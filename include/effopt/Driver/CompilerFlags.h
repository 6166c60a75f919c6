//===- CompilerFlags.h - effc's flags by name into CompileOptions -*- C++ -*-===//
//
// The options of a compilation named as effc's flags, for front ends that
// are not a command line (the C ABI, hence the Python package). The
// training-step options are parsed by TrainStepOptions itself (the same
// declarations effc's flags and `effopt-opt --effopt-train-step` use), so a
// name is either one of them or one of the few options CompileOptions holds
// outside the pipeline: shape, freeze, shapes-only, memory-budget,
// remat=budget:BYTES, arch, opt-level; and lora, whose one value sets the
// pipeline's lora-* options.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DRIVER_COMPILERFLAGS_H
#define EFFOPT_DRIVER_COMPILERFLAGS_H

#include "effopt/Driver/Compiler.h"

#include "llvm/Support/Error.h"

namespace effopt {

/// Sets the option effc calls `--name` to `value`; fails with one line
/// naming the flag ("--lr: 'x' is not a number") or an unknown name.
llvm::Error applyCompilerFlag(CompileOptions &options, llvm::StringRef name,
                              llvm::StringRef value);

/// effc's --lora value, "rank=R,alpha=A,dropout=P,seed=S,targets=REGEX"
/// (every key optional; targets last, it takes the rest of the text): turns
/// `step.lora` on and sets the lora-* options. Fails with one line naming
/// --lora and the bad key or value.
llvm::Error applyLoraSpec(TrainStepOptions &step, llvm::StringRef spec);

} // namespace effopt

#endif // EFFOPT_DRIVER_COMPILERFLAGS_H
