//===- NpzTest.cpp - .npz reading and writing -----------------------------===//

#include "TestData.h"
#include "UnitTest.h"

#include "effrt/Npz.h"

#include <algorithm>
#include <cstring>

using namespace effrt;
using namespace effrt::test;

static void checkSameArrays(const NpzFile &file, const NamedTensors &arrays) {
  CHECK_EQ(file.names().size(), arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    const auto &[name, expected] = arrays[i];
    CHECK_EQ(file.names()[i], name);
    ArrayInfo info = file.info(name);
    CHECK(info.dtype == expected.dtype());
    CHECK_EQ(info.shape, expected.shape());
    Tensor t = file.read(name);
    if (!t.sameAs(expected))
      checkFailed(__FILE__, __LINE__, "array '" + name + "' differs");
  }
}

TEST(npzRoundTripStored) {
  NamedTensors arrays = sampleArrays();
  std::string path = tempPath("stored.npz");
  writeNpz(path, arrays);
  NpzFile file = NpzFile::open(path);
  checkSameArrays(file, arrays);
  for (const auto &[name, expected] : arrays) {
    Tensor t = file.read(name);
    CHECK(!file.info(name).compressed);
    CHECK(!t.isWritable()); // a view into the mapping
    CHECK(reinterpret_cast<uintptr_t>(t.data()) % 64 == 0);
  }
  // No temporary file is left behind.
  for (const std::string &name : listDir(tempDir()))
    CHECK(name.find(".tmp.") == std::string::npos);
}

TEST(npzRoundTripCompressed) {
  NamedTensors arrays = sampleArrays();
  std::string path = tempPath("compressed.npz");
  writeNpz(path, arrays, NpzWriteOptions{/*compress=*/true});
  NpzFile file = NpzFile::open(path);
  checkSameArrays(file, arrays);
  CHECK(file.info("big").compressed);
  CHECK(file.read("big").isWritable()); // inflated into owned memory
}

TEST(npzRoundTripZip64) {
  NamedTensors arrays = sampleArrays();
  for (bool compress : {false, true}) {
    std::string path = tempPath(compress ? "z64c.npz" : "z64.npz");
    writeNpz(path, arrays, NpzWriteOptions{compress, /*forceZip64=*/true});
    checkSameArrays(NpzFile::open(path), arrays);
  }
}

TEST(npzManyEntriesUseZip64EndRecord) {
  // More than 65535 entries do not fit the classic end record.
  NamedTensors arrays;
  for (int i = 0; i < 70000; ++i)
    arrays.emplace_back("a" + std::to_string(i),
                        patterned(DType::U8, {1}, static_cast<uint32_t>(i)));
  std::string path = tempPath("many.npz");
  writeNpz(path, arrays);
  NpzFile file = NpzFile::open(path);
  CHECK_EQ(file.names().size(), 70000u);
  CHECK(file.read("a69999").sameAs(arrays.back().second));
}

TEST(npzEmptyArchive) {
  std::string path = tempPath("none.npz");
  writeNpz(path, {});
  CHECK(NpzFile::open(path).names().empty());
}

TEST(npzLookupErrors) {
  std::string path = tempPath("one.npz");
  writeNpz(path, {{"x", patterned(DType::F32, {2})}});
  NpzFile file = NpzFile::open(path);
  CHECK(file.contains("x"));
  CHECK(!file.contains("x.npy"));
  CHECK_ERROR(file.read("y"), "one.npz: no array named 'y'");
  CHECK_ERROR(NpzFile::open(tempPath("missing.npz")),
              "missing.npz: cannot open: No such file or directory");
  CHECK_ERROR(NpzFile::open(tempDir()), "is a directory");
}

TEST(npzWriterRejectsBadInput) {
  std::string path = tempPath("bad-write.npz");
  CHECK_ERROR(writeNpz(path, {{"", Tensor::zeros(DType::F32, {1})}}),
              "must not be empty");
  CHECK_ERROR(writeNpz(path, {{"a", Tensor::zeros(DType::F32, {1})},
                              {"a", Tensor::zeros(DType::F32, {1})}}),
              "two arrays named 'a'");
  CHECK_ERROR(writeNpz(path, {{"w", Tensor::zeros(DType::BF16, {1})}}),
              "array 'w' has dtype bfloat16, which numpy cannot store");
  CHECK(!fileExists(path));
  CHECK_ERROR(writeNpz(tempPath("no/such/dir.npz"), {}),
              "no/such/dir.npz: cannot create");
}

