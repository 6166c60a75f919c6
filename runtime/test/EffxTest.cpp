//===- EffxTest.cpp - .effx validation and code loading -------------------===//

#include "TestModels.h"
#include "UnitTest.h"

#include "effrt/Effx.h"

#include <cstring>
#include <functional>

using namespace effrt;
using namespace effrt::test;
using json = nlohmann::json;

static EffxFile openBytes(std::vector<std::byte> bytes) {
  return EffxFile::fromBytes(bytesFromVector(std::move(bytes)), "m.effx");
}

static EffxFile openParts(const EffxParts &parts) {
  return openBytes(packEffx(parts));
}

/// The linear model's file with `edit` applied to its header; the header
/// CRC is recomputed unless `fixCrc` is false.
static std::vector<std::byte>
editedHeader(const std::function<void(EffxHeader &)> &edit,
             bool fixCrc = true) {
  std::vector<std::byte> bytes = packEffx(linearModel(false));
  EffxHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  edit(h);
  if (fixCrc) {
    h.headerCrc = 0;
    h.headerCrc = crc32(&h, sizeof h);
  }
  std::memcpy(bytes.data(), &h, sizeof h);
  return bytes;
}

/// The linear model with its manifest edited.
static EffxParts editedManifest(const std::function<void(json &)> &edit) {
  EffxParts parts = linearModel(false);
  edit(parts.manifest);
  return parts;
}

TEST(effxValidFileOpens) {
  EffxParts parts = linearModel(false);
  std::string path = tempPath("linear.effx");
  writeFileBytes(path, packEffx(parts));
  EffxFile file = EffxFile::open(path);
  const EffxManifest &m = file.manifest();
  CHECK_EQ(m.model, std::string("linear"));
  CHECK_EQ(m.target, std::string("cpu-x86_64"));
  CHECK_EQ(m.entry, std::string("_mlir_ciface_effx_step"));
  CHECK_EQ(m.batchSize, 4);
  CHECK_EQ(m.stateBytes, 320u);
  CHECK_EQ(m.arenaBytes, 256u);
  CHECK_EQ(m.ioBytes, 192u);
  CHECK_EQ(m.lossOffset, 128u);
  CHECK_EQ(m.inputs.size(), 2u);
  CHECK_EQ(m.inputs[1].name, std::string("y"));
  CHECK_EQ(m.inputs[1].shape, Shape({4, 2}));
  CHECK_EQ(m.inputs[1].offset, 64u);
  CHECK_EQ(m.inputs[1].byteSize, 32u);
  CHECK_EQ(m.state.size(), 5u);
  CHECK(m.state[2].role == StateRole::OptimizerState);
  CHECK(m.state[0].role == StateRole::Trainable);
  CHECK(m.stepCounter.has_value());
  CHECK_EQ(m.state[*m.stepCounter].name, std::string("optimizer.step"));
  CHECK(m.findState("b") && m.findState("b")->offset == 64);
  CHECK(!m.findState("c"));
  CHECK(m.findInput("x") && !m.findInput("w"));
  CHECK_EQ(file.codeSize(), 64u);
  CHECK(std::memcmp(file.initialState(), parts.state.data(), 320) == 0);
  CHECK(m.json.find("\"pipeline\"") != std::string::npos);
}

TEST(effxMissingFile) {
  CHECK_ERROR(EffxFile::open(tempPath("absent.effx")),
              "absent.effx: cannot open: No such file or directory");
}

TEST(effxEveryTruncationIsAnError) {
  std::vector<std::byte> bytes = packEffx(linearModel(false));
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + n);
    CHECK_ERROR(openBytes(cut), "truncated");
  }
  // The message says which section and where.
  std::vector<std::byte> cut(bytes.begin(), bytes.end() - 10);
  CHECK_ERROR(openBytes(cut), "m.effx: truncated: state section ends at byte " +
                                  std::to_string(bytes.size()) +
                                  " but the file has " +
                                  std::to_string(bytes.size() - 10) + " bytes");
}

TEST(effxEveryByteFlipIsAnError) {
  // Every byte except the padding between sections is covered by a CRC.
  std::vector<std::byte> bytes = packEffx(linearModel(false));
  EffxHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  auto covered = [&](size_t i) {
    if (i < sizeof h)
      return true;
    for (const EffxSection *s : {&h.manifest, &h.code, &h.state})
      if (i >= s->offset && i < s->offset + s->size)
        return true;
    return false;
  };
  size_t flips = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!covered(i))
      continue;
    std::vector<std::byte> bad = bytes;
    bad[i] ^= std::byte{0x10};
    bool threw = false;
    try {
      openBytes(bad);
    } catch (const Error &e) {
      threw = true;
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      CHECK(std::string(e.what()).rfind("m.effx: ", 0) == 0);
    }
    if (!threw)
      checkFailed(__FILE__, __LINE__,
                  "flipping byte " + std::to_string(i) + " was not detected");
    ++flips;
  }
  CHECK(flips > 500);
}

