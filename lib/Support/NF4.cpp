//===- NF4.cpp - 4-bit NormalFloat quantization of frozen weights ---------===//

#include "effopt/Support/NF4.h"

#include <algorithm>
#include <cmath>

using namespace effopt;

llvm::ArrayRef<float> nf4::codeTable() {
  // bitsandbytes' functional.get_4bit_type("nf4"), as f32.
  static const float table[16] = {
      -1.0f,           -0x1.647362p-1f, -0x1.0cd66p-1f,  -0x1.94654p-2f,
      -0x1.23449ap-2f, -0x1.7a6a7ep-3f, -0x1.74f0e2p-4f, 0.0f,
      0x1.45f5fep-4f,  0x1.4995c6p-3f,  0x1.f809bap-3f,  0x1.5a0674p-2f,
      0x1.c3497p-2f,   0x1.200f56p-1f,  0x1.722766p-1f,  1.0f};
  return table;
}

llvm::ArrayRef<float> nf4::dynamicMap() {
  // create_dynamic_map(signed=True) evaluated by PyTorch (its f32
  // linspace and means), sorted; test/E2E/lib/nf4_reference.py recomputes
  // it and the tests compare.
  static const float table[256] = {
    -0x1.fc6666p-1f, -0x1.f53332p-1f, -0x1.eep-1f, -0x1.e6ccccp-1f,
    -0x1.df9998p-1f, -0x1.d86666p-1f, -0x1.d13334p-1f, -0x1.cap-1f,
    -0x1.c2ccccp-1f, -0x1.bb9998p-1f, -0x1.b46666p-1f, -0x1.ad3332p-1f,
    -0x1.a6p-1f, -0x1.9eccccp-1f, -0x1.979998p-1f, -0x1.906666p-1f,
    -0x1.893334p-1f, -0x1.82p-1f, -0x1.7acccep-1f, -0x1.73999ap-1f,
    -0x1.6c6668p-1f, -0x1.653334p-1f, -0x1.5ep-1f, -0x1.56cccep-1f,
    -0x1.4f999ap-1f, -0x1.486666p-1f, -0x1.413334p-1f, -0x1.3ap-1f,
    -0x1.32ccccp-1f, -0x1.2b999ap-1f, -0x1.246668p-1f, -0x1.1d3334p-1f,
    -0x1.16p-1f, -0x1.0eccccp-1f, -0x1.07999ap-1f, -0x1.006666p-1f,
    -0x1.f26668p-2f, -0x1.e4p-2f, -0x1.d59998p-2f, -0x1.c73334p-2f,
    -0x1.b8ccccp-2f, -0x1.aa6664p-2f, -0x1.9cp-2f, -0x1.8d9998p-2f,
    -0x1.7f3334p-2f, -0x1.70ccccp-2f, -0x1.626664p-2f, -0x1.54p-2f,
    -0x1.459998p-2f, -0x1.373334p-2f, -0x1.28ccccp-2f, -0x1.1a6668p-2f,
    -0x1.0cp-2f, -0x1.fb3334p-3f, -0x1.de6668p-3f, -0x1.c1999ap-3f,
    -0x1.a4ccccp-3f, -0x1.88p-3f, -0x1.6b3332p-3f, -0x1.4e6666p-3f,
    -0x1.31999ap-3f, -0x1.14ccccp-3f, -0x1.fp-4f, -0x1.b66668p-4f,
    -0x1.93d70ap-4f, -0x1.8851eap-4f, -0x1.7ccccep-4f, -0x1.7147aep-4f,
    -0x1.65c29p-4f, -0x1.5a3d7p-4f, -0x1.4eb85p-4f, -0x1.433334p-4f,
    -0x1.37ae14p-4f, -0x1.2c28f6p-4f, -0x1.20a3d6p-4f, -0x1.151ebap-4f,
    -0x1.09999ap-4f, -0x1.fc28f4p-5f, -0x1.e51ebap-5f, -0x1.ce147ap-5f,
    -0x1.b70a3ep-5f, -0x1.ap-5f, -0x1.88f5c2p-5f, -0x1.71eb86p-5f,
    -0x1.5ae146p-5f, -0x1.43d70ap-5f, -0x1.2ccccep-5f, -0x1.15c28ep-5f,
    -0x1.fd70a4p-6f, -0x1.cf5c26p-6f, -0x1.a147aep-6f, -0x1.733334p-6f,
    -0x1.451eb8p-6f, -0x1.170a3ep-6f, -0x1.d1eb86p-7f, -0x1.75c29p-7f,
    -0x1.3e76c8p-7f, -0x1.2c083p-7f, -0x1.19999ap-7f, -0x1.072b02p-7f,
    -0x1.e978d4p-8f, -0x1.c49ba6p-8f, -0x1.9fbe76p-8f, -0x1.7ae148p-8f,
    -0x1.56041ap-8f, -0x1.3126e8p-8f, -0x1.0c49bap-8f, -0x1.ced914p-9f,
    -0x1.851eb8p-9f, -0x1.3b645ap-9f, -0x1.e353f8p-10f, -0x1.4fdf3ap-10f,
    -0x1.eecbfep-11f, -0x1.b3d07cp-11f, -0x1.78d5p-11f, -0x1.3dd982p-11f,
    -0x1.02de02p-11f, -0x1.8fc506p-12f, -0x1.19ce0ap-12f, -0x1.47ae16p-13f,
    -0x1.743e96p-14f, -0x1.15df66p-14f, -0x1.6f0068p-15f, -0x1.64840cp-16f,
    -0x1.040bfep-17f, -0x1.b43528p-19f, -0x1.27476ep-21f, 0x0p+0f,
    0x1.27476ep-21f, 0x1.b43528p-19f, 0x1.040bfep-17f, 0x1.64840cp-16f,
    0x1.6f0068p-15f, 0x1.15df66p-14f, 0x1.743e96p-14f, 0x1.47ae16p-13f,
    0x1.19ce0ap-12f, 0x1.8fc506p-12f, 0x1.02de02p-11f, 0x1.3dd982p-11f,
    0x1.78d5p-11f, 0x1.b3d07cp-11f, 0x1.eecbfep-11f, 0x1.4fdf3ap-10f,
    0x1.e353f8p-10f, 0x1.3b645ap-9f, 0x1.851eb8p-9f, 0x1.ced914p-9f,
    0x1.0c49bap-8f, 0x1.3126e8p-8f, 0x1.56041ap-8f, 0x1.7ae148p-8f,
    0x1.9fbe76p-8f, 0x1.c49ba6p-8f, 0x1.e978d4p-8f, 0x1.072b02p-7f,
    0x1.19999ap-7f, 0x1.2c083p-7f, 0x1.3e76c8p-7f, 0x1.75c29p-7f,
    0x1.d1eb86p-7f, 0x1.170a3ep-6f, 0x1.451eb8p-6f, 0x1.733334p-6f,
    0x1.a147aep-6f, 0x1.cf5c26p-6f, 0x1.fd70a4p-6f, 0x1.15c28ep-5f,
    0x1.2ccccep-5f, 0x1.43d70ap-5f, 0x1.5ae146p-5f, 0x1.71eb86p-5f,
    0x1.88f5c2p-5f, 0x1.ap-5f, 0x1.b70a3ep-5f, 0x1.ce147ap-5f,
    0x1.e51ebap-5f, 0x1.fc28f4p-5f, 0x1.09999ap-4f, 0x1.151ebap-4f,
    0x1.20a3d6p-4f, 0x1.2c28f6p-4f, 0x1.37ae14p-4f, 0x1.433334p-4f,
    0x1.4eb85p-4f, 0x1.5a3d7p-4f, 0x1.65c29p-4f, 0x1.7147aep-4f,
    0x1.7ccccep-4f, 0x1.8851eap-4f, 0x1.93d70ap-4f, 0x1.b66668p-4f,
    0x1.fp-4f, 0x1.14ccccp-3f, 0x1.31999ap-3f, 0x1.4e6666p-3f,
    0x1.6b3332p-3f, 0x1.88p-3f, 0x1.a4ccccp-3f, 0x1.c1999ap-3f,
    0x1.de6668p-3f, 0x1.fb3334p-3f, 0x1.0cp-2f, 0x1.1a6668p-2f,
    0x1.28ccccp-2f, 0x1.373334p-2f, 0x1.459998p-2f, 0x1.54p-2f,
    0x1.626664p-2f, 0x1.70ccccp-2f, 0x1.7f3334p-2f, 0x1.8d9998p-2f,
    0x1.9cp-2f, 0x1.aa6664p-2f, 0x1.b8ccccp-2f, 0x1.c73334p-2f,
    0x1.d59998p-2f, 0x1.e4p-2f, 0x1.f26668p-2f, 0x1.006666p-1f,
    0x1.07999ap-1f, 0x1.0eccccp-1f, 0x1.16p-1f, 0x1.1d3334p-1f,
    0x1.246668p-1f, 0x1.2b999ap-1f, 0x1.32ccccp-1f, 0x1.3ap-1f,
    0x1.413334p-1f, 0x1.486666p-1f, 0x1.4f999ap-1f, 0x1.56cccep-1f,
    0x1.5ep-1f, 0x1.653334p-1f, 0x1.6c6668p-1f, 0x1.73999ap-1f,
    0x1.7acccep-1f, 0x1.82p-1f, 0x1.893334p-1f, 0x1.906666p-1f,
    0x1.979998p-1f, 0x1.9eccccp-1f, 0x1.a6p-1f, 0x1.ad3332p-1f,
    0x1.b46666p-1f, 0x1.bb9998p-1f, 0x1.c2ccccp-1f, 0x1.cap-1f,
    0x1.d13334p-1f, 0x1.d86666p-1f, 0x1.df9998p-1f, 0x1.e6ccccp-1f,
    0x1.eep-1f, 0x1.f53332p-1f, 0x1.fc6666p-1f, 0x1p+0f,
  };
  return table;
}

