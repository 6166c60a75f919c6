//===- EffxTest.cpp - .effx validation and code loading -------------------===//

#include "TestModels.h"
#include "UnitTest.h"

#include "effrt/Device.h"
#include "effrt/Effx.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>

#include <unistd.h>

using namespace effrt;
using namespace effrt::test;
using json = nlohmann::json;

static EffxFile openBytes(std::vector<std::byte> bytes) {
  return EffxFile::fromBytes(bytesFromVector(std::move(bytes)), "m.effx");
}

static EffxFile openParts(const EffxParts &parts) {
  return openBytes(packEffx(parts));
}

/// Recomputes the table and header CRCs of a version-2 file.
static void fixCrcs(std::vector<std::byte> &bytes) {
  EffxHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  uint64_t tableBytes = uint64_t(h.sectionCount) * sizeof(EffxSectionEntry);
  if (h.sectionTableOffset <= bytes.size() &&
      tableBytes <= bytes.size() - h.sectionTableOffset)
    h.sectionTableCrc = crc32(bytes.data() + h.sectionTableOffset, tableBytes);
  h.headerCrc = 0;
  h.headerCrc = crc32(&h, sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
}

/// The linear model's file with `edit` applied to its header; the CRCs are
/// recomputed unless `fixCrc` is false.
static std::vector<std::byte>
editedHeader(const std::function<void(EffxHeader &)> &edit,
             bool fixCrc = true) {
  std::vector<std::byte> bytes = packEffx(linearModel(false));
  EffxHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  edit(h);
  std::memcpy(bytes.data(), &h, sizeof h);
  if (fixCrc)
    fixCrcs(bytes);
  return bytes;
}

/// The linear model's file with `edit` applied to section entry `index`
/// (0 manifest, 1 code, 2 state), CRCs recomputed.
static std::vector<std::byte>
editedEntry(size_t index, const std::function<void(EffxSectionEntry &)> &edit) {
  std::vector<std::byte> bytes = packEffx(linearModel(false));
  EffxSectionEntry e;
  size_t at = sizeof(EffxHeader) + index * sizeof e;
  std::memcpy(&e, bytes.data() + at, sizeof e);
  edit(e);
  std::memcpy(bytes.data() + at, &e, sizeof e);
  fixCrcs(bytes);
  return bytes;
}

/// The linear model's sections (code: 64 bytes of junk) with `edit`
/// applied, packed.
static std::vector<std::byte>
editedSections(const std::function<void(std::vector<SectionSpec> &)> &edit) {
  EffxParts parts = linearModel(false);
  std::vector<std::byte> stored(parts.state.begin(), parts.state.begin() + 24);
  json manifest = parts.manifest;
  for (size_t i = 1; i < manifest["state"].size(); ++i)
    manifest["state"][i]["init"] = "zeros";
  std::vector<SectionSpec> sections =
      effxSections(manifest.dump(), parts.code, stored);
  edit(sections);
  return packSections(sections);
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
  CHECK_EQ(file.version(), 2u);
  CHECK_EQ(m.version, 2u);
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
  CHECK(m.json.find("\"pipeline\"") != std::string::npos);

  // Only w is stored: b, the momentum buffers and the step start as zeros.
  CHECK(!m.state[0].zeroInit);
  for (size_t i = 1; i < 5; ++i)
    CHECK(m.state[i].zeroInit);
  CHECK_EQ(file.storedStateBytes(), 24u);
  std::vector<std::byte> region(320, std::byte{0x5a});
  file.copyInitialState(region.data());
  CHECK(region == parts.state);

  // The sections, by kind, target and name.
  CHECK_EQ(file.sections().size(), 3u);
  const EffxSection *code =
      file.findSection(EffxSectionKind::HostCode, "cpu-x86_64", "step");
  CHECK(code && code->size == 64 && code->required());
  CHECK(std::memcmp(file.sectionData(*code), parts.code.data(), 64) == 0);
  CHECK_EQ(file.sectionsFor(EffxSectionKind::HostCode, "cpu-x86_64").size(), 1u);
  CHECK(file.sectionsFor(EffxSectionKind::HostCode, "cuda-sm_90").empty());
  CHECK(!file.findSection(EffxSectionKind::HostCode, "cpu-x86_64", "other"));
  CHECK(file.findSection(EffxSectionKind::Manifest, "", "manifest"));
  CHECK_EQ(file.describe(*code), std::string("code"));
  CHECK_EQ(effxSectionKindName(EffxSectionKind::InitialState),
           std::string("initial_state"));
  CHECK_EQ(effxSectionKindName(static_cast<EffxSectionKind>(7)),
           std::string("kind 7"));
}

TEST(effxHostRegionEntries) {
  // effc --offload optimizer: the step counter in a host region of its own.
  EffxParts parts = editedManifest([](json &m) {
    m["regions"]["host"] = 64;
    m["state"][4]["region"] = "host";
    m["state"][4]["offset"] = 0;
  });
  EffxFile file = openParts(parts);
  const EffxManifest &m = file.manifest();
  CHECK_EQ(m.hostBytes, 64u);
  CHECK(m.state[4].onHost && !m.state[0].onHost);
  CHECK_EQ(m.state[4].offset, 0u);
  // The test packer stores the entry's bytes from the state image at its
  // offset (w's first 8 bytes, not zeros): they land in the host region,
  // and the state region's copy skips the entry.
  std::vector<std::byte> host(64, std::byte{0x5a});
  file.copyInitialState(host.data(), 0, /*host=*/true);
  std::vector<std::byte> want(64, std::byte{0});
  std::memcpy(want.data(), parts.state.data(), 8);
  CHECK(host == want);
  std::vector<std::byte> state(m.stateBytes, std::byte{0x5a});
  file.copyInitialState(state.data());
  CHECK(std::equal(state.begin(), state.begin() + 24, parts.state.begin()));
  CHECK(std::all_of(state.begin() + 256, state.begin() + 264,
                    [](std::byte b) { return b == std::byte{0}; }));
}

TEST(effxShardStoredWholeGivesEachRankItsBlock) {
  // ZeRO-3: the parameter 'w' (3x2) is a shard of 3 elements per rank over
  // 2 ranks; the initial state section stores the whole 6, and each rank
  // copies its block.
  EffxParts parts = linearModel(false);
  std::vector<std::byte> stored(parts.state.begin(), parts.state.begin() + 24);
  json manifest = parts.manifest;
  manifest["world_size"] = 2;
  manifest["state"][0]["shape"] = {3};
  manifest["state"][0]["shard_of"] = {3, 2};
  for (size_t i = 1; i < manifest["state"].size(); ++i)
    manifest["state"][i]["init"] = "zeros";
  EffxFile file = openBytes(
      packSections(effxSections(manifest.dump(), parts.code, stored)));
  const EffxStateEntry *w = file.manifest().findState("w");
  CHECK(w && w->sharded && w->byteSize == 12 && w->wholeByteSize() == 24);
  CHECK_EQ(file.storedStateBytes(), 24u);
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::byte> region(file.manifest().stateBytes, std::byte{7});
    file.copyInitialState(region.data(), rank);
    CHECK(std::memcmp(region.data(), stored.data() + 12 * rank, 12) == 0);
    CHECK(region[12] == std::byte{0}); // the next entry starts as zeros
  }
  // The section must hold the whole tensor, not the shard.
  std::vector<std::byte> shard(stored.begin(), stored.begin() + 12);
  CHECK_ERROR(openBytes(packSections(
                  effxSections(manifest.dump(), parts.code, shard))),
              "take 24 bytes but the initial state section holds 12");
}

