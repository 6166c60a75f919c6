//===- Progress.cpp - Progress of a training run on stderr ----------------===//

#include "Progress.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include <unistd.h>

using namespace effrt;

Progress::Progress(int64_t first, int64_t count, int64_t samplesPerStep,
                   bool enabled)
    : first_(first), count_(count), samples_(samplesPerStep),
      enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1),
      every_(std::max<int64_t>(1, (count + 49) / 50)) {}

void Progress::update(int64_t step, float loss, double ms) {
  if (!enabled_)
    return;
  windowMs_ += ms;
  ++windowSteps_;
  int64_t done = step - first_ + 1;
  bool last = done == count_;
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (!last && drawn_ && now - lastDraw_ < std::chrono::milliseconds(100))
      return;
    double avg = windowMs_ / windowSteps_;
    constexpr int kWidth = 24;
    int filled =
        static_cast<int>(kWidth * done / std::max<int64_t>(count_, 1));
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr,
                 "\rstep %" PRId64 "/%" PRId64 " [%s] loss %.4f  %.2f ms/step"
                 "  %.0f samples/s\x1b[K",
                 step + 1, first_ + count_, bar.c_str(),
                 static_cast<double>(loss), avg,
                 avg > 0 ? samples_ * 1000.0 / avg : 0.0);
    if (last)
      std::fputc('\n', stderr);
    barOpen_ = !last;
    std::fflush(stderr);
  } else {
    if (!last && (done - 1) % every_ != 0)
      return;
    double avg = windowMs_ / windowSteps_;
    std::fprintf(stderr,
                 "step %" PRId64 " loss %.4f %.2f ms/step %.0f samples/s\n",
                 step, static_cast<double>(loss), avg,
                 avg > 0 ? samples_ * 1000.0 / avg : 0.0);
  }
  lastDraw_ = now;
  drawn_ = true;
  windowMs_ = 0;
  windowSteps_ = 0;
}

void Progress::finish() {
  if (barOpen_)
    std::fputc('\n', stderr);
  barOpen_ = false;
}
