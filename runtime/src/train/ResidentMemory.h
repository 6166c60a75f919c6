//===- ResidentMemory.h - The process's resident set size -------*- C++ -*-===//

#ifndef EFFRT_SRC_TRAIN_RESIDENTMEMORY_H
#define EFFRT_SRC_TRAIN_RESIDENTMEMORY_H

#include <cstdint>

namespace effrt {

/// Reads the resident set size from /proc/self/statm, kept open so a read
/// costs one pread (0 where unavailable).
class ResidentMemory {
public:
  ResidentMemory();
  ~ResidentMemory();
  ResidentMemory(const ResidentMemory &) = delete;
  ResidentMemory &operator=(const ResidentMemory &) = delete;

  uint64_t read() const;

private:
  int fd_;
  uint64_t pageSize_;
};

} // namespace effrt

#endif // EFFRT_SRC_TRAIN_RESIDENTMEMORY_H
