#!/usr/bin/env python3
"""CPU training benchmark: effopt (effc + effrun) against PyTorch 1.13 eager,
same models, batch, data and BLAS, measured in one run.

PyTorch runs at its fastest thread split: its intra-op (OpenMP) threads and
OpenBLAS's own pthread pool are two pools that fight on a small machine,
so every split of --splits (intra-op x BLAS threads, default {1,2}x{1,2}
for 2 threads) is timed per model and the fastest is compared; the table
prints the split used and PyTorch's time at threads x threads (the split
a plain torch.set_num_threads gives) beside it. effopt runs with
--threads (one OpenMP pool, OpenBLAS single-threaded inside it).

For every model prints the median step time of both and their ratio
(effopt / PyTorch, below 1.0 is better), the peak RSS of both processes and
its ratio, effc's compile time, and the geomean of the time ratios. With
--repeat N every measurement runs N times, the two sides interleaved, and
the minimum of the N medians counts (a shared machine's load only ever
adds time). Each side runs in its own process; peak RSS is the child's
ru_maxrss (PyTorch's includes the interpreter and torch itself, so the
"torch heap" column shows its growth after importing torch).

usage: /usr/bin/python3 bench/cpu_vs_torch.py [--bin build/bin] [--threads 2]
       [--steps 30] [--repeat 3] [--splits 1x1,1x2,2x1,2x2]
       [--models mlp,cnn,gpt,gpt6,bert,resnet18,vit] [--baseline-bin DIR]

--models takes model names and groups: default (the seven above),
torchvision (resnet18 and issue 18's torchvision CNNs: squeezenet,
mobilenet_v2, regnet_y_400mf, shufflenet_v2, efficientnet_b0, densenet121,
mnasnet, googlenet; 32x32, batch 16, SGD momentum) and all.
"""
import argparse
import json
import math
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
sys.path.insert(0, HERE)

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
    "bert": ("bert", ["--optimizer", "adamw", "--lr", "3e-4"],
             "BERT-style encoder (nn.TransformerEncoder, post-LN, GELU) "
             "4 layers d256 T128, batch 16, AdamW"),
    "resnet18": ("resnet18", ["--optimizer", "sgd", "--lr", "0.1",
                              "--momentum", "0.9"],
                 "torchvision ResNet-18, 32x32 images, batch 16, SGD momentum"),
    "vit": ("vit", ["--optimizer", "adamw", "--lr", "1e-3"],
            "torchvision ViT patch 4 on 32x32 (65 tokens), 4 layers d128, "
            "batch 32, AdamW"),
}
SGD = ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9"]
# Issue 18's torchvision CNNs (bench/cpu_models.TORCHVISION), trained like
# resnet18; opt-in (--models torchvision, or by name): a default run stays
# a few minutes.
TORCHVISION = {
    "squeezenet": "torchvision SqueezeNet 1.1",
    "mobilenet_v2": "torchvision MobileNet v2",
    "regnet_y_400mf": "torchvision RegNet-Y-400MF",
    "shufflenet_v2": "torchvision ShuffleNet v2 x1.0",
    "efficientnet_b0": "torchvision EfficientNet-B0",
    "densenet121": "torchvision DenseNet-121",
    "mnasnet": "torchvision MNASNet 1.0",
    "googlenet": "torchvision GoogLeNet (no aux heads)",
}
DEFAULT = list(MODELS)
for _name, _desc in TORCHVISION.items():
    MODELS[_name] = (_name, SGD, _desc + ", 32x32 images, batch 16, "
                     "SGD momentum")
GROUPS = {"default": DEFAULT, "torchvision": ["resnet18"] + list(TORCHVISION),
          "all": list(MODELS)}

