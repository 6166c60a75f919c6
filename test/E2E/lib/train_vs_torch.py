#!/usr/bin/env python3
"""Trains one model with effc + effrun and with PyTorch 1.13 from the same
initial weights and data, and compares per-step losses and final state.

    train_vs_torch.py --model mlp --optimizer sgd --lr 0.1 --momentum 0.9 \\
        --steps 12 --bin BUILD/bin --work DIR

The models are the ones of examples/export_examples.py (the GPT without
dropout, whose random masks PyTorch and effopt draw differently). Prints
one line per step and a summary; exits 1 when anything differs by more than
rtol/atol (fp32: 1e-3 / 1e-5 by default).
"""
import argparse
import io
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import warnings

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(SRC, "examples"))
import export_examples as ex  # noqa: E402


def text_windows(rng, rows, T):
    """`rows` random windows of T+1 bytes of the KJV text:
    {"idx": [rows, T] inputs, "targets": the same shifted by one}."""
    text, _ = ex.text_bytes()
    starts = rng.randint(0, len(text) - T - 1, size=rows)
    win = np.stack([np.frombuffer(text[s:s + T + 1], dtype=np.uint8)
                    for s in starts]).astype(np.int64)
    return {"idx": win[:, :-1].copy(), "targets": win[:, 1:].copy()}


def add_training_args(ap):
    """The optimizer, schedule and tolerance flags of the training
    comparisons (named as effc's flags)."""
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--nesterov", action="store_true")
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--schedule", default="constant")
    ap.add_argument("--warmup-steps", type=int, default=0)
    ap.add_argument("--total-steps", type=int, default=0)
    ap.add_argument("--min-lr", type=float, default=0.0)
    ap.add_argument("--clip-grad-norm", type=float, default=0.0)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--param-atol", type=float, default=None,
                    help="absolute tolerance for the final state (default: --atol)")


def make(name, steps, seed):
    """(model, batch size, {input name: array of steps*B rows})"""
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    if name == "mlp":
        x, y = ex.digits_data()
        idx = ex.epoch_rows(len(x), steps * 32, seed)
        return ex.MLP(), 32, {"x": x[idx], "y": y[idx]}
    if name == "cnn":
        x, y = ex.digits_data()
        idx = ex.epoch_rows(len(x), steps * 32, seed)
        model = ex.CNN()
        # A convolution bias right before BatchNorm has an exactly zero
        # gradient (the batch mean cancels it); Adam turns the rounding noise
        # of that zero into steps of size lr, differently in every
        # implementation. Such biases are dropped, as is usual before BN.
        for i in (0, 4):
            conv = model.features[i]
            conv.bias = None
        return model, 32, {"x": x[idx].reshape(-1, 1, 8, 8), "y": y[idx]}
    if name in ("gpt", "gpt6"):
        text, _ = ex.text_bytes()
        B, T, layers, width, heads = ((8, 32, 2, 64, 4) if name == "gpt"
                                      else (16, 128, 6, 256, 8))
        model = ex.GPT(vocab=256, block_size=T, n_layer=layers,
                       d_model=width, n_head=heads, dropout=0.0)
        return model, B, text_windows(rng, steps * B, T)
    raise SystemExit("unknown model " + name)


def export(model, batch, names, path, output_names=("loss", "logits")):
    """ONNX export in training mode; puts back the state the export's trace
    mutated (BatchNorm running statistics)."""
    current = model.state_dict()
    state = type(current)((k, v.clone()) for k, v in current.items())
    # Modules that check their state's version (torchvision's MNASNet) need
    # the metadata back.
    state._metadata = getattr(current, "_metadata", None)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, batch, f,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17,
                          input_names=names, output_names=list(output_names))
    model.load_state_dict(state)
    m = onnx.load_from_string(f.getvalue())
    for t in m.graph.initializer:
        if t.name in state:
            t.CopyFrom(onnx.numpy_helper.from_array(
                np.ascontiguousarray(state[t.name].numpy()), t.name))
    onnx.save_model(m, path)


def lr_lambda(args):
    """The schedule of eff.lr_schedule as a LambdaLR factor."""
    w, total, peak, floor = args.warmup_steps, args.total_steps, args.lr, args.min_lr

    def factor(t):
        if args.schedule == "constant":
            return 1.0
        if t < w:
            return min(1.0, (t + 1) / w)
        if args.schedule == "linear_warmup":
            return 1.0
        p = min(1.0, (t - w) / max(1, total - w))
        return (floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * p))) / peak
    return factor


def train_torch(model, data, B, args):
    names = list(data)
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=args.lr,
                              momentum=args.momentum, nesterov=args.nesterov,
                              weight_decay=args.weight_decay)
    elif args.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr,
                                betas=(args.beta1, args.beta2), eps=args.eps,
                                weight_decay=args.weight_decay)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=args.lr,
                               betas=(args.beta1, args.beta2), eps=args.eps,
                               weight_decay=args.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(args))
    model.train()
    losses = []
    for i in range(args.steps):
        batch = [torch.from_numpy(data[k][i * B:(i + 1) * B]) for k in names]
        opt.zero_grad()
        loss = model(*batch)[0]
        loss.backward()
        if args.clip_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
        opt.step()
        sched.step()
        losses.append(float(loss))
    # Tied weights (the LM head is the token embedding) appear once, under
    # the first name, as in the ONNX initializers.
    state, seen = {}, set()
    for k, v in model.state_dict(keep_vars=True).items():
        if v.data_ptr() in seen:
            continue
        seen.add(v.data_ptr())
        state[k] = v.detach().numpy().copy()
    return losses, state


