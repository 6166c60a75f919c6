#!/usr/bin/env python3
"""ZeRO stages 1-3 with the block-wise 8-bit optimizers and Adafactor on MPI
against one process with --accum N and against the PyTorch references.

    zero_optim_vs_accum.py --optimizer adamw8bit|adam8bit|adafactor
                           --ranks N --zero K --bin BUILD/bin --work DIR
                           [--steps S] [--same-rows] [--accum K]
                           [--effc=FLAG]... [--resume]

The model (adamw8bit/adam8bit: adam8bit_vs_torch.py's MLP, whose weights of
8192 and 4480 elements have 8-bit moments in blocks of 256, the second with
a shorter last block, and whose LayerNorm keeps fp32 moments; adafactor:
adafactor_vs_torch.py's net, a 4-D conv weight (a stack of 3x3 matrices),
two linear weights (cut by rows), vectors and a scalar) is exported at the
micro-batch B and compiled twice: --accum N (one process) and --world-size
N --zero K (rank r of step i reads the rows micro-batch r of the
accumulated step i reads). Checks, one line each:

  mpirun vs accum   per-step losses and the whole consolidated checkpoint
                    (parameters, 8-bit codes and absmax, Adafactor's
                    factors) against the --accum N run: fp32 reduction-order
                    tolerance, codes equal or one apart in a small
                    fraction. With --same-rows every step's N micro-batches
                    are the same rows, so the summed gradient is the same
                    bits both ways (N = 2: a + b = b + a) and the shards
                    must update bit for bit as one process does: every
                    tensor must be identical;
  mpirun vs torch   losses (Adafactor: and the final parameters and
                    factors) against the PyTorch reference optimizer at
                    the global batch N*B;
  resumed ...       (--resume) a checkpoint of N ranks resumed by one
                    process and one of one process resumed by N ranks
                    equal the --accum N run;
  plan              the per-rank plan (effc --report-json): the optimizer
                    state of the ZeRO build against the one of the same
                    build at --zero 0, and against each state tensor cut to
                    its per-rank shard (whole blocks / rows) by this
                    script's own arithmetic.
"""
import argparse
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import adafactor_vs_torch as af  # noqa: E402
import adam8bit_vs_torch as a8  # noqa: E402
from train_vs_torch import export  # noqa: E402
from zero_run import Runs, add_common_args, mpirun, setup  # noqa: E402


def make(args, rows):
    torch.manual_seed(args.seed)
    rng = np.random.RandomState(args.seed)
    if args.optimizer == "adafactor":
        model = af.SmallNet()
        with torch.no_grad():
            model.norm.weight.add_(0.1 * torch.randn(24))
            model.norm.bias.add_(0.1 * torch.randn(24))
        data = {"x": rng.randn(rows, 2, 4, 4).astype(np.float32),
                "y": rng.randint(0, 8, size=rows).astype(np.int64)}
    else:
        model = a8.MLP()
        with torch.no_grad():
            model.norm.weight.add_(0.1 * torch.randn(70))
        data = {"x": rng.randn(rows, 128).astype(np.float32),
                "y": rng.randint(0, 70, size=rows).astype(np.int64)}
    return model, data


def optimizer_flags(args):
    if args.optimizer == "adafactor":
        return ["--optimizer", "adafactor", "--lr", repr(args.lr),
                "--weight-decay", repr(args.weight_decay)]
    return ["--optimizer", args.optimizer, "--lr", repr(args.lr),
            "--weight-decay", repr(args.weight_decay)]


def torch_run(args, model, data, rows):
    """The reference optimizer at the global batch: (losses, state)."""
    if args.optimizer == "adafactor":
        c = af.cfg(lr=args.lr, weight_decay=args.weight_decay)
        return af.train_torch(model, data, rows, args.steps, c)
    opt = a8.Adam8bitReference(list(model.named_parameters()), args.lr,
                               (0.9, 0.999), 1e-8, args.weight_decay,
                               args.optimizer == "adamw8bit",
                               a8.create_dynamic_map(True),
                               a8.create_dynamic_map(False))
    losses = [a8.reference_step(model, opt, data, rows, i)
              for i in range(args.steps)]
    state = {k: v.detach().numpy().copy()
             for k, v in model.state_dict().items()}
    return losses, state


