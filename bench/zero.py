#!/usr/bin/env python3
"""Per-rank memory and step time of ZeRO stages 0-3 at N = 1, 2, 4 ranks on
the 6-layer example GPT, next to PyTorch 1.13 on gloo (DDP, and DDP with
torch.distributed.optim.ZeroRedundancyOptimizer, i.e. ZeRO-1) at the same
global batch, in one run on this machine.

For every (N, stage): effc's per-rank plan (--report-json: parameters,
optimizer state, gradients at most live at once, the whole allocation), the
ZeRO paper's model-state bytes for that stage adapted to what effopt
stores, the measured peak resident memory of every rank (/usr/bin/time's
maximum RSS, the largest over the ranks) and the median step time, against
N = 1. Each rank runs B = G / N rows, G the global batch.

The paper's formulas (Rajbhandari et al. 2020, Psi parameters, N ranks, K
optimizer bytes per parameter), mixed precision: stage 0 (2 + 2 + K) Psi,
stage 1 (2 + 2) Psi + K Psi / N, stage 2 2 Psi + (2 + K) Psi / N, stage 3
(2 + 2 + K) Psi / N, with K = 12 for Adam (fp32 master weights, m and v).
effopt keeps the fp32 master weights as the parameters themselves (bf16
copies are temporaries of the step, not state) and f32 gradients, so in
fp32 and bf16 alike the split is 4 + 4 + K: stage 0 (8 + K) Psi, stage 1
8 Psi + K Psi / N, stage 2 4 Psi + (4 + K) Psi / N, stage 3 (8 + K) Psi / N.
K by --optimizer (the whole figure, K Psi, is summed over the parameter
tensors from their shapes; the step counter's 8 bytes left out):
  adamw      K = 8: m and v in f32.
  adamw8bit  K = 2 + 8/256 for a tensor of >= 4096 elements: m and v as
             i8 codes, one f32 absmax each per block of 256; K = 8 (f32
             moments) for a smaller one.
  adafactor  K = 4 (R + C) / (R C) for a matrix of R x C (a row and a
             column factor in f32; B (R + C) for a stack of B matrices),
             K = 4 for a vector (its full second moment); no first moment.
effopt's gradients are not state: the figure used is the most gradient
bytes live at once in the plan (a bucket's gradients are written into the
bucket, eff-fold-collective-copies, so they count once).

usage: /usr/bin/python3 bench/zero.py [--bin build/bin] [--steps 12]
       [--global-batch 16] [--ranks 1,2,4] [--precision fp32]
       [--optimizer adamw|adamw8bit|adafactor]
Runs more ranks than cores with mpirun --oversubscribe: on a small machine
the step times measure contention as much as the method. PyTorch runs
with AdamW only (1.13 has neither an 8-bit AdamW nor Adafactor), DDP with
gradient_as_bucket_view=True (its gradients are its buckets, held once;
the figure is its .grad tensors).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "test", "E2E", "lib"))
from zero_memory import live_peak  # noqa: E402
from zero_run import mpi_env  # noqa: E402

TORCH_CHILD = r'''
import json, os, resource, statistics, sys, time
import numpy as np, torch, torch.distributed as dist
spec = json.loads(sys.argv[1])
sys.path.insert(0, spec["examples"])
rank, n = int(sys.argv[2]), spec["ranks"]
os.environ["MASTER_ADDR"] = "127.0.0.1"
os.environ["MASTER_PORT"] = str(spec["port"])
dist.init_process_group("gloo", rank=rank, world_size=n)
torch.set_num_threads(1)
model = torch.load(spec["model"])
# gloo broadcasts no bool tensors: the constant causal mask stays out.
DDP = torch.nn.parallel.DistributedDataParallel
DDP._set_params_and_buffers_to_ignore_for_model(
    model, [n for n, b in model.named_buffers() if not b.is_floating_point()])
# gradient_as_bucket_view: the gradients are views of DDP's buckets, so
# they are held once (1.13's default copies them into the buckets).
ddp = DDP(model, broadcast_buffers=False, gradient_as_bucket_view=True)
if spec["zero"]:
    from torch.distributed.optim import ZeroRedundancyOptimizer
    opt = ZeroRedundancyOptimizer(ddp.parameters(),
                                  optimizer_class=torch.optim.AdamW, lr=1e-3)
else:
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
data = np.load(spec["data"])
B = spec["batch"]
times = []
for i in range(spec["steps"]):
    rows = slice((i * n + rank) * B, (i * n + rank + 1) * B)
    batch = [torch.from_numpy(data[k][rows]) for k in spec["inputs"]]
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=False)
    loss = ddp(*batch)[0]
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
params = list(model.parameters())
inner = opt.optim if spec["zero"] else opt
state = sum(t.numel() * t.element_size() for s in inner.state.values()
            for t in s.values() if torch.is_tensor(t) and t.dim() > 0)
out = {"median_ms": 1000 * statistics.median(times[2:]),
       "parameters": sum(p.numel() * p.element_size() for p in params),
       "gradients": sum(p.grad.numel() * p.grad.element_size() for p in params),
       "optimizer_state": state,
       "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
all_out = [None] * n
dist.all_gather_object(all_out, out)
if rank == 0:
    print(json.dumps(all_out))
dist.destroy_process_group()
'''


def optimizer_bytes(shapes, optimizer):
    """K Psi: the optimizer state of parameters of `shapes` (docstring)."""
    total = 0
    for shape in shapes:
        numel = 1
        for d in shape:
            numel *= d
        if optimizer == "adamw":
            total += 8 * numel
        elif optimizer == "adamw8bit":
            total += (2 * numel + 8 * -(-numel // 256) if numel >= 4096
                      else 8 * numel)
        elif optimizer == "adafactor":
            if len(shape) >= 2:
                stack = numel // (shape[-2] * shape[-1])
                total += 4 * stack * (shape[-2] + shape[-1])
            else:
                total += 4 * numel
    return total


def paper_bytes(stage, psi, n, k):
    """Model-state bytes per rank, the paper's split adapted (4 + 4 + K)."""
    p, g = 4 * psi, 4 * psi
    return {0: p + g + k, 1: p + g + k / n, 2: p + (g + k) / n,
            3: (p + g + k) / n}[stage]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--global-batch", type=int, default=16)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--optimizer", default="adamw",
                    choices=["adamw", "adamw8bit", "adafactor"])
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--stages", default="0,1,2,3",
                    help="ZeRO stages at N > 1")
    ap.add_argument("--repeats", type=int, default=1,
                    help="rounds of runs of every configuration, effopt's "
                         "and PyTorch's interleaved; the step time is the "
                         "least of their medians (a loaded machine)")
    ap.add_argument("--compare-blocking", action="store_true",
                    help="at N > 1 also each stage with blocking collectives "
                         "(effc --zero-overlap=false), each right after the overlapped one")
    args = ap.parse_args()

    import numpy as np
    import torch
    import train_vs_torch as t
    ex = t.ex

    work = tempfile.mkdtemp(prefix="effopt-bench-zero-")
    torch.manual_seed(0)
    G, T = args.global_batch, args.seq
    model = ex.GPT(vocab=256, block_size=T, n_layer=6, d_model=args.width,
                   n_head=4, dropout=0.0)
    data = t.text_windows(np.random.RandomState(0), args.steps * G, T)
    names = list(data)
    npz = os.path.join(work, "gpt.npz")
    np.savez(npz, **data)
    model_path = os.path.join(work, "gpt.pt")
    torch.save(model, model_path)
    psi = sum(p.numel() for p in model.parameters())
    kpsi = optimizer_bytes([tuple(p.shape) for p in model.parameters()],
                           args.optimizer)
    ranks = [int(r) for r in args.ranks.split(",")]
    print("GPT 6 layers d%d T%d, %.3fM parameters (Psi), global batch %d, "
          "%s (K = %.4f bytes per parameter), %s; %d steps (median of the "
          "last %d); %d cores" %
          (args.width, T, psi / 1e6, G, args.optimizer, kpsi / psi,
           args.precision, args.steps, args.steps - 2, os.cpu_count()))

    rows = []
    base_ms = None
    for n in ranks:
        B = G // n
        onnx_path = os.path.join(work, "gpt_b%d.onnx" % B)
        t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
                 names, onnx_path)
        stages = [0] if n == 1 else [int(z) for z in args.stages.split(",")]
        variants = [(z, True) for z in stages]
        if args.compare_blocking and n > 1:
            variants = [(z, o) for z in stages for o in (True, False)]
        # Compile every variant first; then run them, and PyTorch's, in
        # rounds (--repeats), interleaved, so that a busy machine slows
        # both alike; each step time is the least of the rounds' medians.
        runs = []
        for stage, overlap in variants:
            label = "n%d_z%d%s" % (n, stage, "" if overlap else "_blocking")
            effx = os.path.join(work, label + ".effx")
            report = os.path.join(work, label + ".json")
            subprocess.run([os.path.join(args.bin, "effc"), onnx_path, "-o",
                            effx, "--optimizer", args.optimizer, "--lr", "1e-3",
                            "--precision", args.precision, "--world-size",
                            str(n), "--zero", str(stage), "--report-json",
                            report]
                           + ([] if overlap else ["--zero-overlap=false"]),
                           check=True, stdout=subprocess.DEVNULL)
            runs.append((stage, overlap, label, effx,
                         json.load(open(report))))
        torch_runs = []
        if not args.no_torch and args.optimizer == "adamw":
            torch_runs = [False] if n == 1 else [False, True]
        effopt_ms, effopt_rss, torch_ms, torch_out = {}, {}, {}, {}
        for _ in range(args.repeats):
            for stage, overlap, label, effx, plan in runs:
                log = os.path.join(work, label + ".jsonl")
                rss = [os.path.join(work, "%s.rss%d" % (label, r))
                       for r in range(n)]
                # Each rank under /usr/bin/time (its maximum RSS in its file).
                wrapper = os.path.join(work, "rank_time.sh")
                with open(wrapper, "w") as f:
                    f.write('#!/bin/sh\nexec /usr/bin/time -f %%M -o "%s/%s.rss'
                            '${OMPI_COMM_WORLD_RANK:-0}" "$@"\n' % (work, label))
                os.chmod(wrapper, 0o755)
                cmd = [wrapper, os.path.join(args.bin, "effrun"), effx,
                       "--data", npz, "--steps", str(args.steps), "--log", log,
                       "--quiet", "--threads", "1"]
                if n > 1:
                    cmd = ["mpirun", "-np", str(n), "--oversubscribe"] + cmd
                subprocess.run(cmd, check=True, env=mpi_env())
                steps = [json.loads(l) for l in open(log)]
                run_ms = statistics.median(s["time_ms"] for s in steps[2:])
                effopt_ms[label] = min(effopt_ms.get(label, run_ms), run_ms)
                measured = max(int(open(p).read().split()[-1]) * 1024
                               for p in rss)
                effopt_rss[label] = max(effopt_rss.get(label, 0), measured)
            for zero in torch_runs:
                spec = {"model": model_path, "data": npz, "inputs": names,
                        "batch": B, "steps": args.steps, "ranks": n,
                        "zero": zero, "port": 29500 + n * 2 + int(zero),
                        "examples": os.path.dirname(ex.__file__)}
                procs = [subprocess.Popen([sys.executable, "-c", TORCH_CHILD,
                                           json.dumps(spec), str(r)],
                                          stdout=subprocess.PIPE, text=True)
                         for r in range(n)]
                outs = [p.communicate()[0] for p in procs]
                result = json.loads(outs[0])
                ms = statistics.median(r["median_ms"] for r in result)
                torch_ms[zero] = min(torch_ms.get(zero, ms), ms)
                torch_out[zero] = result
        for stage, overlap, label, effx, plan in runs:
            persistent = {}
            for x in plan["tensors"]:
                persistent[x["category"]] = (persistent.get(x["category"], 0)
                                             + x["bytes"])
            ms = effopt_ms[label]
            if base_ms is None:
                base_ms = ms
            states = (persistent.get("parameters", 0) +
                      persistent.get("optimizer state", 0) +
                      live_peak(plan, "gradients"))
            rows.append(("effopt", n, "zero %d%s" % (stage, "" if overlap
                                                     else " blocking"),
                         persistent.get("parameters", 0),
                         persistent.get("optimizer state", 0),
                         live_peak(plan, "gradients"), states,
                         paper_bytes(stage, psi, n, kpsi), plan["total_bytes"],
                         effopt_rss[label], ms, ms / base_ms))
        for zero in torch_runs:
            result = torch_out[zero]
            r0 = result[0]
            states = r0["parameters"] + r0["gradients"] + r0["optimizer_state"]
            rows.append(("torch", n, "ZeRO-1" if zero else "DDP",
                         r0["parameters"], r0["optimizer_state"],
                         r0["gradients"], states,
                         paper_bytes(1 if zero else 0, psi, n, kpsi), None,
                         max(r["rss"] for r in result), torch_ms[zero],
                         torch_ms[zero] / base_ms))

    mib = lambda b: "-" if b is None else "%.2f" % (b / 2**20)
    print("\nper-rank MiB | params | opt state | grads (most live) | model "
          "states | paper formula | planned total | measured peak RSS | "
          "ms/step | vs N=1")
    print("| run | N | stage | params | opt state | grads | model states | "
          "paper | states/paper | planned total | peak RSS | ms/step | time "
          "vs N=1 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
          " --- | --- |")
    for (who, n, stage, p, o, g, s, paper, total, rss, ms, ratio) in rows:
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %.2f | %s | %s | "
              "%.1f | %.2fx |" % (who, n, stage, mib(p), mib(o), mib(g),
                                  mib(s), mib(paper), s / paper, mib(total),
                                  mib(rss), ms, ratio))


if __name__ == "__main__":
    main()
