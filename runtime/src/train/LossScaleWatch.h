//===- LossScaleWatch.h - Watching in-graph loss scaling --------*- C++ -*-===//
//
// A step compiled with eff-loss-scaling keeps its scale and skip counters as
// state (loss_scale.*). The trainer reads them after each step for the
// record, and stops a run whose gradients keep overflowing at the smallest
// scale it can reach: without that, every step would be skipped and nothing
// trained.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_TRAIN_LOSSSCALEWATCH_H
#define EFFRT_SRC_TRAIN_LOSSSCALEWATCH_H

#include "effrt/Effx.h"
#include "effrt/Trainer.h"

#include <cstdint>
#include <optional>
#include <string>

namespace effrt {

class LossScaleWatch {
public:
  /// Overflowing steps in a row at the floor (the minimum or static scale)
  /// after which the run stops.
  static constexpr int64_t kStepsAtFloor = 10;
  /// Overflowing steps in a row after which the run stops without a floor
  /// (the scale has then fallen by 2^50).
  static constexpr int64_t kStepsWithoutFloor = 50;

  explicit LossScaleWatch(
      std::optional<EffxManifest::LossScaling> config)
      : config_(config) {}

  bool enabled() const { return config_.has_value(); }

  /// The scale the next step runs with (call only when enabled()).
  static float scale(const Session &session);
  /// The state after a step (call only when enabled()).
  static LossScaleReading read(const Session &session);

  /// Records global step `step` (`scaleBefore`: the scale it ran with);
  /// returns a message when the run must stop.
  std::optional<std::string> observe(int64_t step, const LossScaleReading &r,
                                     float scaleBefore);

private:
  std::optional<EffxManifest::LossScaling> config_;
  int64_t inARow_ = 0, atFloorInARow_ = 0, firstInARow_ = 0;
};

} // namespace effrt

#endif // EFFRT_SRC_TRAIN_LOSSSCALEWATCH_H
