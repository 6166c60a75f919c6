//===- LossScaleWatch.h - effrun's view of in-graph loss scaling -*- C++ -*-===//
//
// A step compiled with eff-loss-scaling keeps its scale and skip counters as
// state (loss_scale.*). effrun reads them after each step for the log, and
// stops a run whose gradients keep overflowing at the smallest scale it can
// reach: without that, every step would be skipped and nothing trained.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRUN_LOSSSCALEWATCH_H
#define EFFRUN_LOSSSCALEWATCH_H

#include "effrt/Session.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace effrun {

class LossScaleWatch {
public:
  /// Overflowing steps in a row at the floor (the minimum or static scale)
  /// after which the run stops.
  static constexpr int64_t kStepsAtFloor = 10;
  /// Overflowing steps in a row after which the run stops without a floor
  /// (the scale has then fallen by 2^50).
  static constexpr int64_t kStepsWithoutFloor = 50;

  explicit LossScaleWatch(const effrt::Session &session)
      : session_(session), config_(session.manifest().lossScaling) {}

  bool enabled() const { return config_.has_value(); }

  struct Reading {
    float scale;        // the scale after this step's update
    bool skipped;       // this step's optimizer update was skipped
    int64_t skippedSteps;
  };

  /// The state after a step (call only when enabled()).
  Reading read() const {
    return {session_.readState("loss_scale.scale").load<float>(0),
            session_.readState("loss_scale.last_step_skipped").load<int64_t>(0) != 0,
            session_.readState("loss_scale.skipped_steps").load<int64_t>(0)};
  }

  /// Records global step `step` (`scaleBefore`: the scale it ran with);
  /// returns a message when the run must stop.
  std::optional<std::string> observe(int64_t step, const Reading &r,
                                     float scaleBefore) {
    if (!r.skipped) {
      inARow_ = atFloorInARow_ = 0;
      return std::nullopt;
    }
    if (inARow_++ == 0)
      firstInARow_ = step;
    bool atFloor = !config_->dynamic ||
                   (config_->minScale > 0 && scaleBefore <= config_->minScale);
    atFloorInARow_ = atFloor ? atFloorInARow_ + 1 : 0;
    if (atFloorInARow_ < kStepsAtFloor && inARow_ < kStepsWithoutFloor)
      return std::nullopt;
    char scale[32];
    std::snprintf(scale, sizeof scale, "%g", static_cast<double>(scaleBefore));
    return "loss scaling skipped " + std::to_string(inARow_) +
           " optimizer steps in a row (global steps " +
           std::to_string(firstInARow_) + ".." + std::to_string(step) +
           "): the gradients are inf/NaN even at loss scale " + scale +
           (atFloor ? (config_->dynamic ? " (the minimum)" : " (static)")
                    : "") +
           "; training is not progressing (check the data and the learning "
           "rate, or use --precision bf16)";
  }

private:
  const effrt::Session &session_;
  std::optional<effrt::EffxManifest::LossScaling> config_;
  int64_t inARow_ = 0, atFloorInARow_ = 0, firstInARow_ = 0;
};

} // namespace effrun

#endif // EFFRUN_LOSSSCALEWATCH_H
