//===- DynamicLibrary.cpp - Libraries reached through dlopen --------------===//

#include "effrt/DynamicLibrary.h"

#include "effrt/Error.h"

#include <dlfcn.h>

using namespace effrt;

struct DynamicLibrary::Handle {
  std::string name, fileName;
  void *library = nullptr;
  ~Handle() {
    if (library)
      ::dlclose(library);
  }
};

DynamicLibrary DynamicLibrary::open(const std::string &library,
                                    std::initializer_list<const char *> fileNames) {
  std::string tried, firstError;
  for (const char *fileName : fileNames) {
    ::dlerror();
    void *handle = ::dlopen(fileName, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      auto h = std::make_shared<Handle>();
      h->name = library;
      h->fileName = fileName;
      h->library = handle;
      return DynamicLibrary(std::move(h));
    }
    const char *why = ::dlerror();
    if (firstError.empty())
      firstError = why ? why : "unknown error";
    tried += (tried.empty() ? "" : ", ") + std::string(fileName);
  }
  if (tried.empty())
    fail("cannot load ", library, ": no file names to try");
  fail("cannot load ", library, " (tried ", tried, "): ", firstError);
}

bool DynamicLibrary::available(std::initializer_list<const char *> fileNames) {
  for (const char *fileName : fileNames)
    if (void *handle = ::dlopen(fileName, RTLD_LAZY | RTLD_LOCAL)) {
      ::dlclose(handle);
      return true;
    }
  return false;
}

const std::string &DynamicLibrary::name() const { return handle_->name; }
const std::string &DynamicLibrary::fileName() const {
  return handle_->fileName;
}

void *DynamicLibrary::symbol(const char *symbol) const {
  ::dlerror();
  return ::dlsym(handle_->library, symbol);
}

void *DynamicLibrary::require(const char *symbol) const {
  void *address = this->symbol(symbol);
  if (!address)
    fail(handle_->name, " (", handle_->fileName, ") has no symbol ",
         quoteName(symbol));
  return address;
}
