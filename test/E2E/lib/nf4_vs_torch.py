#!/usr/bin/env python3
"""NF4 storage of frozen GEMM weights (effc --quantize-frozen nf4) against a
reference of bitsandbytes' quantize_4bit(quant_type="nf4", blocksize=64,
compress_statistics=True) written here in PyTorch.

    nf4_vs_torch.py --model mlp|gpt --bin BUILD/bin --work DIR [--steps N]

1. Quantization: the packed codes, 8-bit block absmax codes, nested scales
   and offset effc stored (read back from effrun's checkpoint) equal the
   reference's: codes equal, or one code apart where the scaled value sits
   on a rounding tie; the offset within 1 ulp.
2. Dequantization: the weight the reference dequantizes from effc's storage
   equals, bit for bit, the one it dequantizes from its own where the codes
   agree.
3. Training: effc + effrun (which never hold the f32 weight: the products
   dequantize tile by tile) and a PyTorch model whose frozen weights are the
   reference dequantization train alike: every step's loss and the final
   trainable parameters agree (fp32: rtol 1e-4, atol 1e-5); the stored
   storage is unchanged by training.
4. Bytes: each quantized weight's storage in the state region against its
   f32 size, and the memory report's bytes by category.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_vs_torch as tvt  # noqa: E402

# --------------------------------------------------------------------------
# The reference (bitsandbytes' functional.py and its default torch backend)
# --------------------------------------------------------------------------

# get_4bit_type("nf4"): the QLoRA paper's NormalFloat table.
NF4 = torch.tensor([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
    0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
    0.7229568362236023, 1.0], dtype=torch.float32)


def dynamic_map(max_exponent_bits=7, total_bits=8):
    """create_dynamic_map(signed=True)."""
    data = []
    non_sign_bits = total_bits - 1
    for i in range(max_exponent_bits):
        fraction_items = int(2 ** (i + non_sign_bits - max_exponent_bits) + 1)
        boundaries = torch.linspace(0.1, 1, fraction_items, dtype=torch.float32)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    data.sort()
    return torch.tensor(data, dtype=torch.float32)


DYN = dynamic_map()


def blockwise(values, blocksize):
    """Per-block absmax and the values scaled by it, clamped to [-1, 1]
    (quantize_blockwise / quantize_4bit: x * (1 / absmax))."""
    n = values.numel()
    blocks = -(-n // blocksize)
    padded = F.pad(values, (0, blocks * blocksize - n))
    absmax = padded.view(blocks, blocksize).abs().max(dim=1).values
    scale = (1 / absmax).repeat_interleave(blocksize)[:n]
    return absmax, torch.clamp(values * scale, -1, 1)


def nearest(scaled, code):
    """torch.argmin(|scaled - code|): the first index on a tie."""
    return torch.argmin(torch.abs(scaled.view(-1, 1) - code), dim=-1)


def quantize(weight, blocksize=64, nested=256):
    flat = weight.reshape(-1).float()
    absmax, scaled = blockwise(flat, blocksize)
    if scaled.numel() % 2:
        scaled = F.pad(scaled, (0, 1))
    q = nearest(scaled, NF4).to(torch.uint8)
    packed = (q[::2] << 4) | q[1::2]
    offset = absmax.mean()
    centered = absmax - offset
    nested_absmax, nested_scaled = blockwise(centered, nested)
    qabsmax = nearest(nested_scaled, DYN).to(torch.uint8)
    return {"nf4": packed, "absmax": qabsmax, "nested_absmax": nested_absmax,
            "nested_offset": offset, "scaled": scaled,
            "nested_scaled": nested_scaled}


def dequantize(s, shape, blocksize=64, nested=256):
    """dequantize_4bit with nested statistics, in f32 as bitsandbytes."""
    n = int(np.prod(shape))
    packed = s["nf4"].to(torch.int64)
    codes = torch.stack([packed >> 4, packed & 15], dim=1).reshape(-1)[:n]
    qabsmax = s["absmax"].to(torch.int64)
    nb = qabsmax.numel()
    scale = s["nested_absmax"].repeat_interleave(nested)[:nb]
    absmax = DYN[qabsmax] * scale + s["nested_offset"]
    return (NF4[codes] * absmax.repeat_interleave(blocksize)[:n]).reshape(shape)


def tie_one_code_off(got, want, scaled, code):
    """Codes differing only where the scaled value is (within an f32 ulp)
    halfway between two neighbouring codes."""
    diff = got.to(torch.int64) - want.to(torch.int64)
    if (diff.abs() > 1).any():
        return False
    where = diff != 0
    if not where.any():
        return True
    x = scaled[where]
    a, b = code[got.to(torch.int64)[where]], code[want.to(torch.int64)[where]]
    gap = (torch.abs(x - a) - torch.abs(x - b)).abs()
    return bool((gap <= 4 * torch.finfo(torch.float32).eps).all())


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------

class Net(nn.Module):
    """fc1 (37 -> 51: 1887 weights, odd, a partial block) and fc2 (51 ->
    400: 319 blocks, two nested blocks) frozen; their biases and fc3
    train, so the backward reads fc2's weight untransposed."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(37, 51)
        self.fc2 = nn.Linear(51, 400)
        self.fc3 = nn.Linear(400, 10)

    def forward(self, x, y):
        h = F.relu(self.fc2(F.relu(self.fc1(x))))
        logits = self.fc3(h)
        return F.cross_entropy(logits, y), logits


