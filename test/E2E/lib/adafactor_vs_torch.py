#!/usr/bin/env python3
"""Checks effopt's `--optimizer adafactor` against torch.optim.Adafactor.

    adafactor_vs_torch.py --work DIR [--bin BUILD/bin] [--only REGEX]
    adafactor_vs_torch.py --gpt --work DIR [--bin BUILD/bin] [--steps N]

PyTorch 1.13 (the reference here) predates torch.optim.Adafactor (2.5), so
`TorchAdafactor` below transcribes its single-tensor algorithm as an
optimizer of 1.13: the step t counts from 1, beta2_t weight t^beta2_decay,
rho_t = min(lr, 1/sqrt(t)), alpha = max(eps2, RMS(param)) * rho_t taken
before the decoupled weight decay param *= 1 - lr * wd, a row and a column
factor of the second moment over the last two dimensions for tensors of rank
>= 2 (a full one for vectors and scalars), eps1 (None: finfo(dtype).eps)
floors the mean row factor and, squared, the variance estimate, and the update
is clipped to RMS d. The learning rate is the scheduled one (LambdaLR).

Default mode: a small net with a 4-D convolution weight, matrices, vectors
and a scalar parameter is trained by effc + effrun and by PyTorch from the
same weights and data, once per configuration; every step's loss, the final
parameters and every optimizer slot (row_var, col_var, variance, step) are
compared, and half the steps, --save, --resume and the rest must equal the
straight run bit for bit. Prints one line per configuration and
`N passed, M failed`.

--gpt: the small GPT of examples/ trained by effopt with Adafactor (its
default lr) and with AdamW, and by the PyTorch transcription; prints the
losses, checks Adafactor's losses against PyTorch's, that they decrease, and
that they stay within --band of AdamW's.
"""
import argparse
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
from train_vs_torch import export, make, read_safetensors, tool  # noqa: E402


class TorchAdafactor(torch.optim.Optimizer):
    """torch.optim.Adafactor (PyTorch >= 2.5, foreach=False, maximize=False)
    for PyTorch 1.13; the same state names and shapes."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3),
                 d=1.0, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay,
                                      eps=eps, d=d, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, wd, d = group["lr"], group["weight_decay"], group["d"]
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    if g.dim() > 1:
                        state["row_var"] = g.new_zeros(g.shape[:-1] + (1,))
                        state["col_var"] = g.new_zeros(
                            g.shape[:-2] + (1,) + g.shape[-1:])
                    else:
                        state["variance"] = torch.zeros_like(g)
                e1 = torch.finfo(p.dtype).eps if eps1 is None else eps1
                state["step"] += 1
                t = state["step"].item()
                w = t ** group["beta2_decay"]
                rho = min(lr, 1 / t ** 0.5)
                alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if g.dim() > 1:
                    row, col = state["row_var"], state["col_var"]
                    # the mean of g^2 over a dimension, as torch computes it
                    for factor, dim in ((row, -1), (col, -2)):
                        mean = torch.linalg.vector_norm(g, dim=dim, keepdim=True)
                        factor.lerp_(mean.square_().div_(g.size(dim)), w)
                    v = row @ col
                    v.div_(row.mean(dim=-2, keepdim=True).clamp_(min=e1))
                else:
                    state["variance"].lerp_(g * g, w)
                    v = state["variance"].clone()
                u = v.clamp_(min=e1 * e1).rsqrt_().mul_(g)
                denom = max(1.0, u.norm(2).item() / (u.numel() ** 0.5 * d))
                p.add_(u, alpha=-alpha / denom)


class SmallNet(nn.Module):
    """Conv (4-D weight) -> ReLU -> Linear -> LayerNorm -> ReLU -> Linear,
    logits times a learned scalar (a rank-0 parameter)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.fc1 = nn.Linear(4 * 4 * 4, 24)
        self.norm = nn.LayerNorm(24)
        self.fc2 = nn.Linear(24, 8)
        self.scale = nn.Parameter(torch.tensor(1.5))

    def forward(self, x, y):
        h = F.relu(self.conv(x)).flatten(1)
        h = F.relu(self.norm(self.fc1(h)))
        return F.cross_entropy(self.fc2(h) * self.scale, y)


def cfg(**kw):
    """torch.optim.Adafactor's defaults; lr None: effc's default (1e-2)."""
    c = dict(lr=None, weight_decay=0.0, beta2_decay=-0.8, eps1=None,
             eps2=1e-3, d=1.0, schedule="constant", warmup=0, total=0,
             min_lr=0.0, clip=0.0, no_decay="", accum=1, loss_scale=None,
             precision="fp32", tol=None)
    c.update(kw)
    return c


