#!/usr/bin/env python3
"""effc --offload optimizer: the optimizer's state in host memory trains
exactly as with the state on the device, and takes exactly its bytes off the
device.

For each precision: the model compiled twice, with and without --offload
optimizer (--report-json each), and trained by effrun for N steps with
--log and --save. Checks:
  - every step's loss and every checkpoint tensor (parameters, optimizer
    state, step counter) bit-identical between the two (same update code);
  - fp32: both equal PyTorch (torch.optim.AdamW) within --rtol/--atol;
  - the memory plan: the device's bytes (report total_bytes) drop by exactly
    the host region's bytes, the host region holds exactly the optimizer's
    state (every `optimizer.*` entry, each aligned), the arena and io are
    unchanged; the manifest marks exactly those entries "region": "host";
  - effrun allocates what the report says: allocated_bytes == total_bytes
    and host_bytes == host_bytes.

  - with --resume: the offloaded run split by --save/--resume in the middle
    ends bit-identical to the straight one (the host region is saved and
    restored).

usage: offload_vs_torch.py --model gpt|gpt6|mlp --bin DIR --work DIR
                           [--precisions fp32,bf16,fp16] [--steps 6]
                           [--optimizer adamw|adamw8bit|adafactor|sgd...]
                           [--resume]
(PyTorch is the reference for --optimizer adamw only; the other optimizers
are checked against their own run with the state on the device.)
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_vs_torch as t  # noqa: E402


def read_checkpoint(path):
    """{name: array} of a safetensors checkpoint; bf16 as raw uint16."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    dtypes = {"F32": np.float32, "I64": np.int64, "BF16": np.uint16,
              "F16": np.float16, "I8": np.int8, "BOOL": np.bool_}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b],
                                  dtype=dtypes[e["dtype"]]).reshape(e["shape"])
    return out


def cast_bits(a, suffix):
    """float32 -> bfloat16 (".bf16") or float16 (".f16") as torch casts
    (to nearest, ties to even), as the checkpoint stores it."""
    import torch
    t = torch.from_numpy(np.array(a, dtype=np.float32))
    if suffix == ".bf16":
        return t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    return t.to(torch.float16).numpy()


def loss_bits(path):
    return [struct.unpack("<I", struct.pack("<f", json.loads(l)["loss"]))[0]
            for l in open(path)]


def manifest_of(effx):
    """The manifest of an .effx (version 2: the first section, kind 1)."""
    raw = open(effx, "rb").read()
    table, count = struct.unpack_from("<QI", raw, 16)
    for i in range(count):
        e = table + 96 * i
        kind = struct.unpack_from("<I", raw, e)[0]
        offset, size = struct.unpack_from("<QQ", raw, e + 72)
        if kind == 1:
            return json.loads(raw[offset:offset + size])
    raise SystemExit("%s has no manifest" % effx)