def compare(label, got, want, args, exact):
    """Problems of `got` (losses, state) against `want`."""
    problems = []
    (losses, state), (ref_losses, ref_state) = got, want
    for i, (a, b) in enumerate(zip(losses, ref_losses)):
        if (a != b) if exact else abs(a - b) > args.atol + args.rtol * abs(b):
            problems.append("step %d loss %.9g, expected %.9g" % (i, a, b))
    if len(losses) != len(ref_losses):
        problems.append("%d steps logged, expected %d" %
                        (len(losses), len(ref_losses)))
    off = codes = 0
    worst = 0.0
    for name, ref in ref_state.items():
        if name not in state:
            problems.append("misses " + name)
            continue
        a = np.asarray(state[name])
        if a.shape != ref.shape and a.size == ref.size:
            a = a.reshape(ref.shape)
        if a.shape != ref.shape or a.dtype != ref.dtype:
            problems.append("%s: %s %s, expected %s %s" %
                            (name, a.dtype, a.shape, ref.dtype, ref.shape))
            continue
        if exact:
            if a.tobytes() != ref.tobytes():
                problems.append("%s: not bit-identical (%d of %d differ)" %
                                (name, int((a != ref).sum()), a.size))
            continue
        if name.endswith("_codes"):
            diff = np.abs(a.view(np.uint8).astype(np.int64)
                          - ref.view(np.uint8).astype(np.int64))
            off += int((diff > 0).sum())
            codes += diff.size
            if diff.max(initial=0) > 1:
                problems.append("%s: codes more than one apart" % name)
            continue
        a, ref = a.astype(np.float64), ref.astype(np.float64)
        err = np.abs(a - ref)
        worst = max(worst, float(err.max(initial=0)))
        rel = args.state_rtol if name.startswith("optimizer.") else args.rtol
        scale = float(np.abs(ref).max(initial=0))
        if (err > args.atol + rel * (np.abs(ref) + 0.01 * scale)).any():
            problems.append("%s: max abs err %.3g" % (name, err.max()))
    if codes and off > args.max_off_fraction * codes:
        problems.append("%d of %d codes one apart" % (off, codes))
    extra = sorted(set(state) - set(ref_state))
    if extra and label != "mpirun vs torch":
        problems.append("not in the reference: " + ", ".join(extra))
    print("%s: %d steps, %d tensors%s, max abs err %.3g%s: %s" %
          (label, len(losses), len(ref_state),
           " bit-identical" if exact and not problems else "",
           worst, ", %d of %d codes one apart" % (off, codes) if codes else "",
           "MISMATCH " + "; ".join(problems[:6]) if problems else "ok"))
    return len(problems)


