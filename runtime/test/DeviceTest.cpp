//===- DeviceTest.cpp - Devices, their registry, collectives --------------===//

#include "TestModels.h"
#include "UnitTest.h"

#include "effrt/Device.h"
#include "effrt/DynamicLibrary.h"
#include "effrt/Effx.h"
#include "effrt/Session.h"

#include <cmath>
#include <cstring>

using namespace effrt;
using namespace effrt::test;
using json = nlohmann::json;

TEST(deviceRegistryHasTheCpu) {
  std::vector<std::string> names = registeredDevices();
  CHECK(!names.empty());
  CHECK_EQ(names[0], std::string(hostTarget()));
  std::unique_ptr<Device> cpu = createDevice(hostTarget(), {"m.effx", nullptr});
  CHECK_EQ(cpu->target(), std::string(hostTarget()));
  CHECK_ERROR(createDevice("cuda-sm_90", {"m.effx", nullptr}),
              "m.effx: compiled for target 'cuda-sm_90', which this runtime "
              "cannot run (it runs cpu-x86_64");
}

TEST(deviceCpuMemory) {
  std::unique_ptr<Device> d = createDevice(hostTarget(), {"m.effx", nullptr});
  d->allocate({256, 128, 64});
  CHECK_EQ(d->sizes().total(), 448u);
  for (RegionKind r : kRegionKinds) {
    std::byte *p = d->hostPointer(r);
    CHECK(p != nullptr);
    CHECK_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    for (uint64_t i = 0; i < d->sizes().of(r); ++i)
      CHECK(p[i] == std::byte{0});
  }
  const char text[] = "0123456789";
  d->copyToDevice({RegionKind::Arena, 100, 10}, text);
  // Zero-copy: the host pointer sees it.
  CHECK(std::memcmp(d->hostPointer(RegionKind::Arena) + 100, text, 10) == 0);
  d->copyWithinDevice({RegionKind::Arena, 100, 10}, {RegionKind::Io, 54, 10});
  char back[10];
  d->copyFromDevice({RegionKind::Io, 54, 10}, back);
  CHECK(std::memcmp(back, text, 10) == 0);
  CHECK_ERROR(d->copyToDevice({RegionKind::Io, 60, 8}, text),
              "m.effx: copy to the device: bytes 60..68 lie outside the io "
              "region of 64 bytes");
  CHECK_ERROR(d->copyFromDevice({RegionKind::State, UINT64_MAX, 2}, back),
              "lie outside the state region of 256 bytes");
  CHECK_ERROR(d->copyWithinDevice({RegionKind::Arena, 0, 8},
                                  {RegionKind::Io, 0, 4}),
              "copy within the device of 8 bytes into 4");
  // Empty regions have no storage.
  d->allocate({0, 64, 0});
  CHECK(d->hostPointer(RegionKind::State) == nullptr);
  CHECK_EQ(d->sizes().arena, 64u);
  CHECK(!d->codeLoaded());
  CHECK_ERROR(d->run(), "m.effx: no code is loaded");
}

