#!/usr/bin/env python3
"""Attention benchmark: one causal self-attention layer (qkv projection,
attention, output projection, MSE loss) trained with effc/effrun, fused
(eff.attention, tiled FlashAttention-2 kernels) and unfused
(--fuse-attention=false: scores and probabilities materialised), and with
PyTorch 1.13 eager, at T = 512, 1024, 2048 with B*H fixed, in one run.

Per T: effopt's planned activation bytes at the peak and planned total
(effc --report-json), the median step time; PyTorch's median step time,
the bytes autograd saves for the backward (distinct storages of the saved
tensors: the counterpart of effopt's activations) and its step's peak
memory as the rise of the child's ru_maxrss over its state after setup (a
lower bound: the allocator reuses what setup freed); the ratios.

usage: /usr/bin/python3 bench/attention.py [--bin build/bin] [--seqs 512,1024,2048]
       [--batch 1] [--heads 8] [--head-dim 64] [--steps 6] [--threads N]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "test", "E2E", "lib"))

MODEL = r'''
import math, torch, torch.nn as nn, torch.nn.functional as F
class Attn(nn.Module):
    def __init__(self, T, C, H):
        super().__init__()
        self.H = H
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))
    def forward(self, x, y):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        hs = C // self.H
        q, k, v = [t.view(B, T, self.H, hs).transpose(1, 2) for t in (q, k, v)]
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        s = s.masked_fill(self.mask == 0, float("-inf"))
        o = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return ((self.proj(o) - y) ** 2).mean()
'''

TORCH_CHILD = r'''
import json, resource, statistics, sys, time
import numpy as np, torch
spec = json.loads(sys.argv[1])
exec(spec["model_src"])
torch.set_num_threads(spec["threads"])
torch.manual_seed(0)
model = Attn(spec["T"], spec["C"], spec["H"])
model.load_state_dict(torch.load(spec["state"]))
data = np.load(spec["data"])
B = spec["B"]
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
# What autograd keeps for the backward: the bytes of the distinct storages
# of the saved tensors (the counterpart of effopt's activations).
saved = {}
def pack(t):
    st = t.storage()
    saved[st.data_ptr()] = st.nbytes()
    return t
times = []
for i in range(spec["steps"]):
    t0 = time.perf_counter()
    x = torch.from_numpy(data["x"][i * B:(i + 1) * B])
    y = torch.from_numpy(data["y"][i * B:(i + 1) * B])
    opt.zero_grad(set_to_none=True)
    saved.clear()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(x, y)
    saved_bytes = sum(saved.values())
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"median_ms": 1000 * statistics.median(times[1:]),
                  "peak_rise": (after - before) * 1024,
                  "saved": saved_bytes}))
'''


def mib(b):
    return "%.1f" % (b / 2 ** 20)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAILED: %s\n%s" % (" ".join(cmd), r.stderr))
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--seqs", default="512,1024,2048")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--no-unfused", action="store_true",
                    help="skip effopt's unfused build (slow at large T)")
    args = ap.parse_args()

    import numpy as np
    import torch
    import train_vs_torch as t
    ns = {}
    exec(MODEL, ns)
    B, H, D = args.batch, args.heads, args.head_dim
    C = H * D
    work = tempfile.mkdtemp(prefix="effopt-attention-")
    print("causal self-attention layer, B=%d H=%d D=%d (B*H = %d), %d steps "
          "(median of the last %d), %d threads" %
          (B, H, D, B * H, args.steps, args.steps - 1, args.threads))
    print("load average at the start: %.2f %.2f %.2f" % os.getloadavg())
    print()
    print("%5s %-9s %13s %12s %10s" % ("T", "run", "activ. MiB", "total MiB",
                                       "ms/step"))
    summary = []
    for T in [int(s) for s in args.seqs.split(",")]:
        torch.manual_seed(0)
        model = ns["Attn"](T, C, H)
        rng = np.random.RandomState(0)
        data = {"x": rng.randn(args.steps * B, T, C).astype(np.float32),
                "y": rng.randn(args.steps * B, T, C).astype(np.float32)}
        stem = os.path.join(work, "t%d" % T)
        t.export(model, (torch.from_numpy(data["x"][:B]),
                         torch.from_numpy(data["y"][:B])), ["x", "y"],
                 stem + ".onnx", output_names=["loss"])
        np.savez(stem + ".npz", **data)
        state = stem + ".pt"
        torch.save(model.state_dict(), state)
        results = {}
        for label, flags in (("fused", []),
                             ("unfused", ["--fuse-attention=false"])):
            if label == "unfused" and args.no_unfused:
                continue
            run([os.path.join(args.bin, "effc"), stem + ".onnx", "-o",
                 stem + label + ".effx", "--optimizer", "sgd", "--lr", "1e-3",
                 "--report-json", stem + label + ".json"] + flags)
            report = json.load(open(stem + label + ".json"))
            run([os.path.join(args.bin, "effrun"), stem + label + ".effx",
                 "--data", stem + ".npz", "--steps", str(args.steps), "--log",
                 stem + label + ".jsonl", "--threads", str(args.threads),
                 "--quiet"])
            log = [json.loads(l) for l in open(stem + label + ".jsonl")]
            ms = statistics.median(s["time_ms"] for s in log[1:])
            act = report["peak"]["by_category"]["activations"]
            results[label] = (act, report["total_bytes"], ms)
            print("%5d %-9s %13s %12s %10.1f" % (T, label, mib(act),
                                                 mib(report["total_bytes"]),
                                                 ms))
        spec = {"model_src": MODEL, "T": T, "C": C, "H": H, "state": state,
                "data": stem + ".npz", "steps": args.steps, "B": B,
                "threads": args.threads}
        out = json.loads(run([sys.executable, "-c", TORCH_CHILD,
                              json.dumps(spec)]).strip().splitlines()[-1])
        print("%5d %-9s %13s %12s %10.1f" % (T, "pytorch", mib(out["saved"]),
                                             "peak+" + mib(out["peak_rise"]),
                                             out["median_ms"]))
        act, _, ms = results["fused"]
        summary.append((T, act, out["saved"], ms, out["median_ms"],
                        B * H * T * T * 4))
    print()
    print("%5s %14s %16s %12s %12s %14s" % (
        "T", "fused activ.", "torch saved", "torch/ours", "time ratio",
        "one TxT f32"))
    for T, act, peak, ms, tms, txt in summary:
        print("%5d %13sM %15sM %11.1fx %11.2fx %13sM" % (
            T, mib(act), mib(peak), peak / max(act, 1), ms / tms, mib(txt)))
    print("(time ratio = effopt fused / PyTorch eager; < 1 is faster)")
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
