//===- StepLog.h - The JSONL log of a training run --------------*- C++ -*-===//
//
// One JSON object per step, flushed line by line, so a killed run keeps
// every step it logged:
//
//   {"step": 0, "loss": 2.32818437, "time_ms": 0.5071, "samples_per_s":
//    63104.71, "rss_bytes": 9252864, "allocated_bytes": 231872}
//
// plus "loss_scale", "step_skipped" and "skipped_steps" for a step compiled
// with loss scaling, and "device_bytes" where the device measures what the
// allocation took (a GPU: the drop of its free memory). "allocated_bytes"
// counts the regions and the libraries' workspace: the plan's total. A loss that is not finite is written as null.
//
// A run of N > 1 ranks (rank 0 writes) adds every rank's memory after the
// step, gathered through the run's Collectives:
//
//   "ranks": [{"rank": 0, "allocated_bytes": 231872, "rss_bytes": 9252864},
//             {"rank": 1, ...}]
//
// ("device_bytes" too where measured).
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_TRAIN_STEPLOG_H
#define EFFRT_SRC_TRAIN_STEPLOG_H

#include "effrt/Trainer.h"

#include <cstdio>
#include <string>

namespace effrt {

class StepLog {
public:
  /// Creates (or, with `append`, extends) `path`. Throws Error naming it.
  StepLog(const std::string &path, bool append);
  ~StepLog();
  StepLog(const StepLog &) = delete;
  StepLog &operator=(const StepLog &) = delete;

  void write(const StepRecord &record);

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

} // namespace effrt

#endif // EFFRT_SRC_TRAIN_STEPLOG_H
