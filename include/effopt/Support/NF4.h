//===- NF4.h - 4-bit NormalFloat quantization of frozen weights -*- C++ -*-===//
//
// The numerics of bitsandbytes' quantize_4bit(quant_type="nf4",
// blocksize=64, compress_statistics=True) (Dettmers et al. 2023, QLoRA),
// which eff-quantize-frozen applies at compile time and whose inverse the
// lowering of eff.linear computes tile by tile (docs/Quantization.md):
//
//   absmax[b] = max |w| over block b (block_size elements, row-major)
//   code[i]   = nearest NF4 value to clamp(w[i] * (1 / absmax[b]), -1, 1)
//   offset    = mean(absmax)
//   qabsmax[b], nested[c] = 8-bit blockwise quantization of absmax - offset
//               (blocks of nested_block_size, bitsandbytes' signed dynamic map)
//
// Every step is f32 arithmetic as bitsandbytes' reference does it, and
// "nearest" is its argmin: the first (lowest) index on a tie.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_SUPPORT_NF4_H
#define EFFOPT_SUPPORT_NF4_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace effopt::nf4 {

/// The 16 NF4 values (bitsandbytes get_4bit_type("nf4"), the QLoRA
/// paper's table), ascending; code 7 is 0.
llvm::ArrayRef<float> codeTable();

/// bitsandbytes' create_dynamic_map(signed=True, max_exponent_bits=7,
/// total_bits=8): 256 ascending values in [-0.993, 1].
llvm::ArrayRef<float> dynamicMap();

/// The index of the value of the ascending `table` nearest to `x` by f32
/// |x - table[j]|, the lowest index on a tie (torch.argmin).
unsigned nearest(llvm::ArrayRef<float> table, float x);

/// A weight in bitsandbytes' NF4 layout with double-quantized statistics.
struct Quantized {
  /// ceil(n / 2) bytes: element 2i in the high nibble, 2i+1 in the low one
  /// (an odd n pads with the code of 0).
  std::vector<uint8_t> codes;
  /// One byte per block of `blockSize`: the dynamic-map index of the
  /// block's absmax minus `offset`, scaled by its nested block's `nested`.
  std::vector<uint8_t> absmax;
  /// One f32 per nested block of `nestedBlockSize` block absmax values.
  std::vector<float> nested;
  /// The mean of the block absmax values.
  float offset = 0;
};

/// Quantizes `weight` (row-major, any length).
Quantized quantize(llvm::ArrayRef<float> weight, int64_t blockSize,
                   int64_t nestedBlockSize);

/// The absmax of block `block`, dequantized (f32: DYN[q] * nested + offset).
float blockAbsmax(const Quantized &q, int64_t block, int64_t nestedBlockSize);

/// Element `i`, dequantized (f32: NF4[code] * absmax of its block).
float dequantize(const Quantized &q, int64_t i, int64_t blockSize,
                 int64_t nestedBlockSize);

} // namespace effopt::nf4

#endif // EFFOPT_SUPPORT_NF4_H
