#!/usr/bin/env python3
"""Frozen weights as NF4 (effc --quantize-frozen nf4) against the same step
with f32 frozen weights, measured in one run on one machine.

For each model: the bytes of the frozen weights in the state region (planned,
from the memory report), the state, arena and total planned bytes, and
effrun's median step time, f32 and NF4 compiled from the same ONNX file.
Runs alternate (f32, nf4, f32, nf4) so a busy machine hurts both alike.

usage: /usr/bin/python3 bench/nf4_frozen.py [--bin build/bin] [--steps 10]
       [--models mlp,gpt6]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "test", "E2E", "lib"))
import train_vs_torch as tvt  # noqa: E402

STORAGE = (".nf4", ".absmax", ".nested_absmax", ".nested_offset")


class WideMLP(nn.Module):
    """1024 -> 4096 -> 1024 -> 10: two 4M-parameter GEMM weights."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(1024, 4096)
        self.b = nn.Linear(4096, 1024)
        self.h = nn.Linear(1024, 10)

    def forward(self, x, y):
        z = self.h(F.relu(self.b(F.relu(self.a(x)))))
        return F.cross_entropy(z, y), z


def make(name, steps):
    torch.manual_seed(0)
    if name == "mlp":
        B = 256
        rng = np.random.RandomState(0)
        data = {"x": rng.randn(steps * B, 1024).astype(np.float32),
                "y": rng.randint(0, 10, steps * B).astype(np.int64)}
        return WideMLP(), B, data, r"[ab]\.weight"
    if name == "gpt6":
        model, B, data = tvt.make("gpt6", steps, 0)
        return model, B, data, r".*(mlp\.[02]|attn\.c_attn|attn\.c_proj)\.weight"
    raise SystemExit("unknown model " + name)


def frozen_bytes(report, frozen):
    total = 0
    for t in report["tensors"]:
        name = t["name"]
        for suffix in STORAGE:
            if name.endswith(suffix):
                name = name[:-len(suffix)]
                break
        if re.fullmatch(frozen, name):
            total += t["bytes"]
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--models", default="mlp,gpt6")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="nf4-bench-")
    print("| model | frozen weights f32 -> NF4 | state | arena | total | step f32 | step NF4 | NF4/f32 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.models.split(","):
        model, B, data, frozen = make(name, args.steps)
        names = list(data)
        onnx_path = os.path.join(work, name + ".onnx")
        npz = os.path.join(work, name + ".npz")
        tvt.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
                   names, onnx_path)
        np.savez(npz, **data)
        reports, times = {}, {"f32": [], "nf4": []}
        for tag, extra in (("f32", []), ("nf4", ["--quantize-frozen", "nf4"])):
            effx = os.path.join(work, "%s-%s.effx" % (name, tag))
            rep = os.path.join(work, "%s-%s.json" % (name, tag))
            tvt.run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx,
                     "--freeze", frozen, "--report-json", rep] + extra)
            reports[tag] = json.load(open(rep))
        for _ in range(2):
            for tag in ("f32", "nf4"):
                log = os.path.join(work, "%s-%s.jsonl" % (name, tag))
                subprocess.run([os.path.join(args.bin, "effrun"),
                                os.path.join(work, "%s-%s.effx" % (name, tag)),
                                "--data", npz, "--steps", str(args.steps),
                                "--log", log, "--quiet"], check=True)
                rows = [json.loads(line) for line in open(log)]
                times[tag] += [r["time_ms"] for r in rows[1:]]
        f, q = reports["f32"], reports["nf4"]
        tf, tq = statistics.median(times["f32"]), statistics.median(times["nf4"])
        print("| %s | %d -> %d (%.3fx) | %d -> %d | %d -> %d | %d -> %d | %.1f ms | %.1f ms | %.2f |" % (
            name, frozen_bytes(f, frozen), frozen_bytes(q, frozen),
            frozen_bytes(q, frozen) / frozen_bytes(f, frozen),
            f["regions"]["state"], q["regions"]["state"],
            f["regions"]["arena"], q["regions"]["arena"],
            f["total_bytes"], q["total_bytes"], tf, tq, tq / tf))


if __name__ == "__main__":
    main()
