//===- TokenStreamTest.cpp - Token files and window sampling --------------===//

#include "UnitTest.h"

#include "effrt/TokenStream.h"

#include <cstring>
#include <set>

using namespace effrt;
using namespace effrt::test;

/// Writes tokens 0, 1, ..., n-1 (mod 65536) as a .bin file.
static std::string writeTokens(const std::string &name, size_t n) {
  std::vector<std::byte> bytes(2 * n);
  for (size_t i = 0; i < n; ++i) {
    auto t = static_cast<uint16_t>(i * 7 % 65536);
    std::memcpy(bytes.data() + 2 * i, &t, 2);
  }
  std::string path = tempPath(name);
  writeFileBytes(path, bytes);
  return path;
}

TEST(mt19937_64IsTheStandardOne) {
  // [rand.predef]: the 10000th output of a default-constructed mt19937_64.
  std::mt19937_64 rng;
  rng.discard(9999);
  CHECK_EQ(rng(), 9981545732273789042ull);
}

TEST(tokenStreamMapsTokens) {
  TokenStream s = TokenStream::open(writeTokens("t.bin", 100));
  CHECK_EQ(s.size(), 100u);
  CHECK_EQ(s[3], 21);
  Tensor t = s.tensor();
  CHECK(t.dtype() == DType::U16);
  CHECK_EQ(t.shape(), Shape({100}));
  CHECK_EQ(t.load<uint16_t>(99), 693);
}

TEST(tokenStreamErrors) {
  std::string odd = tempPath("odd.bin");
  writeFileBytes(odd, std::vector<std::byte>(11));
  CHECK_ERROR(TokenStream::open(odd),
              "odd.bin: token file has an odd length (11 bytes)");
  TokenStream small = TokenStream::open(writeTokens("small.bin", 8));
  CHECK_ERROR(WindowSampler(small, 8, 1),
              "small.bin: token file holds 8 tokens, fewer than the 9 needed");
  CHECK_ERROR(WindowSampler(small, 0, 1), "sequence length must be at least 1");
  std::string empty = tempPath("empty.bin");
  writeFileBytes(empty, {});
  CHECK_ERROR(WindowSampler(TokenStream::open(empty), 1, 1), "holds 0 tokens");
  WindowSampler one(small, 7, 1); // exactly T+1 tokens: one window
  CHECK_EQ(one.numWindows(), 1u);
  CHECK_EQ(one.nextStart(), 0u);
  int64_t in[7], tg[7];
  CHECK_ERROR(one.copyWindow(1, DType::I64, in, tg),
              "window start 1 is out of range");
  CHECK_ERROR(one.nextBatch(1, DType::F32, in, tg),
              "int64, int32 or uint16, not float32");
}

TEST(windowsAreShiftedPairs) {
  TokenStream s = TokenStream::open(writeTokens("w.bin", 1000));
  WindowSampler sampler(s, 16, 42);
  auto [inputs, targets] = sampler.nextBatch(8);
  CHECK_EQ(inputs.shape(), Shape({8, 16}));
  CHECK(inputs.dtype() == DType::I64);
  for (int64_t b = 0; b < 8; ++b) {
    int64_t first = inputs.load<int64_t>(b * 16);
    uint64_t start = first / 7; // tokens are 7*i for i < 1000
    for (int64_t t = 0; t < 16; ++t) {
      CHECK_EQ(inputs.load<int64_t>(b * 16 + t), s[start + t]);
      CHECK_EQ(targets.load<int64_t>(b * 16 + t), s[start + t + 1]);
    }
  }
  auto [in32, tg32] = WindowSampler(s, 16, 42).nextBatch(8, DType::I32);
  for (int64_t i = 0; i < 8 * 16; ++i) {
    CHECK_EQ(int64_t(in32.load<int32_t>(i)), inputs.load<int64_t>(i));
    CHECK_EQ(int64_t(tg32.load<int32_t>(i)), targets.load<int64_t>(i));
  }
  auto [in16, tg16] = WindowSampler(s, 16, 42).nextBatch(8, DType::U16);
  CHECK_EQ(int64_t(in16.load<uint16_t>(17)), inputs.load<int64_t>(17));
}

TEST(samplingIsDeterministicAndResumable) {
  TokenStream s = TokenStream::open(writeTokens("d.bin", 5000));
  WindowSampler a(s, 32, 1234), b(s, 32, 1234), c(s, 32, 1235);
  std::vector<uint64_t> starts;
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    starts.push_back(a.nextStart());
    CHECK_EQ(starts.back(), b.nextStart());
    differs |= starts.back() != c.nextStart();
  }
  CHECK(differs);
  // Golden values: changing them breaks resuming runs started before.
  WindowSampler golden(s, 32, 1234);
  CHECK_EQ(golden.nextStart(), starts[0]);
  CHECK_EQ(starts[0], 1448u);
  CHECK_EQ(starts[1], 3610u);
  CHECK_EQ(starts[2], 1382u);

  WindowSampler::State mid = a.state();
  CHECK_EQ(mid.seed, 1234u);
  CHECK_EQ(mid.draws, 100u);
  std::vector<uint64_t> next;
  for (int i = 0; i < 10; ++i)
    next.push_back(a.nextStart());
  WindowSampler resumed(s, 32, 999);
  resumed.setState(mid);
  for (int i = 0; i < 10; ++i)
    CHECK_EQ(resumed.nextStart(), next[i]);
}

TEST(samplingCoversEveryStartUniformly) {
  TokenStream s = TokenStream::open(writeTokens("u.bin", 13));
  WindowSampler sampler(s, 3, 7); // 10 starts
  std::vector<int> counts(10);
  for (int i = 0; i < 100000; ++i) {
    uint64_t start = sampler.nextStart();
    CHECK(start < 10);
    ++counts[start];
  }
  for (int count : counts)
    CHECK(count > 9500 && count < 10500);
}
