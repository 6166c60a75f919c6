#!/usr/bin/env python3
"""Small ONNX training graphs for test/Tools/mask-like-params.test, exported
the ordinary way (torch.onnx.export, TRAINING, no constant folding):

- masked.onnx: attention with a float causal mask registered as a buffer
  (0 on and below the diagonal, -inf above), added to the scores before the
  softmax (ONNX cannot tell it from a weight: it must be flagged); and a
  float `threshold` buffer only compared, which the importer already keeps
  as a buffer (no differentiable path to the loss).
- ordinary.onnx: the same attention with a bool causal mask buffer, plus
  what must never be flagged: a learned positional embedding added to the
  activations, a relative-position bias table gathered by an index buffer
  and added to the scores (Swin's), biases, LayerNorm.

usage: mask_like.py OUT_DIR
"""
import io
import os
import sys
import warnings

import torch
import torch.nn as nn

T, D, V = 4, 8, 16


class Attention(nn.Module):
    def __init__(self, float_mask):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.randn(T, D))
        self.attn = nn.MultiheadAttention(D, 2, batch_first=True)
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, V)
        self.float_mask = float_mask
        if float_mask:
            self.register_buffer(
                "mask", torch.triu(torch.full((T, T), float("-inf")), 1))
            self.register_buffer("threshold", torch.tensor(0.5))
        else:
            self.register_buffer(
                "mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))
            # Swin's relative position bias: a learned table (zeros at
            # first) gathered by an index buffer, added to the scores.
            self.rel_table = nn.Parameter(torch.zeros(2 * T - 1))
            idx = torch.arange(T)
            self.register_buffer("rel_index", idx[:, None] - idx[None, :] + T - 1)

    def forward(self, x, y):
        h = self.emb(x) + self.pos
        mask = self.mask
        if not self.float_mask:
            bias = self.rel_table[self.rel_index]
            mask = torch.zeros(T, T).masked_fill(mask, float("-inf")) + bias
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        h = self.ln(h + a)
        if self.float_mask:
            h = h * (h > self.threshold)
        z = self.head(h)
        return nn.functional.cross_entropy(z.reshape(-1, V), y.reshape(-1))


def export(model, path):
    torch.manual_seed(0)
    x = torch.randint(0, V, (2, T))
    y = torch.randint(0, V, (2, T))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x, y), path,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17,
                          input_names=["x", "y"], output_names=["loss"])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    export(Attention(True), os.path.join(out, "masked.onnx"))
    torch.manual_seed(0)
    export(Attention(False), os.path.join(out, "ordinary.onnx"))


if __name__ == "__main__":
    main()
