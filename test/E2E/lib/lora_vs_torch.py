#!/usr/bin/env python3
"""LoRA fine-tuning with effc --lora + effrun against the same LoRA written
in PyTorch 1.13, from the same initial adapters and data.

    lora_vs_torch.py --model gpt --rank 4 --alpha 8 \\
        --targets 'c_attn|c_proj|mlp\\.[02]\\.weight' --bin BUILD/bin --work DIR

Checks, printing one line per check and "<model>: PASS" at the end:
  - the checkpoint names the adapters as peft does (<module>.lora_A.weight,
    <module>.lora_B.weight for every targeted weight, nothing else new);
  - the initial A lies in peft's kaiming_uniform_(a=sqrt(5)) range
    [-1/sqrt(in), 1/sqrt(in)] with a uniform's spread, B is zero;
  - per-step losses and the final adapters agree with PyTorch (AdamW on the
    adapters only; effopt's initial A loaded into torch);
  - every frozen tensor is bit-unchanged; no optimizer state but the
    adapters';
  - effrun --merge-lora writes W + (alpha/r) B A under the original names
    (computed here from the checkpoint and from torch's adapters), and
    those weights in a plain torch model give the LoRA model's loss.
Exits 1 when anything differs.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_vs_torch as tv  # noqa: E402


class LoraLinear(nn.Module):
    """peft's LoraLayer for nn.Linear (dropout 0): base(x) + B(A(x)) * s."""

    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base = base
        self.lora_A = nn.Linear(base.in_features, rank, bias=False)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False)
        self.scaling = alpha / rank

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling


def targeted_linears(model, regex):
    """{module name: nn.Linear} whose weight name the regex finds (searched,
    like effc --lora targets)."""
    return {name: m for name, m in model.named_modules()
            if isinstance(m, nn.Linear) and re.search(regex, name + ".weight")}


