//===- TokenStream.cpp - Token files for language models ------------------===//

#include "effrt/TokenStream.h"

#include "effrt/Error.h"

#include <cstring>

using namespace effrt;

TokenStream TokenStream::fromBytes(SharedBytes bytes, std::string displayName) {
  if (bytes.size % 2)
    fail(displayName, ": token file has an odd length (", bytes.size,
         " bytes); expected little-endian uint16 tokens");
  TokenStream stream;
  stream.path_ = std::move(displayName);
  stream.bytes_ = std::move(bytes);
  stream.size_ = stream.bytes_.size / 2;
  return stream;
}

TokenStream TokenStream::open(const std::string &path) {
  return fromBytes(mapFile(path), path);
}

uint16_t TokenStream::operator[](uint64_t i) const {
  uint16_t token;
  std::memcpy(&token, bytes_.data + 2 * i, 2);
  return token;
}

Tensor TokenStream::tensor() const {
  return Tensor::view(DType::U16, {static_cast<int64_t>(size_)}, bytes_.data,
                      bytes_.owner);
}

WindowSampler::WindowSampler(TokenStream stream, int64_t seqLen, uint64_t seed)
    : stream_(std::move(stream)), seqLen_(seqLen), seed_(seed), rng_(seed) {
  if (seqLen < 1)
    fail(stream_.path(), ": sequence length must be at least 1, got ", seqLen);
  if (stream_.size() < static_cast<uint64_t>(seqLen) + 1)
    fail(stream_.path(), ": token file holds ", stream_.size(),
         " tokens, fewer than the ", seqLen + 1,
         " needed for one window of sequence length ", seqLen);
  numWindows_ = stream_.size() - static_cast<uint64_t>(seqLen);
}

uint64_t WindowSampler::nextStart() {
  // Lemire's threshold: rejecting raw values below 2^64 mod n leaves a
  // multiple of n equally likely values, so r % n is exactly uniform.
  uint64_t n = numWindows_;
  uint64_t threshold = (0 - n) % n;
  for (;;) {
    uint64_t r = rng_();
    ++draws_;
    if (r >= threshold)
      return r % n;
  }
}

template <typename T>
static void widen(const std::byte *tokens, int64_t count, void *out) {
  auto *o = static_cast<T *>(out);
  for (int64_t i = 0; i < count; ++i) {
    uint16_t token;
    std::memcpy(&token, tokens + 2 * i, 2);
    o[i] = static_cast<T>(token);
  }
}

void WindowSampler::copyWindow(uint64_t start, DType indexType, void *inputs,
                               void *targets) const {
  if (start >= numWindows_)
    fail(stream_.path(), ": window start ", start, " is out of range [0, ",
         numWindows_, ")");
  const std::byte *base = stream_.bytes() + 2 * start;
  switch (indexType) {
  case DType::I64:
    widen<int64_t>(base, seqLen_, inputs);
    widen<int64_t>(base + 2, seqLen_, targets);
    return;
  case DType::I32:
    widen<int32_t>(base, seqLen_, inputs);
    widen<int32_t>(base + 2, seqLen_, targets);
    return;
  case DType::U16:
    std::memcpy(inputs, base, 2 * static_cast<size_t>(seqLen_));
    std::memcpy(targets, base + 2, 2 * static_cast<size_t>(seqLen_));
    return;
  default:
    fail(stream_.path(), ": token windows can be int64, int32 or uint16, not ",
         dtypeName(indexType));
  }
}

void WindowSampler::nextBatch(int64_t batch, DType indexType, void *inputs,
                              void *targets) {
  if (batch < 0)
    fail(stream_.path(), ": batch size must not be negative");
  if (indexType != DType::I64 && indexType != DType::I32 &&
      indexType != DType::U16)
    fail(stream_.path(), ": token windows can be int64, int32 or uint16, not ",
         dtypeName(indexType));
  size_t rowBytes = static_cast<size_t>(seqLen_) * dtypeSize(indexType);
  auto *in = static_cast<std::byte *>(inputs);
  auto *tg = static_cast<std::byte *>(targets);
  for (int64_t b = 0; b < batch; ++b) {
    uint64_t start = nextStart();
    copyWindow(start, indexType, in + b * rowBytes, tg + b * rowBytes);
  }
}

std::pair<Tensor, Tensor> WindowSampler::nextBatch(int64_t batch,
                                                   DType indexType) {
  if (batch < 0)
    fail(stream_.path(), ": batch size must not be negative");
  Tensor inputs = Tensor::allocate(indexType, {batch, seqLen_});
  Tensor targets = Tensor::allocate(indexType, {batch, seqLen_});
  nextBatch(batch, indexType, inputs.mutableData(), targets.mutableData());
  return {std::move(inputs), std::move(targets)};
}

void WindowSampler::setState(const State &state) {
  seed_ = state.seed;
  rng_.seed(state.seed);
  rng_.discard(state.draws);
  draws_ = state.draws;
}
