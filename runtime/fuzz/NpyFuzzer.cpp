//===- NpyFuzzer.cpp - libFuzzer target for .npy headers ------------------===//

#include "effrt/Error.h"
#include "effrt/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    effrt::parseNpyHeader(reinterpret_cast<const std::byte *>(data), size,
                          "f.npy");
  } catch (const effrt::Error &) {
  }
  return 0;
}
