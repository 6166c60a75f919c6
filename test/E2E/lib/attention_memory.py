#!/usr/bin/env python3
"""The memory plan of a T = 2048 causal attention layer holds no T x T
buffer: compiles it with effc --report-json, fused (the default) and with
--fuse-attention=false, and prints the largest arena buffer of each against
one score matrix (B*H*T*T f32), the planned activations at the peak, and
whether any buffer's type has a T x T shape.

    attention_memory.py --bin BUILD/bin --work DIR [--seq 2048]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_vs_torch as t  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "bench"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--max-threads", type=int, default=2,
                    help="effc --max-threads: the attention kernels' "
                    "workspace has one slot per thread")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    import attention as bench  # bench/attention.py's model
    ns = {}
    exec(bench.MODEL, ns)
    B, H, D, T = 1, 2, 16, args.seq
    C = H * D
    torch.manual_seed(0)
    model = ns["Attn"](T, C, H)
    x = torch.randn(B, T, C)
    onnx_path = os.path.join(args.work, "attn.onnx")
    t.export(model, (x, torch.randn(B, T, C)), ["x", "y"], onnx_path,
             output_names=["loss"])
    score_bytes = B * H * T * T * 4
    print("T = %d, one score matrix = %d bytes" % (T, score_bytes))
    for label, flags in (("fused", []),
                         ("unfused", ["--fuse-attention=false"])):
        report_path = os.path.join(args.work, label + ".json")
        subprocess.run([os.path.join(args.bin, "effc"), onnx_path, "-o",
                        os.path.join(args.work, label + ".effx"),
                        "--optimizer", "sgd", "--report-json", report_path,
                        "--max-threads", str(args.max_threads)] +
                       flags, check=True)
        report = json.load(open(report_path))
        largest = max(report["buffers"], key=lambda b: b["bytes"])
        square = [b for b in report["buffers"]
                  if "%dx%d" % (T, T) in b["type"]]
        act = report["peak"]["by_category"]["activations"]
        print("%s: largest buffer %d bytes (%s, %s), activations at the "
              "peak %d, %s" % (
                  label, largest["bytes"], largest["type"],
                  largest["provenance"], act,
                  "%d TxT buffers" % len(square) if square
                  else "no TxT buffer"))
        print("%s: largest buffer / score matrix = %.4f" %
              (label, largest["bytes"] / score_bytes))
        workspace = [b["bytes"] for b in report["buffers"]
                     if b["category"] == "workspace"]
        print("%s: %d workspace buffers, %d bytes" %
              (label, len(workspace), sum(workspace)))


if __name__ == "__main__":
    main()
