#!/usr/bin/env python3
"""Checks effopt's block-wise 8-bit Adam/AdamW (--optimizer adamw8bit /
adam8bit) against the published algorithm written here in PyTorch:
bitsandbytes' blockwise 8-bit Adam (Dettmers et al. 2021) as its CPU backend
states it -- dynamic maps (`create_dynamic_map`), blocks of 256 with one
absmax each, dequantize, fp32 Adam/AdamW update, requantize to the nearest
code (`torch.bucketize` over the code midpoints), tensors under 4096
elements in fp32 Adam.

    adam8bit_vs_torch.py --work DIR [--bin BUILD/bin] [--steps N]

Checks, each printing one line and PASS/FAIL:
  map       the maps in the lowered step (effopt-opt) against
            create_dynamic_map(signed=True/False) (a few ulp: torch's f32
            linspace rounds differently per CPU vector width);
  mlp-*     a small MLP (64x128 and 70x64 weights: full blocks and a
            shorter last block; biases stay fp32) trained N steps by effc +
            effrun and by the reference from the same weights and data:
            codes equal or one apart (rounding ties), absmax and parameters
            within the stated tolerances, every optimizer slot present;
  resume    N/2 steps, --save, --resume N/2 more: the checkpoint equals the
            straight run's bit for bit;
  skip      fp16 loss scaling with every step overflowing: the skipped steps
            leave the codes, absmax, parameters and step counter unchanged;
  gpt       adamw8bit on the small example GPT tracks torch.optim.AdamW;
  memory    the report's optimizer-state bytes are the codes (1 byte per
            element) + absmax (4 per block) + fp32 moments of the small
            tensors, and the report's allocated bytes are what effrun
            allocates.
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
from train_vs_torch import export as export_graph  # noqa: E402
from train_vs_torch import make as make_model  # noqa: E402
from train_vs_torch import read_safetensors as read_tensors  # noqa: E402
from train_vs_torch import tool  # noqa: E402

BLOCK = 256
MIN_8BIT = 4096


def create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8):
    """bitsandbytes.functional.create_dynamic_map, as published."""
    data = []
    non_sign_bits = total_bits - 1
    additional_items = 2 ** (non_sign_bits - max_exponent_bits) - 1
    for i in range(max_exponent_bits):
        fraction_items = int(
            2 ** (i + non_sign_bits - max_exponent_bits) + 1 if signed
            else 2 ** (i + non_sign_bits - max_exponent_bits + 1) + 1)
        boundaries = torch.linspace(0.1, 1, fraction_items,
                                    dtype=torch.float32)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    if additional_items > 0:
        boundaries = torch.linspace(0.1, 1, additional_items + 1,
                                    dtype=torch.float32)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    assert len(data) == 2 ** total_bits
    data += [0] * (256 - len(data))
    data.sort()
    return torch.tensor(data, dtype=torch.float32)


def quantize_blockwise(x, code):
    """bitsandbytes' quantize_blockwise: per block of 256 the absmax, then
    the nearest code of x / absmax (ties to the lower code)."""
    flat = x.reshape(-1).float()
    n = flat.numel()
    full = n - n % BLOCK
    parts, absmax = [], []
    for a, b in ([(0, full)] if full else []) + ([(full, n)] if n % BLOCK else []):
        blk = flat[a:b].reshape(-1, BLOCK if b - a >= BLOCK and (b - a) % BLOCK == 0 else b - a)
        am = blk.abs().max(dim=1)[0]
        scaled = blk * (1.0 / am.clamp(min=1e-38).view(-1, 1))
        parts.append(torch.clamp(scaled, -1, 1).reshape(-1))
        absmax.append(am)
    scaled = torch.cat(parts)
    bounds = (code[:-1] + code[1:]) / 2
    q = torch.bucketize(scaled, bounds).to(torch.uint8)
    return q, torch.cat(absmax)


def dequantize_blockwise(q, absmax, code):
    vals = code[q.long()]
    blocks = torch.arange(vals.numel()) // BLOCK
    return vals * absmax[blocks]


class Adam8bitReference:
    """bitsandbytes' blockwise 8-bit Adam (CPU backend semantics), with
    torch.optim.Adam's coupled weight decay for `adam8bit`."""

    def __init__(self, params, lr, betas, eps, weight_decay, decoupled,
                 qmap, umap):
        self.params = params
        self.lr, (self.b1, self.b2), self.eps = lr, betas, eps
        self.wd, self.decoupled = weight_decay, decoupled
        self.qmap, self.umap = qmap, umap
        self.state = {}
        self.t = 0
        for name, p in params:
            n = p.numel()
            if n < MIN_8BIT:
                self.state[name] = dict(exp_avg=torch.zeros_like(p),
                                        exp_avg_sq=torch.zeros_like(p))
            else:
                nb = (n + BLOCK - 1) // BLOCK
                self.state[name] = dict(
                    exp_avg_codes=torch.zeros(n, dtype=torch.uint8),
                    exp_avg_absmax=torch.zeros(nb),
                    exp_avg_sq_codes=torch.zeros(n, dtype=torch.uint8),
                    exp_avg_sq_absmax=torch.zeros(nb))

    @torch.no_grad()
    def step(self):
        self.t += 1
        c1 = 1.0 - self.b1 ** self.t
        c2 = math.sqrt(1.0 - self.b2 ** self.t)
        for name, p in self.params:
            s = self.state[name]
            g = p.grad.reshape(-1).clone()
            pf = p.data.reshape(-1).clone()
            if self.wd and not self.decoupled:
                g = g + pf * self.wd
            if "exp_avg" in s:
                m, v = s["exp_avg"].reshape(-1), s["exp_avg_sq"].reshape(-1)
            else:
                m = dequantize_blockwise(s["exp_avg_codes"],
                                         s["exp_avg_absmax"], self.qmap)
                v = dequantize_blockwise(s["exp_avg_sq_codes"],
                                         s["exp_avg_sq_absmax"], self.umap)
            m = m * self.b1 + g * (1.0 - self.b1)
            v = v * self.b2 + (g * g) * (1.0 - self.b2)
            denom = v.sqrt() / c2 + self.eps
            if self.wd and self.decoupled:
                pf = pf * (1.0 - self.lr * self.wd)
            pf = pf - (self.lr / c1) * (m / denom)
            p.data.copy_(pf.reshape(p.shape))
            if "exp_avg" in s:
                s["exp_avg"], s["exp_avg_sq"] = m.reshape(p.shape), v.reshape(p.shape)
            else:
                s["exp_avg_codes"], s["exp_avg_absmax"] = \
                    quantize_blockwise(m, self.qmap)
                s["exp_avg_sq_codes"], s["exp_avg_sq_absmax"] = \
                    quantize_blockwise(v, self.umap)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(128, 64)   # 8192 elements: 32 full blocks
        self.fc2 = nn.Linear(64, 70)    # 4480: 17 blocks + 128
        self.norm = nn.LayerNorm(70)    # small: fp32 moments

    def forward(self, x, y):
        return F.cross_entropy(self.norm(self.fc2(torch.tanh(self.fc1(x)))), y)


