//===- NpzFuzzer.cpp - libFuzzer target for the .npz reader ---------------===//
//
// Any input must be read or rejected with effrt::Error; anything else
// (a crash, a sanitizer report, another exception) is a bug.
//
//===----------------------------------------------------------------------===//

#include "effrt/Error.h"
#include "effrt/Npz.h"

#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::byte> bytes(size);
  if (size)
    std::memcpy(bytes.data(), data, size);
  try {
    effrt::NpzFile file = effrt::NpzFile::fromBytes(
        effrt::bytesFromVector(std::move(bytes)), "f.npz");
    for (const std::string &name : file.names()) {
      try {
        file.info(name);
        file.read(name);
      } catch (const effrt::Error &) {
      }
    }
  } catch (const effrt::Error &) {
  }
  return 0;
}