TEST(effxVersion1IsRead) {
  // A version-1 file (three fixed sections, the whole state image) reads
  // as the same model: its sections appear as a table.
  EffxParts parts = linearModel(false);
  EffxFile v1 = openBytes(packEffxV1(parts));
  EffxFile v2 = openParts(parts);
  CHECK_EQ(v1.version(), 1u);
  CHECK_EQ(v1.manifest().version, 1u);
  CHECK_EQ(v1.manifest().state.size(), v2.manifest().state.size());
  for (const EffxStateEntry &e : v1.manifest().state)
    CHECK(!e.zeroInit);
  CHECK_EQ(v1.storedStateBytes(), 320u);
  std::vector<std::byte> a(320, std::byte{1}), b(320, std::byte{2});
  v1.copyInitialState(a.data());
  v2.copyInitialState(b.data());
  CHECK(a == b);
  CHECK(a == parts.state);
  CHECK_EQ(v1.sections().size(), 3u);
  const EffxSection *code =
      v1.findSection(EffxSectionKind::HostCode, "cpu-x86_64", "step");
  CHECK(code && code->size == 64);
  CHECK(std::memcmp(v1.sectionData(*code), parts.code.data(), 64) == 0);

  // Its checks are version 1's.
  std::vector<std::byte> bytes = packEffxV1(parts);
  CHECK_ERROR(openBytes(std::vector<std::byte>(bytes.begin(), bytes.begin() + 80)),
              "m.effx: truncated: the header needs 96 bytes but the file has 80");
  CHECK_ERROR(openBytes(std::vector<std::byte>(bytes.begin(), bytes.end() - 4)),
              "m.effx: truncated: state section ends at byte");
  std::vector<std::byte> flipped = bytes;
  EffxHeaderV1 h;
  std::memcpy(&h, bytes.data(), sizeof h);
  flipped[h.code.offset + 3] ^= std::byte{1};
  CHECK_ERROR(openBytes(flipped),
              "m.effx: corrupt code section: CRC-32 is 0x");
  flipped = bytes;
  flipped[20] ^= std::byte{1};
  CHECK_ERROR(openBytes(flipped), "m.effx: corrupt header: CRC-32 is 0x");
  EffxParts bigger = parts;
  bigger.manifest["regions"]["state"] = 384;
  CHECK_ERROR(openBytes(packEffxV1(bigger)),
              "m.effx: manifest: the state region is 384 bytes but the "
              "initial state section holds 320");
  // The manifest's version must be the header's.
  std::vector<std::byte> mixed = packEffx(editedManifest([](json &m) {
    m["version"] = 1;
  }));
  CHECK_ERROR(openBytes(mixed), "manifest: 'version' is 1, expected 2");
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
  // Every byte except padding and the header's reserved bytes is covered by
  // a CRC that is checked.
  std::vector<std::byte> bytes = packEffx(linearModel(false));
  EffxHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  std::vector<EffxSectionEntry> table(h.sectionCount);
  std::memcpy(table.data(), bytes.data() + h.sectionTableOffset,
              table.size() * sizeof(EffxSectionEntry));
  auto covered = [&](size_t i) {
    if (i < offsetof(EffxHeader, reserved))
      return true;
    if (i >= h.sectionTableOffset &&
        i < h.sectionTableOffset + table.size() * sizeof(EffxSectionEntry))
      return true;
    for (const EffxSectionEntry &s : table)
      if (i >= s.offset && i < s.offset + s.size)
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
  // The reserved bytes are not read.
  std::vector<std::byte> reserved = editedHeader([](EffxHeader &h) {
    h.reserved[3] = 9;
  });
  openBytes(reserved);
}

TEST(effxHeaderChecks) {
  CHECK_ERROR(openBytes({}), "m.effx: truncated: the file is empty");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.magic[0] = 'X'; })),
              "m.effx: not an .effx file (bad magic)");
  std::vector<std::byte> text(200, std::byte{'a'});
  CHECK_ERROR(openBytes(text), "not an .effx file");
  std::vector<std::byte> good = packEffx(linearModel(false));
  CHECK_ERROR(openBytes(std::vector<std::byte>(good.begin(), good.begin() + 50)),
              "m.effx: truncated: the header needs 64 bytes but the file has "
              "50 bytes");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.version = 3; })),
              "unsupported .effx version 3 (this runtime reads versions 1 and "
              "2; it needs a newer runtime)");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.version = 0; })),
              "unsupported .effx version 0 (this runtime reads versions 1 and "
              "2)");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.headerSize = 80; })),
              "header size is 80, expected 64");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.sectionCount += 1; },
                                     false)),
              "m.effx: corrupt header: CRC-32 is 0x");
  CHECK_ERROR(
      openBytes(editedHeader([](EffxHeader &h) { h.sectionEntrySize = 88; })),
      "m.effx: corrupt header: section entry size is 88, expected 96");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) { h.sectionCount = 0; })),
              "m.effx: corrupt header: 0 sections (expected 1 to 4096)");
  CHECK_ERROR(
      openBytes(editedHeader([](EffxHeader &h) { h.sectionCount = 100000; })),
      "corrupt header: 100000 sections");
  CHECK_ERROR(
      openBytes(editedHeader([](EffxHeader &h) { h.sectionTableOffset = 32; })),
      "m.effx: corrupt header: section table offset 32 lies inside the header");
  CHECK_ERROR(
      openBytes(editedHeader([](EffxHeader &h) { h.sectionTableOffset = 68; })),
      "section table offset 68 is not 8-byte aligned");
  CHECK_ERROR(openBytes(editedHeader([](EffxHeader &h) {
                h.sectionTableOffset = uint64_t(1) << 40;
              })),
              "m.effx: truncated: the section table ends at byte");
  // A changed entry (here its reserved field) with the header's CRCs left.
  good[sizeof(EffxHeader) + offsetof(EffxSectionEntry, reserved)] ^=
      std::byte{1};
  CHECK_ERROR(openBytes(good), "m.effx: corrupt section table: CRC-32 is 0x");
}

