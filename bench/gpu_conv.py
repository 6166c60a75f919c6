#!/usr/bin/env python3
"""Convolutions on the GPU: effopt's two lowerings on cuda -- cuDNN calls
(the default, `--convolution cudnn`) and im2col + cuBLASLt GEMMs
(`--convolution im2col`) -- against PyTorch's cuDNN, measured on
torchvision's ResNet-18 training step on the same GPU in one run.

Split like bench/gpu_vs_torch.py (docs/GpuSuite.md):

  gpu_conv.py prepare --out DIR --bin BUILD/bin [--batch 32] [--size 224]
                      [--target cuda|cpu] [--precision bf16|fp32]
                      [--convolutions cudnn,im2col]
      (here, PyTorch 1.13 + effc) exports ResNet-18 (1000 classes) with zero
      weights (zero state is not stored in an .effx, so it stays small) and
      compiles it with SGD (momentum 0.9) for that batch and image size, once
      per --convolution kind (on cuda; the CPU target's default otherwise).
  gpu_conv.py run --dir DIR --effrun PATH [--device-kind cuda|cpu]
                  [--steps 10] [--warmup 3] [--out OUT]
      (there, PyTorch 2.x) draws random images and labels, runs effrun on
      them, and the same model in PyTorch from zeros too (autocast in the
      same precision, cudnn.benchmark, the faster of NCHW and channels_last:
      PyTorch's best eager configuration for convolutions); prints ms/step,
      images/s and memory of both and writes gpu_conv.json.

Zero weights make every step's numbers the same kind of work as trained
weights (GEMM and convolution speed do not depend on the values); the
losses are not compared (the GPU suite's CNN checks the numerics).
Exit 0 measured, 1 something failed, 3 no GPU (UNSUPPORTED).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def model_and_loss(torch, torchvision):
    class WithLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = torchvision.models.resnet18(num_classes=1000)

        def forward(self, x, y):
            return torch.nn.functional.cross_entropy(self.model(x), y)

    return WithLoss()


def prepare(args):
    import torch
    import torchvision
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    model = model_and_loss(torch, torchvision)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    B, S = args.batch, args.size
    x = torch.zeros(B, 3, S, S)
    y = torch.zeros(B, dtype=torch.long)
    onnx_path = os.path.join(out, "resnet18.onnx")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x, y), onnx_path,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17,
                          input_names=["x", "y"], output_names=["loss"])
    kinds = ([k for k in args.convolutions.split(",") if k]
             if args.target == "cuda" else [""])
    variants = []
    for kind in kinds:
        t1 = time.time()
        effx = "resnet18.b%d.s%d%s.effx" % (B, S, "." + kind if kind else "")
        report = "resnet18%s.report.json" % ("." + kind if kind else "")
        cmd = [os.path.join(args.bin, "effc"), onnx_path, "-o",
               os.path.join(out, effx), "--target", args.target,
               "--precision", args.precision, "--optimizer", "sgd",
               "--lr", "0.1", "--momentum", "0.9",
               "--report-json", os.path.join(out, report)]
        if kind:
            cmd += ["--convolution", kind]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode != 0:
            msg = (r.stderr.strip() or r.stdout.strip() or "no output")
            print("FAILED effc: %s" % msg.splitlines()[-1][:300])
            return 1
        planned = json.load(open(os.path.join(out, report)))["total_bytes"]
        variants.append(dict(convolution=kind, effx=effx, planned=planned))
        print("compiled %s: %.1f MB, planned %.2f GiB (%.0f s)" % (
            effx, os.path.getsize(os.path.join(out, effx)) / 1e6,
            planned / 2**30, time.time() - t1), flush=True)
    os.remove(onnx_path)   # the .effx files hold the step
    json.dump(dict(batch=B, size=S, precision=args.precision,
                   target=args.target, variants=variants,
                   torch=torch.__version__),
              open(os.path.join(out, "conv.json"), "w"), indent=1)
    print("prepared in %.0f s" % (time.time() - t0))
    return 0


def torch_step_ms(torch, torchvision, device, data, B, steps, warmup,
                  precision, channels_last):
    """PyTorch's median step (ms) and peak bytes on the same batches."""
    model = model_and_loss(torch, torchvision).to(device)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    times = []
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for i in range(warmup + steps):
        x = torch.from_numpy(data["x"][i * B:(i + 1) * B]).to(device)
        x = x.contiguous(memory_format=fmt)
        y = torch.from_numpy(data["y"][i * B:(i + 1) * B]).to(device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        if dtype is not None:
            with torch.autocast(device.type, dtype=dtype):
                loss = model(x, y)
        else:
            loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    peak = torch.cuda.max_memory_allocated() if device.type == "cuda" else None
    del model, opt
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return statistics.median(times[warmup:]), peak


def run(args):
    out = args.out or os.environ.get("OUT") or os.path.join(args.dir, "out")
    os.makedirs(out, exist_ok=True)
    lines = []

    def say(msg):
        print(msg, flush=True)
        lines.append(msg)
    result = dict(status="FAIL")

    def finish(status):
        result["status"] = status
        json.dump(result, open(os.path.join(out, "gpu_conv.json"), "w"),
                  indent=1)
        say("gpu_conv: %s" % status)
        return {"PASS": 0, "UNSUPPORTED": 3}.get(status, 1)

    try:
        import torch
        import torchvision
    except ImportError as e:
        say("UNSUPPORTED conv: %s" % e)
        return finish("UNSUPPORTED")
    conf = json.load(open(os.path.join(args.dir, "conv.json")))
    if args.device_kind == "cuda":
        if not torch.cuda.is_available():
            say("UNSUPPORTED conv: no CUDA GPU visible to PyTorch")
            return finish("UNSUPPORTED")
        device = torch.device("cuda:0")
        torch.backends.cudnn.benchmark = True
        result["device"] = torch.cuda.get_device_name()
    else:
        device = torch.device("cpu")
        result["device"] = "cpu (dry run)"
    B, S, steps, warmup = conf["batch"], conf["size"], args.steps, args.warmup
    say("conv: ResNet-18 training step, batch %d x 3 x %d x %d, %s, SGD, on "
        "%s, torch %s" % (B, S, S, conf["precision"], result["device"],
                          torch.__version__))
    rng = np.random.RandomState(0)
    n = (warmup + steps) * B
    data = {"x": rng.standard_normal((n, 3, S, S)).astype(np.float32),
            "y": rng.randint(0, 1000, size=n).astype(np.int64)}
    work = os.path.join(args.dir, "work-conv")
    os.makedirs(work, exist_ok=True)
    npz = os.path.join(work, "images.npz")
    np.savez(npz, **data)
    on_gpu = device.type == "cuda"
    labels = {"cudnn": "effopt (cuDNN)",
              "im2col": "effopt (im2col + cuBLASLt)"}
    effopt_rows = {}
    failed = False
    for v in conf["variants"]:
        label = labels.get(v["convolution"], "effopt") if on_gpu else "effopt"
        log = os.path.join(work, "effrun%s.jsonl" % v["convolution"])
        if os.path.exists(log):
            os.remove(log)
        cmd = [args.effrun, os.path.join(args.dir, v["effx"]), "--data", npz,
               "--steps", str(warmup + steps), "--log", log, "--quiet"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode != 0:
            say("FAIL %s: effrun exit %d: %s" % (
                label, r.returncode,
                (r.stderr.strip() or "no output").splitlines()[-1]))
            failed = True
            continue
        rows = [json.loads(line) for line in open(log)]
        effopt_rows[label] = dict(
            ms=statistics.median(row["time_ms"] for row in rows[warmup:]),
            planned=v["planned"], device=rows[0].get("device_bytes"),
            losses=[row["loss"] for row in rows])
    result["effopt"] = effopt_rows
    torch_rows = {}
    for layout in ("NCHW", "channels_last"):
        t_ms, peak = torch_step_ms(torch, torchvision, device, data, B, steps,
                                   warmup, conf["precision"],
                                   layout == "channels_last")
        torch_rows[layout] = dict(ms=t_ms, peak=peak)
    result["torch"] = torch_rows
    best = min(torch_rows, key=lambda k: torch_rows[k]["ms"])
    say("%-32s %9s %10s %10s" % ("system", "ms/step", "images/s", "GiB"))
    gib = (lambda b: "-" if b is None else "%.2f" % (b / 2**30))
    for label, row in effopt_rows.items():
        say("%-32s %9.2f %10.0f %10s  (planned %s)" % (
            label, row["ms"], B / row["ms"] * 1e3, gib(row["device"]),
            gib(row["planned"])))
    for layout, row in torch_rows.items():
        say("%-32s %9.2f %10.0f %10s  (max_memory_allocated)" % (
            "torch eager %s%s" % ("cuDNN " if on_gpu else "", layout),
            row["ms"], B / row["ms"] * 1e3,
            gib(row["peak"])))
    result["ratio_ms_vs_torch"] = {}
    for label, row in effopt_rows.items():
        ratio = row["ms"] / torch_rows[best]["ms"]
        result["ratio_ms_vs_torch"][label] = ratio
        say("%s / torch (%s): %.2fx the step time" % (label, best, ratio))
        if not all(np.isfinite(row["losses"])):
            say("FAIL %s: a loss is not finite" % label)
            failed = True
    return finish("FAIL" if failed else "PASS")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--bin", required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--target", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--precision", default="bf16", choices=["bf16", "fp32"])
    p.add_argument("--convolutions", default="cudnn,im2col",
                   help="the --convolution kinds to compile on cuda")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--effrun", required=True)
    r.add_argument("--device-kind", default="cuda", choices=["cuda", "cpu"])
    r.add_argument("--steps", type=int, default=10)
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--out", default="")
    args = ap.parse_args()
    if args.cmd == "prepare":
        return prepare(args)
    if args.cmd == "run":
        return run(args)
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
