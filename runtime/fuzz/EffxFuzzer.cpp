//===- EffxFuzzer.cpp - libFuzzer target for the .effx validator ----------===//
//
// Any input must be accepted or rejected with effrt::Error; anything else
// (a crash, a sanitizer report, another exception) is a bug. Only
// validation is fuzzed: loading the code section would run arbitrary code.
// CRCs make random inputs fail early, so for odd-sized inputs the CRCs are
// recomputed first (version 2: every section's that lies inside the input,
// the section table's, the header's; version 1: the three sections' and
// the header's), letting the fuzzer reach the table and manifest checks.
// An accepted file's initial state is also copied out.
//
//===----------------------------------------------------------------------===//

#include "effrt/Effx.h"
#include "effrt/Error.h"

#include <cstring>
#include <vector>

using namespace effrt;

static bool inside(uint64_t offset, uint64_t size, size_t total) {
  return offset <= total && size <= total - offset;
}

static void fixV2(std::vector<std::byte> &bytes) {
  EffxHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  uint64_t tableBytes = uint64_t(h.sectionCount) * sizeof(EffxSectionEntry);
  if (h.sectionCount <= 4096 && inside(h.sectionTableOffset, tableBytes,
                                       bytes.size())) {
    for (uint32_t i = 0; i < h.sectionCount; ++i) {
      EffxSectionEntry e;
      std::byte *at = bytes.data() + h.sectionTableOffset + i * sizeof e;
      std::memcpy(&e, at, sizeof e);
      if (inside(e.offset, e.size, bytes.size()))
        e.crc32 = crc32(bytes.data() + e.offset, e.size);
      std::memcpy(at, &e, sizeof e);
    }
    h.sectionTableCrc =
        crc32(bytes.data() + h.sectionTableOffset, tableBytes);
  }
  h.headerCrc = 0;
  h.headerCrc = crc32(&h, sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
}

static void fixV1(std::vector<std::byte> &bytes) {
  EffxHeaderV1 h;
  std::memcpy(&h, bytes.data(), sizeof h);
  for (EffxSectionV1 *s : {&h.manifest, &h.code, &h.state})
    if (inside(s->offset, s->size, bytes.size()))
      s->crc32 = crc32(bytes.data() + s->offset, s->size);
  h.headerCrc = 0;
  h.headerCrc = crc32(&h, sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::byte> bytes(size);
  if (size)
    std::memcpy(bytes.data(), data, size);
  if (size & 1) {
    uint32_t version = 0;
    if (size >= 12)
      std::memcpy(&version, bytes.data() + 8, 4);
    if (version == kEffxVersion1 && size >= sizeof(EffxHeaderV1))
      fixV1(bytes);
    else if (size >= sizeof(EffxHeader))
      fixV2(bytes);
  }
  try {
    EffxFile file =
        EffxFile::fromBytes(bytesFromVector(std::move(bytes)), "f.effx");
    const EffxManifest &m = file.manifest();
    // Bounded: the state region a corrupt manifest asks for may be huge.
    if (m.stateBytes <= (uint64_t(1) << 24)) {
      std::vector<std::byte> region(m.stateBytes);
      file.copyInitialState(region.data());
    }
  } catch (const Error &) {
  }
  return 0;
}