def make(name, steps, seed):
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    if name == "mlp":
        B = 32
        x = rng.randn(steps * B, 37).astype(np.float32)
        y = rng.randint(0, 10, size=steps * B).astype(np.int64)
        return Net(), B, {"x": x, "y": y}, r"fc[12]\.weight"
    if name == "gpt":
        model, B, data = tvt.make("gpt", steps, seed)
        # Products through eff.matmul of a transposed weight (3-D inputs).
        return model, B, data, r".*(mlp\.[02]|attn\.c_attn)\.weight"
    raise SystemExit("unknown model " + name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--precision", default="fp32",
                    help="fp32, or bf16: effc --precision bf16 against "
                         "torch.autocast(cpu, bfloat16) (the weights rounded "
                         "to bf16 after dequantization, on both sides)")
    ap.add_argument("--rtol", type=float, default=None)
    ap.add_argument("--atol", type=float, default=None)
    args = ap.parse_args()
    # bf16: one rounding of every product's operands (2^-8 relative) that
    # both sides make, but sums in different orders; 5e-3 as
    # lowp_vs_torch.py states for bf16 losses.
    low = args.precision == "bf16"
    if args.rtol is None:
        args.rtol = 5e-3 if low else 1e-4
    if args.atol is None:
        args.atol = 1e-3 if low else 1e-5
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    failures = 0

    model, B, data, frozen = make(args.model, args.steps, 0)
    names = list(data)
    onnx_path = os.path.join(args.work, args.model + ".onnx")
    npz_path = os.path.join(args.work, args.model + ".npz")
    tvt.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
               names, onnx_path)
    np.savez(npz_path, **data)
    effx = os.path.join(args.work, args.model + ".effx")
    report = os.path.join(args.work, "report.json")
    tvt.run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx,
             "--optimizer", "adamw", "--lr", repr(args.lr),
             "--freeze", frozen, "--quantize-frozen", "nf4",
             "--precision", args.precision,
             "--report-json", report])
    log = os.path.join(args.work, "loss.jsonl")
    ckpt = os.path.join(args.work, "final.safetensors")
    tvt.run([os.path.join(args.bin, "effrun"), effx, "--data", npz_path,
             "--steps", str(args.steps), "--log", log, "--save", ckpt,
             "--quiet"])
    state = tvt.read_safetensors(ckpt)

    # 1-2. The storage against the reference, weight by weight.
    params = dict(model.named_parameters())
    quantized = sorted(n[:-len(".nf4")] for n in state if n.endswith(".nf4"))
    print("quantized: %s" % ", ".join(quantized))
    if not quantized:
        print("no weight was quantized")
        failures += 1
    dequantized = {}
    for name in quantized:
        w = params[name].detach()
        ref = quantize(w)
        got = {"nf4": torch.from_numpy(state[name + ".nf4"].view(np.uint8).copy()),
               "absmax": torch.from_numpy(
                   state[name + ".absmax"].view(np.uint8).copy()),
               "nested_absmax": torch.from_numpy(
                   state[name + ".nested_absmax"].copy()),
               "nested_offset": torch.from_numpy(
                   state[name + ".nested_offset"].copy())}
        if name in state:
            print("%s: the f32 weight is still in the checkpoint" % name)
            failures += 1
        n = w.numel()
        g = torch.stack([got["nf4"] >> 4, got["nf4"] & 15], 1).reshape(-1)
        r = torch.stack([ref["nf4"] >> 4, ref["nf4"] & 15], 1).reshape(-1)
        codes_ok = tie_one_code_off(g, r, ref["scaled"], NF4)
        absmax_ok = tie_one_code_off(got["absmax"], ref["absmax"],
                                     ref["nested_scaled"], DYN)
        offset_err = abs(float(got["nested_offset"]) - float(ref["nested_offset"]))
        offset_ok = offset_err <= float(torch.finfo(torch.float32).eps) * \
            abs(float(ref["nested_offset"]))
        nested_ok = bool(torch.allclose(got["nested_absmax"],
                                        ref["nested_absmax"], rtol=1e-6, atol=0))
        mine = dequantize(got, w.shape)
        theirs = dequantize(ref, w.shape)
        same = (g[:n] == r[:n]).reshape(w.shape)
        block_same = got["absmax"] == ref["absmax"]
        same &= block_same.repeat_interleave(64)[:n].reshape(w.shape)
        exact = bool((mine[same] == theirs[same]).all()) if offset_err == 0 \
            else bool(torch.allclose(mine[same], theirs[same], rtol=1e-6, atol=0))
        err = float((mine - w).abs().max())
        ok = codes_ok and absmax_ok and offset_ok and nested_ok and exact
        failures += not ok
        print("%s %s: %d codes (%d differ on ties), %d block absmax (%d differ on "
              "ties), offset err %.1e, dequantized %s, max |W - deq(W)| %.4f%s" % (
                  name, tuple(w.shape), n, int((g[:n] != r[:n]).sum()),
                  ref["absmax"].numel(), int((~block_same).sum()), offset_err,
                  "bit-exact" if exact and offset_err == 0 else
                  ("equal" if exact else "DIFFERENT"), err,
                  "" if ok else "  MISMATCH"))
        dequantized[name] = mine

    # 3. Training against PyTorch with the dequantized weights.
    with torch.no_grad():
        for name, value in dequantized.items():
            params[name].copy_(value)
            params[name].requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.01)
    model.train()
    ref_losses = []
    for i in range(args.steps):
        batch = [torch.from_numpy(data[k][i * B:(i + 1) * B]) for k in names]
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=low):
            loss = model(*batch)[0]
        loss.backward()
        opt.step()
        ref_losses.append(float(loss))
    ours = [json.loads(line) for line in open(log)]
    print("step  effopt        torch         rel.err")
    for i, (row, ref) in enumerate(zip(ours, ref_losses)):
        got = row["loss"]
        ok = row["step"] == i and abs(got - ref) <= args.atol + args.rtol * abs(ref)
        failures += not ok
        print("%4d  %-12.7g  %-12.7g  %.2e%s" % (
            i, got, ref, abs(got - ref) / abs(ref), "" if ok else "  MISMATCH"))
    if len(ours) != args.steps:
        failures += 1
    worst = 0.0
    for name, p in model.named_parameters():
        if not p.requires_grad or name not in state:
            continue
        want = p.detach().numpy()
        err = np.abs(state[name] - want)
        worst = max(worst, float(err.max()))
        bound = args.atol + args.rtol * np.abs(want)
        if name.endswith("attn.c_attn.bias"):
            # The key bias adds one constant per query row to the scores,
            # which softmax cancels: its true gradient is exactly zero and
            # AdamW turns either side's rounding noise into steps of up to
            # lr (as gpt-adamw-cosine.test notes). Bounded by steps x lr.
            third = want.shape[0] // 3
            bound = np.broadcast_to(bound, want.shape).copy()
            bound[third:2 * third] = args.steps * args.lr
        if (err > bound).any():
            print("%s: max abs err %.3g  MISMATCH" % (name, err.max()))
            failures += 1
    print("trainable parameters: max abs err %.3g" % worst)

    # 4. Bytes.
    rep = json.load(open(report))
    tensors = {t["name"]: t for t in rep["tensors"]}
    packed_total, f32_total = 0, 0
    for name in quantized:
        parts = [name + s for s in (".nf4", ".absmax", ".nested_absmax",
                                    ".nested_offset")]
        raw = sum(state[p].nbytes for p in parts)
        region = sum(tensors[p]["bytes"] for p in parts)
        f32 = params[name].numel() * 4
        packed_total += raw
        f32_total += f32
        print("bytes %s: %d f32 -> %d packed (%.3f byte/param, %.3fx)" % (
            name, f32, raw, raw / params[name].numel(), raw / f32))
        # The plan counts exactly the bytes the checkpoint stores.
        if region != raw:
            print("%s: the report plans %d bytes, the checkpoint holds %d  "
                  "MISMATCH" % (name, region, raw))
            failures += 1
    print("bytes of the quantized weights: %d of %d f32 (%.3fx)" % (
        packed_total, f32_total, packed_total / f32_total))
    # No f32 copy of a quantized weight (or of its transpose) is planned
    # anywhere in the step: the products only ever hold one tile of it.
    # (The GPT's activations of 256 rows share shapes with its weights, so
    # the check is the MLP's.)
    workspace = max([b["bytes"] for b in rep["buffers"]
                     if b["category"] == "workspace"] or [0])
    print("largest workspace: %d bytes" % workspace)
    if args.model == "mlp":
        for name in quantized:
            r, c = params[name].shape
            copies = [b for b in rep["buffers"] if b["type"] in (
                "memref<%dx%dxf32>" % (r, c), "memref<%dx%dxf32>" % (c, r))]
            if copies:
                print("%s: f32 copies in the arena: %s  MISMATCH" % (
                    name, [b["type"] for b in copies]))
                failures += 1
            tiles = [b for b in rep["buffers"] if b["category"] == "workspace"
                     and (b["type"].startswith("memref<%dx" % r)
                          or b["type"].endswith("x%dxf32>" % c))]
            if not tiles or any(b["bytes"] >= r * c * 4 for b in tiles):
                print("%s: workspaces %s  MISMATCH" % (
                    name, [b["type"] for b in tiles]))
                failures += 1
    at_peak = rep["peak"]["by_category"]
    print("report at the peak: " + ", ".join(
        "%s %d" % (k, v) for k, v in sorted(at_peak.items())))
    print("%s: %s" % (args.model, "PASS" if failures == 0 else
                      "FAIL (%d mismatches)" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
