//===- TokenStream.h - Token files for language models ----------*- C++ -*-===//
//
// A token stream is a flat file of little-endian uint16 token ids (the
// nanoGPT ".bin" format). TokenStream maps it read-only; WindowSampler draws
// random windows of T+1 consecutive tokens and splits each into an input
// (tokens [s, s+T)) and a target (tokens [s+1, s+T+1)).
//
// Sampling is reproducible everywhere: starts come from std::mt19937_64,
// whose output sequence the C++ standard fixes, mapped to [0, n) by
// rejection (std::uniform_int_distribution differs between standard
// libraries). The state is (seed, raw draws), so a resumed run continues
// with the same windows.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_TOKENSTREAM_H
#define EFFRT_TOKENSTREAM_H

#include "effrt/File.h"
#include "effrt/Tensor.h"

#include <cstdint>
#include <random>
#include <string>
#include <utility>

namespace effrt {

class TokenStream {
public:
  /// Maps `path`. Throws Error if it cannot be read or has an odd length.
  static TokenStream open(const std::string &path);
  /// Tokens held in memory; `displayName` stands for the path in errors.
  static TokenStream fromBytes(SharedBytes bytes, std::string displayName);

  const std::string &path() const { return path_; }
  uint64_t size() const { return size_; }
  uint16_t operator[](uint64_t i) const;
  /// The little-endian token bytes (2 * size()), page-aligned when mapped.
  const std::byte *bytes() const { return bytes_.data; }
  /// The tokens as a read-only uint16 tensor of shape [size()].
  Tensor tensor() const;

private:
  TokenStream() = default;
  std::string path_;
  SharedBytes bytes_;
  uint64_t size_ = 0;
};

/// Draws (input, target) windows of length seqLen from a TokenStream.
class WindowSampler {
public:
  struct State {
    uint64_t seed = 0;
    /// Raw 64-bit outputs consumed from the generator.
    uint64_t draws = 0;
  };

  /// Throws Error if seqLen < 1 or the stream holds fewer than seqLen + 1
  /// tokens.
  WindowSampler(TokenStream stream, int64_t seqLen, uint64_t seed);

  int64_t seqLen() const { return seqLen_; }
  /// Number of distinct window starts: size - seqLen.
  uint64_t numWindows() const { return numWindows_; }
  const TokenStream &stream() const { return stream_; }

  /// The next random window start, uniform in [0, numWindows()).
  uint64_t nextStart();

  /// Copies the window at `start` into `inputs` and `targets` (seqLen
  /// elements each) as `indexType`: I64, I32 or U16.
  void copyWindow(uint64_t start, DType indexType, void *inputs,
                  void *targets) const;
  /// Draws `batch` windows into row-major [batch, seqLen] buffers.
  void nextBatch(int64_t batch, DType indexType, void *inputs, void *targets);
  /// Same, into new tensors of shape [batch, seqLen].
  std::pair<Tensor, Tensor> nextBatch(int64_t batch,
                                      DType indexType = DType::I64);

  State state() const { return State{seed_, draws_}; }
  /// Continues from a state returned by state(), on the same stream and
  /// seqLen (costs one generator step per recorded draw).
  void setState(const State &state);

private:
  TokenStream stream_;
  int64_t seqLen_;
  uint64_t numWindows_;
  uint64_t seed_;
  uint64_t draws_ = 0;
  std::mt19937_64 rng_;
};

} // namespace effrt

#endif // EFFRT_TOKENSTREAM_H
