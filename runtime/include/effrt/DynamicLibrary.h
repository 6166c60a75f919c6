//===- DynamicLibrary.h - Libraries reached through dlopen ------*- C++ -*-===//
//
// Backends whose libraries may be absent (the CUDA driver, NCCL, MPI) reach
// them at run time, so libeffrt and effrun build and run on machines
// without them: a DynamicLibrary opens the first of several file names, and
// a symbol table — a struct of function pointers declared once from a list
// of signatures — is filled from it, failing with one line that names the
// library and the missing symbol.
//
//   #define EFFRT_LIBM_SYMBOLS(X)                                         \
//     X(cos, double, double)                                              \
//     X(ldexp, double, double, int)
//   EFFRT_SYMBOL_TABLE(LibmSymbols, EFFRT_LIBM_SYMBOLS);
//
//   DynamicLibrary libm = DynamicLibrary::open("libm", {"libm.so.6"});
//   LibmSymbols m;
//   m.bind(libm);               // throws Error unless every symbol is there
//   double one = m.cos(0.0);
//
// The list is the only place a signature is written; a backend keeps it in
// its own folder (e.g. runtime/src/cuda/CudaSymbols.h).
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_DYNAMICLIBRARY_H
#define EFFRT_DYNAMICLIBRARY_H

#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>

namespace effrt {

/// A library loaded with dlopen (RTLD_NOW | RTLD_LOCAL), closed when the
/// last copy goes away.
class DynamicLibrary {
public:
  /// Opens the first of `fileNames` that loads. Throws Error: "cannot load
  /// LIBRARY (tried libx.so.1, libx.so): <dlerror of the first>".
  static DynamicLibrary open(const std::string &library,
                             std::initializer_list<const char *> fileNames);
  /// Whether any of `fileNames` loads (for probing: a backend that is
  /// absent is not an error until it is asked for).
  static bool available(std::initializer_list<const char *> fileNames);

  /// The library's name as given to open().
  const std::string &name() const;
  /// The file name that loaded.
  const std::string &fileName() const;
  /// The address of `symbol`, or null when the library has none.
  void *symbol(const char *symbol) const;
  /// Sets `slot` to `symbol`'s address. Throws Error: "LIBRARY (FILE) has
  /// no symbol 'NAME'".
  template <typename Fn> void bind(Fn *&slot, const char *symbol) const {
    void *address = require(symbol);
    static_assert(sizeof(slot) == sizeof(address), "function pointer size");
    std::memcpy(&slot, &address, sizeof slot);
  }

  struct Handle;

private:
  explicit DynamicLibrary(std::shared_ptr<Handle> handle)
      : handle_(std::move(handle)) {}
  void *require(const char *symbol) const;
  std::shared_ptr<Handle> handle_;
};

} // namespace effrt

/// One member of a symbol table: a function pointer named like the symbol.
#define EFFRT_SYMBOL_MEMBER_(name, ret, ...) ret (*name)(__VA_ARGS__) = nullptr;
/// Binds one member of a symbol table.
#define EFFRT_SYMBOL_BIND_(name, ret, ...) library.bind(name, #name);

/// Declares `struct Struct` with one function pointer per entry of LIST
/// (an X-macro: LIST(X) expands to X(name, return type, argument types...)
/// per symbol) and `void bind(const DynamicLibrary &)`, which fills them all
/// or throws naming the first symbol missing. A copy of a bound table is
/// only valid while the library stays open: keep the DynamicLibrary too.
#define EFFRT_SYMBOL_TABLE(Struct, LIST)                                       \
  struct Struct {                                                              \
    LIST(EFFRT_SYMBOL_MEMBER_)                                                 \
    void bind(const ::effrt::DynamicLibrary &library) {                        \
      LIST(EFFRT_SYMBOL_BIND_)                                                 \
    }                                                                          \
  }

#endif // EFFRT_DYNAMICLIBRARY_H
