#!/usr/bin/env python3
"""Checks effopt's optimizers, learning-rate schedules, gradient clipping and
weight-decay parameter groups against torch.optim and
torch.optim.lr_scheduler: a tiny MLP (Linear, LayerNorm, ReLU, Linear,
cross-entropy) is trained for several steps by effc + effrun and by PyTorch
1.13 from the same weights and data, once per configuration.

    optim_vs_torch.py --work DIR [--bin BUILD/bin] [--only REGEX] [-j N]

Compared: every step's loss, the final parameters, and the final optimizer
state (momentum buffers, exp_avg, exp_avg_sq, max_exp_avg_sq, step count)
against torch.optim's state. Prints one line per configuration and
`N passed, M failed`; exits 1 on any mismatch (rtol 1e-3, atol 1e-5).
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_vs_torch import read_safetensors, tool  # noqa: E402
from train_vs_torch import export as export_graph  # noqa: E402


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x, y):
        return F.cross_entropy(self.fc2(F.relu(self.norm(self.fc1(x)))), y)


def cfg(optimizer, lr, **kw):
    c = dict(optimizer=optimizer, lr=lr, momentum=0.0, dampening=0.0,
             nesterov=False, weight_decay=0.0, beta1=0.9, beta2=0.999,
             eps=1e-8, amsgrad=False, schedule="constant", warmup=0,
             total=0, min_lr=0.0, clip=0.0, no_decay="", torch_sched="lambda")
    c.update(kw)
    return c


# name -> configuration. torch_sched: "lambda" (LambdaLR with the formula of
# docs/Optimizer.md), or the torch scheduler the schedule equals.
CONFIGS = {
    "sgd_plain": cfg("sgd", 0.2),
    "sgd_plain_weight_decay": cfg("sgd", 0.2, weight_decay=0.05),
    "sgd_momentum_dampening": cfg("sgd", 0.1, momentum=0.9, dampening=0.3),
    "sgd_dampening_weight_decay": cfg("sgd", 0.1, momentum=0.8,
                                      dampening=0.5, weight_decay=0.02),
    "sgd_clip": cfg("sgd", 0.3, momentum=0.5, clip=0.2),
    "sgd_linear_warmup_torch_linearlr": cfg(
        "sgd", 0.2, momentum=0.9, schedule="linear_warmup", warmup=5,
        torch_sched="linear"),
    "sgd_cosine_min_lr_torch_cosineannealing": cfg(
        "sgd", 0.2, momentum=0.9, schedule="cosine", total=12, min_lr=0.02,
        torch_sched="cosine"),
    "sgd_nesterov_no_decay_group": cfg(
        "sgd", 0.1, momentum=0.9, nesterov=True, weight_decay=0.05,
        no_decay=r"bias|norm"),
    "adam_amsgrad": cfg("adam", 0.01, amsgrad=True, weight_decay=0.01),
    "adam_constant_betas_eps": cfg("adam", 0.02, beta1=0.8, beta2=0.95,
                                   eps=1e-6, schedule="constant"),
    "adam_clip_cosine": cfg("adam", 0.02, clip=0.5, schedule="cosine",
                            warmup=2, total=10),
    "adamw_amsgrad": cfg("adamw", 0.01, amsgrad=True, weight_decay=0.1),
    "adamw_amsgrad_warmup_clip": cfg("adamw", 0.01, amsgrad=True,
                                     weight_decay=0.05,
                                     schedule="linear_warmup", warmup=4,
                                     clip=0.3),
    # past total-steps the cosine stays at min-lr
    "adamw_warmup_cosine_min_lr": cfg("adamw", 0.01, weight_decay=0.1,
                                      schedule="cosine", warmup=3, total=9,
                                      min_lr=0.002),
    "adamw_no_decay_bias_norm": cfg("adamw", 0.01, weight_decay=0.5,
                                    no_decay=r"(bias|norm)"),
    "adamw_no_decay_amsgrad_cosine": cfg("adamw", 0.01, weight_decay=0.3,
                                         amsgrad=True, no_decay=r"^norm\.",
                                         schedule="cosine", total=12,
                                         min_lr=0.001),
}


def lr_factor(c):
    """eff.lr_schedule (docs/Optimizer.md) as a LambdaLR factor."""
    w, total, peak, floor = c["warmup"], c["total"], c["lr"], c["min_lr"]

    def factor(t):
        if c["schedule"] == "constant":
            return 1.0
        if t < w:
            return min(1.0, (t + 1) / w)
        if c["schedule"] == "linear_warmup":
            return 1.0
        p = min(1.0, (t - w) / max(1, total - w))
        return (floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * p))) / peak
    return factor


def train_torch(model, data, B, steps, c):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if c["no_decay"] and re.search(c["no_decay"], name)
         else decay).append(p)
    groups = [{"params": decay, "weight_decay": c["weight_decay"]}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    if c["optimizer"] == "sgd":
        opt = torch.optim.SGD(groups, lr=c["lr"], momentum=c["momentum"],
                              dampening=c["dampening"], nesterov=c["nesterov"])
    else:
        cls = torch.optim.AdamW if c["optimizer"] == "adamw" else torch.optim.Adam
        opt = cls(groups, lr=c["lr"], betas=(c["beta1"], c["beta2"]),
                  eps=c["eps"], amsgrad=c["amsgrad"])
    if c["torch_sched"] == "linear":
        sched = torch.optim.lr_scheduler.LinearLR(
            opt, start_factor=1.0 / c["warmup"], end_factor=1.0,
            total_iters=c["warmup"] - 1)
    elif c["torch_sched"] == "cosine":
        assert c["warmup"] == 0
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(
            opt, T_max=c["total"], eta_min=c["min_lr"])
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(c))
    losses = []
    for i in range(steps):
        x = torch.from_numpy(data["x"][i * B:(i + 1) * B])
        y = torch.from_numpy(data["y"][i * B:(i + 1) * B])
        opt.zero_grad()
        loss = model(x, y)
        loss.backward()
        if c["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c["clip"])
        opt.step()
        sched.step()
        losses.append(float(loss))
    state = {k: v.detach().numpy().copy()
             for k, v in model.state_dict().items()}
    slots = {"momentum_buffer": "momentum_buffer", "exp_avg": "exp_avg",
             "exp_avg_sq": "exp_avg_sq", "max_exp_avg_sq": "max_exp_avg_sq"}
    for name, p in model.named_parameters():
        for slot, value in opt.state[p].items():
            if slot in slots and torch.is_tensor(value):
                state["optimizer.%s.%s" % (name, slots[slot])] = \
                    value.detach().numpy().copy()
    state["optimizer.step"] = np.array(steps, np.int64)
    return losses, state


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        lines = (r.stderr or r.stdout).strip().splitlines()
        raise RuntimeError(lines[-1] if lines else "exit %d" % r.returncode)
    return r.stdout



def effc_flags(c):
    flags = ["--optimizer", c["optimizer"], "--lr", repr(c["lr"]),
             "--weight-decay", repr(c["weight_decay"]),
             "--schedule", c["schedule"],
             "--warmup-steps", str(c["warmup"]),
             "--total-steps", str(c["total"]),
             "--min-lr", repr(c["min_lr"])]
    if c["optimizer"] == "sgd":
        flags += ["--momentum", repr(c["momentum"]),
                  "--dampening", repr(c["dampening"])]
        if c["nesterov"]:
            flags.append("--nesterov")
    else:
        flags += ["--beta1", repr(c["beta1"]), "--beta2", repr(c["beta2"]),
                  "--eps", repr(c["eps"])]
        if c["amsgrad"]:
            flags.append("--amsgrad")
    if c["clip"] > 0:
        flags += ["--clip-grad-norm", repr(c["clip"])]
    if c["no_decay"]:
        flags += ["--no-weight-decay", c["no_decay"]]
    return flags


def prepare(args, name):
    """Exports the model and writes the data (in the main thread: neither
    torch's RNG nor torch.onnx.export is thread-safe)."""
    torch.manual_seed(args.seed)
    rng = np.random.RandomState(args.seed)
    B, steps = args.batch, args.steps
    model = TinyMLP()
    with torch.no_grad():  # non-trivial LayerNorm parameters
        model.norm.weight.add_(0.1 * torch.randn(32))
        model.norm.bias.add_(0.1 * torch.randn(32))
    data = {"x": rng.randn(steps * B, 16).astype(np.float32),
            "y": rng.randint(0, 8, size=steps * B).astype(np.int64)}
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "model.onnx")
    npz = os.path.join(work, "data.npz")
    export_graph(model, (torch.from_numpy(data["x"][:B]),
                         torch.from_numpy(data["y"][:B])), ["x", "y"],
                 onnx_path, output_names=["loss"])
    np.savez(npz, **data)
    return model, data, work


