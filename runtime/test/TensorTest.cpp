//===- TensorTest.cpp - DType tables, float conversions, Tensor -----------===//

#include "UnitTest.h"

#include "effrt/Tensor.h"

#include <cmath>
#include <limits>

using namespace effrt;

TEST(dtypeTablesRoundTrip) {
  for (DType d : kAllDTypes) {
    CHECK(dtypeFromName(dtypeName(d)) == d);
    CHECK(dtypeFromSafeTensorsCode(dtypeSafeTensorsCode(d)) == d);
    if (d != DType::BF16)
      CHECK(dtypeFromNumpyCode(dtypeNumpyCode(d)) == d);
  }
  CHECK(dtypeNumpyCode(DType::BF16).empty());
  CHECK_EQ(dtypeSize(DType::F32), 4u);
  CHECK_EQ(dtypeSize(DType::BF16), 2u);
  CHECK_EQ(dtypeSize(DType::I64), 8u);
  CHECK_EQ(dtypeSize(DType::Bool), 1u);
  CHECK_EQ(std::string(dtypeName(DType::Bool)), "bool");
  CHECK_EQ(std::string(dtypeSafeTensorsCode(DType::Bool)), "BOOL");
  CHECK_EQ(std::string(dtypeNumpyCode(DType::U16)), "<u2");
}

TEST(numpyCodesAcceptOnlyLittleEndian) {
  CHECK(dtypeFromNumpyCode("|b1") == DType::Bool);
  CHECK(dtypeFromNumpyCode("<u1") == DType::U8); // byte order is moot
  CHECK(!dtypeFromNumpyCode(">f4"));
  CHECK(!dtypeFromNumpyCode("|f4")); // '|' only for one-byte types
  CHECK(!dtypeFromNumpyCode("<c8"));
  CHECK(!dtypeFromNumpyCode("f4"));
  CHECK(!dtypeFromNumpyCode(""));
}

TEST(shapeHelpers) {
  CHECK_EQ(formatShape({}), "[]");
  CHECK_EQ(formatShape({10, 64}), "[10,64]");
  CHECK_EQ(formatShape({-1, 64}), "[*,64]");
  CHECK(checkedNumElements({}) == 1);
  CHECK(checkedNumElements({3, 0, 5}) == 0);
  CHECK(!checkedNumElements({-1}));
  CHECK(!checkedNumElements({int64_t(1) << 40, int64_t(1) << 40}));
  CHECK(checkedByteSize(DType::F64, {2, 3}) == 48u);
  CHECK(!checkedByteSize(DType::F64, {int64_t(1) << 62}));
}

TEST(halfConversionsRoundTripEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      CHECK(std::isnan(halfToFloat(floatToHalf(f))));
      continue;
    }
    CHECK_EQ(floatToHalf(f), static_cast<uint16_t>(h));
  }
  CHECK_EQ(halfToFloat(0x3c00), 1.0f);
  CHECK_EQ(halfToFloat(0xc000), -2.0f);
  CHECK_EQ(halfToFloat(0x7bff), 65504.0f);
  CHECK_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  CHECK(std::isinf(halfToFloat(0x7c00)));
}

TEST(halfRoundsToNearestEven) {
  float ulp = std::ldexp(1.0f, -10);             // spacing of halves in [1, 2)
  CHECK_EQ(floatToHalf(1.0f + ulp / 2), 0x3c00); // tie → even (down)
  CHECK_EQ(floatToHalf(1.0f + 3 * ulp / 2), 0x3c02); // tie → even (up)
  CHECK_EQ(floatToHalf(1.0f + ulp / 2 + 1e-6f), 0x3c01);
  CHECK_EQ(floatToHalf(65519.0f), 0x7bff);
  CHECK_EQ(floatToHalf(65520.0f), 0x7c00); // rounds to infinity
  CHECK_EQ(floatToHalf(-1e9f), 0xfc00);
  CHECK_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie → even (zero)
  CHECK_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);
  CHECK_EQ(floatToHalf(-0.0f), 0x8000);
}

