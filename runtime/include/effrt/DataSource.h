//===- DataSource.h - The batches a training run consumes -------*- C++ -*-===//
//
// A DataSource copies the batch of a global step into a session's inputs.
// The batch of step i depends only on i (and the source's seed), never on
// what was fed before, so a run resumed from a checkpoint of step k feeds
// exactly the batches an uninterrupted run would have:
//
//   .npz   one array per model input, named as the input; step i reads
//          rows [i*B, (i+1)*B) of every array (B: the input's dim 0).
//   .bin   little-endian uint16 tokens for a model with inputs
//          (tokens [B,T], targets [B,T]); step i draws B random windows
//          of T+1 tokens from a generator seeded with tokenWindowSeed.
//
// Every check (names, dtypes, shapes, enough tokens) happens when a source
// is opened; checkSteps tells whether a range of steps has enough rows.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_DATASOURCE_H
#define EFFRT_DATASOURCE_H

#include "effrt/Effx.h"

#include <cstdint>
#include <memory>
#include <string>

namespace effrt {

class Session;

class DataSource {
public:
  virtual ~DataSource();
  /// The file the batches come from.
  virtual const std::string &path() const = 0;
  /// Throws Error naming the file unless global steps [first, first + count)
  /// can be fed.
  virtual void checkSteps(int64_t first, int64_t count) const = 0;
  /// Copies the batch of global step `step` into the session's inputs.
  virtual void feed(Session &session, int64_t step) = 0;
};

/// An .npz with one array per input of `manifest` (whose file, `effxPath`,
/// errors about the model name). Stored arrays stay mapped; deflated ones
/// are inflated once, here.
std::unique_ptr<DataSource> openNpzSource(const std::string &path,
                                          const EffxManifest &manifest,
                                          const std::string &effxPath);

/// A uint16 token file for a model with two integer inputs (tokens,
/// targets) of one shape [B,T] and dtype int64, int32 or uint16.
std::unique_ptr<DataSource> openTokenSource(const std::string &path,
                                            const EffxManifest &manifest,
                                            const std::string &effxPath,
                                            uint64_t seed);

/// Either of the above: by extension (.npz, .bin), else an .npz if the file
/// starts with a zip signature. Throws Error naming the file otherwise.
std::unique_ptr<DataSource> openDataSource(const std::string &path,
                                           const EffxManifest &manifest,
                                           const std::string &effxPath,
                                           uint64_t seed);

/// The generator seed of the token windows of global step `step`:
/// splitmix64(splitmix64(seed) + step).
uint64_t tokenWindowSeed(uint64_t seed, int64_t step);

} // namespace effrt

#endif // EFFRT_DATASOURCE_H
