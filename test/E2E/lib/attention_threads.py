#!/usr/bin/env python3
"""The CPU attention kernels' workspace is in the plan, one slot per thread,
and the results do not depend on the threads: compiles a causal attention
layer whose heads come from one [B, T, 3*H*D] projection (the kernels copy
the strided heads into their slots) for --max-threads 2 and 1, prints the
kernel workspaces the memory report lists, and trains it for a few steps
with effrun at 1 and 2 threads (the 2-slot step) and at 2 threads (the
1-slot step): every run's losses and final parameters must be the same
bits.

    attention_threads.py --bin BUILD/bin --work DIR [--seq 48]
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
    ap.add_argument("--seq", type=int, default=48)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    import attention as bench  # bench/attention.py's model
    ns = {}
    exec(bench.MODEL, ns)
    B, H, D, T = 2, 4, 8, args.seq
    C = H * D
    torch.manual_seed(0)
    model = ns["Attn"](T, C, H)
    onnx_path = os.path.join(args.work, "attn.onnx")
    t.export(model, (torch.randn(B, T, C), torch.randn(B, T, C)), ["x", "y"],
             onnx_path, output_names=["loss"])
    rng = np.random.default_rng(0)
    data = os.path.join(args.work, "data.npz")
    np.savez(data,
             x=rng.standard_normal((args.steps * B, T, C), dtype=np.float32),
             y=rng.standard_normal((args.steps * B, T, C), dtype=np.float32))
    effc = os.path.join(args.bin, "effc")
    for slots in (2, 1):
        effx = os.path.join(args.work, "slots%d.effx" % slots)
        report = subprocess.run(
            [effc, onnx_path, "-o", effx, "--optimizer", "sgd", "--lr", "0.1",
             "--max-threads", str(slots), "--report"],
            check=True, capture_output=True, text=True).stdout
        lines = report.splitlines()
        for i, line in enumerate(lines):
            if "kernel workspaces" in line:
                print("max-threads %d: %s" % (slots, line.strip()))
                for row in lines[i + 1:i + 3]:
                    print("max-threads %d:   %s" % (slots, " ".join(
                        row.split())))
    runs = {}
    for slots, threads in ((2, 1), (2, 2), (1, 2)):
        name = "slots%d-threads%d" % (slots, threads)
        ckpt = os.path.join(args.work, name + ".safetensors")
        log = os.path.join(args.work, name + ".jsonl")
        subprocess.run(
            [os.path.join(args.bin, "effrun"),
             os.path.join(args.work, "slots%d.effx" % slots), "--data", data,
             "--steps", str(args.steps), "--threads", str(threads), "--save",
             ckpt, "--log", log, "--quiet"], check=True)
        losses = [json.loads(line)["loss"] for line in open(log)]
        runs[name] = (losses, open(ckpt, "rb").read())
        print("%s: losses %s" % (name, " ".join("%.6f" % x for x in losses)))
    reference = runs["slots2-threads1"]
    for name, run in runs.items():
        same = run[0] == reference[0] and run[1] == reference[1]
        print("%s: %s" % (name, "bit-identical" if same else "MISMATCH"))


if __name__ == "__main__":
    main()
