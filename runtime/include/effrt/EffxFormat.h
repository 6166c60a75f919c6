//===- EffxFormat.h - the .effx compiled-model container --------*- C++ -*-===//
//
// One versioned, self-contained file written by effc and read by effrun:
//
//   [EffxHeader][manifest (JSON, UTF-8)][code][initial state]
//
// each section 64-byte aligned, each with a CRC-32 (zlib polynomial) in the
// header; the header has its own CRC over its bytes with `headerCrc` = 0.
// All integers are little-endian. The compiler includes this header, so both
// sides agree on the layout by construction.
//
// - manifest: what the runtime needs to drive the step without knowing
//   anything about the model (see docs/Effx.md for every field).
//   Since minor version 1 a file is either a training step ("kind":
//   "train_step") or a forward (inference) function ("kind": "forward")
//   whose entry has the same signature and writes every graph output to io.
// - code: for target "cpu-x86_64", an ELF shared object exporting the entry
//   `_mlir_ciface_effx_step(MemRef1D *state, MemRef1D *arena, MemRef1D *io)`
//   and importing `effrt_sgemm` / `effrt_sgemm_batched` and libm, which the
//   loading process provides.
// - initial state: the bytes of the `state` region (parameters, buffers,
//   optimizer state and step counter at their manifest offsets).
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_EFFXFORMAT_H
#define EFFRT_EFFXFORMAT_H

#include <cstdint>

namespace effrt {

inline constexpr char kEffxMagic[8] = {'E', 'F', 'F', 'X', '\r', '\n', 0x1a, '\n'};
inline constexpr uint32_t kEffxVersion = 1;
/// The manifest's "minor_version" (0 when absent): minor versions only add
/// fields, so every file of an older minor version reads as before. 1 added
/// "kind" ("train_step", the default, or "forward": an inference function,
/// effc --mode forward) and, for "forward", "outputs" in place of "loss".
inline constexpr uint32_t kEffxMinorVersion = 1;
inline constexpr uint64_t kEffxAlignment = 64;

struct EffxSection {
  uint64_t offset; // from the start of the file, kEffxAlignment-aligned
  uint64_t size;   // bytes
  uint32_t crc32;  // of the section's bytes
  uint32_t reserved;
};

struct EffxHeader {
  char magic[8];
  uint32_t version;
  uint32_t headerSize; // sizeof(EffxHeader)
  EffxSection manifest;
  EffxSection code;
  EffxSection state;
  uint32_t headerCrc; // CRC-32 of the header with this field zero
  uint32_t reserved;
};
static_assert(sizeof(EffxSection) == 24, "EffxSection layout");
static_assert(sizeof(EffxHeader) == 96, "EffxHeader layout");

/// The memref descriptor of a 1-D byte buffer, as MLIR's C interface passes
/// it: what the entry point receives for each region.
struct MemRef1D {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
};

/// The entry point of the compiled step.
using EffxStepFn = void (*)(MemRef1D *state, MemRef1D *arena, MemRef1D *io);
inline constexpr const char *kEffxEntrySymbol = "_mlir_ciface_effx_step";

} // namespace effrt

#endif // EFFRT_EFFXFORMAT_H
