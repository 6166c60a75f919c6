//===- ResidentMemory.cpp - The process's resident set size ---------------===//

#include "ResidentMemory.h"

#include <cstdio>

#include <fcntl.h>
#include <unistd.h>

using namespace effrt;

ResidentMemory::ResidentMemory()
    : fd_(::open("/proc/self/statm", O_RDONLY | O_CLOEXEC)) {
  long page = ::sysconf(_SC_PAGESIZE);
  pageSize_ = page > 0 ? static_cast<uint64_t>(page) : 4096;
}

ResidentMemory::~ResidentMemory() {
  if (fd_ >= 0)
    ::close(fd_);
}

uint64_t ResidentMemory::read() const {
  if (fd_ < 0)
    return 0;
  char buf[128];
  ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(buf, "%llu %llu", &size, &resident) != 2)
    return 0;
  return resident * pageSize_;
}
