//===- SafeTensorsTest.cpp - safetensors reading and writing --------------===//

#include "TestData.h"
#include "UnitTest.h"

#include "effrt/SafeTensors.h"

#include <cstring>

using namespace effrt;
using namespace effrt::test;

/// A safetensors file from a header text and a data buffer size.
static SafeTensorsFile fromHeader(const std::string &header,
                                  size_t dataSize = 0) {
  std::vector<std::byte> bytes(8 + header.size() + dataSize);
  uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return SafeTensorsFile::fromBytes(bytesFromVector(std::move(bytes)), "m.st");
}

TEST(safetensorsRoundTrip) {
  NamedTensors tensors = sampleArrays();
  tensors.emplace_back("bf", patterned(DType::BF16, {4, 4}));
  Metadata metadata{{"format", "pt"}, {"step", "12"}};
  std::string path = tempPath("ckpt.safetensors");
  writeSafeTensors(path, tensors, metadata);
  SafeTensorsFile file = SafeTensorsFile::open(path);
  CHECK(file.metadata() == metadata);
  CHECK_EQ(file.names().size(), tensors.size());
  for (const auto &[name, expected] : tensors) {
    Tensor t = file.read(name);
    if (!t.sameAs(expected))
      checkFailed(__FILE__, __LINE__, "tensor '" + name + "' differs");
    CHECK(t.isAligned());
  }
  // Data order is by decreasing element size, then the given order.
  size_t previous = 8;
  for (const std::string &name : file.names()) {
    size_t size = dtypeSize(file.entry(name).dtype);
    CHECK(size <= previous);
    previous = size;
  }
  for (const std::string &name : listDir(tempDir()))
    CHECK(name.find(".tmp.") == std::string::npos);
}

TEST(safetensorsHeaderIsPaddedJson) {
  std::string path = tempPath("pad.safetensors");
  writeSafeTensors(path, {{"w", patterned(DType::F32, {2, 3})}});
  std::vector<std::byte> bytes = readFileBytes(path);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  CHECK_EQ((8 + n) % 8, 0u);
  CHECK_EQ(bytes.size(), 8 + n + 24);
  std::string header(reinterpret_cast<const char *>(bytes.data() + 8), n);
  CHECK(header.find("\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                    "\"data_offsets\":[0,24]}") != std::string::npos);
}

TEST(safetensorsEmptyAndZeroSized) {
  std::string path = tempPath("empty.safetensors");
  writeSafeTensors(path, {});
  CHECK(SafeTensorsFile::open(path).names().empty());
  writeSafeTensors(path, {{"a", Tensor::zeros(DType::F32, {0})},
                          {"b", Tensor::zeros(DType::F32, {0, 3})},
                          {"c", Tensor::zeros(DType::I8, {2})}});
  SafeTensorsFile file = SafeTensorsFile::open(path);
  CHECK_EQ(file.names().size(), 3u);
  CHECK_EQ(file.read("b").shape(), Shape({0, 3}));
}

TEST(safetensorsWriteIsAtomic) {
  std::string path = tempPath("atomic.safetensors");
  writeSafeTensors(path, {{"w", patterned(DType::F32, {4}, 1)}});
  std::vector<std::byte> before = readFileBytes(path);
  // A write that fails validation leaves the old file untouched.
  CHECK_ERROR(writeSafeTensors(
                  path, {{"__metadata__", Tensor::zeros(DType::F32, {1})}}),
              "'__metadata__' is reserved");
  CHECK_ERROR(writeSafeTensors(path, {{"a", Tensor::zeros(DType::F32, {1})},
                                      {"a", Tensor::zeros(DType::F32, {1})}}),
              "two tensors named 'a'");
  CHECK(readFileBytes(path) == before);
  // A successful one replaces it whole; an open mapping of the old file
  // keeps seeing the old bytes (rename, not overwrite).
  SafeTensorsFile old = SafeTensorsFile::open(path);
  writeSafeTensors(path, {{"w", patterned(DType::F32, {4}, 2)}});
  CHECK(old.read("w").sameAs(patterned(DType::F32, {4}, 1)));
  CHECK(SafeTensorsFile::open(path).read("w").sameAs(
      patterned(DType::F32, {4}, 2)));
  CHECK_ERROR(writeSafeTensors(tempPath("nodir/x.safetensors"), {}),
              "nodir/x.safetensors: cannot create");
}

