//===- Attention.h - The fused attention kernels of target cuda -*- C++ -*-===//
//
// The FlashAttention-2 kernels of Attention.cu, compiled by nvcc into a
// fatbin when the runtime is built and embedded in it, loaded into a CUDA
// context with the driver API (cuModuleLoadData through the dlopen'd driver
// table): effrun still links no CUDA library. A runtime built where nvcc was
// absent has no kernels, and every call says so in one line.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_ATTENTION_H
#define EFFRT_SRC_CUDA_ATTENTION_H

#include "AttentionLayout.h"
#include "CudaApi.h"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace effrt::cuda {

class Driver;

/// One call: `heads` = B1 x B2 [T, D] slices of q, k, v, o (and dO, dQ,
/// dK, dV) laid out as an EffrtAttnLayout says, lse [heads, Tq] in f32;
/// `type` as effrt_cuda_gemm's (0 f32, 1 f16, 2 bf16).
struct AttentionProblem {
  int64_t heads = 0, b2 = 1, tq = 0, tk = 0, d = 0;
  float scale = 1.0f;
  bool causal = false;
  int32_t type = 0;
};

/// The problem of an effrt_cuda_attention_* call's sizes: B1 x B2 heads;
/// fails on negative head counts and on D != Dv.
AttentionProblem attentionProblem(int64_t B1, int64_t B2, int64_t Tq,
                                  int64_t Tk, int64_t D, int64_t Dv,
                                  float scale, int32_t causal, int32_t type);

/// Every operand of `p` contiguous ([B1, B2, T, D] row-major).
EffrtAttnLayout contiguousLayout(const AttentionProblem &p);

/// One operand for checkAttention: its address and strides, and whether
/// the kernels store to it.
struct AttentionOperand {
  const void *data;
  EffrtAttnStrides strides;
  bool written;
};

/// Whether this runtime holds the kernels (nvcc was found when it was
/// built).
bool attentionKernelsBuilt();

/// Why the kernels cannot run `p` with these operands, or "" when they
/// can: f16/bf16 operands need 4-byte aligned addresses and even strides
/// (results are stored two elements at a time).
std::string checkAttention(const AttentionProblem &p,
                           std::initializer_list<AttentionOperand> operands);

/// Whether every row of these f16/bf16 operands starts 16-byte aligned
/// (the kernels then load tiles 16 bytes at a time).
bool rowsAligned16(std::initializer_list<AttentionOperand> operands);

/// The kernels loaded into one context; unloaded with it.
class AttentionKernels {
public:
  /// Loads the embedded fatbin into the current context. Throws Error when
  /// the runtime has no kernels or the driver refuses them (a GPU older
  /// than sm_80).
  explicit AttentionKernels(const Driver &driver);
  ~AttentionKernels();
  AttentionKernels(const AttentionKernels &) = delete;
  AttentionKernels &operator=(const AttentionKernels &) = delete;

  /// o and lse, queued on `stream`; the operands laid out as `layout`
  /// says (its q, k, v, o). Throws Error for a problem checkAttention
  /// refuses.
  void forward(CUstream stream, const AttentionProblem &p,
               EffrtAttnLayout layout, const void *q, const void *k,
               const void *v, void *o, float *lse) const;
  /// dq, dk, dv, queued on `stream`; `delta` holds heads x Tq floats
  /// (rowsum(dO * o), computed here).
  void backward(CUstream stream, const AttentionProblem &p,
                EffrtAttnLayout layout, const void *q, const void *k,
                const void *v, const void *o, const float *lse,
                const void *dout, void *dq, void *dk, void *dv,
                float *delta) const;

  /// Which D = 64 kernels run: 32 rows a warp or 16 (AttentionTiles.h;
  /// the same bits). Starts as EFFRT_ATTENTION_WARP_ROWS says (unset: 32).
  void useWarpRows(int rows);
  int warpRows() const { return warpRows_; }

private:
  struct Kernel {
    CUfunction function = nullptr;
    unsigned sharedBytes = 0;
    /// Rows (queries, keys or rowdot rows) a block owns.
    unsigned blockRows = 1;
  };
  enum Pass { Forward, BackwardKey, BackwardQuery, RowDot, kPasses };
  /// [pass][f32, f16 d64, f16 d128, bf16 d64, bf16 d128, f16 d64 w16,
  /// bf16 d64 w16].
  static constexpr int kVariants = 7;
  int variant(int32_t type, int64_t d) const;
  static unsigned blocksFor(const Kernel &kernel, int64_t rows);
  void launch(const Kernel &kernel, CUstream stream, unsigned gridX,
              unsigned gridY, unsigned threads, void **params) const;

  const Driver &driver_;
  CUmodule module_ = nullptr;
  Kernel kernels_[kPasses][kVariants];
  int warpRows_;
};

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_ATTENTION_H
