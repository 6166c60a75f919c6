#!/usr/bin/env python3
"""Gradient accumulation (effc --accum K) against PyTorch 1.13.

    accum_vs_torch.py --model gpt|cnn --accum 4 --steps 3 --bin BUILD/bin --work DIR
                      [optimizer flags as train_vs_torch.py] [--check-resume]
                      [--token-stream]

The model is exported twice: at the global batch B (compiled without
accumulation) and at the micro-batch B/K (compiled with --accum K, so one
step still consumes B rows). Both are trained by effrun on the same data.

gpt: the targets have ignored positions (-100, F.cross_entropy's
ignore_index), different in number in every micro-batch and one micro-batch
with none counted at all: the loss is the mean over the non-ignored targets
of all B rows, so the accumulated step must equal one PyTorch step at batch
B, and so must the step compiled at batch B.

cnn: BatchNorm normalises each micro-batch with its own statistics, which
differ from those of the B rows; PyTorch's reference is therefore an
accumulation loop: K forward/backward passes on the micro-batches, each loss
divided by K (equal counts), the running statistics updated by each pass in
turn, then one optimizer step; the logged loss is the mean of the K losses.

Also checks that the accumulated step plans fewer activation bytes than the
step at batch B (the memory report), that the report's total is what effrun
allocates; with --check-resume that K steps straight equal 1 step, --save,
--resume and K-1 more, bit for bit; with --token-stream that the
accumulated GPT trains from a .bin token file.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_vs_torch as t  # noqa: E402


def ignore_targets(targets, micro, seed):
    """Sets targets to -100 so that every micro-batch of `micro` rows has a
    different count of counted targets; in the first step the second
    micro-batch has none."""
    rng = np.random.RandomState(seed)
    out = targets.copy()
    rows, T = out.shape
    for r in range(rows):
        fraction = rng.uniform(0.0, 0.9) * ((r // micro) % 3) / 2
        out[r, rng.rand(T) < fraction] = -100
    out[micro:2 * micro, :] = -100
    return out


def make_optimizer(model, args):
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=args.lr,
                              momentum=args.momentum, nesterov=args.nesterov,
                              weight_decay=args.weight_decay)
    else:
        cls = torch.optim.AdamW if args.optimizer == "adamw" else torch.optim.Adam
        opt = cls(model.parameters(), lr=args.lr, betas=(args.beta1, args.beta2),
                  eps=args.eps, weight_decay=args.weight_decay)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, t.lr_lambda(args))


def state_of(model):
    state, seen = {}, set()
    for k, v in model.state_dict(keep_vars=True).items():
        if v.data_ptr() in seen:
            continue
        seen.add(v.data_ptr())
        state[k] = v.detach().numpy().copy()
    return state


def train_torch_accumulating(model, data, B, K, args):
    """K forward/backward passes per step (loss / K each), one update."""
    names = list(data)
    opt, sched = make_optimizer(model, args)
    model.train()
    losses = []
    micro = B // K
    for i in range(args.steps):
        opt.zero_grad()
        total = 0.0
        for k in range(K):
            lo = i * B + k * micro
            batch = [torch.from_numpy(data[n][lo:lo + micro]) for n in names]
            loss = model(*batch)[0]
            (loss / K).backward()
            total += float(loss)
        opt.step()
        sched.step()
        losses.append(total / K)
    return losses, state_of(model)


def compare(label, ours, ref_losses, ref_state, args, atol):
    failures = 0
    print("%s: step  effopt        torch         rel.err" % label)
    for i, (row, ref) in enumerate(zip(ours["log"], ref_losses)):
        got = row["loss"]
        ok = row["step"] == i and abs(got - ref) <= args.atol + args.rtol * abs(ref)
        failures += not ok
        print("%s: %4d  %-12.7g  %-12.7g  %.2e%s" % (
            label, i, got, ref, abs(got - ref) / max(abs(ref), 1e-30),
            "" if ok else "  MISMATCH"))
    if len(ours["log"]) != args.steps:
        print("MISMATCH %s: effrun logged %d steps" % (label, len(ours["log"])))
        failures += 1
    worst = (0.0, "")
    for name, want in ref_state.items():
        if name.endswith("num_batches_tracked") or name.endswith(".mask"):
            continue
        got = ours["state"].get(name)
        if got is None or got.shape != want.shape:
            print("MISMATCH %s: %s missing or misshapen" % (label, name))
            failures += 1
            continue
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        bound = atol + args.rtol * np.abs(want.astype(np.float64))
        if (err > bound).any():
            print("MISMATCH %s: %s: %d of %d values differ, max abs err %.3g"
                  % (label, name, int((err > bound).sum()), err.size, err.max()))
            failures += 1
        if err.size and err.max() > worst[0]:
            worst = (float(err.max()), name)
    print("%s: final state max abs err %.3g (%s)" % (label, worst[0], worst[1]))
    return failures


def effc(args, onnx_path, stem, extra):
    t.run([os.path.join(args.bin, "effc"), onnx_path, "-o", stem + ".effx",
           "--report-json", stem + ".json"] + t.effc_flags(args) + args.effc +
          extra)
    return json.load(open(stem + ".json"))


def effrun(args, stem, data, steps, extra=(), log=None, save=None):
    log = log or stem + ".jsonl"
    save = save or stem + ".safetensors"
    t.run([os.path.join(args.bin, "effrun"), stem + ".effx", "--data", data,
           "--steps", str(steps), "--log", log, "--save", save, "--quiet"]
          + list(extra))
    return {"log": [json.loads(l) for l in open(log)],
            "state": t.read_safetensors(save)}


def bits(losses):
    return [struct.unpack("<I", struct.pack("<f", x))[0] for x in losses]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=3)
    t.add_training_args(ap)
    ap.add_argument("--check-resume", action="store_true")
    ap.add_argument("--token-stream", action="store_true")
    ap.add_argument("--effc", action="append", default=[],
                    help="an extra effc flag for both compiles")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    K = args.accum

    model, B, data = t.make(args.model, args.steps, args.seed)
    micro = B // K
    assert micro * K == B, "the batch must be a multiple of --accum"
    if args.model.startswith("gpt"):
        data["targets"] = ignore_targets(data["targets"], micro, args.seed)
        counts = [int((data["targets"][k * micro:(k + 1) * micro] != -100).sum())
                  for k in range(K)]
        print("%s: counted targets per micro-batch of step 0: %s"
              % (args.model, counts))
    names = list(data)
    npz = os.path.join(args.work, "data.npz")
    np.savez(npz, **data)
    full_onnx = os.path.join(args.work, "full.onnx")
    micro_onnx = os.path.join(args.work, "micro.onnx")
    t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names), names,
             full_onnx)
    t.export(model, tuple(torch.from_numpy(data[k][:micro]) for k in names),
             names, micro_onnx)

    full_stem = os.path.join(args.work, "full")
    acc_stem = os.path.join(args.work, "accum")
    full_report = effc(args, full_onnx, full_stem, [])
    acc_report = effc(args, micro_onnx, acc_stem, ["--accum", str(K)])
    full = effrun(args, full_stem, npz, args.steps)
    acc = effrun(args, acc_stem, npz, args.steps)

    failures = 0
    atol = args.atol if args.param_atol is None else args.param_atol
    if args.model.startswith("gpt"):
        ref_losses, ref_state = t.train_torch(model, data, B, args)
        failures += compare("batch %d" % B, full, ref_losses, ref_state, args, atol)
    else:
        ref_losses, ref_state = train_torch_accumulating(model, data, B, K, args)
    failures += compare("accum %d x %d" % (K, micro), acc, ref_losses, ref_state,
                        args, atol)

    # Memory: one micro-batch's activations.
    fa = full_report["peak"]["by_category"]["activations"]
    aa = acc_report["peak"]["by_category"]["activations"]
    print("%s: planned bytes: batch %d %d (activations %d), accum %d x %d %d "
          "(activations %d)" % (args.model, B, full_report["total_bytes"], fa, K,
                                micro, acc_report["total_bytes"], aa))
    if not aa < fa:
        print("MISMATCH: accumulated activations %d not below batch %d's %d"
              % (aa, B, fa))
        failures += 1
    for label, report, run in (("full", full_report, full), ("accum", acc_report, acc)):
        if report["total_bytes"] != run["log"][0]["allocated_bytes"]:
            print("MISMATCH %s: report total %d != effrun allocated %d"
                  % (label, report["total_bytes"], run["log"][0]["allocated_bytes"]))
            failures += 1

    if args.check_resume and args.steps >= 2:
        first = effrun(args, acc_stem, npz, 1,
                       log=acc_stem + ".resume.jsonl",
                       save=acc_stem + ".resume.safetensors")
        rest = effrun(args, acc_stem, npz, args.steps - 1,
                      extra=["--resume", acc_stem + ".resume.safetensors"],
                      log=acc_stem + ".resume.jsonl",
                      save=acc_stem + ".resumed.safetensors")
        straight = bits([r["loss"] for r in acc["log"]])
        resumed = bits([r["loss"] for r in rest["log"]])
        same = straight == resumed and all(
            np.array_equal(acc["state"][k], rest["state"][k]) for k in acc["state"])
        print("%s: resume after 1 step: %s" % (args.model,
              "bit-identical" if same else "MISMATCH resumed run differs"))
        failures += not same
        del first

    if args.token_stream:
        text, _ = t.ex.text_bytes()
        tokens = os.path.join(args.work, "tokens.bin")
        np.frombuffer(text, dtype=np.uint8).astype("<u2").tofile(tokens)
        stream = effrun(args, acc_stem, tokens, 2, log=acc_stem + ".bin.jsonl",
                        save=acc_stem + ".bin.safetensors")
        finite = [np.isfinite(r["loss"]) for r in stream["log"]]
        print("%s: token stream: %d steps, losses %s" % (
            args.model, len(stream["log"]),
            " ".join("%.4f" % r["loss"] for r in stream["log"])))
        if len(finite) != 2 or not all(finite):
            print("MISMATCH: token-stream run did not log 2 finite losses")
            failures += 1

    print("%s: %s" % (args.model, "PASS" if failures == 0 else
                      "FAIL (%d mismatches)" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