TEST(effxSectionTableChecks) {
  auto kind = [](EffxSectionKind k) { return static_cast<uint32_t>(k); };
  // Placement, each entry edited with correct CRCs.
  CHECK_ERROR(openBytes(editedEntry(1, [](EffxSectionEntry &e) {
                e.offset += 8;
              })),
              "m.effx: corrupt section table: code section offset");
  CHECK_ERROR(openBytes(editedEntry(0, [](EffxSectionEntry &e) {
                e.offset = 0;
              })),
              "manifest section offset 0 lies inside the header");
  CHECK_ERROR(openBytes(editedEntry(0, [](EffxSectionEntry &e) {
                e.offset = 128;
              })),
              "corrupt section table: the section table (bytes 64..352) "
              "overlaps the manifest section (from byte 128)");
  CHECK_ERROR(openBytes(editedEntry(2, [](EffxSectionEntry &e) {
                e.offset -= 64;
              })),
              "corrupt section table: the state section (bytes");
  CHECK_ERROR(openBytes(editedEntry(2, [](EffxSectionEntry &e) {
                e.size = UINT64_MAX - 32;
              })),
              "ends beyond 2^64");
  CHECK_ERROR(openBytes(editedEntry(1, [](EffxSectionEntry &e) {
                e.size += 1 << 20;
              })),
              "m.effx: truncated: code section ends at byte");
  CHECK_ERROR(openBytes(editedEntry(1, [](EffxSectionEntry &e) {
                e.crc32 ^= 1;
              })),
              "m.effx: corrupt code section: CRC-32 is 0x");
  CHECK_ERROR(openBytes(editedEntry(1, [](EffxSectionEntry &e) {
                e.name[2] = '\n';
              })),
              "m.effx: corrupt section table: the name of section 1 is not "
              "printable ASCII padded with NUL bytes");
  CHECK_ERROR(openBytes(editedEntry(1, [](EffxSectionEntry &e) {
                e.target[20] = 'x'; // after the terminating NUL
              })),
              "the target of section 1 is not printable ASCII padded");
  CHECK_ERROR(openBytes(editedEntry(2, [](EffxSectionEntry &e) {
                e.flags |= 4;
              })),
              "m.effx: needs a newer runtime: the state section has flags "
              "0x00000005 (this runtime knows 0x00000001)");

  // Kinds this runtime does not know: refused if required, else skipped.
  CHECK_ERROR(openBytes(editedSections([&](std::vector<SectionSpec> &s) {
                s.push_back({7, kEffxSectionRequired, "cpu-x86_64", "profile",
                             std::vector<std::byte>(10)});
              })),
              "m.effx: needs a newer runtime: section kind 7 'profile' for "
              "cpu-x86_64 is required and this runtime does not know its kind");
  EffxFile optional = openBytes(editedSections([&](std::vector<SectionSpec> &s) {
    s.push_back({9, 0, "", "notes", std::vector<std::byte>(100, std::byte{1})});
  }));
  CHECK_EQ(optional.sections().size(), 4u);
  CHECK_EQ(static_cast<uint32_t>(optional.sections()[3].kind), 9u);
  CHECK(!optional.sections()[3].required());
  // A skipped section is still checked.
  std::vector<std::byte> bad = editedSections([&](std::vector<SectionSpec> &s) {
    s.push_back({9, 0, "", "notes", std::vector<std::byte>(100, std::byte{1})});
  });
  bad[bad.size() - 5] ^= std::byte{1};
  CHECK_ERROR(openBytes(bad),
              "m.effx: corrupt kind 9 'notes' section: CRC-32 is 0x");

  // Several code sections: device binaries next to the host code.
  EffxFile multi = openBytes(editedSections([&](std::vector<SectionSpec> &s) {
    s.insert(s.begin() + 2, {kind(EffxSectionKind::DeviceCode),
                             kEffxSectionRequired, "cuda-sm_90", "kernels",
                             std::vector<std::byte>(300, std::byte{3})});
    s.insert(s.begin() + 2, {kind(EffxSectionKind::DeviceCode),
                             kEffxSectionRequired, "cuda-sm_80", "kernels",
                             std::vector<std::byte>(200, std::byte{4})});
  }));
  const EffxSection *sm90 =
      multi.findSection(EffxSectionKind::DeviceCode, "cuda-sm_90", "kernels");
  CHECK(sm90 && sm90->size == 300 && sm90->offset % 64 == 0);
  CHECK_EQ(multi.describe(*sm90),
           std::string("device code 'kernels' for cuda-sm_90"));
  CHECK_EQ(multi.sectionsFor(EffxSectionKind::DeviceCode, "cuda-sm_80").size(),
           1u);

  // Unique by (kind, target, name); exactly one manifest and initial state.
  CHECK_ERROR(openBytes(editedSections([&](std::vector<SectionSpec> &s) {
                s.push_back(s[1]);
              })),
              "m.effx: corrupt section table: two code sections named 'step' "
              "for cpu-x86_64");
  CHECK_ERROR(openBytes(editedSections([&](std::vector<SectionSpec> &s) {
                s.push_back(s[0]);
                s.back().name = "other";
              })),
              "m.effx: corrupt section table: 2 manifest sections (expected "
              "exactly one)");
  CHECK_ERROR(openBytes(editedSections([&](std::vector<SectionSpec> &s) {
                s.pop_back();
              })),
              "m.effx: corrupt section table: 0 state sections (expected "
              "exactly one)");
  CHECK_ERROR(openBytes(editedSections([&](std::vector<SectionSpec> &s) {
                s[0].target = "cpu-x86_64";
              })),
              "the manifest section has target 'cpu-x86_64' (expected none)");
  // A name of the full 40 bytes has no terminating NUL and is fine.
  EffxFile longName = openBytes(editedSections([&](std::vector<SectionSpec> &s) {
    s[1].name = std::string(40, 'n');
  }));
  CHECK(longName.findSection(EffxSectionKind::HostCode, "cpu-x86_64",
                             std::string(40, 'n')));
}

