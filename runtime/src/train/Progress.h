//===- Progress.h - Progress of a training run on stderr --------*- C++ -*-===//
//
// On a terminal, one line redrawn at most every 100 ms:
//   step 12/100 [###.....] loss 2.3456  3.10 ms/step  10322 samples/s
// otherwise plain lines for about 50 steps of the run and its last one:
//   step 12 loss 2.3456 3.10 ms/step 10322 samples/s
// ms/step and samples/s are averages since the previous line.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_TRAIN_PROGRESS_H
#define EFFRT_SRC_TRAIN_PROGRESS_H

#include <chrono>
#include <cstdint>

namespace effrt {

class Progress {
public:
  /// A run of `count` steps from global step `first`; prints nothing unless
  /// `enabled`.
  Progress(int64_t first, int64_t count, int64_t samplesPerStep, bool enabled);
  /// Ends a partly drawn bar.
  ~Progress() { finish(); }
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  /// Global step `step` took `ms` and gave `loss`.
  void update(int64_t step, float loss, double ms);
  /// Ends a partly drawn bar (a run stopped or failed), so what is printed
  /// next starts its own line.
  void finish();

private:
  int64_t first_, count_, samples_;
  bool enabled_, tty_;
  int64_t every_;
  bool drawn_ = false;
  bool barOpen_ = false;
  std::chrono::steady_clock::time_point lastDraw_;
  double windowMs_ = 0;
  int64_t windowSteps_ = 0;
};

} // namespace effrt

#endif // EFFRT_SRC_TRAIN_PROGRESS_H