TEST(npzDetectsCorruptData) {
  std::string path = tempPath("corrupt.npz");
  Tensor t = patterned(DType::F32, {64});
  writeNpz(path, {{"x", t}});
  std::vector<std::byte> bytes = readFileBytes(path);
  // Flip a byte inside the array data (the last entry byte before the
  // directory is data; find the data by its pattern).
  auto at = std::search(bytes.begin(), bytes.end(), t.data(), t.data() + 16);
  CHECK(at != bytes.end());
  *(at + 5) ^= std::byte{0x40};
  CHECK_ERROR(NpzFile::fromBytes(bytesFromVector(bytes), "c.npz").read("x"),
              "c.npz: array 'x': CRC-32 mismatch");
  NpzReadOptions trusting;
  trusting.verifyChecksums = false;
  Tensor read =
      NpzFile::fromBytes(bytesFromVector(bytes), "c.npz", trusting).read("x");
  CHECK(!read.sameAs(t));
}

TEST(npzTruncatedAtEveryLengthFails) {
  std::string path = tempPath("trunc.npz");
  writeNpz(path, {{"x", patterned(DType::I32, {10})},
                  {"y", patterned(DType::U8, {3})}});
  std::vector<std::byte> bytes = readFileBytes(path);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + n);
    bool threw = false;
    try {
      NpzFile f = NpzFile::fromBytes(bytesFromVector(cut), "t.npz");
      f.readAll();
    } catch (const Error &) {
      threw = true;
    }
    if (!threw)
      checkFailed(__FILE__, __LINE__,
                  "truncation to " + std::to_string(n) + " bytes not detected");
  }
}

TEST(npzReportsUnsupportedEntries) {
  // A stored entry that is not an .npy file.
  std::string path = tempPath("notnpy.npz");
  writeNpz(path, {{"x", patterned(DType::U8, {16})}});
  std::vector<std::byte> bytes = readFileBytes(path);
  static const char kMagic[] = "\x93NUMPY";
  auto magic =
      std::search(bytes.begin(), bytes.end(), kMagic, kMagic + 6,
                  [](std::byte b, char c) { return b == std::byte(c); });
  CHECK(magic != bytes.end());
  *magic = std::byte{'X'};
  NpzReadOptions trusting;
  trusting.verifyChecksums = false;
  CHECK_ERROR(
      NpzFile::fromBytes(bytesFromVector(bytes), "n.npz", trusting).read("x"),
      "n.npz: array 'x': not an .npy array (bad magic)");
  CHECK_ERROR(
      NpzFile::fromBytes(bytesFromVector(std::vector<std::byte>(100)), "g.npz"),
      "g.npz: not a .npz (zip) archive");
}

TEST(npzRejectsImpossibleInflatedSizes) {
  std::string path = tempPath("ratio.npz");
  writeNpz(path, {{"x", patterned(DType::F32, {8})}}, NpzWriteOptions{true});
  std::vector<std::byte> bytes = readFileBytes(path);
  // Patch the central directory's uncompressed size of the only entry.
  uint32_t cdOffset;
  std::memcpy(&cdOffset, bytes.data() + bytes.size() - 22 + 16, 4);
  uint32_t huge = 0xfffffffe;
  std::memcpy(bytes.data() + cdOffset + 24, &huge, 4);
  CHECK_ERROR(NpzFile::fromBytes(bytesFromVector(bytes), "r.npz"),
              "r.npz: entry 'x.npy' claims 4294967294 bytes inflated from");
}

TEST(npzRereadsAfterReleasingInflatedInput) {
  // Inflating a mapped archive drops the compressed pages it consumed from
  // the resident set; a second read (and a stored array of the same file
  // viewed meanwhile) faults them back in from the file unchanged.
  std::string path = tempPath("release.npz");
  NamedTensors arrays = {{"a", patterned(DType::U8, {24 << 20}, 7)},
                         {"b", patterned(DType::F32, {1000}, 8)}};
  writeNpz(path, arrays, NpzWriteOptions{/*compress=*/true});
  NpzFile file = NpzFile::open(path);
  CHECK(file.read("a").sameAs(arrays[0].second));
  CHECK(file.read("b").sameAs(arrays[1].second));
  CHECK(file.read("a").sameAs(arrays[0].second));
  std::string stored = tempPath("release-stored.npz");
  writeNpz(stored, arrays);
  NpzFile viewed = NpzFile::open(stored);
  Tensor view = viewed.read("a");
  CHECK(file.read("a").sameAs(view));
}