CONFIGS = {
    # Only --optimizer adafactor: every default, lr included.
    "defaults": cfg(),
    "weight_decay_warmup_cosine": cfg(lr=0.05, weight_decay=0.1,
                                      schedule="cosine", warmup=3, total=12,
                                      min_lr=0.005),
    # lr above 1/sqrt(t) from t = 7 on: rho_t switches to 1/sqrt(t).
    "rho_cap_eps_d_beta2_decay_no_decay": cfg(
        lr=0.4, beta2_decay=-0.5, eps1=1e-6, eps2=1e-2, d=1.5,
        weight_decay=0.05, no_decay=r"bias|norm|scale"),
    # Global-norm clipping and 2 micro-batches per step (the averaged
    # gradient of 2B rows), with linear warmup.
    "clip_accum_warmup": cfg(lr=0.03, clip=0.5, accum=2,
                             schedule="linear_warmup", warmup=4),
    # fp16 with dynamic loss scaling from 2^19: the first steps overflow
    # fp16 and are skipped (parameters, factors, step counter and schedule
    # kept: checked bit for bit against the initial state) while the scale
    # halves; with warmup, so a schedule that advanced on a skipped step
    # would show. fp16 GEMM operands: compared at rtol 2e-2 / atol 5e-3.
    "fp16_loss_scale_skips_warmup": cfg(lr=0.05, weight_decay=0.1,
                                        precision="fp16",
                                        loss_scale=2.0 ** 19,
                                        schedule="linear_warmup", warmup=4,
                                        tol=(2e-2, 5e-3)),
}


def lr_factor(c, lr):
    """eff.lr_schedule (docs/Optimizer.md) as a LambdaLR factor."""
    w, total, floor = c["warmup"], c["total"], c["min_lr"]

    def factor(t):
        if c["schedule"] == "constant":
            return 1.0
        if t < w:
            return min(1.0, (t + 1) / w)
        if c["schedule"] == "linear_warmup":
            return 1.0
        p = min(1.0, (t - w) / max(1, total - w))
        return (floor + 0.5 * (lr - floor) * (1 + math.cos(math.pi * p))) / lr
    return factor


def effc_flags(c):
    flags = ["--optimizer", "adafactor"]
    if c["lr"] is not None:
        flags += ["--lr", repr(c["lr"])]
    if c["weight_decay"]:
        flags += ["--weight-decay", repr(c["weight_decay"])]
    if c["beta2_decay"] != -0.8:
        flags += ["--beta2-decay", repr(c["beta2_decay"])]
    if c["eps1"] is not None:
        flags += ["--eps1", repr(c["eps1"])]
    if c["eps2"] != 1e-3:
        flags += ["--eps2", repr(c["eps2"])]
    if c["d"] != 1.0:
        flags += ["--clip-threshold", repr(c["d"])]
    if c["schedule"] != "constant":
        flags += ["--schedule", c["schedule"], "--warmup-steps",
                  str(c["warmup"]), "--total-steps", str(c["total"]),
                  "--min-lr", repr(c["min_lr"])]
    if c["clip"]:
        flags += ["--clip-grad-norm", repr(c["clip"])]
    if c["no_decay"]:
        flags += ["--no-weight-decay", c["no_decay"]]
    if c["accum"] != 1:
        flags += ["--accum", str(c["accum"])]
    if c["precision"] != "fp32":
        flags += ["--precision", c["precision"]]
    if c["loss_scale"]:
        flags += ["--loss-scale", "dynamic", "--loss-scale-init",
                  repr(c["loss_scale"])]
    return flags


def torch_optimizer(model, c):
    lr = 1e-2 if c["lr"] is None else c["lr"]
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if c["no_decay"] and re.search(c["no_decay"], name)
         else decay).append(p)
    groups = [{"params": decay, "weight_decay": c["weight_decay"]}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    opt = TorchAdafactor(groups, lr=lr, beta2_decay=c["beta2_decay"],
                         eps=(c["eps1"], c["eps2"]), d=c["d"])
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(c, lr))