def train_effopt(args, work, c):
    """effc + effrun; None, or the error."""
    onnx_path = os.path.join(work, "model.onnx")
    npz = os.path.join(work, "data.npz")
    effx = os.path.join(work, "model.effx")
    try:
        run([tool(args, "effc"), onnx_path, "-o", effx] + effc_flags(c))
        run([tool(args, "effrun"), effx, "--data", npz, "--steps",
             str(args.steps), "--log", os.path.join(work, "loss.jsonl"),
             "--save", os.path.join(work, "final.safetensors"), "--quiet"])
    except RuntimeError as e:
        return str(e)
    return None


def compare(args, c, model, data, work):
    B, steps = args.batch, args.steps
    log = os.path.join(work, "loss.jsonl")
    ckpt = os.path.join(work, "final.safetensors")
    ours = [json.loads(line)["loss"] for line in open(log) if line.strip()]
    state = read_safetensors(ckpt)
    ref_losses, ref_state = train_torch(model, data, B, steps, c)

    problems = []
    worst_abs = worst_rel = 0.0
    if len(ours) != steps:
        problems.append("%d losses logged, expected %d" % (len(ours), steps))
    for i, (got, want) in enumerate(zip(ours, ref_losses)):
        err = abs(got - want)
        worst_abs = max(worst_abs, err)
        worst_rel = max(worst_rel, err / max(abs(want), 1e-30))
        if err > args.atol + args.rtol * abs(want):
            problems.append("step %d loss %.7g, torch %.7g" % (i, got, want))
    compared = 0
    for key, want in ref_state.items():
        if key not in state:
            problems.append("checkpoint misses %s" % key)
            continue
        compared += 1
        got = np.asarray(state[key]).astype(np.float64).reshape(want.shape)
        want = want.astype(np.float64)
        err = np.abs(got - want)
        worst_abs = max(worst_abs, float(err.max(initial=0)))
        big = np.abs(want) > 1e-3
        if big.any():
            worst_rel = max(worst_rel,
                            float((err[big] / np.abs(want[big])).max()))
        bad = err > args.atol + args.rtol * np.abs(want)
        if bad.any():
            problems.append("%s: %d of %d values differ (max abs err %.3g)" %
                            (key, int(bad.sum()), err.size, err.max()))
    # State effopt keeps that torch does not (or under another name).
    extra = sorted(k for k in state if k.startswith("optimizer.")
                   and k not in ref_state)
    if extra:
        problems.append("state torch does not have: " + ", ".join(extra))
    msg = "; ".join(problems) if problems else "%d tensors" % compared
    return not problems, msg, worst_abs, worst_rel


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", help="directory with effc and effrun")
    ap.add_argument("--only", help="regex of configuration names")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    names = [n for n in CONFIGS if not args.only or re.search(args.only, n)]
    prepared = {n: prepare(args, n) for n in names}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        errors = list(pool.map(
            lambda n: train_effopt(args, prepared[n][2], CONFIGS[n]), names))
    results = []
    for n, error in zip(names, errors):
        if error:
            results.append((False, error, 0.0, 0.0))
        else:
            model, data, work = prepared[n]
            results.append(compare(args, CONFIGS[n], model, data, work))
    passed = failed = 0
    for name, (ok, msg, abs_err, rel_err) in zip(names, results):
        print("%-42s %s  max abs err %.2e  max rel err %.2e  %s" %
              (name, "PASS" if ok else "FAIL", abs_err, rel_err, msg))
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
