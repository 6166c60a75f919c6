//===- StopSignals.h - SIGINT/SIGTERM as stop requests ----------*- C++ -*-===//
//
// While a StopSignals exists, SIGINT and SIGTERM only record the signal
// (the handler is async-signal-safe: it stores to a sig_atomic_t); a
// trainer's run looks at it between steps. Instances share one installation:
// the first installs the handlers, the last restores the previous ones.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_TRAIN_STOPSIGNALS_H
#define EFFRT_SRC_TRAIN_STOPSIGNALS_H

namespace effrt {

class StopSignals {
public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals &) = delete;
  StopSignals &operator=(const StopSignals &) = delete;

  /// The signal received since the last take(), else 0.
  static int pending();
  /// pending(), and forgets it.
  static int take();
};

} // namespace effrt

#endif // EFFRT_SRC_TRAIN_STOPSIGNALS_H