def train_torch(model, data, rows, steps, c, skipped=()):
    """PyTorch's run. Steps in `skipped` (where effopt's loss scaling found
    the scaled gradients overflowing; whether S * g overflows depends on how
    each implementation sums, f32 or f64) take no optimizer or scheduler
    step and halve the loss scale, as torch.cuda.amp.GradScaler does; the
    others scale by a power of two and back, which fp32 does exactly."""
    names = list(data)
    opt, sched = torch_optimizer(model, c)
    scale = c["loss_scale"]
    losses = []
    taken = 0
    for i in range(steps):
        batch = [torch.from_numpy(data[k][i * rows:(i + 1) * rows])
                 for k in names]
        opt.zero_grad()
        out = model(*batch)
        loss = out[0] if isinstance(out, tuple) else out
        losses.append(float(loss))
        loss.backward()
        if i in skipped:
            scale *= 0.5
            continue
        if c["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c["clip"])
        opt.step()
        sched.step()
        taken += 1
    state, seen = {}, set()
    for k, v in model.state_dict(keep_vars=True).items():
        if v.data_ptr() in seen:
            continue  # tied weights: under the first name, as in ONNX
        seen.add(v.data_ptr())
        state[k] = v.detach().numpy().copy()
    for name, p in model.named_parameters():
        for slot, value in opt.state[p].items():
            if slot != "step":
                state["optimizer.%s.%s" % (name, slot)] = value.numpy().copy()
    state["optimizer.step"] = np.array(taken, np.int64)
    if scale:
        state["loss_scale.scale"] = np.array(np.float32(c["loss_scale"]) *
                                             np.float32(0.5) ** len(skipped),
                                             np.float32)
        state["loss_scale.skipped_steps"] = np.array(steps - taken, np.int64)
    return losses, state


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        lines = (r.stderr or r.stdout).strip().splitlines()
        raise RuntimeError(lines[-1] if lines else "exit %d" % r.returncode)
    return r.stdout


def train_effopt(args, work, onnx_path, npz, flags, steps):
    """effc + effrun: (losses, final state, the steps loss scaling
    skipped)."""
    effx = os.path.join(work, "model.effx")
    log = os.path.join(work, "loss.jsonl")
    ckpt = os.path.join(work, "final.safetensors")
    run([tool(args, "effc"), onnx_path, "-o", effx] + flags)
    run([tool(args, "effrun"), effx, "--data", npz, "--steps", str(steps),
         "--log", log, "--save", ckpt, "--quiet"])
    rows = [json.loads(line) for line in open(log) if line.strip()]
    skipped = {r["step"] for r in rows if r.get("step_skipped")}
    return [r["loss"] for r in rows], read_safetensors(ckpt), skipped


def compare(args, ours, state, ref_losses, ref_state, steps):
    """(ok, message, worst abs err, worst rel err): losses within
    --rtol/--atol, the final state within --state-rtol/--state-atol."""
    state_rtol = args.rtol if args.state_rtol is None else args.state_rtol
    state_atol = args.atol if args.state_atol is None else args.state_atol
    problems = []
    worst_abs = worst_rel = 0.0
    worst_key = ["loss"]
    if len(ours) != steps:
        problems.append("%d losses logged, expected %d" % (len(ours), steps))
    for i, (got, want) in enumerate(zip(ours, ref_losses)):
        err = abs(got - want)
        worst_abs = max(worst_abs, err)
        worst_rel = max(worst_rel, err / max(abs(want), 1e-30))
        if err > args.atol + args.rtol * abs(want):
            problems.append("step %d loss %.7g, torch %.7g" % (i, got, want))
    for key, want in ref_state.items():
        if key not in state:
            if key.endswith(".mask"):
                continue  # a constant buffer folded into the code
            problems.append("checkpoint misses %s" % key)
            continue
        got = np.asarray(state[key])
        if want.shape == () and got.shape == (1,):
            got = got.reshape(())  # the ONNX export makes a scalar [1]
        if got.shape != want.shape:
            problems.append("%s: shape %s, torch %s" %
                            (key, got.shape, want.shape))
            continue
        got, want = got.astype(np.float64), want.astype(np.float64)
        err = np.abs(got - want)
        worst_abs = max(worst_abs, float(err.max(initial=0)))
        big = np.abs(want) > 1e-3
        if big.any():
            worst_rel = max(worst_rel,
                            float((err[big] / np.abs(want[big])).max()))
        if err.size and err.max() >= worst_abs:
            worst_key[0] = key
        bad = err > state_atol + state_rtol * np.abs(want)
        if bad.any():
            problems.append("%s: %d of %d values differ (max abs err %.3g)" %
                            (key, int(bad.sum()), err.size, err.max()))
    extra = sorted(k for k in state if k.startswith("optimizer.")
                   and k not in ref_state)
    if extra:
        problems.append("state torch does not have: " + ", ".join(extra))
    msg = "; ".join(problems) if problems else (
        "%d tensors, largest abs err in %s" % (len(ref_state), worst_key[0]))
    return not problems, msg, worst_abs, worst_rel


def small_net_run(args, name, c):
    torch.manual_seed(args.seed)
    rng = np.random.RandomState(args.seed)
    B, steps, rows = args.batch, args.steps, args.batch * c["accum"]
    model = SmallNet()
    with torch.no_grad():  # non-trivial LayerNorm parameters
        model.norm.weight.add_(0.1 * torch.randn(24))
        model.norm.bias.add_(0.1 * torch.randn(24))
    data = {"x": rng.randn(steps * rows, 2, 4, 4).astype(np.float32),
            "y": rng.randint(0, 8, size=steps * rows).astype(np.int64)}
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "model.onnx")
    npz = os.path.join(work, "data.npz")
    export(model, (torch.from_numpy(data["x"][:B]),
                   torch.from_numpy(data["y"][:B])), ["x", "y"], onnx_path,
           output_names=["loss"])
    np.savez(npz, **data)
    try:
        ours, state, skipped = train_effopt(args, work, onnx_path, npz,
                                            effc_flags(c), steps)
    except RuntimeError as e:
        return False, str(e), 0.0, 0.0
    if c["loss_scale"]:
        problem = check_skips(args, work, npz, skipped)
        if problem:
            return False, problem, 0.0, 0.0
    elif skipped:
        return False, "steps skipped without loss scaling", 0.0, 0.0
    ref_losses, ref_state = train_torch(model, data, rows, steps, c, skipped)
    if c["tol"]:
        args = argparse.Namespace(**vars(args))
        args.rtol, args.atol = c["tol"]
        args.state_rtol = args.state_atol = None
    result = compare(args, ours, state, ref_losses, ref_state, steps)
    if name == "defaults":
        problem = check_report(args, work, onnx_path, c, ref_state)
        if problem:
            result = (False, result[1] + "; " + problem, result[2], result[3])
    if skipped:
        result = (result[0], "%d steps skipped; %s" % (len(skipped), result[1]),
                  result[2], result[3])
    resumed = check_resume(args, work, npz, ours, state, steps)
    if resumed:
        return False, result[1] + "; " + resumed, result[2], result[3]
    return result