TEST(effxManifestChecks) {
  struct Case {
    std::function<void(json &)> edit;
    const char *message;
  };
  const Case cases[] = {
      {[](json &m) { m.erase("model"); }, "manifest: 'model' is missing"},
      {[](json &m) { m["format"] = "onnx"; }, "'format' is 'onnx'"},
      {[](json &m) { m["version"] = 3; }, "'version' is 3, expected 2"},
      {[](json &m) { m["entry"] = ""; }, "'entry' is empty"},
      {[](json &m) { m["batch_size"] = 0; }, "'batch_size' must be a positive"},
      {[](json &m) { m["regions"]["arena"] = 100; },
       "regions: 'arena' is 100 bytes, not a multiple of 64"},
      {[](json &m) { m["regions"]["io"] = -64; },
       "regions: 'io' must be a non-negative integer"},
      {[](json &m) { m["regions"]["state"] = 256; },
       "state entry 'optimizer.step': bytes 256..264 (int64 []) lie outside "
       "the state region of 256 bytes"},
      {[](json &m) { m["state"][0]["init"] = "ones"; },
       "state entry 'w': unknown 'init' 'ones' (expected zeros)"},
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
      // effc --offload optimizer: entries in the host region.
      {[](json &m) { m["state"][4]["region"] = "gpu"; },
       "state entry 'optimizer.step': unknown 'region' 'gpu' (expected "
       "state or host)"},
      {[](json &m) { m["state"][4]["region"] = "host"; },
       "state entry 'optimizer.step': bytes 256..264 (int64 []) lie outside "
       "the host region of 0 bytes"},
      {[](json &m) { m["state"][1]["copy_of"] = "nothing"; },
       "state entry 'b': 'copy_of' 'nothing' is not another state entry of "
       "its shape"},
      {[](json &m) { m["state"][1]["copy_of"] = "w"; },
       "state entry 'b': 'copy_of' 'w' is not another state entry of its "
       "shape"},
      {[](json &m) { m["regions"]["host"] = 70; },
       "regions: 'host' is 70 bytes, not a multiple of 64"},
      {[](json &m) {
         m["regions"]["host"] = 64;
         m["state"][3]["region"] = "host";
         m["state"][3]["offset"] = 0;
         m["state"][4]["region"] = "host";
         m["state"][4]["offset"] = 0;
       },
       "host state entry"},
      // effc --lora: the adapters of a weight, to merge.
      {[](json &m) { m["lora"] = 1; }, "'lora' is not a JSON object"},
      {[](json &m) { m["lora"] = {{"adapters", 2}}; },
       "lora: 'adapters' is not a JSON array"},
      {[](json &m) {
         m["lora"] = {{"adapters", json::array({{{"weight", "w"},
                                                 {"lora_A", "w.lora_A"},
                                                 {"lora_B", "b"},
                                                 {"scaling", 2.0}}})}};
       },
       "lora: the state has no 'w.lora_A'"},
      {[](json &m) {
         m["lora"] = {{"adapters", json::array({{{"weight", "w"},
                                                 {"lora_A", "b"},
                                                 {"lora_B", "b"},
                                                 {"scaling", 2.0}}})}};
       },
       "lora: 'w' (float32 [3,2]) does not fit its adapters [2] and [2]"},
      {[](json &m) {
         m["lora"] = {{"adapters", json::array({{{"weight", "w"},
                                                 {"lora_A", "w"},
                                                 {"lora_B", "optimizer.step"},
                                                 {"scaling", 2.0}}})}};
       },
       "lora: 'w' (float32 [3,2]) does not fit its adapters [3,2] and []"},
      {[](json &m) {
         m["lora"] = {{"adapters", json::array({{{"weight", "w"},
                                                 {"lora_A", "b"},
                                                 {"lora_B", "b"},
                                                 {"scaling", "2"}}})}};
       },
       "lora: 'scaling' of 'w' is not a number"},
      // ZeRO shards: 1-D f32 (or i8) entries of at least
      // ceil(elements / world_size).
      {[](json &m) { m["state"][2]["shard_of"] = {6}; },
       "state entry 'optimizer.w.momentum_buffer': 'shard_of' needs a 1-D "
       "f32 or i8 entry"},
      {[](json &m) { m["state"][3]["shard_of"] = {5}; },
       "state entry 'optimizer.b.momentum_buffer': a shard of [5] across 1 "
       "ranks has at least 5 elements, not 2"},
  };
  for (const Case &c : cases)
    CHECK_ERROR(openParts(editedManifest(c.edit)), c.message);

  {
    // A shard of 3 elements over 2 ranks holds 2 (one of them padding).
    EffxFile file = openParts(editedManifest([](json &m) {
      m["world_size"] = 2;
      m["state"][3]["shard_of"] = {3};
    }));
    const EffxStateEntry *e = file.manifest().findState(
        "optimizer.b.momentum_buffer");
    CHECK(e && e->sharded);
    CHECK(e->wholeShape() == Shape{3});
    CHECK_EQ(e->wholeByteSize(), 12u);
    CHECK(!file.manifest().findState("w")->sharded);
  }
  {
    // Cut on whole blocks or rows: a shard of 2 elements of a whole of 1
    // over 2 ranks (more than ceil(1 / 2)).
    EffxFile file = openParts(editedManifest([](json &m) {
      m["world_size"] = 2;
      m["state"][3]["shard_of"] = {1};
    }));
    const EffxStateEntry *e = file.manifest().findState(
        "optimizer.b.momentum_buffer");
    CHECK(e && e->sharded);
    CHECK_EQ(e->wholeByteSize(), 4u);
  }

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

  // The initial state section holds exactly the entries not marked zeros.
  EffxParts base = linearModel(false);
  json marked = base.manifest;
  marked["state"][0]["init"] = "zeros";
  CHECK_ERROR(openBytes(packEffx(marked.dump(), base.code,
                                 std::vector<std::byte>(24))),
              "m.effx: manifest: the state entries not marked 'init': 'zeros' "
              "take 48 bytes but the initial state section holds 24");
  CHECK_ERROR(openBytes(packEffx(base.manifest.dump(), base.code, base.state)),
              "take 72 bytes but the initial state section holds 320");
  // Every entry stored (none marked) is valid too.
  std::vector<std::byte> all;
  for (const json &e : base.manifest["state"]) {
    uint64_t offset = e["offset"].get<uint64_t>();
    uint64_t n = e["name"] == "w" ? 24 : e["name"] == "b" ? 8
                 : e["name"] == "optimizer.step"           ? 8
                 : e["name"] == "optimizer.b.momentum_buffer" ? 8 : 24;
    all.insert(all.end(), base.state.begin() + offset,
               base.state.begin() + offset + n);
  }
  EffxFile unmarked = openBytes(packEffx(base.manifest.dump(), base.code, all));
  std::vector<std::byte> region(320);
  unmarked.copyInitialState(region.data());
  CHECK(region == base.state);

  // Not JSON at all.
  CHECK_ERROR(openBytes(packEffx("{\"format\": \"effx\",", base.code, {})),
              "m.effx: manifest: not valid JSON: ");
  CHECK_ERROR(openBytes(packEffx("[1, 2]", base.code, {})),
              "m.effx: manifest: not a JSON object");
}

