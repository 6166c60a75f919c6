//===- AttentionTest.cpp - the tiled attention kernels
//---------------------===//
//
// effrt_attention_fwd_tiled_f32 / _bwd_tiled_f32 against attention by
// definition in double (scores, softmax, products, and the textbook
// backward through the probabilities), on shapes that are not multiples of
// the tiles, with the compiler's tiles (effrt_attention_tile) and others,
// causal masking, boolean and additive masks, fully masked rows and
// dropout; operands contiguous and heads-inner ([B1, T, B2, D], through
// strides); one slot or several give the same bits, and the kernels write
// nothing past the slots they were given; the entry points of earlier .effx
// files (effrt_attention_*_strided_f32, effrt_attention_*_f32) give the
// bits of 64-wide tiles. End-to-end agreement with PyTorch is
// test/E2E/attention.test.
//
//===----------------------------------------------------------------------===//

#include "UnitTest.h"

#include "effrt/Kernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using namespace effrt::test;

namespace {

struct Case {
  int64_t B1 = 1, B2 = 3, Tq = 77, Tk = 77, D = 8, Dv = 8;
  bool causal = false;
  int maskKind = EFFRT_ATTENTION_MASK_NONE;
  double dropout = 0.0;
};

std::vector<float> values(size_t n, int seed) {
  std::vector<float> v(n);
  uint64_t s = 0x9e3779b97f4a7c15ULL * (seed + 1);
  for (auto &x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<float>((s >> 40) % 2001) / 1000.0f - 1.0f;
  }
  return v;
}

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Run {
  std::vector<float> q, k, v, o, lse, dout, dq, dk, dv;
  std::vector<float> fmask;
  std::vector<uint8_t> bmask;
};

/// Mask [B1, 1, Tq, Tk]: boolean masks every key >= a per-row length (row
/// 5 of every head entirely), additive adds values in [-1, 1] and -inf at
/// the same places.
void makeMask(const Case &c, Run &r) {
  int64_t n = c.B1 * c.Tq * c.Tk;
  r.fmask = values(n, 9);
  r.bmask.assign(n, 0);
  for (int64_t b = 0; b < c.B1; ++b)
    for (int64_t i = 0; i < c.Tq; ++i)
      for (int64_t j = 0; j < c.Tk; ++j) {
        bool masked = j >= c.Tk - 10 - b || i == 5;
        int64_t e = (b * c.Tq + i) * c.Tk + j;
        r.bmask[e] = masked;
        if (masked)
          r.fmask[e] = -std::numeric_limits<float>::infinity();
      }
}

/// A [B1, B2, T, X] tensor's copy laid out as [B1, T, B2, X] (the heads of
/// a [B, T, H*D] projection), and back.
std::vector<float> headsInner(const std::vector<float> &a, const Case &c,
                              int64_t T, int64_t X, bool back = false) {
  std::vector<float> out(a.size());
  for (int64_t b1 = 0; b1 < c.B1; ++b1)
    for (int64_t b2 = 0; b2 < c.B2; ++b2)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t x = 0; x < X; ++x) {
          int64_t contiguous = ((b1 * c.B2 + b2) * T + t) * X + x;
          int64_t inner = ((b1 * T + t) * c.B2 + b2) * X + x;
          if (back)
            out[contiguous] = a[inner];
          else
            out[inner] = a[contiguous];
        }
  return out;
}