def read_safetensors(path):
    """({name: array}, header): codes read as stored (I8)."""
    return read_tensors(path, with_header=True)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL: %s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r.stdout


def effopt_maps(args):
    """The two code maps of a lowered eff.adam8bit_update (the constants of
    256 f32 the lowering builds: signed map, unsigned map, midpoints)."""
    mlir = os.path.join(args.work, "update.mlir")
    with open(mlir, "w") as f:
        f.write("""
func.func @f(%p: tensor<4096xf32>, %g: tensor<4096xf32>, %mq: tensor<4096xi8>, %ma: tensor<16xf32>, %vq: tensor<4096xi8>, %va: tensor<16xf32>, %lr: tensor<f32>, %step: tensor<i64>)
    -> (tensor<4096xf32>, tensor<4096xi8>, tensor<16xf32>, tensor<4096xi8>, tensor<16xf32>) {
  %0:5 = eff.adam8bit_update %p, %g, %mq, %ma, %vq, %va, %lr, %step
    : (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xi8>, tensor<16xf32>, tensor<4096xi8>, tensor<16xf32>, tensor<f32>, tensor<i64>)
    -> (tensor<4096xf32>, tensor<4096xi8>, tensor<16xf32>, tensor<4096xi8>, tensor<16xf32>)
  return %0#0, %0#1, %0#2, %0#3, %0#4 : tensor<4096xf32>, tensor<4096xi8>, tensor<16xf32>, tensor<4096xi8>, tensor<16xf32>
}
""")
    text = run([tool(args, "effopt-opt"), mlir, "--convert-eff-to-linalg",
                "--mlir-print-elementsattrs-with-hex-if-larger=1"])
    tables = [np.frombuffer(bytes.fromhex(h), dtype="<f4")
              for h in re.findall(r'dense<"0x([0-9A-F]+)"> : tensor<256xf32>',
                                  text)]
    assert len(tables) == 4, "expected 4 tables, found %d" % len(tables)
    guesses = [np.frombuffer(bytes.fromhex(h), dtype="i1").view(np.uint8)
               for h in re.findall(r'dense<"0x([0-9A-F]+)"> : tensor<\d+xi8>',
                                   text)]
    assert len(guesses) == 2, "expected 2 bucket tables, found %d" % len(guesses)
    return (torch.from_numpy(tables[0].copy()), torch.from_numpy(tables[1].copy()),
            guesses)