TEST(safetensorsRejectsBadFiles) {
  CHECK_ERROR(SafeTensorsFile::fromBytes(
                  bytesFromVector(std::vector<std::byte>(5)), "s.st"),
              "s.st: not a safetensors file (5 bytes");
  std::vector<std::byte> huge(16);
  huge[7] = std::byte{1};
  CHECK_ERROR(SafeTensorsFile::fromBytes(bytesFromVector(huge), "h.st"),
              "exceeds the 100000000-byte limit");
  std::vector<std::byte> longer(16);
  longer[0] = std::byte{100};
  CHECK_ERROR(SafeTensorsFile::fromBytes(bytesFromVector(longer), "l.st"),
              "l.st: truncated safetensors file: header length 100 exceeds the "
              "8 bytes");
  CHECK_ERROR(fromHeader("[1, 2]"), "header does not start with '{'");
  CHECK_ERROR(fromHeader("{\"a\": "), "m.st: invalid safetensors JSON header");
  CHECK_ERROR(fromHeader("{} x"), "invalid safetensors JSON header");
  CHECK_ERROR(fromHeader("{\"a\": 1}"),
              "m.st: tensor 'a': header entry is not a JSON object");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}"),
              "lacks 'data_offsets'");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F8_E4M3\", \"shape\": [1], "
                         "\"data_offsets\": [0, 1]}}",
                         1),
              "dtype 'F8_E4M3' is not supported");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [-1], "
                         "\"data_offsets\": [0, 4]}}",
                         4),
              "'shape' must hold non-negative integers");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [1.5], "
                         "\"data_offsets\": [0, 4]}}",
                         4),
              "non-negative integers");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
                         "\"data_offsets\": [4, 0]}}",
                         4),
              "end before they begin");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
                         "\"data_offsets\": [0, 4]}}",
                         4),
              "m.st: tensor 'a': shape [2] of F32 needs 8 bytes but "
              "data_offsets [0, 4] span 4");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
                         "\"data_offsets\": [0, 4]},"
                         " \"b\": {\"dtype\": \"F32\", \"shape\": [1], "
                         "\"data_offsets\": [2, 6]}}",
                         6),
              "tensor 'b' starts at byte 2 of the data buffer, expected 4");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
                         "\"data_offsets\": [4, 8]}}",
                         8),
              "tensor 'a' starts at byte 4 of the data buffer, expected 0");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
                         "\"data_offsets\": [0, 4]}}",
                         2),
              "truncated safetensors file: tensors need 4 bytes of data, the "
              "file holds 2");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
                         "\"data_offsets\": [0, 4]}}",
                         9),
              "has 5 bytes after the last tensor");
  CHECK_ERROR(fromHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], "
                         "\"data_offsets\": [0, 1]},"
                         " \"a\": {\"dtype\": \"U8\", \"shape\": [1], "
                         "\"data_offsets\": [1, 2]}}",
                         2),
              "header names 'a' twice");
  CHECK_ERROR(fromHeader("{\"__metadata__\": {\"k\": 1}}"),
              "metadata value of 'k' is not a string");
  CHECK_ERROR(
      fromHeader(
          "{\"a\": {\"dtype\": \"F64\", \"shape\": [4294967296, 4294967296], "
          "\"data_offsets\": [0, 0]}}"),
      "is too large");
  CHECK_ERROR(fromHeader("{\"a\\u0000\": 5}"), "not a JSON object");
  CHECK_ERROR(SafeTensorsFile::open(tempPath("absent.safetensors")),
              "cannot open");
}

TEST(safetensorsAcceptsReferenceLayouts) {
  // Whitespace padding, unknown keys, and metadata placed anywhere.
  SafeTensorsFile f = fromHeader("{\"b\": {\"dtype\": \"BOOL\", \"shape\": "
                                 "[2], \"data_offsets\": [4, 6], \"x\": 1},"
                                 " \"__metadata__\": {\"format\": \"pt\"},"
                                 " \"a\": {\"dtype\": \"I32\", \"shape\": [], "
                                 "\"data_offsets\": [0, 4]}}     ",
                                 6);
  CHECK_EQ(f.names(), std::vector<std::string>({"a", "b"}));
  CHECK_EQ(f.metadata().at("format"), "pt");
  CHECK_EQ(f.read("a").shape(), Shape({}));
  CHECK_ERROR(f.read("c"), "m.st: no tensor named 'c'");
}
