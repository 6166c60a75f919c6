//===- Device.cpp - The device interface and its registry -----------------===//

#include "effrt/Device.h"

#include "effrt/Effx.h"
#include "effrt/Error.h"

#include "../cpu/CpuDevice.h"
#include "../cuda/CudaDevice.h"

#include <mutex>

using namespace effrt;

const char *effrt::regionName(RegionKind region) {
  switch (region) {
  case RegionKind::State:
    return "state";
  case RegionKind::Arena:
    return "arena";
  case RegionKind::Io:
    return "io";
  case RegionKind::Host:
    return "host";
  }
  return "?";
}

uint64_t RegionSizes::of(RegionKind region) const {
  switch (region) {
  case RegionKind::State:
    return state;
  case RegionKind::Arena:
    return arena;
  case RegionKind::Io:
    return io;
  case RegionKind::Host:
    return host;
  }
  return 0;
}

Collectives::~Collectives() = default;

Device::Device(DeviceOptions options) : options_(std::move(options)) {
  setCollectives(options_.collectives);
}

Device::~Device() = default;

void Device::setCollectives(std::shared_ptr<Collectives> collectives) {
  collectives_ = collectives ? std::move(collectives) : singleRankCollectives();
}

void Device::checkSpan(DeviceSpan span, const char *what) const {
  uint64_t size = sizes_.of(span.region);
  if (span.bytes > size || span.offset > size - span.bytes)
    fail(label(), ": ", what, ": bytes ", span.offset, "..",
         span.offset + span.bytes, " lie outside the ", regionName(span.region),
         " region of ", size, " bytes");
}

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

namespace {
struct Registration {
  std::string name;
  std::function<bool(std::string_view)> accepts;
  DeviceFactory create;
};

struct Registry {
  std::mutex mutex;
  std::vector<Registration> devices;
};
} // namespace

/// The registry, with the devices built into libeffrt first. A new device
/// folder adds its line here (and its sources to src/CMakeLists.txt).
static Registry &registry() {
  static Registry *r = [] {
    auto *r = new Registry;
    r->devices.push_back({hostTarget(), cpu::acceptsTarget, cpu::createCpuDevice});
    r->devices.push_back(
        {cuda::kCudaTarget, cuda::acceptsTarget, cuda::createCudaDevice});
    return r;
  }();
  return *r;
}

void effrt::registerDevice(std::string name,
                           std::function<bool(std::string_view)> accepts,
                           DeviceFactory create) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.devices.push_back({std::move(name), std::move(accepts), std::move(create)});
}

std::vector<std::string> effrt::registeredDevices() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const Registration &d : r.devices)
    names.push_back(d.name);
  return names;
}

std::unique_ptr<Device> effrt::createDevice(std::string_view target,
                                            const DeviceOptions &options) {
  DeviceFactory create;
  std::string names;
  {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const Registration &d : r.devices) {
      names += (names.empty() ? "" : ", ") + d.name;
      if (!create && d.accepts(target))
        create = d.create;
    }
  }
  if (!create)
    fail(options.label, ": compiled for target ", quoteName(target),
         ", which this runtime cannot run (it runs ", names, ")");
  return create(options);
}

std::unique_ptr<Device> effrt::createHostMemoryDevice(
    const DeviceOptions &options) {
  DeviceOptions host = options;
  host.device.reset();
  host.manifest = nullptr;
  return cpu::createCpuDevice(host);
}