def bucket_quantize(x, guess, code):
    """The lowering's requantization, step by step: a first guess from the
    bucket of |x|'s exponent and top mantissa bits, then one comparison
    with the midpoint above it."""
    mids = np.append((code[:-1] + code[1:]) / np.float32(2), np.float32(np.inf))
    buckets = len(guess) // 2
    mantissa_bits = int(round(math.log2(buckets // 24)))
    lo, hi = (127 - 23) << 23, (128 << 23) - 1
    bits = x.astype(np.float32).view(np.int32).astype(np.int64)
    b = (np.clip(bits & 0x7FFFFFFF, lo, hi) - lo) >> (23 - mantissa_bits)
    b = np.where(bits < 0, b + buckets, b)
    g = guess[b].astype(np.int64)
    return g + (mids[g] < x)


def check_maps(args):
    ours_s, ours_u, guesses = effopt_maps(args)
    ok = True
    # The bucket tables give bucketize's code for every f32: checked on each
    # midpoint and its neighbours (ties), and on values of both signs from
    # 1e-9 to 2, 0, the extremes.
    rng = np.random.RandomState(0)
    for name, code, guess in (("signed", ours_s, guesses[0]),
                              ("unsigned", ours_u, guesses[1])):
        code = code.numpy()
        mids = (code[:-1] + code[1:]) / np.float32(2)
        mag = np.exp(rng.uniform(math.log(1e-9), math.log(2.0), 400000))
        x = np.concatenate([mids, np.nextafter(mids, np.float32(-2)),
                            np.nextafter(mids, np.float32(2)), code,
                            mag, -mag, [0.0, -0.0, 1.0, -1.0, 3.0, -3.0,
                                        1e-30, -1e-30]]).astype(np.float32)
        want = torch.bucketize(torch.from_numpy(x), torch.from_numpy(mids)).numpy()
        got = bucket_quantize(x, guess, code)
        bad = int((got != want).sum())
        ok &= bad == 0
        print("quantize %s: %d values, %d differ from torch.bucketize: %s" %
              (name, x.size, bad, "PASS" if bad == 0 else "FAIL"))
    for name, ours, ref in (("signed", ours_s, create_dynamic_map(True)),
                            ("unsigned", ours_u, create_dynamic_map(False))):
        ulp = (ours.view(torch.int32).long() - ref.view(torch.int32).long()).abs()
        good = bool(ulp.max() <= args.map_ulp) and bool((ours == ours.sort()[0]).all())
        ok &= good
        print("map %s: %d of 256 codes differ from create_dynamic_map, at most "
              "%d ulp: %s" % (name, int((ulp > 0).sum()), int(ulp.max()),
                              "PASS" if good else "FAIL"))
    return ok, ours_s, ours_u


def make_data(args):
    torch.manual_seed(args.seed)
    rng = np.random.RandomState(args.seed)
    B = 16
    data = {"x": rng.randn(args.steps * B, 128).astype(np.float32),
            "y": rng.randint(0, 70, size=args.steps * B).astype(np.int64)}
    model = MLP()
    with torch.no_grad():
        model.norm.weight.add_(0.1 * torch.randn(70))
    return model, data, B


def effrun(args, work, steps, save, resume=None):
    cmd = [tool(args, "effrun"), os.path.join(work, "model.effx"), "--data",
           os.path.join(work, "data.npz"), "--steps", str(steps), "--save",
           save, "--quiet", "--log", save + ".jsonl"]
    if resume:
        cmd += ["--resume", resume]
    run(cmd)
    return [json.loads(l)["loss"] for l in open(save + ".jsonl") if l.strip()]


def load_state(model, opt, state, t):
    """Puts a checkpoint's parameters and optimizer state into the model and
    the reference optimizer."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(state[name].copy()).reshape(p.shape))
            for slot in opt.state[name]:
                a = state["optimizer.%s.%s" % (name, slot)]
                if slot.endswith("_codes"):
                    a = a.view(np.uint8).reshape(-1)
                opt.state[name][slot] = torch.from_numpy(a.copy()).reshape(
                    opt.state[name][slot].shape)
    opt.t = t


def reference_step(model, opt, data, B, i):
    x = torch.from_numpy(data["x"][i * B:(i + 1) * B])
    y = torch.from_numpy(data["y"][i * B:(i + 1) * B])
    for p in model.parameters():
        p.grad = None
    loss = model(x, y)
    loss.backward()
    opt.step()
    return float(loss)


def compare_state(args, model, opt, state, worst, problems, where):
    """The reference's parameters and optimizer state against a checkpoint."""
    for pname, p in model.named_parameters():
        got = state[pname].astype(np.float64).reshape(-1)
        want = p.detach().numpy().astype(np.float64).reshape(-1)
        err = float(np.abs(got - want).max())
        worst["param"] = max(worst["param"], err)
        if err > args.param_atol:
            problems.append("%s %s: max abs err %.3g" % (where, pname, err))
        for slot, want in opt.state[pname].items():
            key = "optimizer.%s.%s" % (pname, slot)
            if key not in state:
                problems.append("checkpoint misses " + key)
                continue
            got = state[key]
            if slot.endswith("_codes"):
                if got.dtype != np.int8 or got.shape != tuple(p.shape):
                    problems.append("%s: %s %s, expected int8 %s" %
                                    (key, got.dtype, got.shape, tuple(p.shape)))
                diff = np.abs(got.view(np.uint8).reshape(-1).astype(np.int64)
                              - want.numpy().reshape(-1).astype(np.int64))
                worst["codes"] += diff.size
                worst["codes_off"] += int((diff > 0).sum())
                if diff.max() > 1:
                    problems.append("%s %s: %d codes more than one apart" %
                                    (where, key, int((diff > 1).sum())))
            else:
                want = want.numpy().astype(np.float64).reshape(-1)
                got = got.astype(np.float64).reshape(-1)
                err = np.abs(got - want)
                scale = float(np.abs(want).max(initial=0))
                if slot.endswith("absmax"):
                    rel = err / np.maximum(np.abs(want), 1e-30)
                    worst["absmax"] = max(worst["absmax"], float(rel.max()))
                if (err > args.state_rtol * (np.abs(want) + 0.01 * scale)).any():
                    problems.append("%s %s: max abs err %.3g" %
                                    (where, key, err.max()))
    names = dict(model.named_parameters())
    for key in state:
        if key.startswith("optimizer.") and key != "optimizer.step":
            pname, slot = key[len("optimizer."):].rsplit(".", 1)
            if pname not in names or slot not in opt.state[pname]:
                problems.append("state the reference does not have: " + key)


def check_mlp(args, name, c, qmap, umap):
    """From the same state each step (effrun --resume one step at a time,
    the reference loaded from the same checkpoint): the published update
    against effopt's. Then a free run of all steps: losses."""
    model, data, B = make_data(args)
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    export_graph(model, (torch.from_numpy(data["x"][:B]),
                         torch.from_numpy(data["y"][:B])), ["x", "y"],
                 os.path.join(work, "model.onnx"), output_names=["loss"])
    np.savez(os.path.join(work, "data.npz"), **data)
    run([tool(args, "effc"), os.path.join(work, "model.onnx"), "-o",
         os.path.join(work, "model.effx"), "--optimizer", c["optimizer"],
         "--lr", repr(c["lr"]), "--weight-decay", repr(c["weight_decay"]),
         "--report-json", os.path.join(work, "report.json")])
    params = list(model.named_parameters())
    opt = Adam8bitReference(params, c["lr"], (0.9, 0.999), 1e-8,
                            c["weight_decay"], c["optimizer"] == "adamw8bit",
                            qmap, umap)
    reference = MLP()
    reference.load_state_dict(model.state_dict())

    problems = []
    worst = dict(loss=0.0, param=0.0, absmax=0.0, codes_off=0, codes=0)
    previous = None
    for i in range(args.steps):
        ckpt = os.path.join(work, "step%d.safetensors" % (i + 1))
        ours = effrun(args, work, 1, ckpt, previous)
        if previous:
            load_state(model, opt, read_safetensors(previous)[0], i)
        want = reference_step(model, opt, data, B, i)
        worst["loss"] = max(worst["loss"], abs(ours[0] - want))
        compare_state(args, model, opt, read_safetensors(ckpt)[0], worst,
                      problems, "step %d" % i)
        previous = ckpt
    # Free run: every step's loss.
    final = os.path.join(work, "final.safetensors")
    ours = effrun(args, work, args.steps, final)
    free = Adam8bitReference(list(reference.named_parameters()), c["lr"],
                             (0.9, 0.999), 1e-8, c["weight_decay"],
                             c["optimizer"] == "adamw8bit", qmap, umap)
    free_worst = 0.0
    for i in range(args.steps):
        want = reference_step(reference, free, data, B, i)
        free_worst = max(free_worst, abs(ours[i] - want))
    if free_worst > args.loss_atol:
        problems.append("free run: loss differs by %.3g" % free_worst)
    frac = worst["codes_off"] / max(1, worst["codes"])
    if frac > args.max_off_fraction:
        problems.append("%.2g of the codes one apart" % frac)
    print("%s: %d steps from the same state: params max abs diff %.2g, "
          "absmax max rel diff %.2g, codes one apart %d of %d; free run "
          "losses max abs diff %.2g: %s" %
          (name, args.steps, worst["param"], worst["absmax"],
           worst["codes_off"], worst["codes"], free_worst,
           "PASS" if not problems else "FAIL (" + "; ".join(problems[:6]) + ")"))
    return not problems


def check_resume(args):
    """adamw8bit: a run split by --save/--resume equals the straight run."""
    work = os.path.join(args.work, "mlp-adamw8bit")
    straight, _ = read_safetensors(os.path.join(work, "final.safetensors"))
    effx = os.path.join(work, "model.effx")
    npz = os.path.join(work, "data.npz")
    half = args.steps // 2
    first = os.path.join(work, "half.safetensors")
    second = os.path.join(work, "resumed.safetensors")
    run([tool(args, "effrun"), effx, "--data", npz, "--steps", str(half),
         "--save", first, "--quiet"])
    run([tool(args, "effrun"), effx, "--data", npz, "--steps",
         str(args.steps - half), "--resume", first, "--save", second,
         "--quiet"])
    resumed, header = read_safetensors(second)
    dtypes = sorted({header[k]["dtype"] for k in resumed})
    differ = [k for k in straight if k not in resumed or
              straight[k].tobytes() != resumed[k].tobytes()]
    ok = not differ and set(resumed) == set(straight)
    print("resume: %d + %d steps vs %d straight: %d tensors (%s), %s: %s" %
          (half, args.steps - half, args.steps, len(resumed), " ".join(dtypes),
           "bit-identical" if ok else "differ: " + ", ".join(differ),
           "PASS" if ok else "FAIL"))
    return ok


def check_memory(args):
    work = os.path.join(args.work, "mlp-adamw8bit")
    report = json.load(open(os.path.join(work, "report.json")))
    model = MLP()
    want = 0
    params = 0
    for _, p in model.named_parameters():
        n = p.numel()
        params += n
        if n < MIN_8BIT:
            want += 8 * n
        else:
            want += 2 * n + 8 * ((n + BLOCK - 1) // BLOCK)
    want += 8  # the step counter
    got = report["peak"]["by_category"]["optimizer state"]
    log = [json.loads(l) for l in
           open(os.path.join(work, "final.safetensors.jsonl")) if l.strip()]
    allocated = log[-1].get("allocated_bytes")
    planned = report["total_bytes"]
    ok = got == want and allocated == planned
    print("memory: optimizer state %d bytes (expected %d; %.3f bytes per "
          "parameter, fp32 AdamW 8), allocated %s planned %s: %s" %
          (got, want, got / params, allocated, planned,
           "PASS" if ok else "FAIL"))
    return ok


def check_gpt(args):
    """adamw8bit on the small example GPT (2 layers, width 64: every matrix
    and the embeddings >= 4096 elements) tracks torch.optim.AdamW (fp32
    moments) from the same weights and text windows."""
    steps = args.gpt_steps
    model, B, data = make_model("gpt", steps, args.seed)
    work = os.path.join(args.work, "gpt")
    os.makedirs(work, exist_ok=True)
    names = list(data)
    export_graph(model, tuple(torch.from_numpy(data[n][:B]) for n in names),
                 names, os.path.join(work, "model.onnx"))
    np.savez(os.path.join(work, "data.npz"), **data)
    lr, wd = args.gpt_lr, 0.1
    run([tool(args, "effc"), os.path.join(work, "model.onnx"), "-o",
         os.path.join(work, "model.effx"), "--optimizer", "adamw8bit",
         "--lr", repr(lr), "--weight-decay", repr(wd)])
    ours = effrun(args, work, steps, os.path.join(work, "final.safetensors"))
    quantized = sum(p.numel() for p in model.parameters() if p.numel() >= MIN_8BIT)
    total = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd)
    losses = []
    for i in range(steps):
        batch = [torch.from_numpy(data[n][i * B:(i + 1) * B]) for n in names]
        opt.zero_grad()
        loss = model(*batch)[0]
        loss.backward()
        opt.step()
        losses.append(float(loss))
    rel = [abs(a - b) / b for a, b in zip(ours, losses)]
    if args.verbose:
        print(" ".join("%.4f/%.4f" % ab for ab in zip(ours, losses)))
    ok = len(ours) == steps and max(rel) <= args.gpt_band
    print("gpt: %d steps, %.0f%% of parameters 8-bit, loss %.4f -> %.4f "
          "(fp32 AdamW %.4f -> %.4f), max rel diff %.2g (band %.2g): %s" %
          (steps, 100.0 * quantized / total, ours[0], ours[-1], losses[0],
           losses[-1], max(rel), args.gpt_band, "PASS" if ok else "FAIL"))
    return ok


def check_skip(args):
    """fp16 with a loss scale so large every step overflows: each step is
    skipped, and the codes, absmax, parameters and step counter keep their
    old values (eff.where over the 8-bit state)."""
    import onnx
    work = os.path.join(args.work, "mlp-adamw8bit")
    effx = os.path.join(work, "fp16.effx")
    ckpt = os.path.join(work, "skipped.safetensors")
    run([tool(args, "effc"), os.path.join(work, "model.onnx"), "-o", effx,
         "--optimizer", "adamw8bit", "--precision", "fp16",
         "--loss-scale-init", "1e30"])
    run([tool(args, "effrun"), effx, "--data", os.path.join(work, "data.npz"),
         "--steps", "3", "--save", ckpt, "--quiet"])
    state, _ = read_safetensors(ckpt)
    initial = {t.name: onnx.numpy_helper.to_array(t) for t in
               onnx.load(os.path.join(work, "model.onnx")).graph.initializer}
    changed = [k for k in initial if k in state and
               not np.array_equal(initial[k], state[k])]
    changed += [k for k, v in state.items() if k.startswith("optimizer.")
                and np.any(v != 0)]
    skipped = int(state["loss_scale.skipped_steps"])
    ok = not changed and skipped == 3
    print("skip: %d of 3 steps skipped, %s: %s" %
          (skipped, "parameters and 8-bit state unchanged" if not changed
           else "changed: " + ", ".join(changed), "PASS" if ok else "FAIL"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", help="directory with effc, effrun, effopt-opt")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--map-ulp", type=int, default=4)
    ap.add_argument("--loss-atol", type=float, default=1e-4)
    ap.add_argument("--param-atol", type=float, default=1e-6)
    ap.add_argument("--state-rtol", type=float, default=1e-5)
    ap.add_argument("--max-off-fraction", type=float, default=1e-3)
    ap.add_argument("--gpt-steps", type=int, default=40)
    ap.add_argument("--gpt-band", type=float, default=0.01)
    ap.add_argument("--gpt-lr", type=float, default=1e-3)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    ok, qmap, umap = check_maps(args)
    configs = {
        "mlp-adamw8bit": dict(optimizer="adamw8bit", lr=3e-3, weight_decay=0.1),
        "mlp-adam8bit": dict(optimizer="adam8bit", lr=3e-3, weight_decay=0.05),
    }
    for name, c in configs.items():
        ok &= check_mlp(args, name, c, qmap, umap)
    ok &= check_resume(args)
    ok &= check_memory(args)
    ok &= check_skip(args)
    ok &= check_gpt(args)
    print("ALL PASS" if ok else "SOME FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
