#!/usr/bin/env python3
"""Precision benchmark: a GPT (the example's shape by default) trained with
effc/effrun in fp32, bf16, fp16 + dynamic loss scaling, bf16 + 4-step
gradient accumulation and bf16 + accumulation + selective remat, side by
side with PyTorch 1.13 eager in fp32 and under
torch.autocast(device_type="cpu", dtype=torch.bfloat16), in one run.

Every configuration trains the same global batch B per optimizer step (the
accumulating ones as 4 micro-batches of B/4). Per configuration: the planned
peak (state + arena + io, effc --report-json), its activation bytes at the
peak, effrun's peak RSS, the median step time and the time relative to
effopt fp32. For PyTorch: median step time and the child's peak RSS.

usage: /usr/bin/python3 bench/precision.py [--bin build/bin] [--layers 2]
       [--width 64] [--heads 4] [--seq 32] [--batch 8] [--steps 12]
       [--threads N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "test", "E2E", "lib"))

TORCH_CHILD = r'''
import json, sys, time, statistics, contextlib
import numpy as np, torch
spec = json.loads(sys.argv[1])
sys.path.insert(0, spec["examples"])  # the pickled model's class
torch.set_num_threads(spec["threads"])
model = torch.load(spec["model"])
data = np.load(spec["data"])
B = spec["batch"]
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
model.train()
times = []
for i in range(spec["steps"]):
    idx = torch.from_numpy(data["idx"][i * B:(i + 1) * B])
    tgt = torch.from_numpy(data["targets"][i * B:(i + 1) * B])
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    ctx = (torch.autocast(device_type="cpu", dtype=torch.bfloat16)
           if spec["autocast"] else contextlib.nullcontext())
    with ctx:
        loss = model(idx, tgt)[0]
    loss.float().backward()
    opt.step()
    times.append(time.perf_counter() - t0)
print(json.dumps({"median_ms": 1000 * statistics.median(times[2:])}))
'''

CONFIGS = [
    ("fp32", 1, []),
    ("bf16", 1, ["--precision", "bf16"]),
    ("fp16+scaling", 1, ["--precision", "fp16"]),
    ("bf16+accum4", 4, ["--precision", "bf16", "--accum", "4"]),
    ("bf16+accum4+selective", 4, ["--precision", "bf16", "--accum", "4",
                                  "--remat", "selective"]),
]


def mib(b):
    return "%.2f" % (b / 2 ** 20)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    if args.batch % 4:
        raise SystemExit("--batch must be a multiple of 4 (accum4 rows)")

    import numpy as np
    import torch
    import train_vs_torch as t
    from cpu_vs_torch import timed

    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    B, T = args.batch, args.seq
    data = t.text_windows(rng, args.steps * B, T)
    model = t.ex.GPT(vocab=256, block_size=T, n_layer=args.layers,
                     d_model=args.width, n_head=args.heads, dropout=0.0)
    work = tempfile.mkdtemp(prefix="effopt-precision-")
    npz = os.path.join(work, "data.npz")
    np.savez(npz, **data)
    onnx_for = {}
    for micro in sorted({B // k for _, k, _ in CONFIGS}):
        path = os.path.join(work, "gpt-b%d.onnx" % micro)
        t.export(model, (torch.from_numpy(data["idx"][:micro]),
                         torch.from_numpy(data["targets"][:micro])),
                 ["idx", "targets"], path)
        onnx_for[micro] = path
    model_path = os.path.join(work, "gpt.pt")
    torch.save(model, model_path)
    print("GPT %d layers, d_model %d, seq %d, global batch %d; %d steps "
          "(median of the last %d), %d threads" %
          (args.layers, args.width, T, B, args.steps, args.steps - 2,
           args.threads))

    rows = []
    for label, k, flags in CONFIGS:
        stem = os.path.join(work, label.replace("+", "_"))
        t0 = time.perf_counter()
        r = subprocess.run([os.path.join(args.bin, "effc"), onnx_for[B // k],
                            "-o", stem + ".effx", "--optimizer", "adamw",
                            "--lr", "3e-4", "--report-json", stem + ".json"]
                           + flags, capture_output=True, text=True)
        if r.returncode != 0:
            print("%-22s not compiled: %s" %
                  (label, r.stderr.strip().splitlines()[-1]))
            continue
        compile_s = time.perf_counter() - t0
        report = json.load(open(stem + ".json"))
        _, rss = timed([os.path.join(args.bin, "effrun"), stem + ".effx",
                        "--data", npz, "--steps", str(args.steps), "--log",
                        stem + ".jsonl", "--threads", str(args.threads),
                        "--quiet"])
        log = [json.loads(l) for l in open(stem + ".jsonl")]
        ms = statistics.median(s["time_ms"] for s in log[2:])
        rows.append((label, report["total_bytes"],
                     report["peak"]["by_category"]["activations"], rss, ms,
                     compile_s, log[-1]["loss"]))

    print()
    print("%-22s %12s %12s %10s %10s %8s %9s %10s" %
          ("effopt", "planned MiB", "activ. MiB", "RSS MiB", "ms/step",
           "time", "compile", "last loss"))
    base_ms = rows[0][4] if rows and rows[0][0] == "fp32" else None
    for label, planned, act, rss, ms, cs, loss in rows:
        ratio = "%7.2fx" % (ms / base_ms) if base_ms else "   n/a"
        print("%-22s %12s %12s %10s %10.2f %8s %8.1fs %10.4f" %
              (label, mib(planned), mib(act), mib(rss), ms, ratio, cs, loss))

    print()
    torch_rows = []
    for autocast in (False, True):
        spec = {"model": model_path, "data": npz, "batch": B,
                "steps": args.steps, "threads": args.threads,
                "autocast": autocast,
                "examples": os.path.join(SRC, "examples")}
        out, rss = timed([sys.executable, "-c", TORCH_CHILD, json.dumps(spec)])
        torch_rows.append((autocast,
                           json.loads(out.strip().splitlines()[-1])["median_ms"],
                           rss))
    print("%-34s %10s %10s %12s" % ("PyTorch 1.13 eager", "ms/step",
                                    "vs effopt", "RSS MiB"))
    by = {r[0]: r for r in rows}
    for autocast, ms, rss in torch_rows:
        mine = by.get("bf16" if autocast else "fp32")
        print("%-34s %10.2f %9.2fx %12s" %
              ("autocast bf16" if autocast else "fp32", ms,
               (mine[4] / ms) if mine else float("nan"), mib(rss)))
    print("torch autocast/fp32 time ratio: %.2fx" %
          (torch_rows[1][1] / torch_rows[0][1]))


if __name__ == "__main__":
    main()
