//===- EffxFuzzer.cpp - libFuzzer target for the .effx validator ----------===//
//
// Any input must be accepted or rejected with effrt::Error; anything else
// (a crash, a sanitizer report, another exception) is a bug. Only
// validation is fuzzed: loading the code section would run arbitrary code.
// CRCs make random inputs fail early, so the header CRC and section CRCs of
// every input are recomputed first (unless the input is shorter than a
// header), letting the fuzzer reach the manifest checks.
//
//===----------------------------------------------------------------------===//

#include "effrt/Effx.h"
#include "effrt/Error.h"

#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::byte> bytes(size);
  if (size)
    std::memcpy(bytes.data(), data, size);
  if (size >= sizeof(effrt::EffxHeader) && (size & 1)) {
    // Odd-sized inputs: fix the CRCs so the manifest parser is exercised.
    effrt::EffxHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    for (effrt::EffxSection *s : {&h.manifest, &h.code, &h.state})
      if (s->offset <= size && s->size <= size - s->offset)
        s->crc32 = effrt::crc32(bytes.data() + s->offset, s->size);
    h.headerCrc = 0;
    h.headerCrc = effrt::crc32(&h, sizeof h);
    std::memcpy(bytes.data(), &h, sizeof h);
  }
  try {
    effrt::EffxFile file = effrt::EffxFile::fromBytes(
        effrt::bytesFromVector(std::move(bytes)), "f.effx");
    (void)file.manifest().state.size();
  } catch (const effrt::Error &) {
  }
  return 0;
}