TEST(effxHeaderChecks) {
  CHECK_ERROR(openBytes({}), "m.effx: truncated: the file is empty");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.magic[0] = 'X'; })),
              "m.effx: not an .effx file (bad magic)");
  std::vector<std::byte> text(200, std::byte{'a'});
  CHECK_ERROR(openBytes(text), "not an .effx file");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.version = 2; })),
              "unsupported .effx version 2 (this runtime reads version 1)");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.headerSize = 80; })),
              "header size is 80, expected 96");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.code.size += 1; },
                                     false)),
              "corrupt header: CRC-32 is 0x");
  CHECK_ERROR(
      openBytes(editedHeader([](EffxHeader &h) { h.code.offset += 8; })),
      "code section offset");
  CHECK_ERROR(
      openBytes(editedHeader([](EffxHeader &h) { h.manifest.offset = 64; })),
      "lies inside the header");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) {
                h.code.offset = h.manifest.offset;
              })),
              "overlaps");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) {
                h.state.size = UINT64_MAX - 32;
              })),
              "ends beyond 2^64");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.code.crc32 ^= 1; })),
              "m.effx: corrupt code section: CRC-32 is");
}

TEST(effxManifestChecks) {
  struct Case {
    std::function<void(json &)> edit;
    const char *message;
  };
  const Case cases[] = {
      {[](json &m) { m.erase("model"); }, "manifest: 'model' is missing"},
      {[](json &m) { m["format"] = "onnx"; }, "'format' is 'onnx'"},
      {[](json &m) { m["version"] = 3; }, "'version' is 3, expected 1"},
      {[](json &m) { m["entry"] = ""; }, "'entry' is empty"},
      {[](json &m) { m["batch_size"] = 0; }, "'batch_size' must be a positive"},
      {[](json &m) { m["regions"]["arena"] = 100; },
       "regions: 'arena' is 100 bytes, not a multiple of 64"},
      {[](json &m) { m["regions"]["io"] = -64; },
       "regions: 'io' must be a non-negative integer"},
      {[](json &m) { m["regions"]["state"] = 384; },
       "the state region is 384 bytes but the initial state section holds 320"},
      {[](json &m) { m["loss"]["offset"] = 190; }, "loss: offset 190"},
      {[](json &m) { m["loss"]["dtype"] = "int32"; },
       "loss: dtype int32 is not a floating-point type"},
      {[](json &m) { m["inputs"][0]["dtype"] = "float8"; },
       "input 'x': unknown dtype 'float8'"},
      {[](json &m) { m["inputs"][0]["shape"] = {4, -3}; },
       "input 'x': 'shape' must be an array of non-negative integers"},
      {[](json &m) { m["inputs"][1]["offset"] = 176; },
       "input 'y': bytes 176..208 (float32 [4,2]) lie outside the io region of "
       "192 bytes"},
      {[](json &m) { m["inputs"][1]["offset"] = 32; },
       "io entry 'x' (bytes 0..48) overlaps 'y' (bytes 32..64)"},
      {[](json &m) { m["inputs"][1]["offset"] = 120; },
       "overlaps 'loss'"},
      {[](json &m) { m["inputs"][1]["offset"] = 66; }, "is not aligned"},
      {[](json &m) { m["inputs"][1]["name"] = "x"; },
       "two inputs are named 'x'"},
      {[](json &m) { m["inputs"][1].erase("name"); },
       "input 1: 'name' is missing"},
      {[](json &m) { m["inputs"] = json::object(); }, "'inputs' is not an array"},
      {[](json &m) { m["state"][1]["offset"] = 16; },
       "state entry 'w' (bytes 0..24) overlaps 'b' (bytes 16..24)"},
      {[](json &m) { m["state"][1]["role"] = "weights"; },
       "state entry 'b': unknown role 'weights'"},
      {[](json &m) { m["state"][4]["offset"] = 320; },
       "lie outside the state region of 320 bytes"},
      {[](json &m) { m["state"][1]["shape"] = {1u << 31, 1u << 31, 1u << 31}; },
       "is too large"},
      {[](json &m) { m["state"][3]["name"] = "w"; },
       "two state entries are named 'w'"},
      {[](json &m) { m["step_counter"] = "steps"; },
       "'step_counter' names 'steps', which is not a state entry"},
      {[](json &m) { m["step_counter"] = "b"; },
       "'step_counter' 'b' is float32 [2], expected an int64 scalar"},
  };
  for (const Case &c : cases)
    CHECK_ERROR(openParts(editedManifest(c.edit)), c.message);

  // Minor version 1: the kind, and a forward function's outputs.
  auto forward = [](json &m) {
    m["minor_version"] = 1;
    m["kind"] = "forward";
    m.erase("loss");
    m["step_counter"] = nullptr;
    m["outputs"] = json::array(
        {{{"name", "p"}, {"dtype", "float32"}, {"shape", {4, 2}}, {"offset", 128}},
         {{"name", "k"}, {"dtype", "bool"}, {"shape", {4}}, {"offset", 160}}});
  };
  const Case forwardCases[] = {
      {[](json &m) { m["kind"] = "predict"; },
       "manifest: unknown 'kind' 'predict' (expected train_step or forward)"},
      {[](json &m) { m["minor_version"] = "1"; },
       "'minor_version' must be a non-negative integer"},
      {[](json &m) { m.erase("outputs"); }, "manifest: 'outputs' is missing"},
      {[](json &m) { m["outputs"][0]["offset"] = 64; },
       "(bytes 64..96) overlaps '"},
      {[](json &m) { m["outputs"][1]["name"] = "p"; },
       "two outputs are named 'p'"},
      {[](json &m) { m["outputs"][1]["offset"] = 190; },
       "output 'k': bytes 190..194 (bool [4]) lie outside the io region"},
  };
  for (const Case &c : forwardCases)
    CHECK_ERROR(openParts(editedManifest([&](json &m) {
                  forward(m);
                  c.edit(m);
                })),
                c.message);
  {
    EffxFile file = openParts(editedManifest(forward));
    const EffxManifest &m = file.manifest();
    CHECK(m.kind == EffxKind::Forward);
    CHECK_EQ(m.minorVersion, 1u);
    CHECK_EQ(m.outputs.size(), 2u);
    CHECK(m.findOutput("k") && m.findOutput("k")->byteSize == 4);
    CHECK(!m.findOutput("x"));
    // A training step's manifest without "kind" (minor version 0) is one.
    CHECK(openParts(linearModel(false)).manifest().kind == EffxKind::TrainStep);
    CHECK_EQ(openParts(linearModel(false)).manifest().minorVersion, 0u);
  }

  // Absent or null step counter: no optimizer.
  EffxParts parts = editedManifest([](json &m) { m["step_counter"] = nullptr; });
  CHECK(!openParts(parts).manifest().stepCounter);
  parts = editedManifest([](json &m) { m.erase("step_counter"); });
  CHECK(!openParts(parts).manifest().stepCounter);
  // Unknown fields are ignored.
  parts = editedManifest([](json &m) { m["future"] = {1, 2}; });
  openParts(parts);

  // Not JSON at all.
  EffxParts base = linearModel(false);
  CHECK_ERROR(openBytes(packEffx("{\"format\": \"effx\",", base.code, base.state)),
              "m.effx: manifest: not valid JSON: ");
  CHECK_ERROR(openBytes(packEffx("[1, 2]", base.code, base.state)),
              "m.effx: manifest: not a JSON object");
}

