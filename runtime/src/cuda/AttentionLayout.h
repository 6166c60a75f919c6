//===- AttentionLayout.h - Operand strides of the CUDA attention kernels --===//
//
// Shared by Attention.cu (device), Attention.cpp (host) and the emulation
// test: plain C, passed to every kernel by value. An operand is a
// [B1, B2, T, D] tensor with D contiguous; its other strides are free, so
// the kernels read q, k, v straight out of a [B, T, H, D] projection and
// write o and the gradients in the layout their users read (no transposes
// around the calls).
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_ATTENTIONLAYOUT_H
#define EFFRT_SRC_CUDA_ATTENTIONLAYOUT_H

/// Element strides of one operand's B1, B2 and row (T) dimensions.
struct EffrtAttnStrides {
  long long b1, b2, t;
};

/// Every operand's strides (lse and the backward's delta are contiguous
/// [B1 * B2, Tq]). Heads are numbered b1 * b2Count + b2 (the grid's y).
struct EffrtAttnLayout {
  EffrtAttnStrides q, k, v, o, dout, dq, dk, dv;
  int b2Count;
  /// 1: every row of q, k, v and dout starts 16-byte aligned (the tiles
  /// are loaded 16 bytes at a time); 0: two bytes at a time. For the
  /// rowdot kernel (delta = rowsum(dO * o)): every row of o and dout.
  int vec16;
};

#endif // EFFRT_SRC_CUDA_ATTENTIONLAYOUT_H
