//===- StepLog.cpp - The JSONL log of a training run ----------------------===//

#include "StepLog.h"

#include "effrt/Error.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>

using namespace effrt;

StepLog::StepLog(const std::string &path, bool append) : path_(path) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file_)
    fail(path, ": cannot open the log: ", errnoMessage(errno));
}

StepLog::~StepLog() {
  if (file_)
    std::fclose(file_);
}

void StepLog::write(const StepRecord &r) {
  char lossText[32];
  if (std::isfinite(r.loss))
    std::snprintf(lossText, sizeof lossText, "%.9g",
                  static_cast<double>(r.loss));
  else
    std::snprintf(lossText, sizeof lossText, "null");
  int n = std::fprintf(file_,
                       "{\"step\": %" PRId64 ", \"loss\": %s, \"time_ms\": "
                       "%.4f, \"samples_per_s\": %.2f, \"rss_bytes\": %" PRIu64
                       ", \"allocated_bytes\": %" PRIu64,
                       r.step, lossText, r.timeMs, r.samplesPerS, r.rssBytes,
                       r.allocatedBytes);
  if (n >= 0 && r.deviceBytes)
    n = std::fprintf(file_, ", \"device_bytes\": %" PRIu64, r.deviceBytes);
  if (n >= 0 && r.hostBytes)
    n = std::fprintf(file_, ", \"host_bytes\": %" PRIu64, r.hostBytes);
  if (n >= 0 && r.lossScale)
    n = std::fprintf(file_,
                     ", \"loss_scale\": %.9g, \"step_skipped\": %s, "
                     "\"skipped_steps\": %" PRId64,
                     static_cast<double>(r.lossScale->scale),
                     r.lossScale->skipped ? "true" : "false",
                     r.lossScale->skippedSteps);
  for (size_t i = 0; n >= 0 && i < r.ranks.size(); ++i) {
    const RankMemory &m = r.ranks[i];
    n = std::fprintf(file_,
                     "%s{\"rank\": %zu, \"allocated_bytes\": %" PRIu64
                     ", \"rss_bytes\": %" PRIu64,
                     i == 0 ? ", \"ranks\": [" : ", ", i, m.allocatedBytes,
                     m.rssBytes);
    if (n >= 0 && m.deviceBytes)
      n = std::fprintf(file_, ", \"device_bytes\": %" PRIu64, m.deviceBytes);
    if (n >= 0)
      n = std::fprintf(file_, i + 1 == r.ranks.size() ? "}]" : "}");
  }
  if (n >= 0)
    n = std::fprintf(file_, "}\n");
  if (n < 0 || std::fflush(file_) != 0)
    fail(path_, ": cannot write the log: ", errnoMessage(errno));
}