unsigned nf4::nearest(llvm::ArrayRef<float> table, float x) {
  // The table ascends, so |x - t| (rounded monotonically) is smallest next
  // to where x would be inserted; walk left over equal distances to get
  // argmin's first index.
  auto distance = [&](size_t j) { return std::fabs(x - table[j]); };
  size_t hi = std::lower_bound(table.begin(), table.end(), x) - table.begin();
  size_t best = hi == table.size() ? table.size() - 1 : hi;
  if (hi > 0 && distance(hi - 1) <= distance(best))
    best = hi - 1;
  while (best > 0 && distance(best - 1) == distance(best))
    --best;
  return static_cast<unsigned>(best);
}

/// bitsandbytes' blockwise absmax scaling of element `x` of a block whose
/// absmax is `absmax`: clamp(x * (1 / absmax), -1, 1) in f32. An all-zero
/// block (absmax 0) scales to 0.
static float scaled(float x, float absmax) {
  if (absmax == 0.0f)
    return 0.0f;
  float inverse = 1.0f / absmax;
  return std::clamp(x * inverse, -1.0f, 1.0f);
}

nf4::Quantized nf4::quantize(llvm::ArrayRef<float> weight, int64_t blockSize,
                             int64_t nestedBlockSize) {
  Quantized q;
  int64_t n = static_cast<int64_t>(weight.size());
  int64_t blocks = (n + blockSize - 1) / blockSize;
  std::vector<float> absmax(blocks, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    absmax[i / blockSize] = std::max(absmax[i / blockSize], std::fabs(weight[i]));

  llvm::ArrayRef<float> table = codeTable();
  unsigned zeroCode = nearest(table, 0.0f);
  q.codes.assign((n + 1) / 2, 0);
  for (int64_t i = 0; i < n + (n % 2); ++i) {
    unsigned code = i < n ? nearest(table, scaled(weight[i], absmax[i / blockSize]))
                          : zeroCode;
    q.codes[i / 2] |= static_cast<uint8_t>(i % 2 == 0 ? code << 4 : code);
  }

  // Double quantization of the statistics: their mean in f64 (one rounding;
  // PyTorch's f32 mean agrees to an ulp), then 8-bit blocks.
  double sum = 0;
  for (float a : absmax)
    sum += a;
  q.offset = blocks ? static_cast<float>(sum / static_cast<double>(blocks)) : 0.0f;
  int64_t nestedBlocks = (blocks + nestedBlockSize - 1) / nestedBlockSize;
  std::vector<float> centered(blocks);
  for (int64_t b = 0; b < blocks; ++b)
    centered[b] = absmax[b] - q.offset;
  q.nested.assign(nestedBlocks, 0.0f);
  for (int64_t b = 0; b < blocks; ++b)
    q.nested[b / nestedBlockSize] =
        std::max(q.nested[b / nestedBlockSize], std::fabs(centered[b]));
  llvm::ArrayRef<float> dynamic = dynamicMap();
  q.absmax.resize(blocks);
  for (int64_t b = 0; b < blocks; ++b)
    q.absmax[b] = static_cast<uint8_t>(
        nearest(dynamic, scaled(centered[b], q.nested[b / nestedBlockSize])));
  return q;
}

float nf4::blockAbsmax(const Quantized &q, int64_t block,
                       int64_t nestedBlockSize) {
  float scaledValue = dynamicMap()[q.absmax[block]] * q.nested[block / nestedBlockSize];
  return scaledValue + q.offset;
}

float nf4::dequantize(const Quantized &q, int64_t i, int64_t blockSize,
                      int64_t nestedBlockSize) {
  uint8_t byte = q.codes[i / 2];
  unsigned code = i % 2 == 0 ? byte >> 4 : byte & 0xF;
  return codeTable()[code] * blockAbsmax(q, i / blockSize, nestedBlockSize);
}