TORCH_CHILD = r'''
import json, resource, sys, time, statistics
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import train_vs_torch as t
import cpu_models
spec = json.loads(sys.argv[3])
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


def timed(cmd, env=None):
    r = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M"] + cmd,
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit("FAILED: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    rss = [int(l.split()[1]) for l in r.stderr.splitlines() if l.startswith("MAXRSS")]
    return r.stdout, rss[-1] * 1024


def make_model(key, steps):
    import cpu_models
    import train_vs_torch as t
    made = cpu_models.make(key, steps, 0)
    return made if made is not None else t.make(key, steps, 0)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--splits", default=None,
                    help="PyTorch thread splits INTRAxBLAS,... (default: "
                         "{1,threads}x{1,threads})")
    ap.add_argument("--models", default="default",
                    help="names and groups (%s), comma-separated" %
                         ", ".join(GROUPS))
    ap.add_argument("--baseline-bin", default=None,
                    help="also time another build's effc/effrun (a 'before' "
                         "column), interleaved with the others")
    args = ap.parse_args()
    n = args.threads
    models = []
    for name in args.models.split(","):
        if name not in MODELS and name not in GROUPS:
            ap.error("unknown model '%s' (models: %s; groups: %s)" % (
                name, ", ".join(MODELS), ", ".join(GROUPS)))
        for m in GROUPS.get(name, [name]):
            if m not in models:
                models.append(m)
    if args.splits:
        splits = [tuple(int(v) for v in x.split("x"))
                  for x in args.splits.split(",")]
    else:
        splits = sorted({(i, b) for i in (1, n) for b in (1, n)})

    import numpy as np
    import torch
    import train_vs_torch as t

    work = tempfile.mkdtemp(prefix="effopt-bench-")
    effrun = os.path.join(args.bin, "effrun")
    print("threads: %d, steps: %d (median of the last %d), repeat: %d (min "
          "of the medians)" % (n, args.steps, args.steps - 3, args.repeat))
    print("BLAS: effrun -> %s; torch -> %s" %
          (blas_of(effrun), blas_of(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))))
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg())
    print("PyTorch splits (intra-op x OpenBLAS threads): %s" %
          ", ".join("%dx%d" % s for s in splits))
    rows = []
    for name in models:
        key, flags, desc = MODELS[name]
        model, B, data = make_model(key, args.steps)
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
        base_effx = os.path.join(work, name + ".baseline.effx")
        if args.baseline_bin:
            subprocess.run([os.path.join(args.baseline_bin, "effc"), onnx_path,
                            "-o", base_effx] + flags, check=True)

        eff_ms, eff_rss, base_ms = float("inf"), 0, float("nan")
        torch_ms = {s: float("inf") for s in splits}
        torch_rss = {}
        for _ in range(args.repeat):
            log = os.path.join(work, name + ".jsonl")
            _, eff_rss = timed([effrun, effx, "--data", npz, "--steps", str(args.steps),
                                "--log", log, "--threads", str(n), "--quiet"])
            steps = [json.loads(l) for l in open(log)]
            eff_ms = min(eff_ms, statistics.median(s["time_ms"] for s in steps[3:]))
            if args.baseline_bin:
                timed([os.path.join(args.baseline_bin, "effrun"), base_effx,
                       "--data", npz, "--steps", str(args.steps), "--log", log,
                       "--threads", str(n), "--quiet"])
                steps = [json.loads(l) for l in open(log)]
                ms = statistics.median(s["time_ms"] for s in steps[3:])
                base_ms = ms if math.isnan(base_ms) else min(base_ms, ms)

            for split in splits:
                spec = {"model": model_path, "data": npz, "inputs": names,
                        "batch": B, "steps": args.steps, "threads": split[0],
                        "sgd": "sgd" in flags,
                        "lr": float(flags[flags.index("--lr") + 1])}
                env = dict(os.environ, OPENBLAS_NUM_THREADS=str(split[1]),
                           OMP_NUM_THREADS=str(split[0]))
                out, rss = timed([sys.executable, "-c", TORCH_CHILD,
                                  os.path.join(SRC, "test", "E2E", "lib"), HERE,
                                  json.dumps(spec)], env)
                res = json.loads(out.strip().splitlines()[-1])
                torch_ms[split] = min(torch_ms[split], res["median_ms"])
                torch_rss[split] = (rss, rss - res["rss_base_kb"] * 1024)
        best = min(splits, key=lambda s: torch_ms[s])
        same = torch_ms.get((n, n), float("nan"))
        rows.append((name, desc, eff_ms, torch_ms[best], best, same, eff_rss,
                     torch_rss[best][0], torch_rss[best][1], compile_s, base_ms))
        print("  %s: effopt %.3f ms%s; torch %s; load %.2f" % (
            name, eff_ms, "" if math.isnan(base_ms) else
            " (baseline %.3f ms)" % base_ms, ", ".join("%dx%d %.3f" % (s + (torch_ms[s],))
                                    for s in splits), os.getloadavg()[0]),
              flush=True)

    print()
    print("%-15s %10s %10s %5s %7s %10s  %10s %10s %10s %7s  %8s" %
          ("model", "effopt ms", "torch ms", "split", "ratio", "torch %dx%d" % (n, n),
           "effopt RSS", "torch RSS", "torch heap", "ratio", "compile"))
    for name, desc, e_ms, t_ms, split, same, e_rss, t_rss, t_heap, c, _ in rows:
        mib = 1 << 20
        print("%-15s %10.3f %10.3f %5s %7.2f %10.3f  %9.1fM %9.1fM %9.1fM %7.2f  %7.1fs" %
              (name, e_ms, t_ms, "%dx%d" % split, e_ms / t_ms, same,
               e_rss / mib, t_rss / mib, t_heap / mib, e_rss / t_rss, c))
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())
    print("geomean time ratio: %.2f" % geomean([r[2] / r[3] for r in rows]))
    if args.baseline_bin:
        print("baseline (%s): %s; geomean ratio %.2f" % (
            args.baseline_bin,
            ", ".join("%s %.3f ms (%.2f)" % (r[0], r[10], r[10] / r[3])
                      for r in rows),
            geomean([r[10] / r[3] for r in rows])))
    for name, desc, *_ in rows:
        print("  %-15s %s" % (name, desc))


if __name__ == "__main__":
    main()
