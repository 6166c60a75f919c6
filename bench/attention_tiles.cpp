//===- attention_tiles.cpp - the CPU attention kernels per tile size ------===//
//
// Times effrt_attention_fwd_tiled_f32 + effrt_attention_bwd_tiled_f32 (one
// forward and one backward, causal, heads read through strides from a
// [B, T, H*D] layout as compiled steps do) for each sequence length and
// tile size, one thread by default: the measurement behind
// effrt_attention_tile (docs/Attention.md). Prints the fastest of `reps`
// interleaved rounds per point, and the tile effrt_attention_tile picks.
//
//   clang++-22 -O2 -std=c++17 -Iruntime/include bench/attention_tiles.cpp \
//     -Lbuild/lib -leffrt -Wl,-rpath,$PWD/build/lib -o /tmp/attention_tiles
//   OMP_NUM_THREADS=1 /tmp/attention_tiles [B H D reps causal]
//
//===----------------------------------------------------------------------===//

#include "effrt/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  int64_t B = argc > 1 ? std::atoll(argv[1]) : 8;
  int64_t H = argc > 2 ? std::atoll(argv[2]) : 8;
  int64_t D = argc > 3 ? std::atoll(argv[3]) : 64;
  int reps = argc > 4 ? std::atoi(argv[4]) : 15;
  int32_t causal = argc > 5 ? std::atoi(argv[5]) : 1;
  const int64_t seqs[] = {16, 32, 48, 64, 96, 128, 256};
  const int64_t tiles[] = {8, 16, 24, 32, 48, 64};
  std::printf("B %lld H %lld D %lld %s, heads strided, best of %d\n",
              (long long)B, (long long)H, (long long)D,
              causal ? "causal" : "not causal", reps);
  std::printf("%6s", "T");
  for (int64_t tile : tiles)
    std::printf(" %9lld", (long long)tile);
  std::printf("  chosen\n");
  for (int64_t T : seqs) {
    int64_t n = B * T * H * D;
    std::vector<float> q(n), k(n), v(n), o(n), dout(n), dq(n), dk(n), dv(n),
        lse(B * H * T);
    for (int64_t i = 0; i < n; ++i) {
      q[i] = float((i * 7) % 13) / 13.0f - 0.5f;
      k[i] = float((i * 5) % 11) / 11.0f - 0.5f;
      v[i] = float((i * 3) % 17) / 17.0f - 0.5f;
      dout[i] = float((i * 11) % 19) / 19.0f - 0.5f;
    }
    // [B, T, H, D] read as [B, H, T, D]: strides T*H*D, D, H*D.
    int64_t s1 = T * H * D, s2 = D, st = H * D;
    std::printf("%6lld", (long long)T);
    // Interleaved (every tile once per round) and the minimum over the
    // rounds: on a shared machine, the run least disturbed.
    constexpr int kTiles = sizeof(tiles) / sizeof(tiles[0]);
    // One workspace for all, touched before the clock runs (as the step's
    // arena is): a fresh allocation per call would time page faults.
    std::vector<float> ws(
        std::max(effrt_attention_fwd_slot_floats(64, D, D),
                 effrt_attention_bwd_slot_floats(64, T, T, D, D)),
        0.0f);
    std::vector<double> best(kTiles, 1e30);
    for (int r = 0; r < reps; ++r)
      for (int t = 0; t < kTiles; ++t) {
        int64_t tile = tiles[t];
        auto start = std::chrono::steady_clock::now();
        effrt_attention_fwd_tiled_f32(
            q.data(), s1, s2, st, k.data(), s1, s2, st, v.data(), s1, s2, st,
            o.data(), s1, s2, st, lse.data(), nullptr, 0, 0, 0, 0, 0, B, H, T,
            T, D, D, 0.125f, causal, 0, 0, 0.0f, tile, ws.data(), 1);
        effrt_attention_bwd_tiled_f32(
            q.data(), s1, s2, st, k.data(), s1, s2, st, v.data(), s1, s2, st,
            o.data(), s1, s2, st, lse.data(), dout.data(), s1, s2, st,
            dq.data(), s1, s2, st, dk.data(), s1, s2, st, dv.data(), s1, s2, st,
            nullptr, 0, 0, 0, 0, 0, B, H, T, T, D, D, 0.125f, causal, 0, 0,
            0.0f, tile, ws.data(), 1);
        best[t] =
            std::min(best[t], std::chrono::duration<double, std::micro>(
                                  std::chrono::steady_clock::now() - start)
                                  .count());
      }
    for (double us : best)
      std::printf(" %7.0fus", us);
    std::printf("  %lld\n", (long long)effrt_attention_tile(T, T, causal));
  }
  return 0;
}
