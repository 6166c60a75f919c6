#!/usr/bin/env python3
"""Convolutions on the CPU: effopt's im2col + GEMM lowering against
`--convolution library` (oneDNN calls) and PyTorch 1.13 eager (which runs
its convolutions through oneDNN too), same threads, measured in one run.

    /usr/bin/python3 bench/conv.py [--bin build/bin] [--threads 2]
        [--steps 20] [--only conv,models] [--models resnet18,squeezenet,...]

Two tables:
- single convolutions (ResNet-18's 3x3 and 1x1 shapes, a depthwise one):
  a training step of `loss = mean(conv(x * s)^2)` with a per-channel
  parameter `s`, so the step runs the forward, the input gradient and the
  filter gradient of the convolution (plus a few elementwise passes);
- torchvision models (test/E2E/lib/zoo_vision.py's sizes) with SGD.
Times are the fastest step of effrun's log (--steps, the first 3 dropped)
and of PyTorch's loop over the same batches: on a shared machine the
fastest step is the one least disturbed by other work (medians moved by 2x
from run to run on the 2-core build machine). The ratio is effopt / PyTorch
(below 1.0 is faster). `uptime` is printed before and after.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "test", "E2E", "lib"))

# name: (N, C, H, F, K, stride, padding, groups)
CONVS = {
    "resnet18 3x3 64->64 16x16": (8, 64, 16, 64, 3, 1, 1, 1),
    "resnet18 1x1 s2 64->128 16x16": (8, 64, 16, 128, 1, 2, 0, 1),
    "resnet18 3x3 256->256 4x4": (8, 256, 4, 256, 3, 1, 1, 1),
    "depthwise 3x3 96ch 16x16": (8, 96, 16, 96, 3, 1, 1, 96),
}

TORCH_CHILD = r'''
import json, sys, time, statistics
import numpy as np, torch
spec = json.loads(sys.argv[1])
torch.set_num_threads(spec["threads"])
sys.path.insert(0, spec["bench"])
import conv  # noqa: F401 (the single-convolution models' class)
model = torch.load(spec["model"])
data = np.load(spec["data"])
B = spec["batch"]
opt = torch.optim.SGD(model.parameters(), lr=spec["lr"])
model.train()
times = []
for i in range(spec["steps"]):
    batch = [torch.from_numpy(data[k][i * B:(i + 1) * B]) for k in spec["inputs"]]
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    out = model(*batch)
    loss = out[0] if isinstance(out, tuple) else out
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
print(json.dumps({"min_ms": 1000 * min(times[3:])}))
'''


class Step(torch.nn.Module):
    """loss = mean(conv(x * s)^2): the step runs the convolution's forward,
    input gradient and filter gradient."""

    def __init__(self, C, F, K, stride, padding, groups):
        super().__init__()
        self.s = torch.nn.Parameter(torch.ones(1, C, 1, 1))
        self.conv = torch.nn.Conv2d(C, F, K, stride=stride, padding=padding,
                                    groups=groups)

    def forward(self, x):
        return (self.conv(x * self.s) ** 2).mean()


def conv_case(N, C, H, F, K, stride, padding, groups, steps):
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    data = {"x": rng.randn(steps * N, C, H, H).astype(np.float32)}
    return Step(C, F, K, stride, padding, groups), N, data, ("loss",)


def model_case(name, steps):
    import zoo_vision
    case = getattr(zoo_vision, name)()
    data = {}
    for i in range(steps):
        for k, v in case.batches(i).items():
            data.setdefault(k, []).append(v)
    return (case.model, case.batch_size,
            {k: np.concatenate(v) for k, v in data.items()},
            ("loss",) + tuple(case.extra_outputs))


def run_effopt(args, work, name, onnx_path, npz, convolution):
    effx = os.path.join(work, "%s-%s.effx" % (name, convolution))
    subprocess.run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx,
                    "--optimizer", "sgd", "--lr", "0.01",
                    "--convolution", convolution], check=True)
    log = os.path.join(work, "%s-%s.jsonl" % (name, convolution))
    subprocess.run([os.path.join(args.bin, "effrun"), effx, "--data", npz,
                    "--steps", str(args.steps), "--log", log, "--threads",
                    str(args.threads), "--quiet"], check=True)
    steps = [json.loads(l) for l in open(log)]
    return min(s["time_ms"] for s in steps[3:])


def measure(args, work, name, model, B, data, outputs):
    import train_vs_torch as t
    names = list(data)
    safe = "".join(c if c.isalnum() else "_" for c in name)
    onnx_path = os.path.join(work, safe + ".onnx")
    npz = os.path.join(work, safe + ".npz")
    t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
             names, onnx_path, output_names=outputs)
    np.savez(npz, **data)
    model_path = os.path.join(work, safe + ".pt")
    torch.save(model, model_path)
    im2col = run_effopt(args, work, safe, onnx_path, npz, "im2col")
    library = run_effopt(args, work, safe, onnx_path, npz, "library")
    spec = {"bench": HERE, "model": model_path, "data": npz, "inputs": names, "batch": B,
            "steps": args.steps, "threads": args.threads, "lr": 0.01}
    out = subprocess.run([sys.executable, "-c", TORCH_CHILD, json.dumps(spec)],
                         check=True, capture_output=True, text=True).stdout
    torch_ms = json.loads(out.strip().splitlines()[-1])["min_ms"]
    print("%-32s %9.2f %9.2f %9.2f %8.2f %8.2f" %
          (name, im2col, library, torch_ms, im2col / torch_ms,
           library / torch_ms), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--only", default="conv,models")
    ap.add_argument("--models", default="resnet18,squeezenet,mobilenet_v2")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="effopt-conv-bench-")
    print("threads %d, steps %d (fastest of the last %d); %s" %
          (args.threads, args.steps, args.steps - 3,
           subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()))
    header = "%-32s %9s %9s %9s %8s %8s" % ("step of", "im2col ms", "oneDNN ms",
                                          "torch ms", "im2col/t", "oneDNN/t")
    if "conv" in args.only:
        print("\nsingle convolutions (forward + input and filter gradients)")
        print(header)
        for name, shape in CONVS.items():
            measure(args, work, name, *conv_case(*shape, steps=args.steps))
    if "models" in args.only:
        print("\ntorchvision models (zoo_vision sizes), SGD")
        print(header)
        for name in args.models.split(","):
            measure(args, work, name, *model_case(name, args.steps))
    print("\n" + subprocess.run(["uptime"], capture_output=True,
                                text=True).stdout.strip())


if __name__ == "__main__":
    # Pickled models name their class conv.Step, which the PyTorch child
    # imports from this file.
    sys.modules["conv"] = sys.modules["__main__"]
    Step.__module__ = "conv"
    main()
