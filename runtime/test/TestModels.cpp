//===- TestModels.cpp - .effx files for the runtime's tests ---------------===//

#include "TestModels.h"

#include "effrt/EffxFormat.h"
#include "effrt/Error.h"
#include "effrt/File.h"
#include "effrt/Npz.h"
#include "effrt/Tensor.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <iterator>

using namespace effrt;
using json = nlohmann::json;

#include "model/CountKernel.h"

#ifndef EFFRT_TEST_MODEL_SO
#error "EFFRT_TEST_MODEL_SO must name the test model's shared object"
#endif
#ifndef EFFRT_TEST_CUDA_MODEL_SO
#error "EFFRT_TEST_CUDA_MODEL_SO must name the CUDA test model's shared object"
#endif

static uint64_t alignUp(uint64_t n) {
  return (n + kEffxAlignment - 1) / kEffxAlignment * kEffxAlignment;
}

static void crcInto(uint32_t &field, const void *data, uint64_t size) {
  field = crc32(data, size);
}

std::vector<std::byte>
effrt::test::packSections(const std::vector<SectionSpec> &sections) {
  EffxHeader h{};
  std::memcpy(h.magic, kEffxMagic, 8);
  h.version = kEffxVersion;
  h.headerSize = sizeof(EffxHeader);
  h.sectionTableOffset = sizeof(EffxHeader);
  h.sectionCount = static_cast<uint32_t>(sections.size());
  h.sectionEntrySize = sizeof(EffxSectionEntry);
  std::vector<EffxSectionEntry> table(sections.size());
  uint64_t offset =
      alignUp(sizeof(EffxHeader) + sections.size() * sizeof(EffxSectionEntry));
  for (size_t i = 0; i < sections.size(); ++i) {
    const SectionSpec &s = sections[i];
    EffxSectionEntry &e = table[i];
    e = EffxSectionEntry{};
    e.kind = s.kind;
    e.flags = s.flags;
    std::memcpy(e.target, s.target.data(),
                std::min(s.target.size(), sizeof e.target));
    std::memcpy(e.name, s.name.data(), std::min(s.name.size(), sizeof e.name));
    e.offset = offset;
    e.size = s.bytes.size();
    crcInto(e.crc32, s.bytes.data(), s.bytes.size());
    offset = alignUp(offset + s.bytes.size());
  }
  crcInto(h.sectionTableCrc, table.data(),
          table.size() * sizeof(EffxSectionEntry));
  crcInto(h.headerCrc, &h, sizeof h);
  uint64_t end = sizeof(EffxHeader) + table.size() * sizeof(EffxSectionEntry);
  for (const EffxSectionEntry &e : table)
    end = std::max(end, e.offset + e.size);
  std::vector<std::byte> out(end);
  std::memcpy(out.data(), &h, sizeof h);
  if (!table.empty())
    std::memcpy(out.data() + sizeof h, table.data(),
                table.size() * sizeof(EffxSectionEntry));
  for (size_t i = 0; i < sections.size(); ++i)
    if (!sections[i].bytes.empty())
      std::memcpy(out.data() + table[i].offset, sections[i].bytes.data(),
                  sections[i].bytes.size());
  return out;
}

