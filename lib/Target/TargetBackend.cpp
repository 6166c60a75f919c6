//===- TargetBackend.cpp - the registry of compilation targets ------------===//

#include "effopt/Target/TargetBackend.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <mutex>

using namespace effopt;

TargetBackend::~TargetBackend() = default;

namespace {
struct Registry {
  std::mutex mutex;
  llvm::StringMap<std::unique_ptr<TargetBackend>> backends;
};
Registry &registry() {
  static Registry instance;
  return instance;
}
} // namespace

void effopt::registerTargetBackend(std::unique_ptr<TargetBackend> backend) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string name = backend->getName().str();
  r.backends[name] = std::move(backend);
}

const TargetBackend *effopt::lookupTargetBackend(llvm::StringRef name) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.backends.find(name);
  return it == r.backends.end() ? nullptr : it->second.get();
}

std::vector<std::string> effopt::getRegisteredTargetNames() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto &entry : r.backends)
    names.push_back(entry.getKey().str());
  std::sort(names.begin(), names.end());
  return names;
}

void effopt::dropStepAbiAttributes(mlir::ModuleOp module) {
  for (mlir::NamedAttribute attr :
       llvm::to_vector(module->getDiscardableAttrs()))
    if (attr.getName().getValue().starts_with("eff."))
      module->removeDiscardableAttr(attr.getName());
}
