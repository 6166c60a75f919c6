#!/usr/bin/env python3
"""Trains a convolution model whose oneDNN calls are large enough for two
threads (19-75M multiply-adds each, batch 8) with effrun --threads 2 as if
on a quiet machine and as if on a busy one (EFFRT_CONV_ASSUME_BUSY=0 and
1), and checks that the two train bit-identically.

    conv_threads.py --work DIR [--bin BUILD/bin] [--steps N] [--effc=FLAG]

While the machine is busy, effrt runs a convolution on fewer threads once
its output on fewer threads was found bit-identical to the one on all
(runtime/src/cpu/Convolution.cpp): a 16-channel filter gradient over 32x32
maps, whose sum oneDNN splits over the batch between two threads, must keep
two; the others may run on one. Prints `conv-threads: busy and quiet
bit-identical` or a MISMATCH line (exit 1)."""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_vs_torch import export, read_safetensors, tool  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv0 = nn.Conv2d(16, 16, 3, padding=1)
        self.conv1 = nn.Conv2d(16, 64, 3, padding=1)
        self.conv2 = nn.Conv2d(64, 64, 3, padding=1, bias=False)
        self.conv3 = nn.Conv2d(64, 64, 3, stride=2, padding=1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x, y):
        h = F.relu(self.conv1(F.relu(self.conv0(x))))
        h = F.relu(self.conv2(h))
        h = self.conv3(h).mean((2, 3))
        return F.cross_entropy(self.fc(h), y)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", default=None)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--effc", action="append", default=[])
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    B = 8
    data = {"x": rng.randn(args.steps * B, 16, 32, 32).astype(np.float32),
            "y": rng.randint(0, 10, size=args.steps * B).astype(np.int64)}
    onnx_path = os.path.join(args.work, "conv.onnx")
    export(Net(), tuple(torch.from_numpy(data[k][:B]) for k in data),
           list(data), onnx_path, output_names=("loss",))
    npz = os.path.join(args.work, "conv.npz")
    np.savez(npz, **data)
    effx = os.path.join(args.work, "conv.effx")
    subprocess.run([tool(args, "effc"), onnx_path, "-o", effx, "--optimizer",
                    "sgd", "--lr", "0.1", "--momentum", "0.9"] + args.effc,
                   check=True)
    states = {}
    for busy in (False, True):
        out = os.path.join(args.work, "busy.safetensors" if busy
                           else "quiet.safetensors")
        env = dict(os.environ, EFFRT_CONV_ASSUME_BUSY="1" if busy else "0")
        subprocess.run([tool(args, "effrun"), effx, "--data", npz, "--steps",
                        str(args.steps), "--threads", "2", "--save", out,
                        "--quiet"], check=True, env=env)
        states[busy] = read_safetensors(out)
    bad = [k for k in states[False]
           if not np.array_equal(states[False][k], states[True][k])]
    if bad:
        print("MISMATCH: busy and quiet runs differ in %s" %
              ", ".join(sorted(bad)))
        return 1
    print("conv-threads: busy and quiet bit-identical (%d tensors)" %
          len(states[False]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