static std::vector<std::byte> bytesOf(const std::string &text) {
  std::vector<std::byte> out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

std::vector<effrt::test::SectionSpec>
effrt::test::effxSections(const std::string &manifest,
                          const std::vector<std::byte> &code,
                          const std::vector<std::byte> &storedState) {
  auto kind = [](EffxSectionKind k) { return static_cast<uint32_t>(k); };
  return {{kind(EffxSectionKind::Manifest), kEffxSectionRequired, "",
           "manifest", bytesOf(manifest)},
          {kind(EffxSectionKind::HostCode), kEffxSectionRequired,
           "cpu-x86_64", "step", code},
          {kind(EffxSectionKind::InitialState), kEffxSectionRequired, "",
           "state", storedState}};
}

std::vector<std::byte>
effrt::test::packEffx(const std::string &manifest,
                      const std::vector<std::byte> &code,
                      const std::vector<std::byte> &storedState) {
  return packSections(effxSections(manifest, code, storedState));
}

std::vector<std::byte> effrt::test::packEffx(const EffxParts &parts) {
  json manifest = parts.manifest;
  std::vector<std::byte> stored;
  for (json &entry : manifest["state"]) {
    // Entries the tests made malformed are left for the reader to reject.
    if (!entry.is_object() || !entry.contains("offset") ||
        !entry["offset"].is_number_integer() || entry["offset"].get<int64_t>() < 0 || !entry.contains("dtype") ||
        !entry["dtype"].is_string() || !entry.contains("shape") ||
        !entry["shape"].is_array())
      continue;
    std::optional<DType> dtype = dtypeFromName(entry["dtype"].get<std::string>());
    Shape shape;
    bool valid = dtype.has_value();
    for (const json &d : entry["shape"])
      valid = valid && d.is_number_integer() && d.get<int64_t>() >= 0 &&
              d.get<int64_t>() < (int64_t(1) << 40);
    if (!valid)
      continue;
    for (const json &d : entry["shape"])
      shape.push_back(d.get<int64_t>());
    std::optional<uint64_t> bytes = checkedByteSize(*dtype, shape);
    uint64_t offset = entry["offset"].get<uint64_t>();
    if (!bytes || offset > parts.state.size() ||
        *bytes > parts.state.size() - offset)
      continue;
    const std::byte *begin = parts.state.data() + offset;
    if (std::all_of(begin, begin + *bytes,
                    [](std::byte b) { return b == std::byte{0}; }))
      entry["init"] = "zeros";
    else
      stored.insert(stored.end(), begin, begin + *bytes);
  }
  std::vector<SectionSpec> sections =
      effxSections(manifest.dump(), parts.code, stored);
  sections[1].target = parts.codeTarget;
  if (!parts.deviceCode.empty())
    sections.push_back({static_cast<uint32_t>(EffxSectionKind::DeviceCode),
                        kEffxSectionRequired, parts.codeTarget, "kernels",
                        parts.deviceCode});
  return packSections(sections);
}

std::vector<std::byte> effrt::test::packEffxV1(const EffxParts &parts) {
  json manifest = parts.manifest;
  manifest["version"] = 1;
  std::string text = manifest.dump();
  EffxHeaderV1 h{};
  std::memcpy(h.magic, kEffxMagic, 8);
  h.version = kEffxVersion1;
  h.headerSize = sizeof(EffxHeaderV1);
  uint64_t offset = alignUp(sizeof(EffxHeaderV1));
  auto place = [&](EffxSectionV1 &s, const void *data, uint64_t size) {
    s.offset = offset;
    s.size = size;
    s.crc32 = crc32(data, size);
    offset = alignUp(offset + size);
  };
  place(h.manifest, text.data(), text.size());
  place(h.code, parts.code.data(), parts.code.size());
  place(h.state, parts.state.data(), parts.state.size());
  h.headerCrc = crc32(&h, sizeof h);
  std::vector<std::byte> out(h.state.offset + h.state.size);
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + h.manifest.offset, text.data(), text.size());
  if (!parts.code.empty())
    std::memcpy(out.data() + h.code.offset, parts.code.data(),
                parts.code.size());
  if (!parts.state.empty())
    std::memcpy(out.data() + h.state.offset, parts.state.data(),
                parts.state.size());
  return out;
}

static std::vector<std::byte> readSharedObject(const char *path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, ": cannot read the test model");
  std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

std::vector<std::byte> effrt::test::testModelCode() {
  return readSharedObject(EFFRT_TEST_MODEL_SO);
}

static json entry(const char *name, const char *dtype, json shape,
                  uint64_t offset, const char *role = nullptr) {
  json e = {{"name", name}, {"dtype", dtype}, {"shape", shape},
            {"offset", offset}};
  if (role)
    e["role"] = role;
  return e;
}

static json baseManifest(const char *model, const char *entryPoint) {
  return {{"format", "effx"},
          {"version", 2},
          {"model", model},
          {"source", std::string("test/") + model + ".onnx"},
          {"target", "cpu-x86_64"},
          {"compiler", "hand-written test model"},
          {"entry", entryPoint},
          {"training", {{"optimizer", "sgd"}}},
          {"pipeline", "none"}};
}

static std::vector<std::byte> junkCode() {
  std::vector<std::byte> code(64);
  for (size_t i = 0; i < code.size(); ++i)
    code[i] = std::byte(i * 7 + 1);
  return code;
}

