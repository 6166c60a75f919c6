//===- RobustnessTest.cpp - Corrupt inputs throw Error, never crash -------===//
//
// Every truncation and many single-byte corruptions of valid files must be
// read either successfully or with an effrt::Error. Built with
// -DEFFRT_SANITIZE=ON this also shows they cause no undefined behaviour.
//
//===----------------------------------------------------------------------===//

#include "TestData.h"
#include "UnitTest.h"

#include "effrt/Npy.h"
#include "effrt/Npz.h"
#include "effrt/SafeTensors.h"

#include <cstring>

using namespace effrt;
using namespace effrt::test;

static void readNpzFully(const std::vector<std::byte> &bytes) {
  NpzFile file = NpzFile::fromBytes(bytesFromVector(bytes), "f.npz");
  for (const std::string &name : file.names()) {
    file.info(name);
    file.read(name);
  }
}

static void readSafeTensorsFully(const std::vector<std::byte> &bytes) {
  SafeTensorsFile file =
      SafeTensorsFile::fromBytes(bytesFromVector(bytes), "f.st");
  file.readAll();
}

/// Runs `read` on every truncation and on byte corruptions of `bytes`;
/// returns how many of the variants were rejected.
template <typename Read>
static size_t mutate(const std::vector<std::byte> &bytes, Read read,
                     bool allTruncationsFail) {
  size_t rejected = 0;
  auto attempt = [&](const std::vector<std::byte> &variant) {
    try {
      read(variant);
      return true;
    } catch (const Error &) {
      ++rejected;
      return false;
    }
  };
  for (size_t n = 0; n < bytes.size(); ++n) {
    bool ok = attempt(std::vector<std::byte>(bytes.begin(), bytes.begin() + n));
    if (ok && allTruncationsFail)
      checkFailed(__FILE__, __LINE__,
                  "truncation to " + std::to_string(n) + " bytes accepted");
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (std::byte x : {std::byte{0x01}, std::byte{0x80}, std::byte{0xff}}) {
      std::vector<std::byte> variant = bytes;
      variant[i] ^= x;
      attempt(variant);
    }
    std::vector<std::byte> variant = bytes;
    variant[i] = std::byte{0xff};
    attempt(variant);
  }
  return rejected;
}

static NamedTensors smallArrays() {
  return {{"x", patterned(DType::F32, {2, 3})},
          {"s", patterned(DType::I64, {})},
          {"b", patterned(DType::Bool, {5})}};
}

TEST(npzSurvivesCorruption) {
  for (int variant = 0; variant < 4; ++variant) {
    NpzWriteOptions options{(variant & 1) != 0, (variant & 2) != 0};
    std::string path = tempPath("fuzz" + std::to_string(variant) + ".npz");
    writeNpz(path, smallArrays(), options);
    size_t rejected = mutate(readFileBytes(path), readNpzFully, true);
    CHECK(rejected > 0);
  }
}

TEST(safetensorsSurvivesCorruption) {
  std::string path = tempPath("fuzz.safetensors");
  NamedTensors tensors = smallArrays();
  tensors.emplace_back("h", patterned(DType::BF16, {3}));
  writeSafeTensors(path, tensors, {{"k", "v"}});
  // Every proper prefix is rejected: the tensors must fill the file exactly.
  CHECK(mutate(readFileBytes(path), readSafeTensorsFully, true) > 0);
}

TEST(npySurvivesCorruption) {
  std::string header = formatNpyHeader(DType::F32, {4, 4});
  std::vector<std::byte> bytes(header.size());
  std::memcpy(bytes.data(), header.data(), header.size());
  size_t rejected = mutate(
      bytes,
      [](const std::vector<std::byte> &b) {
        parseNpyHeader(b.data(), b.size(), "f.npy");
      },
      true);
  CHECK(rejected > 0);
}
