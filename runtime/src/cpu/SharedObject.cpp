//===- SharedObject.cpp - Loading code held in memory ---------------------===//

#include "SharedObject.h"

#include "effrt/Error.h"

#include <cerrno>
#include <cstdlib>
#include <vector>

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace effrt;
using namespace effrt::cpu;

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_EXEC
// Linux 6.3+: ask for an executable memfd where vm.memfd_noexec would
// otherwise make it non-executable. Older kernels reject the flag (EINVAL).
#define MFD_EXEC 0x0010U
#endif

static bool writeAllBytes(int fd, const std::byte *data, uint64_t size) {
  while (size) {
    size_t chunk = size < (uint64_t(1) << 30) ? size : (size_t(1) << 30);
    ssize_t n = ::write(fd, data, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += n;
    size -= static_cast<uint64_t>(n);
  }
  return true;
}

std::unique_ptr<SharedObject> SharedObject::load(const std::string &label,
                                                 const std::byte *data,
                                                 uint64_t size) {
  std::unique_ptr<SharedObject> so(new SharedObject);
  std::string libraryPath;
  // EFFRT_KEEP_CODE=DIR: the code goes to a file in DIR that outlives the
  // run, so profilers and debuggers read its symbols (each outlined loop
  // nest is a function, effx_step_kernel_N) after the process is gone; a
  // memfd's symbols are lost with it, and perf would show one unnamed
  // "memfd:effx-code (deleted)".
  const char *keepDir = std::getenv("EFFRT_KEEP_CODE");
  int fd = -1;
  if (keepDir && *keepDir) {
    std::string pattern = std::string(keepDir) + "/effx-code-" +
                          std::to_string(::getpid()) + "-XXXXXX.so";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    fd = ::mkstemps(buf.data(), 3);
    if (fd < 0)
      fail(label, ": EFFRT_KEEP_CODE: cannot create a file in ", keepDir,
           ": ", errnoMessage(errno));
    so->fd_ = fd;
    libraryPath = buf.data();
  } else {
    fd = ::memfd_create("effx-code", MFD_CLOEXEC | MFD_EXEC);
    if (fd < 0 && errno == EINVAL)
      fd = ::memfd_create("effx-code", MFD_CLOEXEC);
  }
  if (!libraryPath.empty()) {
  } else if (fd >= 0) {
    so->fd_ = fd;
    libraryPath = "/proc/self/fd/" + std::to_string(fd);
  } else {
    // No memfd (old kernel, seccomp): a temporary file, removed on unload.
    const char *dir = std::getenv("TMPDIR");
    std::string pattern =
        std::string(dir && *dir ? dir : "/tmp") + "/effx-code-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    fd = ::mkstemp(buf.data());
    if (fd < 0)
      fail(label, ": cannot create a file for the code section: ",
           errnoMessage(errno));
    so->fd_ = fd;
    so->tempPath_ = libraryPath = buf.data();
  }
  if (!writeAllBytes(fd, data, size))
    fail(label, ": cannot write the code section to ", libraryPath, ": ",
         errnoMessage(errno));

  ::dlerror();
  so->library_ = ::dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!so->library_) {
    const char *why = ::dlerror();
    fail(label, ": cannot load the code section: ",
         why ? why : "unknown error");
  }
  return so;
}

SharedObject::~SharedObject() {
  if (library_)
    ::dlclose(library_);
  if (fd_ >= 0)
    ::close(fd_);
  if (!tempPath_.empty())
    ::unlink(tempPath_.c_str());
}

void *SharedObject::symbol(const std::string &symbol, std::string *why) const {
  ::dlerror();
  void *address = ::dlsym(library_, symbol.c_str());
  if (!address && why) {
    const char *text = ::dlerror();
    *why = text ? text : "";
  }
  return address;
}
