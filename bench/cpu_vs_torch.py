#!/usr/bin/env python3
"""CPU training benchmark: effopt (effc + effrun) against PyTorch 1.13 eager,
same models, batch, data, threads and BLAS, measured in one run.

For every model prints the median step time of both and their ratio
(effopt / PyTorch, below 1.0 is better), the peak RSS of both processes and
its ratio, and effc's compile time. Each side runs in its own process; peak
RSS is the child's ru_maxrss (PyTorch's includes the interpreter and torch
itself, so the "torch heap" column shows its growth after importing torch).

usage: /usr/bin/python3 bench/cpu_vs_torch.py [--bin build/bin] [--threads 2]
       [--steps 30] [--models mlp,cnn,gpt,gpt6]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "test", "E2E", "lib"))

# name: (make() model key, optimizer flags, description)
MODELS = {
    "mlp": ("mlp", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9"],
            "MLP 64-128-64-10, batch 32, SGD momentum"),
    "cnn": ("cnn", ["--optimizer", "adamw", "--lr", "1e-3"],
            "CNN 2 conv + BatchNorm, batch 32, AdamW"),
    "gpt": ("gpt", ["--optimizer", "adamw", "--lr", "3e-3"],
            "GPT 2 layers d64 T32, batch 8, AdamW"),
    "gpt6": ("gpt6", ["--optimizer", "adamw", "--lr", "3e-4"],
             "GPT 6 layers d256 T128, batch 16, AdamW (GEMM-bound)"),
}

TORCH_CHILD = r'''
import json, resource, sys, time, statistics
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
import train_vs_torch as t
spec = json.loads(sys.argv[2])
torch.set_num_threads(spec["threads"])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
model = torch.load(spec["model"])
data = np.load(spec["data"])
names = spec["inputs"]
B = spec["batch"]
opt = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if spec["sgd"]
       else torch.optim.AdamW(model.parameters(), lr=spec["lr"]))
model.train()
times = []
for i in range(spec["steps"]):
    batch = [torch.from_numpy(data[k][i * B:(i + 1) * B]) for k in names]
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = model(*batch)[0]
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
print(json.dumps({"median_ms": 1000 * statistics.median(times[3:]),
                  "rss_base_kb": base}))
'''


def blas_of(cmd_or_lib):
    try:
        out = subprocess.run(["ldd", cmd_or_lib], capture_output=True, text=True).stdout
    except OSError:
        return "?"
    libs = [l.split()[0] for l in out.splitlines() if "blas" in l]
    resolved = []
    for l in libs:
        path = [p for p in out.splitlines() if p.strip().startswith(l)][0].split("=>")[-1].split()[0]
        resolved.append(os.path.realpath(path))
    return ", ".join(resolved) or "none"


def timed(cmd):
    r = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M"] + cmd,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAILED: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    rss = [int(l.split()[1]) for l in r.stderr.splitlines() if l.startswith("MAXRSS")]
    return r.stdout, rss[-1] * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--models", default="mlp,cnn,gpt,gpt6")
    args = ap.parse_args()

    import numpy as np
    import torch
    import train_vs_torch as t

    work = tempfile.mkdtemp(prefix="effopt-bench-")
    effrun = os.path.join(args.bin, "effrun")
    print("threads: %d, steps: %d (median of the last %d)" %
          (args.threads, args.steps, args.steps - 3))
    print("BLAS: effrun -> %s; torch -> %s" %
          (blas_of(effrun), blas_of(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))))
    rows = []
    for name in args.models.split(","):
        key, flags, desc = MODELS[name]
        model, B, data = t.make(key, args.steps, 0)
        names = list(data)
        onnx_path = os.path.join(work, name + ".onnx")
        npz = os.path.join(work, name + ".npz")
        t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
                 names, onnx_path)
        np.savez(npz, **data)
        model_path = os.path.join(work, name + ".pt")
        torch.save(model, model_path)

        effx = os.path.join(work, name + ".effx")
        t0 = time.perf_counter()
        subprocess.run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx] + flags,
                       check=True)
        compile_s = time.perf_counter() - t0

        log = os.path.join(work, name + ".jsonl")
        _, eff_rss = timed([effrun, effx, "--data", npz, "--steps", str(args.steps),
                            "--log", log, "--threads", str(args.threads), "--quiet"])
        steps = [json.loads(l) for l in open(log)]
        eff_ms = statistics.median(s["time_ms"] for s in steps[3:])

        spec = {"model": model_path, "data": npz, "inputs": names, "batch": B,
                "steps": args.steps, "threads": args.threads,
                "sgd": "sgd" in flags, "lr": float(flags[flags.index("--lr") + 1])}
        out, torch_rss = timed([sys.executable, "-c", TORCH_CHILD,
                                os.path.join(SRC, "test", "E2E", "lib"), json.dumps(spec)])
        res = json.loads(out.strip().splitlines()[-1])
        torch_ms = res["median_ms"]
        torch_heap = torch_rss - res["rss_base_kb"] * 1024
        rows.append((name, desc, eff_ms, torch_ms, eff_rss, torch_rss, torch_heap,
                     compile_s))

    print()
    print("%-5s %10s %10s %7s  %10s %10s %10s %7s  %8s" %
          ("model", "effopt ms", "torch ms", "ratio", "effopt RSS", "torch RSS",
           "torch heap", "ratio", "compile"))
    for name, desc, e_ms, t_ms, e_rss, t_rss, t_heap, c in rows:
        mib = 1 << 20
        print("%-5s %10.3f %10.3f %7.2f  %9.1fM %9.1fM %9.1fM %7.2f  %7.1fs" %
              (name, e_ms, t_ms, e_ms / t_ms, e_rss / mib, t_rss / mib,
               t_heap / mib, e_rss / t_rss, c))
    for name, desc, *_ in rows:
        print("  %-5s %s" % (name, desc))


if __name__ == "__main__":
    main()