static void loadCode(const EffxFile &file) {
  createDevice(file.manifest().target, {file.path(), nullptr})->loadCode(file);
}

TEST(effxLoadCodeErrors) {
  // Junk instead of a shared object.
  CHECK_ERROR(loadCode(openParts(linearModel(false))),
              "m.effx: cannot load the code section: ");
  EffxParts parts = linearModel(false);
  parts.code.clear();
  CHECK_ERROR(loadCode(openParts(parts)), "m.effx: the code section is empty");
  parts = editedManifest([](json &m) { m["target"] = "cuda-sm_90"; });
  CHECK_ERROR(loadCode(openParts(parts)),
              "m.effx: compiled for target 'cuda-sm_90', which this runtime "
              "cannot run (it runs cpu-x86_64"); // and the tests' devices
  parts = linearModel();
  parts.manifest["entry"] = "no_such_entry";
  CHECK_ERROR(loadCode(openParts(parts)),
              "m.effx: the code section has no entry point 'no_such_entry'");
  // The code must be there for the target.
  CHECK_ERROR(loadCode(openBytes(editedSections([](std::vector<SectionSpec> &s) {
                s[1].target = "cpu-aarch64";
              }))),
              "m.effx: has no code section for target cpu-x86_64");
}

TEST(effxLoadCode) {
  EffxFile linear = openParts(linearModel());
  EffxFile bigram = openParts(bigramModel());
  std::unique_ptr<Device> a = createDevice("cpu-x86_64", {"a", nullptr});
  std::unique_ptr<Device> b = createDevice("cpu-x86_64", {"b", nullptr});
  CHECK(!a->codeLoaded());
  a->loadCode(linear);
  b->loadCode(bigram);
  CHECK(a->codeLoaded() && b->codeLoaded());
  // Loading twice gives two independent copies, both usable.
  std::unique_ptr<Device> c = createDevice("cpu-x86_64", {"c", nullptr});
  c->loadCode(linear);
  CHECK(c->codeLoaded());
  // A version-1 file's code loads too.
  std::unique_ptr<Device> d = createDevice("cpu-x86_64", {"d", nullptr});
  d->loadCode(openBytes(packEffxV1(linearModel())));
  CHECK(d->codeLoaded());
}

