//===- AttentionTiles.h - Tile shapes of the CUDA attention kernels -------===//
//
// Shared by Attention.cu (which instantiates its tensor-core kernels with
// these shapes), Attention.cpp (grids and dynamic shared memory) and the
// emulation test. A block is 4 warps; a warp owns `warpTiles` tiles of 16
// rows of the block's own operand (queries for the forward and the query
// pass, keys for the key pass) and streams `streamed` rows of the other
// operand through shared memory at a time.
//
// Two tile sets for D = 64: wide (32 rows a warp, FlashAttention-2's
// shape: each B fragment taken out of shared memory serves two mma tiles,
// so a warp reads the streamed tiles half as often per row it owns) and
// narrow (16 rows a warp, the shapes before). The arithmetic of an output
// element is the same in both (the forward streams the same 64 keys a
// step; the backward sums its products in 16-row steps, in order), so
// both give the same bits. D = 128 has one set: its accumulators leave no
// registers for a second row tile.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_ATTENTIONTILES_H
#define EFFRT_SRC_CUDA_ATTENTIONTILES_H

// Evaluated at compile time on both sides (nvcc needs the device mark).
#ifdef __CUDACC__
#define EFFRT_ATTN_CONSTEXPR constexpr __host__ __device__
#else
#define EFFRT_ATTN_CONSTEXPR constexpr
#endif

/// Warps per block of the tensor-core kernels.
constexpr int kEffrtAttnWarps = 4;

/// One kernel's tiles: 16 * warpTiles rows a warp, `streamed` rows of the
/// other operand per step.
struct EffrtAttnPassTiles {
  int warpTiles, streamed;
  /// Rows of its own operand a block owns (the grid's x divides by it).
  EFFRT_ATTN_CONSTEXPR int blockRows() const { return 16 * warpTiles * kEffrtAttnWarps; }
};

struct EffrtAttnTiles {
  EffrtAttnPassTiles forward, key, query;
};

/// The tiles of head dimension `d` (64 or 128); `wide` picks the 32-row
/// warps where D = 64 has them.
EFFRT_ATTN_CONSTEXPR EffrtAttnTiles effrtAttnTiles(int d, bool wide) {
  if (d == 64 && wide)
    return {{2, 64}, {2, 32}, {2, 32}};
  if (d == 64)
    return {{1, 64}, {1, 64}, {1, 64}};
  // D = 128: the key pass streams 32 queries (dK and dV take 128
  // registers of accumulators already).
  return {{1, 64}, {1, 32}, {1, 64}};
}

/// Dynamic shared memory (bytes) of each pass: tiles of rows padded to
/// D + 8 two-byte elements (Attention.cu's rowStride); the key pass adds
/// two floats per streamed query (log-sum-exp and delta).
constexpr unsigned effrtAttnTileBytes(int rows, int d) {
  return static_cast<unsigned>(rows * (d + 8) * 2);
}
constexpr unsigned effrtAttnForwardShared(const EffrtAttnPassTiles &t,
                                          int d) {
  return effrtAttnTileBytes(t.blockRows(), d) +
         2 * effrtAttnTileBytes(t.streamed, d);
}
constexpr unsigned effrtAttnKeyShared(const EffrtAttnPassTiles &t, int d) {
  return 2 * effrtAttnTileBytes(t.blockRows(), d) +
         2 * effrtAttnTileBytes(t.streamed, d) +
         static_cast<unsigned>(2 * t.streamed * sizeof(float));
}
constexpr unsigned effrtAttnQueryShared(const EffrtAttnPassTiles &t, int d) {
  return 2 * effrtAttnTileBytes(t.blockRows(), d) +
         2 * effrtAttnTileBytes(t.streamed, d);
}

/// Rows of delta = rowsum(dO * o) a block of 256 threads takes: with
/// 16-byte loads (`vec16`: f16/bf16, every row of o and dO 16-byte
/// aligned) D / 8 lanes a row, else a warp a row.
EFFRT_ATTN_CONSTEXPR int effrtAttnRowDotRows(int d, int vec16) {
  return vec16 ? 256 / (d / 8) : 256 / 32;
}

#endif // EFFRT_SRC_CUDA_ATTENTIONTILES_H