def read_safetensors(path, with_header=False):
    """{name: array} of a safetensors file (and its header when asked)."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    dtypes = {"F32": np.float32, "I64": np.int64, "BOOL": np.bool_,
              "F16": np.float16, "I32": np.int32, "I8": np.int8,
              "U8": np.uint8}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        if e["dtype"] == "BF16":
            # numpy has no bfloat16: its bits are a float32's upper half
            # (exact), e.g. the device copies of offloaded master weights.
            bits = np.frombuffer(raw[base + a:base + b], dtype=np.uint16)
            out[name] = (bits.astype(np.uint32) << 16).view(
                np.float32).reshape(e["shape"])
            continue
        out[name] = np.frombuffer(raw[base + a:base + b],
                                  dtype=dtypes[e["dtype"]]).reshape(e["shape"])
    return (out, header) if with_header else out


def tool(args, name):
    """effc/effrun from --bin, else from PATH."""
    if args.bin:
        return os.path.join(args.bin, name)
    found = shutil.which(name)
    if not found:
        raise SystemExit("%s is not on PATH (pass --bin)" % name)
    return found


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise SystemExit("FAILED: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r


def effc_flags(args):
    flags = ["--optimizer", args.optimizer, "--lr", repr(args.lr),
             "--weight-decay", repr(args.weight_decay),
             "--schedule", args.schedule,
             "--warmup-steps", str(args.warmup_steps),
             "--total-steps", str(args.total_steps),
             "--min-lr", repr(args.min_lr)]
    if args.optimizer == "sgd":
        flags += ["--momentum", repr(args.momentum)]
        if args.nesterov:
            flags += ["--nesterov"]
    else:
        flags += ["--beta1", repr(args.beta1), "--beta2", repr(args.beta2),
                  "--eps", repr(args.eps)]
    if args.clip_grad_norm > 0:
        flags += ["--clip-grad-norm", repr(args.clip_grad_norm)]
    return flags


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--bin", required=True, help="directory with effc and effrun")
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=12)
    add_training_args(ap)
    ap.add_argument("--effc", action="append", default=[],
                    help="an extra effc flag (e.g. --effc=--f32-accumulator=f32)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)

    model, B, data = make(args.model, args.steps, args.seed)
    names = list(data)
    onnx_path = os.path.join(args.work, args.model + ".onnx")
    npz_path = os.path.join(args.work, args.model + ".npz")
    export(model, tuple(torch.from_numpy(data[k][:B]) for k in names), names,
           onnx_path)
    np.savez(npz_path, **data)

    effx = os.path.join(args.work, args.model + ".effx")
    log = os.path.join(args.work, "loss.jsonl")
    ckpt = os.path.join(args.work, "final.safetensors")
    run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx] + effc_flags(args)
        + args.effc)
    run([os.path.join(args.bin, "effrun"), effx, "--data", npz_path,
         "--steps", str(args.steps), "--log", log, "--save", ckpt, "--quiet"])
    ours = [json.loads(line) for line in open(log)]

    ref_losses, ref_state = train_torch(model, data, B, args)

    failures = 0
    print("step  effopt        torch         rel.err")
    for i, (row, ref) in enumerate(zip(ours, ref_losses)):
        got = row["loss"]
        ok = row["step"] == i and abs(got - ref) <= args.atol + args.rtol * abs(ref)
        failures += not ok
        print("%4d  %-12.7g  %-12.7g  %.2e%s" % (i, got, ref,
              abs(got - ref) / max(abs(ref), 1e-30), "" if ok else "  MISMATCH"))
    if len(ours) != args.steps:
        print("effrun logged %d steps, expected %d" % (len(ours), args.steps))
        failures += 1

    state = read_safetensors(ckpt)
    worst = (0.0, "")
    for name, want in ref_state.items():
        if name.endswith("num_batches_tracked"):
            continue  # torch's counter; effopt keeps one step counter
        if name not in state:
            if name.endswith(".mask"):
                continue  # a constant buffer folded into the code
            print("checkpoint misses %r" % name)
            failures += 1
            continue
        got = state[name]
        if got.shape != want.shape:
            print("%s: shape %s, torch %s" % (name, got.shape, want.shape))
            failures += 1
            continue
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        atol = args.atol if args.param_atol is None else args.param_atol
        bound = atol + args.rtol * np.abs(want.astype(np.float64))
        if (err > bound).any():
            print("%s: %d of %d values differ, max abs err %.3g" %
                  (name, int((err > bound).sum()), err.size, err.max()))
            failures += 1
        rel = float((err / (np.abs(want) + 1e-12)).max()) if err.size else 0.0
        if err.size and err.max() > worst[0]:
            worst = (float(err.max()), name)
    print("final state: %d tensors compared, max abs err %.3g (%s)" %
          (len(ref_state), worst[0], worst[1]))
    print("%s: %s" % (args.model, "PASS" if failures == 0 else
                      "FAIL (%d mismatches)" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
