#!/usr/bin/env python3
"""Exports a one-layer GPT with causal attention of head size 64 and no
dropout (what effc --target cuda fuses) to ONNX, as
examples/export_examples.py exports its GPT (training mode, opset 17).

    export_attention_gpt.py OUT.onnx [HEADS]

HEADS (default 2) of d_model 128: head size 128 / HEADS.
"""
import io
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "examples"))
import export_examples as ex  # noqa: E402


def main():
    torch.manual_seed(0)
    model = ex.GPT(vocab=256, block_size=256, n_layer=1, d_model=128,
                   n_head=int(sys.argv[2]) if len(sys.argv) > 2 else 2, dropout=0.0)
    model.train()
    idx = torch.randint(0, 256, (2, 256))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (idx, idx), sys.argv[1],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=ex.OPSET,
                          input_names=["idx", "targets"],
                          output_names=["loss", "logits"])


if __name__ == "__main__":
    main()
