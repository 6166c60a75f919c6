//===- SharedObject.h - Loading code held in memory -------------*- C++ -*-===//

#ifndef EFFRT_SRC_CPU_SHAREDOBJECT_H
#define EFFRT_SRC_CPU_SHAREDOBJECT_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace effrt::cpu {

/// A shared object loaded from bytes: written to an anonymous file
/// (memfd_create, else a temporary file removed on unload) and dlopen'ed
/// RTLD_NOW | RTLD_LOCAL, so every load is an independent copy. Unloaded
/// when destroyed.
class SharedObject {
public:
  /// Throws Error "LABEL: cannot load the code section: <dlerror>".
  static std::unique_ptr<SharedObject> load(const std::string &label,
                                            const std::byte *data,
                                            uint64_t size);
  ~SharedObject();
  SharedObject(const SharedObject &) = delete;
  SharedObject &operator=(const SharedObject &) = delete;

  /// The address of `symbol`, or null; `why` gets dlerror()'s text.
  void *symbol(const std::string &symbol, std::string *why = nullptr) const;

private:
  SharedObject() = default;
  void *library_ = nullptr;
  // The descriptor whose /proc/self/fd path names the library. It stays open
  // while the library is loaded: the dynamic loader recognises libraries by
  // path, so the number must not be reused for another model meanwhile.
  int fd_ = -1;
  std::string tempPath_;
};

} // namespace effrt::cpu

#endif // EFFRT_SRC_CPU_SHAREDOBJECT_H