TEST(deviceSingleRankCollectives) {
  std::unique_ptr<Device> d = createDevice(hostTarget(), {"m.effx", nullptr});
  Collectives &c = d->collectives();
  CHECK_EQ(c.name(), std::string("single-rank"));
  CHECK_EQ(c.rank(), 0);
  CHECK_EQ(c.worldSize(), 1);
  d->allocate({64, 64, 0});
  float values[4] = {1.5f, -2, 3, 4};
  d->copyToDevice({RegionKind::State, 0, 16}, values);
  // A sum over one rank is the data itself.
  c.allReduceSum(*d, {RegionKind::State, 0, 16}, DType::F32);
  float out[4];
  d->copyFromDevice({RegionKind::State, 0, 16}, out);
  CHECK(std::memcmp(out, values, 16) == 0);
  // Rank 0's block is the whole buffer; a gather of one rank is a copy.
  c.reduceScatterSum(*d, {RegionKind::State, 0, 16}, {RegionKind::Arena, 16, 16},
                     DType::F32);
  d->copyFromDevice({RegionKind::Arena, 16, 16}, out);
  CHECK(std::memcmp(out, values, 16) == 0);
  c.allGather(*d, {RegionKind::State, 0, 8}, {RegionKind::Arena, 48, 8});
  d->copyFromDevice({RegionKind::Arena, 48, 8}, out);
  CHECK(std::memcmp(out, values, 8) == 0);
  CHECK_ERROR(c.allGather(*d, {RegionKind::State, 0, 8},
                          {RegionKind::Arena, 0, 16}),
              "m.effx: all-gather of 8 bytes into 16 bytes in a run of one rank");
  c.broadcast(*d, {RegionKind::State, 0, 16}, 0);
  CHECK_ERROR(c.broadcast(*d, {RegionKind::State, 0, 16}, 1),
              "broadcast from rank 1 in a run of one rank");
  c.barrier();
}

namespace {
/// A device whose memory the host cannot address (as a GPU's): every byte
/// goes through its copies. Its "code" is a stand-in step: loss = the sum
/// of input x, every element of w grows by 1, the step counter counts.
class RemoteDevice final : public Device {
public:
  using Device::Device;
  std::string target() const override { return "test-remote"; }
  void allocate(const RegionSizes &sizes) override {
    for (RegionKind r : kRegionKinds)
      memory_[static_cast<int>(r)].assign(sizes.of(r), std::byte{0});
    sizes_ = sizes;
  }
  std::byte *hostPointer(RegionKind) override { return nullptr; }
  void copyToDevice(DeviceSpan dst, const void *src) override {
    checkSpan(dst, "copy to the device");
    if (dst.bytes)
      std::memcpy(at(dst), src, dst.bytes);
  }
  void copyFromDevice(DeviceSpan src, void *dst) override {
    checkSpan(src, "copy from the device");
    if (src.bytes)
      std::memcpy(dst, at(src), src.bytes);
  }
  void copyWithinDevice(DeviceSpan src, DeviceSpan dst) override {
    checkSpan(src, "copy");
    checkSpan(dst, "copy");
    std::memmove(at(dst), at(src), src.bytes);
  }
  void loadCode(const EffxFile &file) override {
    const EffxSection *code =
        file.findSection(EffxSectionKind::HostCode, target(), "step");
    if (!code)
      fail(file.path(), ": no code for test-remote");
    loaded_ = true;
  }
  bool codeLoaded() const override { return loaded_; }
  void launch() override {
    float x[12], sum = 0;
    std::memcpy(x, at({RegionKind::Io, 0, 48}), 48);
    for (float v : x)
      sum += v;
    std::memcpy(at({RegionKind::Io, 128, 4}), &sum, 4);
    float w[6];
    std::memcpy(w, at({RegionKind::State, 0, 24}), 24);
    for (float &v : w)
      v += 1;
    std::memcpy(at({RegionKind::State, 0, 24}), w, 24);
    int64_t step;
    std::memcpy(&step, at({RegionKind::State, 256, 8}), 8);
    ++step;
    std::memcpy(at({RegionKind::State, 256, 8}), &step, 8);
  }

private:
  std::byte *at(DeviceSpan span) {
    return memory_[static_cast<int>(span.region)].data() + span.offset;
  }
  std::vector<std::byte> memory_[3];
  bool loaded_ = false;
};
} // namespace