/// Resident bytes of this process (/proc/self/statm).
static uint64_t residentBytes() {
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  unsigned long long size = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%llu %llu", &size, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

TEST(effxOpenLeavesNoPagesResident) {
  // A file with 64 MiB of stored state: checking it reads every byte, but
  // none stays resident; copying the state out costs the copy only.
  constexpr uint64_t kBytes = uint64_t(64) << 20;
  EffxParts parts = linearModel(false);
  parts.manifest["regions"]["state"] = kBytes + 320;
  parts.manifest["state"].push_back({{"name", "big"},
                                     {"dtype", "uint8"},
                                     {"shape", {kBytes}},
                                     {"offset", 320},
                                     {"role", "buffer"}});
  parts.state.resize(kBytes + 320);
  for (uint64_t i = 320; i < parts.state.size(); ++i)
    parts.state[i] = std::byte(i * 7 + 1);
  std::string path = tempPath("big.effx");
  {
    std::vector<std::byte> bytes = packEffx(parts);
    writeFileBytes(path, bytes);
  }
  std::vector<std::byte> expected = std::move(parts.state);
  // Touch the buffer for the copy first, so only the mapping is measured.
  std::vector<std::byte> region(kBytes + 320, std::byte{1});
  uint64_t before = residentBytes();
  EffxFile file = EffxFile::open(path);
  uint64_t opened = residentBytes();
  file.copyInitialState(region.data());
  uint64_t copied = residentBytes();
  CHECK(region == expected);
  // Without releasing, each would be 64 MiB more.
  CHECK(opened < before + (8u << 20));
  CHECK(copied < before + (8u << 20));
}
