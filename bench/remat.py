#!/usr/bin/env python3
"""Rematerialization benchmark: a 12-layer GPT trained with effc/effrun under
every --remat policy, and with PyTorch 1.13 eager without and with
torch.utils.checkpoint per block, in one run on this machine.

Per policy: the planned peak (state + arena + io, from effc --report-json),
the activation bytes at the peak, the measured peak RSS of effrun, the median
step time, and time relative to `none`. For PyTorch: median step time and
peak RSS (ru_maxrss of the child, which includes the interpreter and torch),
without checkpointing and with checkpoint per block.

usage: /usr/bin/python3 bench/remat.py [--bin build/bin] [--layers 12]
       [--width 256] [--seq 128] [--batch 8] [--steps 8] [--threads N]
       [--policies none,selective,full,sqrt]
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
import json, sys, time, statistics
import numpy as np, torch
import torch.utils.checkpoint as cp
sys.path.insert(0, sys.argv[1])
import train_vs_torch as t
spec = json.loads(sys.argv[2])
torch.set_num_threads(spec["threads"])
model = torch.load(spec["model"])
if spec["checkpoint"]:
    for blk in model.blocks:
        blk.forward = (lambda f: (lambda x: cp.checkpoint(f, x, use_reentrant=False)))(blk.forward)
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
    loss = model(idx, tgt)[0]
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
print(json.dumps({"median_ms": 1000 * statistics.median(times[2:])}))
'''


def mib(b):
    return "%.1f" % (b / 2 ** 20)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--policies", default="none,selective,full,sqrt")
    ap.add_argument("--budgets", default="0.25,0.5,0.75",
                    help="fractions of none's activation bytes to allow "
                         "(--remat budget:B), plus full's planned bytes")
    args = ap.parse_args()

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
    work = tempfile.mkdtemp(prefix="effopt-remat-")
    onnx_path = os.path.join(work, "gpt.onnx")
    npz = os.path.join(work, "data.npz")
    t.export(model, (torch.from_numpy(data["idx"][:B]),
                     torch.from_numpy(data["targets"][:B])),
             ["idx", "targets"], onnx_path)
    np.savez(npz, **data)
    model_path = os.path.join(work, "gpt.pt")
    torch.save(model, model_path)
    print("GPT %d layers, d_model %d, seq %d, batch %d; %d steps (median of "
          "the last %d), %d threads" % (args.layers, args.width, T, B,
                                        args.steps, args.steps - 2, args.threads))

    print("load average (1, 5, 15 min) at the start: %.2f %.2f %.2f"
          % os.getloadavg())
    rows = []
    policies = args.policies.split(",")
    if args.budgets:
        policies += ["budget@%s" % f for f in args.budgets.split(",")]
        policies += ["budget@full"]
    for policy in policies:
        label = policy
        if policy.startswith("budget@"):
            # Budgets relative to none: planned - (1 - f) * activations, or
            # the planned bytes of full checkpointing.
            by = {r[0]: r for r in rows}
            what = policy.split("@")[1]
            if what == "full":
                budget = by["full"][1]
            else:
                f = float(what)
                budget = int(by["none"][1] - (1 - f) * by["none"][2])
            policy = "budget:%d" % budget
            label = "budget %s" % (what if what == "full" else
                                   "%d%%" % round(100 * float(what)))
        stem = os.path.join(work, label.replace(" ", "_").replace("%", ""))
        t0 = time.perf_counter()
        r = subprocess.run([os.path.join(args.bin, "effc"), onnx_path, "-o",
                            stem + ".effx", "--optimizer", "adamw", "--lr",
                            "3e-4", "--remat", policy, "--report-json",
                            stem + ".json"], capture_output=True, text=True)
        if r.returncode != 0:
            print("%-13s does not fit: %s" % (label, r.stderr.strip().splitlines()[-1]))
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
                     compile_s))

    print()
    print("%-13s %12s %14s %12s %10s %8s %9s %8s" %
          ("policy", "planned MiB", "activ. MiB", "RSS MiB", "ms/step",
           "time", "activ.", "compile"))
    base_ms, base_act = rows[0][4], rows[0][2]
    for policy, planned, act, rss, ms, cs in rows:
        print("%-13s %12s %14s %12s %10.1f %7.2fx %8.2fx %7.1fs" %
              (policy, mib(planned), mib(act), mib(rss), ms, ms / base_ms,
               base_act / max(act, 1), cs))

    print()
    torch_rows = []
    for ckpt in (False, True):
        spec = {"model": model_path, "data": npz, "batch": B,
                "steps": args.steps, "threads": args.threads,
                "checkpoint": ckpt}
        out, rss = timed([sys.executable, "-c", TORCH_CHILD,
                          os.path.join(SRC, "test", "E2E", "lib"),
                          json.dumps(spec)])
        torch_rows.append((ckpt, json.loads(out.strip().splitlines()[-1])["median_ms"], rss))
    print("%-28s %10s %12s" % ("PyTorch 1.13 eager", "ms/step", "RSS MiB"))
    for ckpt, ms, rss in torch_rows:
        print("%-28s %10.1f %12s" % ("checkpoint per block" if ckpt else "no checkpointing",
                                     ms, mib(rss)))
    print("torch checkpoint time ratio: %.2fx" % (torch_rows[1][1] / torch_rows[0][1]))
    # Step times mean little on a busy machine; planned bytes are exact.
    print("load average (1, 5, 15 min) at the end: %.2f %.2f %.2f"
          % os.getloadavg())


if __name__ == "__main__":
    main()