TEST(deviceSessionOnlyOrchestrates) {
  // A device registered from outside libeffrt runs a session: the session
  // reaches its memory only through copies.
  static bool registered = [] {
    registerDevice(
        "test-remote",
        [](std::string_view target) { return target == "test-remote"; },
        [](const DeviceOptions &options) {
          return std::make_unique<RemoteDevice>(options);
        });
    return true;
  }();
  CHECK(registered);
  EffxParts parts = linearModel(false);
  parts.manifest["target"] = "test-remote";
  json manifest = parts.manifest;
  std::vector<std::byte> stored(parts.state.begin(), parts.state.begin() + 24);
  for (size_t i = 1; i < manifest["state"].size(); ++i)
    manifest["state"][i]["init"] = "zeros";
  std::vector<SectionSpec> sections =
      effxSections(manifest.dump(), parts.code, stored);
  sections[1].target = "test-remote";
  std::string path = tempPath("remote.effx");
  writeFileBytes(path, packSections(sections));

  Session s = Session::open(path);
  CHECK_EQ(s.device().target(), std::string("test-remote"));
  CHECK(s.stateRegion() == nullptr && s.ioRegion() == nullptr);
  CHECK_EQ(s.allocated().total(), 768u);
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i)
    x[i] = static_cast<float>(i);
  s.setInput("x", Tensor::copyOf(DType::F32, {4, 3}, x.data(), 48));
  s.setInput("y", Tensor::zeros(DType::F32, {4, 2}));
  CHECK_EQ(s.step(), 66.0f);
  CHECK_EQ(s.step(), 66.0f);
  CHECK(s.optimizerStep() == std::optional<int64_t>(2));
  CHECK_EQ(s.readState("w").load<float>(0), 2.5f);
  NamedTensors state = s.stateTensors();
  CHECK_EQ(state[0].second.load<float>(1), 1.75f);
  std::string ckpt = tempPath("remote.safetensors");
  s.save(ckpt);
  s.writeState("w", Tensor::zeros(DType::F32, {3, 2}));
  CHECK_EQ(s.readState("w").load<float>(0), 0.0f);
  s.load(ckpt);
  CHECK_EQ(s.readState("w").load<float>(0), 2.5f);
  CHECK_EQ(s.globalStep(), 2);
  // The test device is listed where a target is not found.
  CHECK_ERROR(createDevice("cuda-sm_90", {"m.effx", nullptr}),
              "(it runs cpu-x86_64, cuda, test-remote)");
}

#define EFFRT_TEST_LIBM_SYMBOLS(X)                                             \
  X(cos, double, double)                                                       \
  X(ldexp, double, double, int)
EFFRT_SYMBOL_TABLE(LibmSymbols, EFFRT_TEST_LIBM_SYMBOLS);

#define EFFRT_TEST_MISSING_SYMBOLS(X)                                          \
  X(cos, double, double)                                                       \
  X(effrt_no_such_function, int, int)
EFFRT_SYMBOL_TABLE(MissingSymbols, EFFRT_TEST_MISSING_SYMBOLS);

TEST(dynamicLibrarySymbolTables) {
  DynamicLibrary libm =
      DynamicLibrary::open("libm", {"libeffrt-absent.so.9", "libm.so.6"});
  CHECK_EQ(libm.name(), std::string("libm"));
  CHECK_EQ(libm.fileName(), std::string("libm.so.6"));
  LibmSymbols m;
  m.bind(libm);
  CHECK_EQ(m.cos(0.0), 1.0);
  CHECK_EQ(m.ldexp(3.0, 4), 48.0);
  CHECK(libm.symbol("effrt_no_such_function") == nullptr);
  MissingSymbols missing;
  CHECK_ERROR(missing.bind(libm),
              "libm (libm.so.6) has no symbol 'effrt_no_such_function'");
  CHECK(missing.cos != nullptr); // bound before the missing one
  CHECK_ERROR(DynamicLibrary::open("libcudart",
                                   {"libeffrt-absent.so.1", "libeffrt-absent.so"}),
              "cannot load libcudart (tried libeffrt-absent.so.1, "
              "libeffrt-absent.so): libeffrt-absent.so.1");
  CHECK(DynamicLibrary::available({"libm.so.6"}));
  CHECK(!DynamicLibrary::available({"libeffrt-absent.so.1"}));
}
