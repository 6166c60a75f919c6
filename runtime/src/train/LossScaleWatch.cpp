//===- LossScaleWatch.cpp - Watching in-graph loss scaling ----------------===//

#include "LossScaleWatch.h"

#include "effrt/Session.h"

#include <cstdio>

using namespace effrt;

float LossScaleWatch::scale(const Session &session) {
  return session.readState("loss_scale.scale").load<float>(0);
}

LossScaleReading LossScaleWatch::read(const Session &session) {
  LossScaleReading r;
  r.scale = session.readState("loss_scale.scale").load<float>(0);
  r.skipped =
      session.readState("loss_scale.last_step_skipped").load<int64_t>(0) != 0;
  r.skippedSteps = session.readState("loss_scale.skipped_steps").load<int64_t>(0);
  return r;
}

std::optional<std::string>
LossScaleWatch::observe(int64_t step, const LossScaleReading &r,
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
         (atFloor ? (config_->dynamic ? " (the minimum)" : " (static)") : "") +
         "; training is not progressing (check the data and the learning "
         "rate, or use --precision bf16)";
}