/// Runs both kernels on contiguous operands, or (`strided`) on every
/// operand laid out [B1, T, B2, X] and read through its strides; the
/// results come back contiguous either way.
/// `tile`: 0 for the compiler's (effrt_attention_tile).
void runKernels(const Case &c, Run &r, int64_t slots, bool strided = false,
                int64_t tile = 0) {
  if (tile == 0)
    tile = effrt_attention_tile(c.Tq, c.Tk, c.causal);
  int64_t heads = c.B1 * c.B2;
  r.q = values(heads * c.Tq * c.D, 1);
  r.k = values(heads * c.Tk * c.D, 2);
  r.v = values(heads * c.Tk * c.Dv, 3);
  r.dout = values(heads * c.Tq * c.Dv, 4);
  r.o.assign(heads * c.Tq * c.Dv, 0);
  r.lse.assign(heads * c.Tq, 0);
  r.dq.assign(r.q.size(), 0);
  r.dk.assign(r.k.size(), 0);
  r.dv.assign(r.v.size(), 0);
  makeMask(c, r);
  const void *mask = c.maskKind == EFFRT_ATTENTION_MASK_ADD
                         ? static_cast<const void *>(r.fmask.data())
                     : c.maskKind == EFFRT_ATTENTION_MASK_BOOL
                         ? static_cast<const void *>(r.bmask.data())
                         : nullptr;
  int64_t sB1 = c.Tq * c.Tk, sB2 = 0, sQ = c.Tk, sK = 1;
  float scale = 0.3f;
  int64_t key = 12345, threshold = int64_t(c.dropout * (1 << 24));
  float dscale = c.dropout > 0 ? float(1.0 / (1.0 - c.dropout)) : 0.0f;
  // The slots, then a guard the kernels must leave alone.
  int64_t slotFloats =
      std::max(effrt_attention_fwd_slot_floats(tile, c.D, c.Dv),
               effrt_attention_bwd_slot_floats(tile, c.Tq, c.Tk, c.D, c.Dv));
  constexpr int64_t kGuard = 4096;
  std::vector<float> ws(slots * slotFloats + kGuard, 12345.0f);
  // Strides of B1, B2, T of a [B1, B2, T, X] operand as laid out.
  struct S {
    int64_t b1, b2, t;
  };
  auto stridesOf = [&](int64_t T, int64_t X) {
    return strided ? S{T * c.B2 * X, X, c.B2 * X} : S{c.B2 * T * X, T * X, X};
  };
  S q = stridesOf(c.Tq, c.D), k = stridesOf(c.Tk, c.D),
    v = stridesOf(c.Tk, c.Dv), o = stridesOf(c.Tq, c.Dv);
  auto lay = [&](const std::vector<float> &a, int64_t T, int64_t X) {
    return strided ? headsInner(a, c, T, X) : a;
  };
  std::vector<float> lq = lay(r.q, c.Tq, c.D), lk = lay(r.k, c.Tk, c.D),
                     lv = lay(r.v, c.Tk, c.Dv), ldo = lay(r.dout, c.Tq, c.Dv),
                     lo = r.o, ldq = r.dq, ldk = r.dk, ldv = r.dv;
  effrt_attention_fwd_tiled_f32(
      lq.data(), q.b1, q.b2, q.t, lk.data(), k.b1, k.b2, k.t, lv.data(), v.b1,
      v.b2, v.t, lo.data(), o.b1, o.b2, o.t, r.lse.data(), mask, c.maskKind,
      sB1, sB2, sQ, sK, c.B1, c.B2, c.Tq, c.Tk, c.D, c.Dv, scale, c.causal, key,
      threshold, dscale, tile, ws.data(), slots);
  effrt_attention_bwd_tiled_f32(
      lq.data(), q.b1, q.b2, q.t, lk.data(), k.b1, k.b2, k.t, lv.data(), v.b1,
      v.b2, v.t, lo.data(), o.b1, o.b2, o.t, r.lse.data(), ldo.data(), o.b1,
      o.b2, o.t, ldq.data(), q.b1, q.b2, q.t, ldk.data(), k.b1, k.b2, k.t,
      ldv.data(), v.b1, v.b2, v.t, mask, c.maskKind, sB1, sB2, sQ, sK, c.B1,
      c.B2, c.Tq, c.Tk, c.D, c.Dv, scale, c.causal, key, threshold, dscale,
      tile, ws.data(), slots);
  for (int64_t i = slots * slotFloats; i < slots * slotFloats + kGuard; ++i)
    CHECK(ws[i] == 12345.0f);
  auto unlay = [&](const std::vector<float> &a, int64_t T, int64_t X) {
    return strided ? headsInner(a, c, T, X, /*back=*/true) : a;
  };
  r.o = unlay(lo, c.Tq, c.Dv);
  r.dq = unlay(ldq, c.Tq, c.D);
  r.dk = unlay(ldk, c.Tk, c.D);
  r.dv = unlay(ldv, c.Tk, c.Dv);
}

bool close(double got, double want) {
  if (std::isnan(want))
    return std::isnan(got);
  return std::fabs(got - want) <= 2e-5 + 2e-4 * std::fabs(want);
}