def check_report(args, work, onnx_path, c, ref_state):
    """None when the memory report's optimizer state is torch's: the bytes
    of every row_var, col_var and variance (f32) and the i64 step counter;
    else what differs."""
    report = os.path.join(work, "report.json")
    try:
        run([tool(args, "effc"), onnx_path, "-o",
             os.path.join(work, "report.effx"), "--report-json", report]
            + effc_flags(c))
    except RuntimeError as e:
        return "report: " + str(e)
    got = json.load(open(report))["peak"]["by_category"]["optimizer state"]
    want = sum(v.nbytes for k, v in ref_state.items()
               if k.startswith("optimizer.") and k != "optimizer.step") + 8
    if got != want:
        return "report: optimizer state %d bytes, torch's %d" % (got, want)
    print("memory report: optimizer state %d bytes = torch's factored state"
          % got)
    return None


def check_skips(args, work, npz, skipped):
    """None when step 0 was skipped and the skipped steps from 0 on left
    every parameter and optimizer tensor bit-identical to the initial state
    (step counter 0), else what is wrong."""
    if 0 not in skipped:
        return "expected an fp16 overflow on step 0, skipped %s" % sorted(skipped)
    first = 0
    while first in skipped:
        first += 1
    effx = os.path.join(work, "model.effx")
    init = os.path.join(work, "init.safetensors")
    after = os.path.join(work, "skipped.safetensors")
    try:
        run([tool(args, "effrun"), effx, "--data", npz, "--steps", "0",
             "--save", init, "--quiet"])
        run([tool(args, "effrun"), effx, "--data", npz, "--steps", str(first),
             "--save", after, "--quiet"])
    except RuntimeError as e:
        return "skips: " + str(e)
    a, b = read_safetensors(init), read_safetensors(after)
    moved = sorted(k for k in a if not k.startswith("loss_scale.")
                   and a[k].tobytes() != b[k].tobytes())
    if moved:
        return "skipped steps changed " + ", ".join(moved)
    return None


