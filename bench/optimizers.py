#!/usr/bin/env python3
"""Bytes per parameter and step time of the memory-saving optimizers and
adapters (issue 17) on a 12-layer GPT, next to PyTorch 1.13's AdamW, in one
run on this machine.

For every configuration prints, per base-model parameter: the planned bytes of
parameters, gradients (at the peak) and optimizer state from effc's memory
report, the state bytes the runtime allocated (effrun's log), the median step
time and its ratio to effopt's fp32 AdamW. PyTorch's row counts the bytes of
its parameters, gradients and optimizer state tensors after a step.

usage: /usr/bin/python3 bench/optimizers.py [--bin build/bin] [--threads 2]
       [--steps 20] [--configs adamw,adamw8bit,adafactor,lora,qlora]
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

# The adapters go on every Linear of the blocks (attention and MLP), as
# peft's usual target_modules for GPT-2 (c_attn, c_proj, c_fc).
LORA_TARGETS = r"blocks\.[0-9]+\.(attn\.c_attn|attn\.c_proj|mlp\.[02])\.weight"
LORA = "rank=16,alpha=32,dropout=0,targets=" + LORA_TARGETS

CONFIGS = {
    "adamw": (["--optimizer", "adamw", "--lr", "1e-3"], "fp32 AdamW"),
    "adamw8bit": (["--optimizer", "adamw8bit", "--lr", "1e-3"],
                  "8-bit AdamW (block-wise, bitsandbytes' maps)"),
    "adafactor": (["--optimizer", "adafactor", "--lr", "1e-2"],
                  "Adafactor (torch.optim.Adafactor's definition)"),
    "lora": (["--optimizer", "adamw", "--lr", "1e-3", "--lora", LORA],
             "LoRA r=16 on every block Linear, AdamW"),
    "qlora": (["--optimizer", "adamw", "--lr", "1e-3", "--lora", LORA,
               "--quantize-frozen", "nf4"],
              "QLoRA: LoRA r=16 + NF4 frozen base weights"),
}

TORCH_CHILD = r'''
import json, sys, time, statistics
import numpy as np, torch
spec = json.loads(sys.argv[1])
sys.path.insert(0, spec["examples"])  # the pickled model's class
torch.set_num_threads(spec["threads"])
model = torch.load(spec["model"])
data = np.load(spec["data"])
B = spec["batch"]
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model.train()
times = []
for i in range(spec["steps"]):
    batch = [torch.from_numpy(data[k][i * B:(i + 1) * B]) for k in spec["inputs"]]
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = model(*batch)[0]
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
params = list(model.parameters())
state = sum(t.numel() * t.element_size() for s in opt.state.values()
            for t in s.values() if torch.is_tensor(t) and t.dim() > 0)
print(json.dumps({"median_ms": 1000 * statistics.median(times[3:]),
                  "parameters": sum(p.numel() * p.element_size() for p in params),
                  "gradients": sum(p.grad.numel() * p.grad.element_size() for p in params),
                  "optimizer_state": state}))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()

    import numpy as np
    import torch
    import train_vs_torch as t
    ex = t.ex

    work = tempfile.mkdtemp(prefix="effopt-bench-opt-")
    torch.manual_seed(0)
    B, T, width, heads = 8, 64, 256, 8
    model = ex.GPT(vocab=256, block_size=T, n_layer=args.layers,
                   d_model=width, n_head=heads, dropout=0.0)
    data = t.text_windows(np.random.RandomState(0), args.steps * B, T)
    names = list(data)
    onnx_path = os.path.join(work, "gpt.onnx")
    t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
             names, onnx_path)
    npz = os.path.join(work, "gpt.npz")
    np.savez(npz, **data)
    model_path = os.path.join(work, "gpt.pt")
    torch.save(model, model_path)
    n_params = sum(p.numel() for p in model.parameters())
    print("GPT %d layers d%d T%d batch %d: %.2fM parameters; threads %d, "
          "steps %d (median of the last %d)" %
          (args.layers, width, T, B, n_params / 1e6, args.threads, args.steps,
           args.steps - 3))

    rows = []
    for name in args.configs.split(","):
        flags, desc = CONFIGS[name]
        effx = os.path.join(work, name + ".effx")
        report = os.path.join(work, name + ".json")
        t0 = time.perf_counter()
        r = subprocess.run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx,
                            "--report-json", report] + flags,
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("%-10s effc failed: %s" % (name, (r.stderr or r.stdout).strip()))
            continue
        compile_s = time.perf_counter() - t0
        plan = json.load(open(report))
        persistent = {}
        for tensor in plan["tensors"]:
            persistent[tensor["category"]] = persistent.get(tensor["category"], 0) + tensor["bytes"]
        at_peak = plan["peak"]["by_category"]
        log = os.path.join(work, name + ".jsonl")
        subprocess.run([os.path.join(args.bin, "effrun"), effx, "--data", npz,
                        "--steps", str(args.steps), "--log", log,
                        "--threads", str(args.threads), "--quiet"], check=True)
        steps = [json.loads(l) for l in open(log)]
        ms = statistics.median(s["time_ms"] for s in steps[3:])
        rows.append((name, desc, persistent.get("parameters", 0),
                     at_peak.get("gradients", 0),
                     persistent.get("optimizer state", 0),
                     plan["total_bytes"], steps[-1]["allocated_bytes"], ms,
                     compile_s, steps[-1]["loss"]))

    spec = {"model": model_path, "data": npz, "inputs": names, "batch": B,
            "steps": args.steps, "threads": args.threads,
            "examples": os.path.join(SRC, "examples")}
    out = subprocess.run([sys.executable, "-c", TORCH_CHILD, json.dumps(spec)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("PyTorch run failed:\n" + out.stderr)
    out = out.stdout
    pt = json.loads(out.strip().splitlines()[-1])

    base_ms = next((r[7] for r in rows if r[0] == "adamw"), None)
    print()
    print("%-10s %8s %8s %8s %8s  %10s %10s  %9s %6s %8s %7s" %
          ("config", "params", "grads@pk", "opt st.", "sum", "planned", "allocated",
           "step ms", "/adamw", "compile", "loss"))
    per = lambda b: b / n_params
    for name, desc, p, g, s, total, alloc, ms, c, loss in rows:
        print("%-10s %8.3f %8.3f %8.3f %8.3f  %9.1fM %9.1fM  %9.2f %6s %7.1fs %7.3f" %
              (name, per(p), per(g), per(s), per(p + g + s), total / 2**20,
               alloc / 2**20, ms, "%.2f" % (ms / base_ms) if base_ms else "-", c, loss))
    print("%-10s %8.3f %8.3f %8.3f %8.3f  %10s %10s  %9.2f %6s" %
          ("torch", per(pt["parameters"]), per(pt["gradients"]),
           per(pt["optimizer_state"]),
           per(pt["parameters"] + pt["gradients"] + pt["optimizer_state"]), "-",
           "-", pt["median_ms"],
           "%.2f" % (pt["median_ms"] / base_ms) if base_ms else "-"))
    print("(bytes per base-model parameter; 'planned' is effc's total, "
          "'allocated' what effrun allocated)")
    for name, desc, *_ in rows:
        print("  %-10s %s" % (name, desc))
    print("  %-10s PyTorch 1.13 eager, torch.optim.AdamW" % "torch")


if __name__ == "__main__":
    main()