TEST(bfloat16Conversions) {
  CHECK_EQ(floatToBfloat16(1.0f), 0x3f80);
  CHECK_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  CHECK_EQ(bfloat16ToFloat(0xc040), -3.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even.
  CHECK_EQ(floatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  CHECK_EQ(floatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  CHECK(std::isnan(bfloat16ToFloat(
      floatToBfloat16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = bfloat16ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f))
      CHECK_EQ(floatToBfloat16(f), static_cast<uint16_t>(b));
  }
}

TEST(tensorOwnsOrViews) {
  Tensor z = Tensor::zeros(DType::F32, {2, 3});
  CHECK_EQ(z.numElements(), 6);
  CHECK_EQ(z.byteSize(), 24u);
  CHECK(z.isWritable());
  CHECK(reinterpret_cast<uintptr_t>(z.data()) % 64 == 0);
  CHECK_EQ(z.elementAsDouble(5), 0.0);

  float values[6] = {1, 2, 3, 4, 5, 6};
  Tensor c = Tensor::copyOf(DType::F32, {2, 3}, values, sizeof(values));
  CHECK_EQ(c.load<float>(4), 5.0f);
  c.mutableData()[0] = std::byte{0};
  CHECK_EQ(values[0], 1.0f);

  Tensor v = Tensor::view(DType::F32, {6}, values, nullptr);
  CHECK(!v.isWritable());
  CHECK_ERROR(v.mutableData(), "read-only");
  Tensor owned = v.clone();
  CHECK(owned.isWritable());
  CHECK(owned.sameAs(v));

  Tensor rows = c.sliceRows(1, 2);
  CHECK_EQ(rows.shape(), Shape({1, 3}));
  CHECK_EQ(rows.load<float>(0), 4.0f);
  CHECK_ERROR(c.sliceRows(1, 3), "out of range");
  CHECK_ERROR(Tensor::zeros(DType::F32, {}).sliceRows(0, 0), "scalar");
  CHECK_EQ(c.reshaped({3, 2}).shape(), Shape({3, 2}));
  CHECK_ERROR(c.reshaped({4}), "cannot reshape");
  CHECK_ERROR(Tensor::copyOf(DType::F32, {2}, values, 4), "needs 8 bytes");
  CHECK_ERROR(Tensor::zeros(DType::F32, {-2}), "negative");
}

TEST(tensorScalarsAndEmpty) {
  Tensor s = Tensor::zeros(DType::F64, {});
  CHECK_EQ(s.numElements(), 1);
  CHECK_EQ(s.byteSize(), 8u);
  Tensor e = Tensor::zeros(DType::I32, {0, 7});
  CHECK_EQ(e.numElements(), 0);
  CHECK_EQ(e.byteSize(), 0u);
  CHECK(e.sameAs(e.clone()));
  Tensor d;
  CHECK_EQ(d.numElements(), 0);
}

TEST(elementsAsDouble) {
  uint16_t half = floatToHalf(-1.5f);
  CHECK_EQ(Tensor::copyOf(DType::F16, {1}, &half, 2).elementAsDouble(0), -1.5);
  int64_t big = -(int64_t(1) << 40);
  CHECK_EQ(Tensor::copyOf(DType::I64, {1}, &big, 8).elementAsDouble(0),
           -1099511627776.0);
  uint8_t flag = 7;
  CHECK_EQ(Tensor::copyOf(DType::Bool, {1}, &flag, 1).elementAsDouble(0), 1.0);
  int8_t neg = -3;
  CHECK_EQ(Tensor::copyOf(DType::I8, {1}, &neg, 1).elementAsDouble(0), -3.0);
}

TEST(expectTensorMessages) {
  Tensor t = Tensor::zeros(DType::F32, {10, 64});
  expectTensor("data.npz", "array", "x", t, DType::F32, {-1, 64});
  CHECK_ERROR(expectTensor("data.npz", "array", "x", t, DType::F32, {-1, 32}),
              "data.npz: array 'x' has shape [10,64], expected [*,32] with "
              "float32");
  CHECK_ERROR(expectTensor("data.npz", "array", "x", t, DType::I64, {-1, 64}),
              "data.npz: array 'x' has shape [10,64] and dtype float32, "
              "expected [*,64] with int64");
  CHECK_ERROR(expectTensor("d.npz", "array", "x", t, DType::F32, {-1}),
              "expected [*]");
}

TEST(errorsAreOneLine) {
  Error e("a\nb\tc");
  CHECK_EQ(std::string(e.what()), "a b c");
  CHECK_EQ(quoteName("x'y"), "'x\\'y'");
  CHECK_EQ(quoteName(std::string("a\nb")), "'a\\x0ab'");
}
