//===- File.cpp - Mapped input files and atomic output files --------------===//

#include "effrt/File.h"

#include "effrt/Error.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace effrt;

namespace {
/// Unmaps a whole-file mapping when the last view goes away.
class Mapping {
public:
  Mapping(void *address, size_t size) : address_(address), size_(size) {}
  ~Mapping() { ::munmap(address_, size_); }
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;

private:
  void *address_;
  size_t size_;
};

/// Closes a descriptor on scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};
} // namespace

SharedBytes effrt::mapFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(path, ": cannot open: ", errnoMessage(errno));
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    fail(path, ": cannot stat: ", errnoMessage(errno));
  if (S_ISDIR(st.st_mode))
    fail(path, ": is a directory");
  if (!S_ISREG(st.st_mode))
    fail(path, ": not a regular file");
  if (st.st_size == 0)
    return SharedBytes{};
  if (static_cast<uint64_t>(st.st_size) > SIZE_MAX)
    fail(path, ": file is too large to map");
  auto size = static_cast<size_t>(st.st_size);
  void *address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (address == MAP_FAILED)
    fail(path, ": cannot map: ", errnoMessage(errno));
  auto mapping = std::make_shared<Mapping>(address, size);
  return SharedBytes{static_cast<const std::byte *>(address), size,
                     std::move(mapping)};
}

SharedBytes effrt::bytesFromVector(std::vector<std::byte> bytes) {
  auto owner = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  return SharedBytes{owner->data(), owner->size(), owner};
}

//===----------------------------------------------------------------------===//
// AtomicFileWriter
//===----------------------------------------------------------------------===//

static constexpr size_t kBufferSize = 1 << 20;

static std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  if (path_.empty())
    fail("output path is empty");
  tempPath_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ =
      ::open(tempPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0)
    fail(path_, ": cannot create ", tempPath_, ": ", errnoMessage(errno));
  buffer_.reserve(kBufferSize);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!committed_)
    ::unlink(tempPath_.c_str());
}

void AtomicFileWriter::writeAll(const void *data, size_t size) {
  const auto *p = static_cast<const char *>(data);
  while (size) {
    // Linux writes at most ~2 GiB per call.
    size_t chunk = size < (size_t(1) << 30) ? size : (size_t(1) << 30);
    ssize_t n = ::write(fd_, p, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail(path_, ": cannot write ", tempPath_, ": ", errnoMessage(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFileWriter::flush() {
  if (!buffer_.empty())
    writeAll(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFileWriter::write(const void *data, size_t size) {
  if (fd_ < 0)
    fail(path_, ": write after commit");
  if (buffer_.size() + size > kBufferSize)
    flush();
  if (size >= kBufferSize) {
    writeAll(data, size);
  } else {
    const auto *p = static_cast<const std::byte *>(data);
    buffer_.insert(buffer_.end(), p, p + size);
  }
  offset_ += size;
}

void AtomicFileWriter::writeZeros(size_t count) {
  static const std::byte zeros[4096] = {};
  while (count) {
    size_t n = count < sizeof(zeros) ? count : sizeof(zeros);
    write(zeros, n);
    count -= n;
  }
}

void AtomicFileWriter::writeAt(uint64_t offset, const void *data, size_t size) {
  if (fd_ < 0)
    fail(path_, ": write after commit");
  if (offset + size > offset_)
    fail(path_, ": internal error: patch beyond the bytes written");
  flush();
  const auto *p = static_cast<const char *>(data);
  while (size) {
    ssize_t n = ::pwrite(fd_, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail(path_, ": cannot write ", tempPath_, ": ", errnoMessage(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (fd_ < 0)
    fail(path_, ": committed twice");
  flush();
  if (::fsync(fd_) != 0)
    fail(path_, ": cannot sync ", tempPath_, ": ", errnoMessage(errno));
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0)
    fail(path_, ": cannot close ", tempPath_, ": ", errnoMessage(errno));
  if (::rename(tempPath_.c_str(), path_.c_str()) != 0)
    fail(path_, ": cannot rename ", tempPath_,
         " over it: ", errnoMessage(errno));
  committed_ = true;
  // Make the rename itself durable. Some file systems cannot fsync a
  // directory (EINVAL); the data is then as durable as they allow.
  std::string dir = directoryOf(path_);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    fail(path_, ": cannot open directory ", dir, ": ", errnoMessage(errno));
  FdCloser closer{dfd};
  if (::fsync(dfd) != 0 && errno != EINVAL && errno != EROFS)
    fail(path_, ": cannot sync directory ", dir, ": ", errnoMessage(errno));
}
