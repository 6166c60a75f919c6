#!/usr/bin/env python3
"""ZeRO's collectives at world size 1 (docs/Distributed.md, "On GPUs:
NCCL"), on NCCL on one GPU, or on the CPU's single-rank collectives.

    zero_one_rank.py --bin BUILD/bin --work DIR [--target cuda|cpu] [--steps 8]

The example GPT (2 layers, d 64; AdamW) compiled with `effc --target T`
three ways: --zero 0 (no collectives), and --zero 1 / --zero 3 at world size
1 with the collectives kept (--zero-one-rank-collectives). On cuda each ZeRO
build runs twice: `effrun --nccl` (NCCL's all-reduce, reduce-scatter and
all-gather inside the step, which is captured as a CUDA graph) and plain
effrun (one rank: the same collectives as copies on the GPU). Checks, per
stage: NCCL and the copies give the same bits (losses and the whole
checkpoint: a sum or gather over one rank is the data; cuda only); the
collectives' run matches the --zero 0 run and PyTorch (this CPU, fp32
tolerances); effrun allocated exactly the plan (effc --report-json's
total). Prints one line per check and "zero_one_rank: N checks passed";
exits 1 on a failure. --target cuda needs a GPU.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_vs_torch as tv  # noqa: E402

# The loss in one piece in every build: eff-chunk-cross-entropy leaves steps
# with collectives alone, and the --zero 0 build is compared to them at
# tolerances tighter than the chunks' different summation order.
OPT = ["--optimizer", "adamw", "--lr", "0.003", "--weight-decay", "0.01",
       "--loss-chunks", "1"]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise SystemExit("FAILED: %s\n%s" % (" ".join(cmd), r.stderr.strip()))
    return r


def bits(xs):
    return np.asarray(xs, dtype=np.float32).view(np.uint32).tolist()


def close(got, want, rtol, atol):
    """(ok, worst abs error) over every tensor of `want`."""
    ok, worst = True, 0.0
    for name, w in want.items():
        if name.endswith("num_batches_tracked") or name.endswith(".mask"):
            continue
        g = got.get(name)
        if g is None or g.shape != w.shape:
            return False, float("inf")
        err = np.abs(g.astype(np.float64) - w.astype(np.float64))
        if err.size:
            worst = max(worst, float(err.max()))
        ok &= bool((err <= atol + rtol * np.abs(w.astype(np.float64))).all())
    return ok, worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--target", default="cuda", choices=["cuda", "cpu"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    effc = os.path.join(args.bin, "effc")
    effrun = os.path.join(args.bin, "effrun")

    model, B, data = tv.make("gpt", args.steps, 0)
    names = list(data)
    onnx_path = os.path.join(args.work, "gpt.onnx")
    npz = os.path.join(args.work, "gpt.npz")
    tv.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
              names, onnx_path)
    np.savez(npz, **data)

    def train(tag, flags, extra=()):
        effx = os.path.join(args.work, tag + ".effx")
        report = os.path.join(args.work, tag + ".report.json")
        if not os.path.exists(effx):
            run([effc, onnx_path, "--target", args.target, "-o", effx,
                 "--opt-level", "1", "--report-json", report] + OPT + flags)
        stem = os.path.join(args.work, tag + ("-nccl" if extra else ""))
        run([effrun, effx, "--data", npz, "--steps", str(args.steps),
             "--log", stem + ".jsonl", "--save", stem + ".safetensors",
             "--quiet"] + list(extra))
        rows = [json.loads(line) for line in open(stem + ".jsonl")]
        planned = json.load(open(report))["total_bytes"]
        return dict(losses=[r["loss"] for r in rows],
                    state=tv.read_safetensors(stem + ".safetensors"),
                    planned=planned, allocated=rows[0]["allocated_bytes"],
                    device=rows[0].get("device_bytes"))

    failures = passed = 0

    def check(name, ok, detail):
        nonlocal failures, passed
        print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail))
        failures += not ok
        passed += bool(ok)

    base = train("zero0", [])
    ns = argparse.Namespace(optimizer="adamw", lr=0.003, weight_decay=0.01,
                            beta1=0.9, beta2=0.999, eps=1e-8,
                            schedule="constant", warmup_steps=0,
                            total_steps=0, min_lr=0.0, clip_grad_norm=0.0,
                            steps=args.steps)
    ref_losses, ref_state = tv.train_torch(model, data, B, ns)
    for stage in (1, 3):
        tag = "zero%d" % stage
        flags = ["--zero", str(stage), "--world-size", "1",
                 "--zero-one-rank-collectives"]
        copies = train(tag, flags)
        if args.target == "cuda":
            nccl = train(tag, flags, extra=["--nccl"])
            same = bits(nccl["losses"]) == bits(copies["losses"]) and all(
                np.array_equal(v, nccl["state"].get(k))
                for k, v in copies["state"].items())
            check(tag + " nccl == copies", same,
                  "%d steps, losses and %d checkpoint tensors bit for bit"
                  % (args.steps, len(copies["state"])))
        else:
            nccl = copies  # the CPU's single-rank collectives
        ok_l = np.allclose(nccl["losses"], base["losses"], rtol=1e-4,
                           atol=1e-6)
        ok_s, err = close(nccl["state"], base["state"], 1e-4, 1e-6)
        check(tag + " ~ zero 0", ok_l and ok_s,
              "losses %s, state max abs err %.2e" % (
                  "close" if ok_l else "DIFFER", err))
        ok_l = np.allclose(nccl["losses"], ref_losses, rtol=1e-3, atol=1e-5)
        ok_s, err = close(nccl["state"], ref_state, 1e-3, 5e-5)
        check(tag + " ~ torch", ok_l and ok_s,
              "losses %s, parameters max abs err %.2e" % (
                  "close" if ok_l else "DIFFER", err))
        # On a GPU also what the allocation took of its memory (the driver
        # rounds each of the 4 allocations up to 2 MiB pages); NCCL's own
        # buffers come later and are not in the plan (docs/Distributed.md).
        dev = nccl["device"]
        ok_dev = args.target == "cpu" or (
            dev is not None and
            nccl["planned"] <= dev < nccl["planned"] + 4 * (2 << 20))
        check(tag + " plan", nccl["planned"] == nccl["allocated"] and ok_dev,
              "planned %d, allocated %d bytes, device %s" % (
                  nccl["planned"], nccl["allocated"], dev))
    if failures:
        print("zero_one_rank: %d checks failed" % failures)
        return 1
    print("zero_one_rank: %d checks passed" % passed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