/// Attention by definition for one head, forward and backward, in double.
void checkHead(const Case &c, const Run &r, int64_t n) {
  const double scale = 0.3, inf = std::numeric_limits<double>::infinity();
  int64_t b1 = n / c.B2;
  std::vector<double> P(c.Tq * c.Tk), Z(c.Tq * c.Tk, 1.0);
  for (int64_t i = 0; i < c.Tq; ++i) {
    double mx = -inf;
    for (int64_t j = 0; j < c.Tk; ++j) {
      double s = 0;
      for (int64_t d = 0; d < c.D; ++d)
        s += double(r.q[(n * c.Tq + i) * c.D + d]) *
             r.k[(n * c.Tk + j) * c.D + d];
      s *= scale;
      int64_t e = (b1 * c.Tq + i) * c.Tk + j;
      if (c.maskKind == EFFRT_ATTENTION_MASK_ADD)
        s += r.fmask[e];
      if (c.maskKind == EFFRT_ATTENTION_MASK_BOOL && r.bmask[e])
        s = -inf;
      if (c.causal && j > i)
        s = -inf;
      P[i * c.Tk + j] = s;
      mx = std::max(mx, s);
    }
    double sum = 0;
    for (int64_t j = 0; j < c.Tk; ++j)
      sum += P[i * c.Tk + j] = std::exp(P[i * c.Tk + j] - mx);
    for (int64_t j = 0; j < c.Tk; ++j)
      P[i * c.Tk + j] /= sum; // 0/0 = NaN for a fully masked row
    if (c.dropout > 0)
      for (int64_t j = 0; j < c.Tk; ++j) {
        uint64_t e = uint64_t((n * c.Tq + i) * c.Tk + j);
        bool keep = (mix64(12345 ^ e) >> 40) >= uint64_t(c.dropout * (1 << 24));
        Z[i * c.Tk + j] = keep ? 1.0 / (1.0 - c.dropout) : 0.0;
      }
  }
  // Forward.
  for (int64_t i = 0; i < c.Tq; ++i)
    for (int64_t d = 0; d < c.Dv; ++d) {
      double o = 0;
      for (int64_t j = 0; j < c.Tk; ++j)
        o += P[i * c.Tk + j] * Z[i * c.Tk + j] * r.v[(n * c.Tk + j) * c.Dv + d];
      CHECK(close(r.o[(n * c.Tq + i) * c.Dv + d], o));
    }
  // Backward: dV = (P Z)^T dO, dPZ = dO V^T, dS = P (dP - rowsum(P dP)).
  std::vector<double> dS(c.Tq * c.Tk);
  for (int64_t i = 0; i < c.Tq; ++i) {
    double rowDot = 0;
    for (int64_t j = 0; j < c.Tk; ++j) {
      double dp = 0;
      for (int64_t d = 0; d < c.Dv; ++d)
        dp += double(r.dout[(n * c.Tq + i) * c.Dv + d]) *
              r.v[(n * c.Tk + j) * c.Dv + d];
      dS[i * c.Tk + j] = dp * Z[i * c.Tk + j];
      rowDot += P[i * c.Tk + j] * dS[i * c.Tk + j];
    }
    for (int64_t j = 0; j < c.Tk; ++j)
      dS[i * c.Tk + j] = P[i * c.Tk + j] * (dS[i * c.Tk + j] - rowDot);
  }
  for (int64_t j = 0; j < c.Tk; ++j)
    for (int64_t d = 0; d < c.Dv; ++d) {
      double dv = 0;
      for (int64_t i = 0; i < c.Tq; ++i)
        dv += P[i * c.Tk + j] * Z[i * c.Tk + j] *
              r.dout[(n * c.Tq + i) * c.Dv + d];
      CHECK(close(r.dv[(n * c.Tk + j) * c.Dv + d], dv));
    }
  for (int64_t i = 0; i < c.Tq; ++i)
    for (int64_t d = 0; d < c.D; ++d) {
      double dq = 0;
      for (int64_t j = 0; j < c.Tk; ++j)
        dq += dS[i * c.Tk + j] * r.k[(n * c.Tk + j) * c.D + d];
      CHECK(close(r.dq[(n * c.Tq + i) * c.D + d], scale * dq));
    }
  for (int64_t j = 0; j < c.Tk; ++j)
    for (int64_t d = 0; d < c.D; ++d) {
      double dk = 0;
      for (int64_t i = 0; i < c.Tq; ++i)
        dk += dS[i * c.Tk + j] * r.q[(n * c.Tq + i) * c.D + d];
      CHECK(close(r.dk[(n * c.Tk + j) * c.D + d], scale * dk));
    }
}

void checkCase(const Case &c, int64_t tile = 0) {
  Run r;
  runKernels(c, r, 4, /*strided=*/false, tile);
  for (int64_t n = 0; n < c.B1 * c.B2; ++n)
    checkHead(c, r, n);
  // One slot or many: the same bits.
  Run one;
  runKernels(c, one, 1, /*strided=*/false, tile);
  CHECK(std::memcmp(one.o.data(), r.o.data(), r.o.size() * 4) == 0);
  CHECK(std::memcmp(one.dq.data(), r.dq.data(), r.dq.size() * 4) == 0);
  CHECK(std::memcmp(one.dk.data(), r.dk.data(), r.dk.size() * 4) == 0);
  // Heads inner ([B1, T, B2, X], read and written through strides): the
  // same bits as contiguous operands.
  Run inner;
  runKernels(c, inner, 3, /*strided=*/true, tile);
  for (auto [a, b] : {std::pair(&inner.o, &r.o), std::pair(&inner.lse, &r.lse),
                      std::pair(&inner.dq, &r.dq), std::pair(&inner.dk, &r.dk),
                      std::pair(&inner.dv, &r.dv)})
    CHECK(std::memcmp(a->data(), b->data(), b->size() * 4) == 0);
}

} // namespace

