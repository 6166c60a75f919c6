//===- Registration.h - what the compiler's tools register ------*- C++ -*-===//

#ifndef EFFOPT_DRIVER_REGISTRATION_H
#define EFFOPT_DRIVER_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace effopt {

/// Every dialect, interface model and LLVM translation the compiler uses.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Every target backend effopt is built with (today: cpu). Idempotent.
void registerAllTargetBackends();

} // namespace effopt

#endif // EFFOPT_DRIVER_REGISTRATION_H