def shard_elements(shape, n, optimizer):
    """The per-rank elements of a tensor of `shape`, by the layout the docs
    state (independent of the compiler's code)."""
    numel = int(np.prod(shape, dtype=np.int64))
    if optimizer == "adafactor" and len(shape) >= 2:
        stack = int(np.prod(shape[:-2], dtype=np.int64))
        g = shape[-1] if stack == 1 else shape[-2] * shape[-1]
    elif optimizer != "adafactor" and numel >= a8.MIN_8BIT:
        g = a8.BLOCK
    else:
        g = 1
    return -(-(-(-numel // g)) // n) * g


def expected_state_bytes(model, n, optimizer):
    """One rank's optimizer state bytes (without the step counter)."""
    total = 0
    for _, p in model.named_parameters():
        shape = list(p.shape)
        s = shard_elements(shape, n, optimizer)
        if optimizer == "adafactor":
            if len(shape) >= 2:
                stack = int(np.prod(shape[:-2], dtype=np.int64))
                r, c = shape[-2], shape[-1]
                if stack == 1:  # k rows: their row factor; the column whole
                    total += 4 * (s // c) + 4 * c
                else:  # k matrices: k*R rows, k*C columns
                    total += 4 * (s // c) + 4 * (s // r)
            else:
                total += 4 * s
        elif p.numel() >= a8.MIN_8BIT:
            total += 2 * (s + 4 * (s // a8.BLOCK))  # codes + absmax, m and v
        else:
            total += 2 * 4 * s
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--optimizer", required=True,
                    choices=["adamw8bit", "adam8bit", "adafactor"])
    add_common_args(ap)
    ap.add_argument("--zero", type=int, required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--weight-decay", type=float, default=0.05)
    ap.add_argument("--same-rows", action="store_true",
                    help="every step's micro-batches are the same rows: "
                         "the ranks' update must be bit-identical to one "
                         "process's")
    ap.add_argument("--accum", type=int, default=1,
                    help="micro-batches of every rank (K): N ranks then "
                         "train like --accum N*K")
    ap.add_argument("--effc", action="append", default=[],
                    help="an extra effc flag for both builds (e.g. "
                         "--effc=--precision=bf16); the PyTorch references "
                         "are then not compared (they train in fp32 without "
                         "it)")
    ap.add_argument("--resume", action="store_true",
                    help="also: N ranks train steps-1 steps and save (the "
                         "sharded state consolidated); one process resumes "
                         "for the last step; and one process saves, N "
                         "ranks resume (each taking its blocks / rows): "
                         "both must equal the --accum N run")
    ap.add_argument("--rtol", type=float, default=2e-5)
    ap.add_argument("--atol", type=float, default=2e-6)
    ap.add_argument("--state-rtol", type=float, default=1e-3,
                    help="optimizer state against --accum N (a moment is "
                         "requantized from the slightly different sum)")
    ap.add_argument("--max-off-fraction", type=float, default=2e-3)
    ap.add_argument("--torch-atol", type=float, default=1e-4,
                    help="losses against the PyTorch reference")
    ap.add_argument("--torch-rtol", type=float, default=1e-4,
                    help="Adafactor's final state against PyTorch")
    args = ap.parse_args()
    if args.lr is None:
        args.lr = 0.03 if args.optimizer == "adafactor" else 3e-3
    setup(args)
    N, B, K = args.ranks, args.batch, args.accum
    if args.same_rows and K != 1:
        raise SystemExit("--same-rows needs --accum 1")

    model, data = make(args, args.steps * N * K * B)
    if args.same_rows:
        # Micro-batch r of step i reads rows [(i*N + r)*B, ...): make them
        # all the first micro-batch's of the step.
        for k in data:
            for i in range(args.steps * K):
                first = data[k][i * N * B:(i * N + 1) * B].copy()
                for r in range(1, N):
                    data[k][(i * N + r) * B:(i * N + r + 1) * B] = first
    onnx_path = os.path.join(args.work, "model.onnx")
    npz_path = os.path.join(args.work, "data.npz")
    export(model, (torch.from_numpy(data["x"][:B]),
                   torch.from_numpy(data["y"][:B])), ["x", "y"], onnx_path,
           output_names=["loss"])
    np.savez(npz_path, **data)
    runs = Runs(args.bin, args.work, onnx_path, npz_path,
                optimizer_flags(args) + args.effc)
    effrun = runs.effrun

    def compile(label, flags):
        return runs.compile(label, flags, report=True)

    def train(label, effx, launcher, steps=args.steps, extra=()):
        return runs.train(label, effx, launcher, steps, extra)

    accum_effx, _ = compile("accum", ["--accum", str(N * K)])
    accum = train("accum", accum_effx, [effrun])
    dp_flags = ["--world-size", str(N), "--accum", str(K)]
    dp_effx, plan = compile("zero", dp_flags + ["--zero", str(args.zero)])
    _, plan0 = compile("zero0", dp_flags + ["--zero", "0"])
    ranks = mpirun(N, effrun)
    mpi = train("mpirun", dp_effx, ranks)

    failures = compare("mpirun vs accum", mpi, accum, args, args.same_rows)
    if args.resume:
        first, _ = train("first", dp_effx, ranks, steps=args.steps - 1)
        last, state = train(
            "resumed1", accum_effx, [effrun], steps=1,
            extra=["--resume", os.path.join(args.work, "first.safetensors")])
        failures += compare("resumed at 1 rank vs accum",
                            (first + last, state), accum, args, False)
        first, _ = train("first1", accum_effx, [effrun], steps=args.steps - 1)
        last, state = train(
            "resumedN", dp_effx, ranks, steps=1,
            extra=["--resume", os.path.join(args.work, "first1.safetensors")])
        failures += compare("resumed at %d ranks vs accum" % N,
                            (first + last, state), accum, args, False)

    if args.effc:
        ref_losses, ref_state = accum  # no reference for the extra flags
    else:
        ref_losses, ref_state = torch_run(args, model, data, N * K * B)
    vs_torch = argparse.Namespace(**vars(args))
    vs_torch.atol, vs_torch.rtol = args.torch_atol, args.torch_rtol
    vs_torch.state_rtol = args.torch_rtol
    if args.optimizer != "adafactor":
        # The losses only, as adam8bit_vs_torch.py's free run: the
        # reference's maps differ from effopt's by a few ulp, which moves a
        # code now and then; its same-state steps check the update.
        ref_state = {}
    if not args.effc:
        failures += compare("mpirun vs torch", mpi, (ref_losses, ref_state),
                            vs_torch, False)

    got = plan["peak"]["by_category"]["optimizer state"]
    whole = plan0["peak"]["by_category"]["optimizer state"]
    want = expected_state_bytes(model, N, args.optimizer) + 8
    ok = got == want
    failures += not ok
    print("plan: one of %d ranks, zero %d: optimizer state %d bytes, zero 0 "
          "%d (%.3f of it); the shards by whole %s: %d: %s" %
          (N, args.zero, got, whole, got / whole,
           "rows" if args.optimizer == "adafactor" else "blocks", want,
           "ok" if ok else "MISMATCH"))
    print("%s zero %d at %d ranks: %s" % (
        args.optimizer, args.zero, N,
        "PASS" if failures == 0 else "FAIL (%d mismatches)" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