TEST(attentionNoMask) { checkCase(Case{}); }

TEST(attentionCausalCrossShapes) {
  Case c;
  c.B1 = 2;
  c.B2 = 2;
  c.Tq = 130;
  c.Tk = 70;
  c.Dv = 5;
  c.causal = true;
  checkCase(c);
}

TEST(attentionBooleanMaskFullyMaskedRowIsNaN) {
  Case c;
  c.B1 = 2;
  c.maskKind = EFFRT_ATTENTION_MASK_BOOL;
  c.causal = true;
  checkCase(c);
  Run r;
  runKernels(c, r, 2);
  // Row 5 sees no key: softmax is NaN there, as in PyTorch, and finite
  // elsewhere.
  CHECK(std::isnan(r.o[5 * c.Dv]));
  CHECK(std::isfinite(r.o[4 * c.Dv]));
}

// Head sizes past one 16-column block of the tile products, with masked
// tails (40 = 16 + 16 + 8, 19 = 16 + 3), and single-row query tiles (Tq 65).
TEST(attentionWideHeadsCausal) {
  Case c;
  c.B2 = 2;
  c.Tq = 65;
  c.Tk = 65;
  c.D = 40;
  c.Dv = 19;
  c.causal = true;
  checkCase(c);
}

// The compiler's tiles for short sequences (one tile of the sequence's
// size rounded to 8, two of 48 at 96; causal: 16 up to T = 128), and tiles
// far smaller than the sequence.
TEST(attentionShortSequenceTiles) {
  CHECK(effrt_attention_tile(16, 16, 0) == 16);
  CHECK(effrt_attention_tile(20, 20, 0) == 24);
  CHECK(effrt_attention_tile(64, 64, 0) == 64);
  CHECK(effrt_attention_tile(96, 96, 0) == 48);
  CHECK(effrt_attention_tile(128, 5, 0) == 64);
  CHECK(effrt_attention_tile(5, 7, 1) == 8);
  CHECK(effrt_attention_tile(96, 96, 1) == 16);
  CHECK(effrt_attention_tile(130, 130, 1) == 48);
  CHECK(effrt_attention_tile(2048, 2048, 1) == 64);
  Case c;
  c.Tq = c.Tk = 16;
  c.causal = true;
  checkCase(c);
  c.Tq = c.Tk = 20;
  c.maskKind = EFFRT_ATTENTION_MASK_BOOL;
  checkCase(c);
  c.Tq = c.Tk = 96;
  c.maskKind = EFFRT_ATTENTION_MASK_NONE;
  checkCase(c);
  c.Tq = 37;
  c.Tk = 29;
  c.dropout = 0.25;
  checkCase(c, /*tile=*/8);
}

TEST(attentionContiguousEntryPoints) {
  Case c;
  c.causal = true;
  Run r;
  runKernels(c, r, 4, /*strided=*/false, EFFRT_ATTENTION_TILE_Q);
  std::vector<float> o(r.o.size()), lse(r.lse.size()), dq(r.dq.size()),
      dk(r.dk.size()), dv(r.dv.size());
  std::vector<float> ws(1); // ignored: they bring their own
  effrt_attention_fwd_f32(r.q.data(), r.k.data(), r.v.data(), o.data(),
                          lse.data(), nullptr, 0, 0, 0, 0, 0, c.B1, c.B2,
                          c.Tq, c.Tk, c.D, c.Dv, 0.3f, 1, 0, 0, 0.0f,
                          ws.data(), 4);
  effrt_attention_bwd_f32(r.q.data(), r.k.data(), r.v.data(), o.data(),
                          lse.data(), r.dout.data(), dq.data(), dk.data(),
                          dv.data(), nullptr, 0, 0, 0, 0, 0, c.B1, c.B2, c.Tq,
                          c.Tk, c.D, c.Dv, 0.3f, 1, 0, 0, 0.0f, ws.data(), 4);
  CHECK(std::memcmp(o.data(), r.o.data(), o.size() * 4) == 0);
  CHECK(std::memcmp(dq.data(), r.dq.data(), dq.size() * 4) == 0);
  CHECK(std::memcmp(dk.data(), r.dk.data(), dk.size() * 4) == 0);
  CHECK(std::memcmp(dv.data(), r.dv.data(), dv.size() * 4) == 0);
}

TEST(attentionAdditiveMaskAndDropout) {
  Case c;
  c.maskKind = EFFRT_ATTENTION_MASK_ADD;
  c.dropout = 0.25;
  c.Tk = 65;
  checkCase(c);
}