def align(n, a):
    return (n + a - 1) // a * a


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--optimizer", default="adamw")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--overlap", action="store_true",
                    help="compile the offloaded run with --offload-overlap "
                         "(the update on effrun's worker thread); its "
                         "arena may be larger (buffers held for the tasks)")
    ap.add_argument("--hoist", action="store_true",
                    help="with --overlap: also --offload-hoist (each task "
                         "where its gradient completes, the GPU's schedule)")
    ap.add_argument("--lora", default="",
                    help="effc --lora SPEC for every run; then effrun "
                         "--merge-lora's files must be equal too")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--param-atol", type=float, default=5e-5)
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)

    model, B, data = t.make(args.model, args.steps, 0)
    names = list(data)
    onnx_path = os.path.join(args.work, args.model + ".onnx")
    npz = os.path.join(args.work, "data.npz")
    t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names),
             names, onnx_path)
    np.savez(npz, **data)

    failures = 0

    def fail(message):
        nonlocal failures
        failures += 1
        print("MISMATCH " + message)

    runs = {}
    for precision in args.precisions.split(","):
        for offload in ("none", "optimizer"):
            stem = os.path.join(args.work, "%s-%s" % (precision, offload))
            t.run([os.path.join(args.bin, "effc"), onnx_path, "-o",
                   stem + ".effx", "--optimizer", args.optimizer, "--lr",
                   repr(args.lr), "--weight-decay", "0.1", "--precision",
                   precision, "--offload", offload, "--report-json",
                   stem + ".json"] +
                  (["--lora", args.lora] if args.lora else []) +
                  (["--offload-overlap"] if args.overlap and
                   offload == "optimizer" else []) +
                  (["--offload-hoist"] if args.hoist and
                   offload == "optimizer" else []))
            t.run([os.path.join(args.bin, "effrun"), stem + ".effx", "--data",
                   npz, "--steps", str(args.steps), "--log", stem + ".jsonl",
                   "--save", stem + ".safetensors", "--quiet", "--threads",
                   "1"])
            runs[precision, offload] = {
                "report": json.load(open(stem + ".json")),
                "log": [json.loads(l) for l in open(stem + ".jsonl")],
                "losses": loss_bits(stem + ".jsonl"),
                "state": read_checkpoint(stem + ".safetensors"),
                "manifest": manifest_of(stem + ".effx"),
            }

        base, off = runs[precision, "none"], runs[precision, "optimizer"]
        if args.resume:
            # Half the steps, saved; the rest resumed from the checkpoint.
            stem = os.path.join(args.work, "%s-optimizer" % precision)
            half = args.steps // 2
            t.run([os.path.join(args.bin, "effrun"), stem + ".effx", "--data",
                   npz, "--steps", str(half), "--save", stem + "-half.st",
                   "--quiet", "--threads", "1"])
            t.run([os.path.join(args.bin, "effrun"), stem + ".effx", "--data",
                   npz, "--steps", str(args.steps - half), "--resume",
                   stem + "-half.st", "--save", stem + "-resumed.st",
                   "--quiet", "--threads", "1"])
            resumed = read_checkpoint(stem + "-resumed.st")
            same = sorted(resumed) == sorted(off["state"]) and all(
                resumed[n].tobytes() == off["state"][n].tobytes()
                for n in resumed)
            if not same:
                fail("%s: the run resumed at step %d differs from the "
                     "straight one" % (precision, half))
            else:
                print("%s: resumed at step %d, bit-identical to the straight "
                      "run" % (precision, half))
        if args.lora:
            merged = []
            for offload in ("none", "optimizer"):
                stem = os.path.join(args.work, "%s-%s" % (precision, offload))
                t.run([os.path.join(args.bin, "effrun"), stem + ".effx",
                       "--data", npz, "--steps", "0", "--resume",
                       stem + ".safetensors", "--merge-lora",
                       stem + "-merged.st", "--quiet"])
                merged.append(read_checkpoint(stem + "-merged.st"))
            if sorted(merged[0]) != sorted(merged[1]) or any(
                    merged[0][n].tobytes() != merged[1][n].tobytes()
                    for n in merged[0]):
                fail("%s: the merged LoRA weights differ" % precision)
            else:
                print("%s: merged LoRA weights bit-identical (%d tensors, no "
                      "device copies)" % (precision, len(merged[1])))
        # Training: bit for bit.
        if base["losses"] != off["losses"]:
            fail("%s: losses differ with the state offloaded" % precision)
        # Under autocast the offloaded run adds the device copies of its
        # master weights, `<param>.bf16`: each the cast of its master.
        copies = sorted(set(off["state"]) - set(base["state"]))
        suffix = {"bf16": ".bf16", "fp16": ".f16"}.get(precision)
        masters = [c[:-len(suffix)] for c in copies] if suffix else copies
        if sorted(set(base["state"]) - set(off["state"])) or (
                not suffix and copies) or not all(
                c.endswith(suffix) and c[:-len(suffix)] in base["state"]
                for c in copies):
            fail("%s: unexpected checkpoint tensors %s" % (precision, copies))
        for c, m in zip(copies, masters):
            if not np.array_equal(off["state"][c],
                                  cast_bits(off["state"][m], suffix)):
                fail("%s: %s is not the cast of %s" % (precision, c, m))
        differing = [n for n in base["state"]
                     if n in off["state"] and
                     base["state"][n].tobytes() != off["state"][n].tobytes()]
        if differing:
            fail("%s: %d tensors differ, e.g. %s" %
                 (precision, len(differing), differing[0]))
        print("%s: %d losses and %d checkpoint tensors bit-identical with "
              "--offload optimizer" % (precision, len(off["losses"]),
                                       len(base["state"])))
        if copies:
            print("%s: %d fp32 master weights on the host, their %s device "
                  "copies equal their casts" % (precision, len(copies),
                                                 suffix[1:]))

        # The plan: the device sheds exactly the optimizer state.
        m = off["manifest"]
        alignment = 64
        host = [e for e in m["state"] if e.get("region") == "host"]
        expected = [e["name"] for e in m["state"]
                    if e["name"].startswith("optimizer.") or
                    e["name"] in masters]
        if sorted(e["name"] for e in host) != sorted(expected):
            fail("%s: the host entries are not the optimizer's state and "
                 "the master weights" % precision)
        if "host" in base["manifest"]["regions"]:
            fail("%s: a host region without --offload" % precision)
        state_bytes = sum(
            np.dtype(t_dtype(e["dtype"])).itemsize * int(np.prod(e["shape"]))
            for e in host)
        host_region = sum(align(
            np.dtype(t_dtype(e["dtype"])).itemsize * int(np.prod(e["shape"])),
            alignment) for e in host)
        # Loss scaling (fp16) keeps its scale on the device, not the host.
        if any(e["name"].startswith("loss_scale.") for e in host):
            fail("%s: the loss scale went to the host" % precision)
        copy_region = sum(align(2 * int(np.prod(e["shape"])), alignment)
                          for e in m["state"] if e["name"] in copies)
        rb, ro = base["report"], off["report"]
        if m["regions"]["host"] != host_region or ro["host_bytes"] != host_region:
            fail("%s: host region %d (report %d), the optimizer's entries "
                 "take %d" % (precision, m["regions"]["host"],
                              ro["host_bytes"], host_region))
        # The state region: less the host region, plus the bf16 copies.
        if rb["regions"]["state"] - ro["regions"]["state"] != \
                host_region - copy_region:
            fail("%s: the state region went %d -> %d, not less by the host "
                 "region %d minus the device copies %d" %
                 (precision, rb["regions"]["state"], ro["regions"]["state"],
                  host_region, copy_region))
        if ro["regions"]["io"] != rb["regions"]["io"]:
            fail("%s: the io region changed" % precision)
        # Offloading adds nothing to the arena. eff-schedule-memory orders
        # each step for its own plan (a heuristic whose choices may differ
        # by a few KB of placement between the two steps), so the arena is
        # compared on both steps in the order autodiff and the optimizer
        # built (--schedule-memory=false).
        if not args.overlap:
            arenas = []
            for offload in ("none", "optimizer"):
                stem = os.path.join(args.work,
                                    "%s-%s-unordered" % (precision, offload))
                t.run([os.path.join(args.bin, "effc"), onnx_path, "-o",
                       stem + ".effx", "--optimizer", args.optimizer,
                       "--lr", repr(args.lr), "--weight-decay", "0.1",
                       "--precision", precision, "--offload", offload,
                       "--schedule-memory=false", "--report-json",
                       stem + ".json"] +
                      (["--lora", args.lora] if args.lora else []) +
                      (["--offload-hoist"] if args.hoist and
                       offload == "optimizer" else []))
                arenas.append(json.load(open(stem + ".json"))["regions"]
                              ["arena"])
            if arenas[1] > arenas[0]:
                fail("%s: the arena grew with --offload optimizer: %d -> %d "
                     "(--schedule-memory=false)" % (precision, arenas[0],
                                                   arenas[1]))
        if rb["total_bytes"] - ro["total_bytes"] != host_region - copy_region \
                + rb["regions"]["arena"] - ro["regions"]["arena"]:
            fail("%s: device bytes %d -> %d do not add up" %
                 (precision, rb["total_bytes"], ro["total_bytes"]))
        # At the peak the device counts what stayed (the loss scale).
        moved = sum(np.dtype(t_dtype(e["dtype"])).itemsize *
                    int(np.prod(e["shape"])) for e in host
                    if e["name"].startswith("optimizer."))
        opt_b = rb["peak"]["by_category"]["optimizer state"]
        opt_o = ro["peak"]["by_category"]["optimizer state"]
        if opt_b - opt_o != moved:
            fail("%s: the device counts %d bytes of optimizer state at the "
                 "peak, %d before, %d moved" % (precision, opt_o, opt_b,
                                                moved))
        # The runtime allocates the plan.
        for name, run in (("none", base), ("optimizer", off)):
            first = run["log"][0]
            if first["allocated_bytes"] != run["report"]["total_bytes"]:
                fail("%s --offload %s: effrun allocated %d, the report says %d"
                     % (precision, name, first["allocated_bytes"],
                        run["report"]["total_bytes"]))
            if first.get("host_bytes", 0) != run["report"]["host_bytes"]:
                fail("%s --offload %s: effrun host bytes %d, the report says "
                     "%d" % (precision, name, first.get("host_bytes", 0),
                             run["report"]["host_bytes"]))
        print("%s: device %d -> %d bytes (-%d), host %d bytes = %d bytes in "
              "%d tensors (%d master weights), device copies %d bytes, arena "
              "%d -> %d" %
              (precision, rb["total_bytes"], ro["total_bytes"],
               rb["total_bytes"] - ro["total_bytes"], ro["host_bytes"],
               state_bytes, len(host), len(masters), copy_region,
               rb["regions"]["arena"], ro["regions"]["arena"]))

    # PyTorch, fp32: the offloaded run is the reference run bit for bit,
    # so it is compared once.
    if ("fp32", "optimizer") in runs and args.optimizer == "adamw":
        targs = argparse.Namespace(
            optimizer="adamw", lr=args.lr, beta1=0.9, beta2=0.999, eps=1e-8,
            weight_decay=0.1, momentum=0.0, nesterov=False,
            schedule="constant", warmup_steps=0, total_steps=0, min_lr=0.0,
            clip_grad_norm=0.0, steps=args.steps)
        ref_losses, ref_state = t.train_torch(model, data, B, targs)
        off = runs["fp32", "optimizer"]
        for i, (row, ref) in enumerate(zip(off["log"], ref_losses)):
            if abs(row["loss"] - ref) > args.atol + args.rtol * abs(ref):
                fail("fp32 step %d: loss %.7g, torch %.7g" %
                     (i, row["loss"], ref))
        worst = 0.0
        for name, want in ref_state.items():
            if name.endswith("num_batches_tracked") or name.endswith(".mask"):
                continue
            got = off["state"].get(name)
            if got is None or got.shape != want.shape:
                fail("fp32: %s missing or misshapen" % name)
                continue
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            if (err > args.param_atol + args.rtol * np.abs(want)).any():
                fail("fp32: %s differs from torch by %.3g" %
                     (name, err.max()))
            worst = max(worst, float(err.max()) if err.size else 0.0)
        print("fp32 --offload optimizer vs torch.optim.AdamW: %d losses, "
              "final parameters max abs err %.3g" % (len(ref_losses), worst))

    print("%s: %s" % (args.model, "PASS" if not failures else
                      "FAIL (%d mismatches)" % failures))
    sys.exit(1 if failures else 0)


def t_dtype(name):
    return {"float32": np.float32, "int64": np.int64, "int8": np.int8,
            "bfloat16": np.uint16, "float16": np.float16,
            "bool": np.bool_}[name]


if __name__ == "__main__":
    main()
