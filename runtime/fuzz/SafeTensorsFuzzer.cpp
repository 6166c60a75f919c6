//===- SafeTensorsFuzzer.cpp - libFuzzer target for safetensors -----------===//

#include "effrt/Error.h"
#include "effrt/SafeTensors.h"

#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::byte> bytes(size);
  if (size)
    std::memcpy(bytes.data(), data, size);
  try {
    effrt::SafeTensorsFile file = effrt::SafeTensorsFile::fromBytes(
        effrt::bytesFromVector(std::move(bytes)), "f.safetensors");
    for (const auto &[name, tensor] : file.readAll())
      if (tensor.byteSize() &&
          tensor.data()[tensor.byteSize() - 1] == std::byte{0x5a})
        (void)name; // touch the last byte of every tensor
  } catch (const effrt::Error &) {
  }
  return 0;
}
