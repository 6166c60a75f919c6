//===- EffxFormat.h - the .effx compiled-model container --------*- C++ -*-===//
//
// One versioned, self-contained file written by effc and read by effrun.
// Version 2 (docs/Effx.md has every field):
//
//   [EffxHeader, 64 bytes][section table: sectionCount x EffxSectionEntry]
//   [section]...                                   each 64-byte aligned
//
// The header has a CRC-32 (zlib polynomial) over its 64 bytes with
// `headerCrc` = 0, and the CRC-32 of the section table; every section entry
// has the CRC-32 of its section. All integers are little-endian. The
// compiler includes this header, so both sides agree on the layout by
// construction.
//
// Section kinds:
// - manifest (exactly one): JSON, what the runtime needs to drive the step
//   without knowing anything about the model.
// - host_code: code the host process loads; for target "cpu-x86_64" an ELF
//   shared object exporting the entry
//   `_mlir_ciface_effx_step(MemRef1D *state, MemRef1D *arena, MemRef1D *io)`
//   and importing `effrt_sgemm` / `effrt_sgemm_batched` and libm, which the
//   loading process provides.
// - device_code: a binary for a device (a cubin, ...), by target.
// - initial_state (exactly one): the initial bytes of the state entries the
//   manifest does not mark `"init": "zeros"`, concatenated in manifest order.
//
// Version 1 (a 96-byte header with three fixed sections: manifest, code, and
// the whole state region's image) is still read; EffxHeaderV1 is its layout.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_EFFXFORMAT_H
#define EFFRT_EFFXFORMAT_H

#include <cstddef>
#include <cstdint>

namespace effrt {

inline constexpr char kEffxMagic[8] = {'E', 'F', 'F', 'X', '\r', '\n', 0x1a, '\n'};
/// The version this compiler writes and the newest this runtime reads.
inline constexpr uint32_t kEffxVersion = 2;
/// The manifest's "minor_version" (0 when absent): minor versions only add
/// fields, so every file of an older minor version reads as before. 1 added
/// "kind" ("train_step", the default, or "forward": an inference function,
/// effc --mode forward) and, for "forward", "outputs" in place of "loss".
/// Version 2 kept the count (its manifest is version 1's at minor version 1
/// plus "init", which came with the new major version); its next addition
/// is minor version 2.
inline constexpr uint32_t kEffxMinorVersion = 1;
inline constexpr uint64_t kEffxAlignment = 64;

/// What a section holds. A reader refuses a required section of a kind it
/// does not know and skips an optional one.
enum class EffxSectionKind : uint32_t {
  Manifest = 1,
  HostCode = 2,
  DeviceCode = 3,
  InitialState = 4,
};

/// EffxSectionEntry::flags.
inline constexpr uint32_t kEffxSectionRequired = 1u << 0;
/// Every flag this version defines; a section with another bit set needs a
/// newer reader.
inline constexpr uint32_t kEffxSectionKnownFlags = kEffxSectionRequired;

struct EffxHeader {
  char magic[8];
  uint32_t version;            // kEffxVersion
  uint32_t headerSize;         // sizeof(EffxHeader)
  uint64_t sectionTableOffset; // from the start of the file, 8-byte aligned
  uint32_t sectionCount;
  uint32_t sectionEntrySize;   // sizeof(EffxSectionEntry)
  uint32_t sectionTableCrc;    // CRC-32 of the sectionCount entries
  uint32_t headerCrc;          // CRC-32 of the header with this field zero
  uint8_t reserved[24];        // written as 0, ignored when read
};

struct EffxSectionEntry {
  uint32_t kind;    // EffxSectionKind
  uint32_t flags;   // kEffxSection*
  char target[24];  // NUL-padded; empty: not target-specific
  char name[40];    // NUL-padded
  uint64_t offset;  // from the start of the file, kEffxAlignment-aligned
  uint64_t size;    // bytes
  uint32_t crc32;   // of the section's bytes
  uint32_t reserved;
};
static_assert(sizeof(EffxHeader) == 64, "EffxHeader layout");
static_assert(sizeof(EffxSectionEntry) == 96, "EffxSectionEntry layout");
static_assert(offsetof(EffxSectionEntry, offset) == 72,
              "EffxSectionEntry layout");

/// Version 1: a fixed header with three sections.
inline constexpr uint32_t kEffxVersion1 = 1;

struct EffxSectionV1 {
  uint64_t offset; // from the start of the file, kEffxAlignment-aligned
  uint64_t size;   // bytes
  uint32_t crc32;  // of the section's bytes
  uint32_t reserved;
};

struct EffxHeaderV1 {
  char magic[8];
  uint32_t version;    // 1
  uint32_t headerSize; // sizeof(EffxHeaderV1)
  EffxSectionV1 manifest;
  EffxSectionV1 code;
  EffxSectionV1 state; // the whole state region's initial bytes
  uint32_t headerCrc;  // CRC-32 of the header with this field zero
  uint32_t reserved;
};
static_assert(sizeof(EffxSectionV1) == 24, "EffxSectionV1 layout");
static_assert(sizeof(EffxHeaderV1) == 96, "EffxHeaderV1 layout");

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
/// The entry of a step with a host region (`regions.host` in the manifest,
/// effc --offload optimizer): the same, then the host region.
using EffxHostStepFn = void (*)(MemRef1D *state, MemRef1D *arena,
                                MemRef1D *io, MemRef1D *host);
inline constexpr const char *kEffxEntrySymbol = "_mlir_ciface_effx_step";

} // namespace effrt

#endif // EFFRT_EFFXFORMAT_H