TEST(effxLoadCodeErrors) {
  // Junk instead of a shared object.
  CHECK_ERROR(openParts(linearModel(false)).loadCode(),
              "m.effx: cannot load the code section: ");
  EffxParts parts = linearModel(false);
  parts.code.clear();
  CHECK_ERROR(openParts(parts).loadCode(), "m.effx: the code section is empty");
  parts = editedManifest([](json &m) { m["target"] = "cuda-sm_90"; });
  CHECK_ERROR(openParts(parts).loadCode(),
              "m.effx: compiled for target 'cuda-sm_90', which this runtime "
              "cannot run");
  parts = linearModel();
  parts.manifest["entry"] = "no_such_entry";
  CHECK_ERROR(openParts(parts).loadCode(),
              "m.effx: the code section has no entry point 'no_such_entry'");
}

TEST(effxLoadCode) {
  EffxFile linear = openParts(linearModel());
  EffxFile bigram = openParts(bigramModel());
  EffxCode a = linear.loadCode();
  EffxCode b = bigram.loadCode();
  CHECK(a.entry() != nullptr);
  CHECK(b.entry() != nullptr);
  CHECK(a.entry() != b.entry());
  // Loading twice gives two independent copies, both usable.
  EffxCode c = linear.loadCode();
  CHECK(c.entry() != nullptr);
}
