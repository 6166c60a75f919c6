//===- NpyTest.cpp - .npy headers -----------------------------------------===//

#include "UnitTest.h"

#include "effrt/Npy.h"

#include <cstring>

using namespace effrt;

/// A v1 .npy header (preamble + dict) for `dict`, unpadded.
static std::string npyV1(const std::string &dict) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict;
}

static NpyHeader parse(const std::string &bytes) {
  return parseNpyHeader(reinterpret_cast<const std::byte *>(bytes.data()),
                        bytes.size(), "t.npy");
}

TEST(npyParsesNumpyHeaders) {
  // Exactly what numpy 1.24 writes for np.zeros((2, 3), np.float32).
  std::string dict = "{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (2, 3), }";
  dict += std::string(117 - dict.size(), ' ') + "\n";
  NpyHeader h = parse(npyV1(dict));
  CHECK(h.dtype == DType::F32);
  CHECK_EQ(h.shape, Shape({2, 3}));
  CHECK_EQ(h.dataSize, 24u);
  CHECK_EQ(h.dataOffset, 128u);

  h = parse(npyV1("{'descr': '|b1', 'fortran_order': False, 'shape': (), }\n"));
  CHECK(h.dtype == DType::Bool);
  CHECK(h.shape.empty());
  CHECK_EQ(h.dataSize, 1u);

  h = parse(npyV1("{'descr': '<u2', 'fortran_order': False, 'shape': (7,), }"));
  CHECK_EQ(h.shape, Shape({7}));
}

TEST(npyAcceptsHeaderVariants) {
  // Key order, double quotes, Python 2 longs, no trailing comma.
  NpyHeader h = parse(npyV1("{\"shape\": (3L, 4L), \"descr\": \"<i8\", "
                            "\"fortran_order\": False}  \n"));
  CHECK(h.dtype == DType::I64);
  CHECK_EQ(h.shape, Shape({3, 4}));
  // Fortran order is harmless when at most one dimension exceeds 1.
  h = parse(
      npyV1("{'descr': '<f8', 'fortran_order': True, 'shape': (1, 5, 1), }"));
  CHECK_EQ(h.shape, Shape({1, 5, 1}));
}

TEST(npyVersion2And3) {
  std::string dict =
      "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }\n";
  for (char version : {'\x02', '\x03'}) {
    std::string bytes("\x93NUMPY", 6);
    bytes += version;
    bytes += '\0';
    uint32_t n = static_cast<uint32_t>(dict.size());
    bytes.append(reinterpret_cast<const char *>(&n), 4);
    bytes += dict;
    NpyHeader h = parse(bytes);
    CHECK(h.dtype == DType::F16);
    CHECK_EQ(h.dataOffset, 12 + dict.size());
  }
}

TEST(npyRejectsBadHeaders) {
  CHECK_ERROR(parse("garbage!!!!!"), "t.npy: not an .npy array (bad magic)");
  CHECK_ERROR(parse(""), "bad magic");
  CHECK_ERROR(parse(std::string("\x93NUMPY\x01", 7)), "truncated");
  CHECK_ERROR(parse(std::string("\x93NUMPY\x04\x00\x00\x00", 10)),
              "unsupported .npy version 4.0");
  std::string good =
      npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
  CHECK_ERROR(parse(good.substr(0, good.size() - 5)), "truncated .npy header");
  CHECK_ERROR(
      parse(
          npyV1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }")),
      "Fortran order");
  CHECK_ERROR(
      parse(npyV1("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }")),
      "big-endian dtype '>f4' is not supported");
  CHECK_ERROR(
      parse(npyV1("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }")),
      "dtype '<c8' is not supported");
  CHECK_ERROR(
      parse(npyV1("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }")),
      "dtype '|O' is not supported");
  CHECK_ERROR(parse(npyV1("{'descr': [('a', '<f4')], 'fortran_order': False, "
                          "'shape': (2,), }")),
              "structured dtypes");
  CHECK_ERROR(parse(npyV1("{'descr': '<f4', 'shape': (2,), }")),
              "lacks 'fortran_order'");
  CHECK_ERROR(
      parse(npyV1(
          "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}")),
      "unexpected key 'x'");
  CHECK_ERROR(parse(npyV1("{'descr': '<f4', 'descr': '<f4', 'fortran_order': "
                          "False, 'shape': (2,)}")),
              "repeats 'descr'");
  CHECK_ERROR(
      parse(
          npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }")),
      "malformed .npy header");
  CHECK_ERROR(
      parse(
          npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x")),
      "malformed .npy header");
  CHECK_ERROR(
      parse(npyV1("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }")),
      "expected True or False");
  CHECK_ERROR(parse(npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': "
                          "(99999999999999999999,), }")),
              "too large");
  CHECK_ERROR(parse(npyV1("{'descr': '<f8', 'fortran_order': False, 'shape': "
                          "(4294967296, 4294967296), }")),
              "too large");
  CHECK_ERROR(parse(npyV1("{'descr': '<f4")), "malformed");
}

TEST(npyFormatRoundTrips) {
  std::vector<Shape> shapes = {
      {}, {0}, {1}, {7}, {2, 3}, {4, 0, 5}, {1, 2, 3, 4, 5, 6}};
  for (DType d : kAllDTypes) {
    if (d == DType::BF16) {
      CHECK_ERROR(formatNpyHeader(d, {2}), "bfloat16 has no numpy dtype");
      continue;
    }
    for (const Shape &shape : shapes) {
      std::string header = formatNpyHeader(d, shape);
      CHECK_EQ(header.size() % 64, 0u);
      CHECK_EQ(header.back(), '\n');
      NpyHeader h = parse(header);
      CHECK(h.dtype == d);
      CHECK_EQ(h.shape, shape);
      CHECK_EQ(h.dataOffset, header.size());
    }
  }
  CHECK_EQ(formatNpyHeader(DType::F32, {7}).find("'shape': (7,)") !=
               std::string::npos,
           true);
  // Thousands of dimensions need a v2 header.
  Shape many(30000, 1);
  std::string big = formatNpyHeader(DType::U8, many);
  CHECK_EQ(static_cast<int>(big[6]), 2);
  CHECK_EQ(parse(big).shape.size(), many.size());
}
