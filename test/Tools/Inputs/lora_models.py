#!/usr/bin/env python3
"""Small ONNX training graphs for test/Tools/effc-lora.test, exported the
ordinary way (torch.onnx.export, TRAINING, no constant folding), one per
form in which PyTorch 1.13 exports a linear layer:

- mha.onnx: nn.MultiheadAttention (in_proj_weight through MatMul +
  Transpose, out_proj as Gemm with transB) and an nn.Linear head on a 2-D
  input (Gemm).
- handwritten.onnx: a GPT-style block with hand-written linears, x @ W with
  W stored in x out (MatMul without Transpose), and a tied embedding read
  by a Gather and a MatMul.

usage: lora_models.py OUT_DIR
"""
import os
import sys
import warnings

import torch
import torch.nn as nn


class Mha(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x, y):
        h, _ = self.attn(x, x, x, need_weights=False)
        out = self.head(h[:, 0])
        return ((out - y) ** 2).mean(), out


class HandWritten(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Parameter(torch.randn(32, 16) * 0.02)
        self.w_up = nn.Parameter(torch.randn(16, 64) * 0.02)
        self.w_down = nn.Parameter(torch.randn(64, 16) * 0.02)

    def forward(self, idx, targets):
        h = self.tok[idx]
        h = h + torch.relu(h @ self.w_up) @ self.w_down
        logits = h @ self.tok.t()
        return nn.functional.cross_entropy(logits.view(-1, 32),
                                           targets.view(-1)), logits


def export(model, inputs, names, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, path,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17,
                          input_names=names, output_names=["loss", "out"])


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    export(Mha(), (torch.randn(2, 8, 16), torch.randn(2, 4)), ["x", "y"],
           os.path.join(out, "mha.onnx"))
    export(HandWritten(), (torch.randint(0, 32, (2, 8)),
                           torch.randint(0, 32, (2, 8))), ["idx", "targets"],
           os.path.join(out, "handwritten.onnx"))


if __name__ == "__main__":
    main()