def wrap(model, names, rank, alpha):
    wrapped = {}
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        layer = LoraLinear(getattr(parent, child), rank, alpha)
        setattr(parent, child, layer)
        wrapped[name] = layer
    return wrapped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--alpha", type=float, default=8.0)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    failures = 0

    def check(ok, what):
        nonlocal failures
        failures += not ok
        print("%s: %s" % ("ok" if ok else "MISMATCH", what))

    model, B, data = tv.make(args.model, args.steps, 0)
    names = list(data)
    onnx_path = os.path.join(args.work, args.model + ".onnx")
    npz_path = os.path.join(args.work, args.model + ".npz")
    tv.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
              names, onnx_path)
    np.savez(npz_path, **data)
    initializers = {t.name: onnx.numpy_helper.to_array(t)
                    for t in onnx.load(onnx_path).graph.initializer}

    effx = os.path.join(args.work, "lora.effx")
    spec = "rank=%d,alpha=%r,targets=%s" % (args.rank, args.alpha, args.targets)
    tv.run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx,
            "--optimizer", "adamw", "--lr", repr(args.lr),
            "--weight-decay", repr(args.weight_decay), "--lora", spec,
            "--opt-level", "1"])
    init = os.path.join(args.work, "init.safetensors")
    tv.run([os.path.join(args.bin, "effrun"), effx, "--data", npz_path,
            "--steps", "0", "--save", init, "--quiet"])
    start = tv.read_safetensors(init)

    # peft's names, from the torch modules the regex targets.
    linears = targeted_linears(model, args.targets)
    want = sorted("%s.lora_%s.weight" % (n, ab) for n in linears for ab in "AB")
    have = sorted(k for k in start if k not in initializers
                  and not k.startswith("optimizer."))
    check(have == want and len(want) > 0,
          "adapter names %s" % (have if have != want else
                                "%d, as peft names them" % len(have)))

    # Initial A: kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)).
    for name, layer in linears.items():
        a, b = start[name + ".lora_A.weight"], start[name + ".lora_B.weight"]
        bound = 1.0 / math.sqrt(layer.in_features)
        spread = float(np.std(a.astype(np.float64))) / (bound / math.sqrt(3))
        ok = (a.shape == (args.rank, layer.in_features)
              and b.shape == (layer.out_features, args.rank)
              and float(np.abs(a).max()) <= bound
              and float(np.abs(a).max()) > 0.9 * bound
              and 0.85 < spread < 1.15 and not b.any())
        check(ok, "%s: A %s in [-%.4f, %.4f] (max %.4f, std/uniform's %.3f), "
              "B %s zero" % (name, a.shape, bound, bound,
                             float(np.abs(a).max()), spread, b.shape))

    # The same LoRA in torch, from effopt's initial adapters.
    wrapped = wrap(model, list(linears), args.rank, args.alpha)
    for p in model.parameters():
        p.requires_grad_(False)
    adapters = []
    for name, layer in wrapped.items():
        with torch.no_grad():
            layer.lora_A.weight.copy_(torch.from_numpy(start[name + ".lora_A.weight"].copy()))
            layer.lora_B.weight.copy_(torch.from_numpy(start[name + ".lora_B.weight"].copy()))
        for p in (layer.lora_A.weight, layer.lora_B.weight):
            p.requires_grad_(True)
            adapters.append(p)
    opt = torch.optim.AdamW(adapters, lr=args.lr, weight_decay=args.weight_decay)
    model.train()
    ref_losses = []
    for i in range(args.steps):
        batch = [torch.from_numpy(data[k][i * B:(i + 1) * B]) for k in names]
        opt.zero_grad()
        loss = model(*batch)[0]
        loss.backward()
        opt.step()
        ref_losses.append(float(loss))

    log = os.path.join(args.work, "loss.jsonl")
    final = os.path.join(args.work, "final.safetensors")
    merged_path = os.path.join(args.work, "merged.safetensors")
    tv.run([os.path.join(args.bin, "effrun"), effx, "--data", npz_path,
            "--steps", str(args.steps), "--log", log, "--save", final,
            "--merge-lora", merged_path, "--quiet"])
    ours = [json.loads(line)["loss"] for line in open(log)]
    print("step  effopt        torch         rel.err")
    for i, (got, ref) in enumerate(zip(ours, ref_losses)):
        ok = abs(got - ref) <= args.atol + args.rtol * abs(ref)
        failures += not ok
        print("%4d  %-12.7g  %-12.7g  %.2e%s" % (
            i, got, ref, abs(got - ref) / max(abs(ref), 1e-30),
            "" if ok else "  MISMATCH"))
    check(len(ours) == args.steps, "%d steps logged" % len(ours))
    check(ref_losses[-1] < ref_losses[0], "the loss went down (%.4f -> %.4f)"
          % (ref_losses[0], ref_losses[-1]))

    state = tv.read_safetensors(final)
    worst = 0.0
    for name, layer in wrapped.items():
        for ab, p in (("A", layer.lora_A.weight), ("B", layer.lora_B.weight)):
            got = state["%s.lora_%s.weight" % (name, ab)].astype(np.float64)
            ref = p.detach().numpy().astype(np.float64)
            err = np.abs(got - ref)
            worst = max(worst, float(err.max()))
            ok = (err <= args.atol + args.rtol * np.abs(ref)).all()
            failures += not ok
            if not ok:
                print("MISMATCH: %s.lora_%s.weight max abs err %.3g" % (name, ab, err.max()))
    print("final adapters: max abs err %.3g" % worst)
    frozen_same = all(np.array_equal(state[k], v) for k, v in initializers.items()
                      if k in state)
    check(frozen_same and all(k in state for k in initializers
                              if initializers[k].dtype == np.float32),
          "frozen weights bit-unchanged (%d tensors)" % len(initializers))
    slots = sorted(k for k in state if k.startswith("optimizer.")
                   and k != "optimizer.step")
    check(all(k.split(".lora_")[0] != k for k in slots)
          and len(slots) == 2 * len(want),
          "optimizer state for the %d adapters only (%d tensors)"
          % (len(want), len(slots)))

    # Merged: W + (alpha/r) B A under the original names, nothing else.
    merged = tv.read_safetensors(merged_path)
    check(sorted(merged) == sorted(k for k in initializers
                                   if initializers[k].dtype == np.float32),
          "merged checkpoint holds exactly the model's parameters (%d)"
          % len(merged))
    s = args.alpha / args.rank
    worst = 0.0
    for name, layer in wrapped.items():
        w = initializers[name + ".weight"].astype(np.float64)
        a = state[name + ".lora_A.weight"].astype(np.float64)
        b = state[name + ".lora_B.weight"].astype(np.float64)
        ref = w + s * (b @ a)
        got = merged[name + ".weight"].astype(np.float64)
        worst = max(worst, float(np.abs(got - ref).max()))
        ta = layer.lora_A.weight.detach().numpy().astype(np.float64)
        tb = layer.lora_B.weight.detach().numpy().astype(np.float64)
        torch_ref = w + s * (tb @ ta)
        if not np.allclose(got, torch_ref, rtol=args.rtol, atol=args.atol):
            print("MISMATCH: merged %s.weight vs torch's W + s B A" % name)
            failures += 1
    check(worst <= 1e-7, "merged = W + (alpha/r) B A of the checkpoint "
          "(max abs err %.3g)" % worst)
    for k, v in initializers.items():
        if k in merged and not any(k == n + ".weight" for n in wrapped) \
                and not np.array_equal(merged[k], v):
            check(False, "merged %s unchanged" % k)

    # The merged weights as a plain torch model give the LoRA model's loss.
    plain, _, _ = tv.make(args.model, args.steps, 0)
    missing, unexpected = plain.load_state_dict(
        {k: torch.from_numpy(v.copy()) for k, v in merged.items()}, strict=False)
    missing = [k for k in missing if not k.endswith(".mask")
               and k != "head.weight"]  # tied to tok.weight
    batch = [torch.from_numpy(data[k][:B]) for k in names]
    with torch.no_grad():
        plain.train()
        want_loss = float(model(*batch)[0])
        got_loss = float(plain(*batch)[0])
    check(not missing and not unexpected
          and abs(got_loss - want_loss) <= 1e-5 + 1e-4 * abs(want_loss),
          "plain model with the merged weights: loss %.6f, LoRA model %.6f"
          % (got_loss, want_loss))

    print("%s: %s" % (args.model, "PASS" if failures == 0 else
                      "FAIL (%d mismatches)" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