effrt::test::EffxParts effrt::test::linearModel(bool code) {
  EffxParts p;
  p.manifest = baseManifest("linear", "_mlir_ciface_effx_step");
  p.manifest["batch_size"] = 4;
  p.manifest["regions"] = {{"state", 320}, {"arena", 256}, {"io", 192}};
  p.manifest["loss"] = {{"offset", 128}, {"dtype", "float32"}};
  p.manifest["inputs"] = {entry("x", "float32", {4, 3}, 0),
                          entry("y", "float32", {4, 2}, 64)};
  p.manifest["state"] = {
      entry("w", "float32", {3, 2}, 0, "trainable"),
      entry("b", "float32", {2}, 64, "trainable"),
      entry("optimizer.w.momentum_buffer", "float32", {3, 2}, 128,
            "optimizer_state"),
      entry("optimizer.b.momentum_buffer", "float32", {2}, 192,
            "optimizer_state"),
      entry("optimizer.step", "int64", json::array(), 256, "optimizer_state")};
  p.manifest["step_counter"] = "optimizer.step";
  p.state.assign(320, std::byte{0});
  const float w[6] = {0.5f, -0.25f, 0.125f, 0.75f, -0.5f, 0.25f};
  std::memcpy(p.state.data(), w, sizeof w);
  p.code = code ? testModelCode() : junkCode();
  return p;
}

effrt::test::EffxParts effrt::test::bigramModel(bool code) {
  EffxParts p;
  p.manifest = baseManifest("bigram", "effx_bigram_step");
  p.manifest["batch_size"] = 2;
  p.manifest["regions"] = {{"state", 1088}, {"arena", 1088}, {"io", 192}};
  p.manifest["loss"] = {{"offset", 128}, {"dtype", "float32"}};
  p.manifest["inputs"] = {entry("tokens", "int64", {2, 4}, 0),
                          entry("targets", "int64", {2, 4}, 64)};
  p.manifest["state"] = {
      entry("table", "float32", {16, 16}, 0, "trainable"),
      entry("optimizer.step", "int64", json::array(), 1024, "optimizer_state")};
  p.manifest["step_counter"] = "optimizer.step";
  p.state.assign(1088, std::byte{0});
  p.code = code ? testModelCode() : junkCode();
  return p;
}

effrt::test::EffxParts effrt::test::dotModel(bool cuda) {
  EffxParts p;
  p.manifest = baseManifest("dot", "effx_dot_step");
  p.manifest["batch_size"] = 4;
  p.manifest["regions"] = {{"state", 192}, {"arena", 64}, {"io", 128}};
  p.manifest["loss"] = {{"offset", 64}, {"dtype", "float32"}};
  p.manifest["inputs"] = {entry("x", "float32", {4, 3}, 0)};
  p.manifest["state"] = {
      entry("w", "float32", {3, 1}, 0, "trainable"),
      entry("ones", "float32", {4}, 64, "buffer"),
      entry("optimizer.step", "int64", json::array(), 128, "optimizer_state")};
  p.manifest["step_counter"] = "optimizer.step";
  p.state.assign(192, std::byte{0});
  const float w[3] = {0.5f, -0.25f, 0.75f}, ones[4] = {1, 1, 1, 1};
  std::memcpy(p.state.data(), w, sizeof w);
  std::memcpy(p.state.data() + 64, ones, sizeof ones);
  if (!cuda) {
    p.code = testModelCode();
    return p;
  }
  p.manifest["target"] = "cuda";
  // The kernel is PTX only: the driver compiles it for any GPU from sm_80.
  p.manifest["cuda_archs"] = json::array();
  p.manifest["cuda_ptx"] = "compute_80";
  p.manifest["workspace_bytes"] = 4 << 20;
  p.manifest["allow_tf32"] = false;
  p.codeTarget = "cuda";
  p.code = readSharedObject(EFFRT_TEST_CUDA_MODEL_SO);
  const std::byte *ptx = reinterpret_cast<const std::byte *>(kCountPtx);
  p.deviceCode.assign(ptx, ptx + sizeof kCountPtx);
  return p;
}

void effrt::test::writeLinearData(const std::string &path, int64_t rows) {
  Tensor x = Tensor::zeros(DType::F32, {rows, 3});
  Tensor y = Tensor::zeros(DType::F32, {rows, 2});
  auto *xs = reinterpret_cast<float *>(x.mutableData());
  auto *ys = reinterpret_cast<float *>(y.mutableData());
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
  };
  for (int64_t i = 0; i < rows; ++i) {
    for (int k = 0; k < 3; ++k)
      xs[i * 3 + k] = 2 * next();
    ys[i * 2 + 0] = 1.5f * xs[i * 3] - 2.0f * xs[i * 3 + 1] + 0.5f + 0.01f * next();
    ys[i * 2 + 1] = -xs[i * 3 + 2] + 0.25f * xs[i * 3] - 1.0f + 0.01f * next();
  }
  writeNpz(path, {{"x", x}, {"y", y}});
}
