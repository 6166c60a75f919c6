//===- Offload.h - host-resident state of the step ABI ----------*- C++ -*-===//
//
// The names eff-offload-optimizer, eff-step-abi, eff-step-entry and the .effx
// writer share for state kept in host memory (docs/Effx.md, "The step ABI";
// docs/MemoryReport.md, "Optimizer state in host memory").
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_OFFLOAD_H
#define EFFOPT_DIALECT_EFF_IR_OFFLOAD_H

#include "llvm/ADT/StringRef.h"

namespace effopt::eff {

/// Unit attribute on an argument of @train_step (eff-offload-optimizer):
/// the persistent tensor lives in host memory, the `host` region.
inline constexpr llvm::StringLiteral kHostAttrName = "eff.host";
/// The third region of a training step's state, in host memory: the value
/// of `eff.region` for arguments marked `eff.host`.
inline constexpr llvm::StringLiteral kHostRegion = "host";
/// Module: bytes of the host region (absent or 0: the step has none and its
/// entry point takes three regions).
inline constexpr llvm::StringLiteral kHostBytesAttrName = "eff.host_bytes";
/// Module (eff-host-tasks abi=cuda): bytes of pinned host memory the
/// runtime stages a host task's device bytes in (the largest task's; tasks
/// run in order and share it). The .effx manifest says
/// `"host_staging_bytes"`.
inline constexpr llvm::StringLiteral kHostStagingBytesAttrName =
    "eff.host_staging_bytes";
/// Symbol reference on an eff.parameter that eff-offload-optimizer made:
/// the parameter (an fp32 master weight in host memory) this one is the
/// device's low-precision copy of. The .effx manifest says `"copy_of"`.
inline constexpr llvm::StringLiteral kCopyOfAttrName = "eff.copy_of";
/// The name prefix eff-optimizer gives its persistent state
/// (`optimizer.<param>.<slot>`, `optimizer.step`).
inline constexpr llvm::StringLiteral kOptimizerStatePrefix = "optimizer.";

} // namespace effopt::eff

#endif // EFFOPT_DIALECT_EFF_IR_OFFLOAD_H
