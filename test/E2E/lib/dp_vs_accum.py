#!/usr/bin/env python3
"""Data parallel (effc --world-size N, eff-zero stage 0) on MPI against
--accum N on one process and against PyTorch at the global batch.

    dp_vs_accum.py --model mlp --ranks 2 --steps 3 --bin BUILD/bin --work DIR
                   [--accum K] [optimizer flags as train_vs_torch.py]

The model is exported at the micro-batch B and compiled twice: with
--accum N (one process, N*B rows a step) and with --world-size N (each of N
ranks B rows a step; rank r of step i reads rows [(i*N + r)*B, ...), the
rows micro-batch r of the accumulated step i reads). The first is run by
effrun, the second by `mpirun -np N effrun` and by `effrun --nproc N`.
Per-step losses and final parameters must equal each other (fp32
reduction-order tolerance) and PyTorch's, trained with batch N*B. With
--accum K every rank accumulates K micro-batches, and N ranks train like
--accum N*K (batch N*K*B). The GPT's
targets have ignored positions in different numbers per rank: its token
mean must be the global one (weighted by every rank's count).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_vs_torch as t  # noqa: E402
from zero_run import Runs, add_common_args, mpirun, run, setup  # noqa: E402


def compare(label, losses, state, ref_losses, ref_state, args):
    failures = 0
    for i, (got, ref) in enumerate(zip(losses, ref_losses)):
        if abs(got - ref) > args.atol + args.rtol * abs(ref):
            print("%s: step %d loss %.8g, expected %.8g MISMATCH" % (label, i, got, ref))
            failures += 1
    if len(losses) != len(ref_losses):
        print("%s: %d steps logged, expected %d MISMATCH" % (label, len(losses), len(ref_losses)))
        failures += 1
    worst = 0.0
    for name, want in ref_state.items():
        if name.endswith(".mask") and name not in state:
            continue  # a constant buffer folded into the code
        if name not in state:
            print("%s: checkpoint misses %r MISMATCH" % (label, name))
            failures += 1
            continue
        err = np.abs(state[name].astype(np.float64) - want.astype(np.float64))
        bound = args.atol + args.rtol * np.abs(want.astype(np.float64))
        if (err > bound).any():
            print("%s: %s differs, max abs err %.3g MISMATCH" % (label, name, err.max()))
            failures += 1
        worst = max(worst, float(err.max()) if err.size else 0.0)
    print("%s: %d steps, %d tensors, max abs param err %.3g" %
          (label, len(losses), len(ref_state), worst))
    return failures


def check_rank_memory(log, ranks, effc_cmd, work):
    """Every line of rank 0's log lists every rank's memory after the step:
    the planned bytes (the plan of one rank, from effc --report-json) and
    the resident memory, which holds at least the planned regions."""
    report = os.path.join(work, "plan.json")
    run(effc_cmd + ["-o", os.path.join(work, "plan.effx"), "--report-json",
                    report])
    planned = json.load(open(report))["total_bytes"]
    failures = 0
    lines = [json.loads(line) for line in open(log)]
    for rec in lines:
        got = rec.get("ranks", [])
        if [r["rank"] for r in got] != list(range(ranks)):
            print("step %d: ranks %s in the log, expected 0..%d MISMATCH" %
                  (rec["step"], [r["rank"] for r in got], ranks - 1))
            failures += 1
            continue
        for r in got:
            if r["allocated_bytes"] != planned:
                print("step %d: rank %d planned %d bytes, the plan says %d "
                      "MISMATCH" % (rec["step"], r["rank"],
                                    r["allocated_bytes"], planned))
                failures += 1
            if r["rss_bytes"] < planned:
                print("step %d: rank %d resident %d bytes, below its plan's "
                      "%d MISMATCH" % (rec["step"], r["rank"], r["rss_bytes"],
                                       planned))
                failures += 1
    print("rank memory: %d steps, %d ranks, each planned %d bytes" %
          (len(lines), ranks, planned))
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    add_common_args(ap)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--zero", type=int, default=0,
                    help="ZeRO stage of the data-parallel build (effc "
                         "--zero): 1 shards the optimizer state, 2 the "
                         "gradients too")
    ap.add_argument("--keep-gathered", action="store_true",
                    help="stage 3: effc --zero-keep-gathered (each parameter "
                         "gathered once, kept from forward to backward)")
    ap.add_argument("--no-nproc", action="store_true",
                    help="skip the effrun --nproc run (mpirun only)")
    ap.add_argument("--resume", action="store_true",
                    help="also: N ranks train steps-1 steps and save; one "
                         "process (--accum N*K) resumes from that checkpoint "
                         "for the last step, and must equal the --accum run "
                         "of all steps (a ZeRO checkpoint is consolidated: "
                         "whole optimizer state under single-process names); "
                         "and the other way round")
    ap.add_argument("--vs-blocking", action="store_true",
                    help="also: the same build with blocking collectives "
                         "(effc --zero-overlap=false) on mpirun; the "
                         "overlapped run must be bit-identical to it")
    ap.add_argument("--rank-memory", action="store_true",
                    help="also: rank 0's log carries every rank's memory "
                         "after each step: planned bytes equal to effc "
                         "--report-json's total, resident memory at least "
                         "that")
    ap.add_argument("--accum", type=int, default=1,
                    help="micro-batches of every rank (K): N ranks then "
                         "train like --accum N*K")
    ap.add_argument("--effc", action="append", default=[],
                    help="an extra effc flag for both builds (e.g. "
                         "--effc=--precision=bf16 --effc=--remat=selective)")
    ap.add_argument("--torch-rtol", type=float, default=None,
                    help="tolerance against PyTorch fp32 (default --rtol): "
                         "looser under --precision bf16, whose products "
                         "round to bf16")
    ap.add_argument("--torch-atol", type=float, default=None)
    t.add_training_args(ap)
    args = ap.parse_args()
    setup(args)
    N, K = args.ranks, args.accum

    model, B, data = t.make(args.model, args.steps * N * K, args.seed)
    if args.model == "gpt":
        # Ignored targets (-100) in a different number on every rank, one
        # rank of step 0 with none counted: the loss is the global token
        # mean, which weighs each rank by its count.
        import accum_vs_torch
        data["targets"] = accum_vs_torch.ignore_targets(data["targets"], B,
                                                        args.seed)
    names = list(data)
    onnx_path = os.path.join(args.work, "model.onnx")
    npz_path = os.path.join(args.work, "data.npz")
    t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names), names,
             onnx_path)
    np.savez(npz_path, **data)
    runs = Runs(args.bin, args.work, onnx_path, npz_path,
                t.effc_flags(args) + args.effc)
    compile = runs.compile
    effc, effrun = runs.effc, runs.effrun
    ranks = mpirun(N, effrun)

    def train(label, effx, launcher, steps=args.steps, extra=()):
        return runs.train(label, effx, launcher, steps, extra)

    accum_effx = compile("accum", ["--accum", str(N * K)])
    accum = train("accum", accum_effx, [effrun])
    dp = compile("dp", ["--world-size", str(N), "--accum", str(K),
                        "--zero", str(args.zero)]
                 + (["--zero-keep-gathered"] if args.keep_gathered else []))
    mpi = train("mpirun", dp, ranks)
    failures = 0
    if args.vs_blocking:
        blocking = train("blocking", compile(
            "blocking", ["--world-size", str(N), "--accum", str(K),
                         "--zero", str(args.zero), "--zero-overlap=false"]
            + (["--zero-keep-gathered"] if args.keep_gathered else [])),
            ranks)
        exact = argparse.Namespace(**vars(args))
        exact.rtol = exact.atol = 0.0
        failures += compare("overlapped vs blocking (bit-identical)", *mpi,
                            *blocking, exact)
    if args.rank_memory:
        failures += check_rank_memory(
            os.path.join(args.work, "mpirun.jsonl"), N,
            [effc, onnx_path] + t.effc_flags(args) + args.effc
            + ["--world-size", str(N), "--accum", str(K), "--zero",
               str(args.zero)], args.work)
    nproc = None if args.no_nproc else train(
        "nproc", dp, [effrun], extra=["--nproc", str(N)])
    # Only rank 0 writes: one log line per step, not N.
    ref_losses, ref_state = t.train_torch(model, data, N * K * B, args)

    vs_torch = argparse.Namespace(**vars(args))
    if args.torch_rtol is not None:
        vs_torch.rtol = args.torch_rtol
    if args.torch_atol is not None:
        vs_torch.atol = args.torch_atol
    failures += compare("accum vs torch", *accum, ref_losses, ref_state,
                        vs_torch)
    failures += compare("mpirun vs accum", *mpi, *accum, args)
    if nproc:
        failures += compare("nproc vs accum", *nproc, *accum, args)
    failures += compare("mpirun vs torch", *mpi, ref_losses, ref_state,
                        vs_torch)
    if args.resume:
        # The first steps on N ranks, the last on one process from their
        # checkpoint: the same training as --accum N*K throughout.
        first, _ = train("first", dp, ranks, steps=args.steps - 1)
        last, state = train(
            "resumed", accum_effx, [effrun], steps=1,
            extra=["--resume", os.path.join(args.work, "first.safetensors")])
        failures += compare("resumed at 1 rank vs accum", first + last, state,
                            *accum, args)
        # And back: one process first, N ranks resume (each takes its
        # shard of the whole optimizer state).
        first, _ = train("first1", accum_effx, [effrun],
                         steps=args.steps - 1)
        last, state = train(
            "resumedN", dp, ranks, steps=1,
            extra=["--resume", os.path.join(args.work, "first1.safetensors")])
        failures += compare("resumed at %d ranks vs accum" % N, first + last,
                            state, *accum, args)
    print("%s: %s" % (args.model, "PASS" if failures == 0 else
                      "FAIL (%d mismatches)" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