def check_resume(args, work, npz, losses, state, steps):
    """None when `steps // 2` steps, --save, --resume and the rest equal the
    straight run bit for bit (losses and every tensor of the checkpoint),
    else what differs."""
    effx = os.path.join(work, "model.effx")
    log = os.path.join(work, "resume.jsonl")
    mid = os.path.join(work, "mid.safetensors")
    end = os.path.join(work, "resumed.safetensors")
    first = steps // 2
    if os.path.exists(log):
        os.remove(log)
    try:
        run([tool(args, "effrun"), effx, "--data", npz, "--steps", str(first),
             "--log", log, "--save", mid, "--quiet"])
        run([tool(args, "effrun"), effx, "--data", npz, "--steps",
             str(steps - first), "--resume", mid, "--log", log, "--save", end,
             "--quiet"])
    except RuntimeError as e:
        return "resume: " + str(e)
    again = [json.loads(line)["loss"] for line in open(log) if line.strip()]
    resumed = read_safetensors(end)
    if again != losses:
        return "resume: the losses differ from the straight run"
    differ = sorted(k for k in state
                    if k not in resumed or state[k].tobytes() != resumed[k].tobytes())
    if differ:
        return "resume: differs from the straight run in " + ", ".join(differ)
    return None


def gpt(args):
    """Adafactor on the small GPT: against PyTorch, decreasing, near AdamW."""
    steps = args.steps
    model, B, data = make("gpt", steps, args.seed)
    names = list(data)
    os.makedirs(args.work, exist_ok=True)
    onnx_path = os.path.join(args.work, "gpt.onnx")
    npz = os.path.join(args.work, "gpt.npz")
    export(model, tuple(torch.from_numpy(data[k][:B]) for k in names), names,
           onnx_path)
    np.savez(npz, **data)
    runs = {}
    ada_flags = ["--optimizer", "adafactor"]
    if args.adafactor_lr is not None:
        ada_flags += ["--lr", repr(args.adafactor_lr)]
    for opt, flags in (("adafactor", ada_flags),
                       ("adamw", ["--optimizer", "adamw", "--lr",
                                  repr(args.adamw_lr)])):
        work = os.path.join(args.work, opt)
        os.makedirs(work, exist_ok=True)
        runs[opt] = train_effopt(args, work, onnx_path, npz, flags, steps)[:2]
    ref_losses, ref_state = train_torch(model, data, B, steps,
                                        cfg(lr=args.adafactor_lr))
    ok, msg, abs_err, rel_err = compare(args, runs["adafactor"][0],
                                        runs["adafactor"][1], ref_losses,
                                        ref_state, steps)
    ada, adamw = runs["adafactor"][0], runs["adamw"][0]
    print("step  adafactor     torch         adamw")
    for i in range(steps):
        print("%4d  %-12.6f  %-12.6f  %-12.6f" %
              (i, ada[i], ref_losses[i], adamw[i]))
    print("adafactor vs torch: %s  max abs err %.2e  max rel err %.2e  %s" %
          ("PASS" if ok else "FAIL", abs_err, rel_err, msg))
    k = min(5, steps)
    first, last = np.mean(ada[:k]), np.mean(ada[-k:])
    last_adamw = np.mean(adamw[-k:])
    decreases = last < first - args.min_drop
    print("adafactor mean loss of the first %d steps %.4f, last %d %.4f: %s" %
          (k, first, k, last, "PASS" if decreases else "FAIL"))
    near = abs(last - last_adamw) <= args.band
    print("last %d steps: adafactor %.4f, adamw %.4f, |diff| %.4f <= %.2f: %s" %
          (k, last, last_adamw, abs(last - last_adamw), args.band,
           "PASS" if near else "FAIL"))
    sys.exit(0 if ok and decreases and near else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", help="directory with effc and effrun")
    ap.add_argument("--only", help="regex of configuration names")
    ap.add_argument("--gpt", action="store_true")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=2e-6)
    ap.add_argument("--state-rtol", type=float, default=None,
                    help="tolerance of the final state (default: --rtol)")
    ap.add_argument("--state-atol", type=float, default=None,
                    help="tolerance of the final state (default: --atol)")
    ap.add_argument("--adamw-lr", type=float, default=3e-3)
    ap.add_argument("--adafactor-lr", type=float, default=None,
                    help="--gpt: Adafactor's lr (default: its default, 1e-2)")
    ap.add_argument("--band", type=float, default=0.25,
                    help="--gpt: |Adafactor - AdamW| of the last losses")
    ap.add_argument("--min-drop", type=float, default=0.5,
                    help="--gpt: how much the mean loss must fall")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.gpt:
        return gpt(args)
    os.makedirs(args.work, exist_ok=True)
    passed = failed = 0
    for name, c in CONFIGS.items():
        if args.only and not re.search(args.only, name):
            continue
        ok, msg, abs_err, rel_err = small_net_run(args, name, c)
        print("%-40s %s  max abs err %.2e  max rel err %.2e  %s" %
              (name, "PASS" if ok else "FAIL", abs_err, rel_err, msg))
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
