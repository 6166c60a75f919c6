#!/usr/bin/env python3
"""Rematerialization must not change numerics: every --remat policy trains
bit-identically to --remat none (fp32, dropout included), while planning
less activation memory. Also checks that the memory report's total equals
what effrun allocates, to the byte.

For each policy: effc --remat P --report-json, effrun N steps with --log and
--save; the per-step losses (float32 bits) and every checkpoint tensor must
equal those of `none` exactly; the report's activation bytes at the peak must
be smaller than none's for every policy but none.

usage: remat_identical.py --model gpt|cnn|densenet|resnet18 --bin DIR --work DIR
                          [--policies program,none,selective,full,sqrt,budget]
                          [--steps 6] [--accum K] [--strip-names]
(budget: --remat budget:B with B halfway between none and the smallest plan
of the policies before it; program: --remat none --schedule-memory=false, the
order autodiff and the optimizer built. When given, program is the reference
every other policy must equal, so eff-schedule-memory is checked too, and
none's planned peak (bytes live, placement gaps aside) must not exceed
program's; --accum K: the model compiled
at B/K rows with --accum K, so that every policy runs inside the micro-batch
loop; --strip-names: every ONNX node renamed n0, n1, ..., so that --remat full
finds blocks from the graph alone)
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

ex = t.ex


def model_and_data(name, steps):
    """The example models as examples/export_examples.py builds them: the
    GPT with dropout 0.1 (masks must be recomputed identically)."""
    if name == "gpt":
        spec = ex.make_gpt(steps)
        return spec["model"], spec["batch"], spec["data"], spec["output_names"]
    if name == "cnn":
        model, B, data = t.make("cnn", steps, 0)
        return model, B, data, ("loss", "logits")
    if name == "densenet":
        # torchvision's DenseNet, small: its node names (/features/
        # denseblock1/denselayer2/...) have no repeated scopes, so --remat
        # full finds its blocks from the dataflow.
        import torch
        import torchvision

        class DenseNetLoss(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = torchvision.models.DenseNet(
                    growth_rate=8, block_config=(3, 3), num_init_features=16,
                    bn_size=2, num_classes=10)
                # The small-input stem (a 3x3 convolution, no pooling), so
                # that the dense blocks' activations, not the stem's
                # backward, make the peak.
                features = self.net.features
                features.conv0 = torch.nn.Conv2d(3, 16, 3, padding=1,
                                                 bias=False)
                features.pool0 = torch.nn.Identity()

            def forward(self, x, y):
                logits = self.net(x)
                return torch.nn.functional.cross_entropy(logits, y), logits

        torch.manual_seed(0)
        x, y = ex.digits_data()
        idx = ex.epoch_rows(len(x), steps * 16, 0)
        images = np.repeat(x[idx].reshape(-1, 1, 8, 8), 3, axis=1)
        return DenseNetLoss(), 16, {"x": np.ascontiguousarray(images),
                                    "y": y[idx]}, ("loss", "logits")
    if name == "resnet18":
        # torchvision's ResNet-18 as people use it (10 classes), on the
        # digits scaled to 32 x 32: batch norms whose recomputation reads
        # the running statistics their forward writes.
        import torch
        import torchvision

        class ResNetLoss(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = torchvision.models.resnet18(num_classes=10)

            def forward(self, x, y):
                logits = self.net(x)
                return torch.nn.functional.cross_entropy(logits, y), logits

        torch.manual_seed(0)
        x, y = ex.digits_data()
        idx = ex.epoch_rows(len(x), steps * 4, 0)
        images = np.kron(x[idx].reshape(-1, 1, 8, 8), np.ones((1, 3, 4, 4)))
        return ResNetLoss(), 4, {"x": np.ascontiguousarray(
            images.astype(np.float32)), "y": y[idx]}, ("loss", "logits")
    raise SystemExit("unknown model " + name)


def losses_bits(path):
    out = []
    for line in open(path):
        loss = json.loads(line)["loss"]
        out.append(struct.unpack("<I", struct.pack("<f", loss))[0])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--policies", default="none,selective,full,sqrt")
    ap.add_argument("--boundary", default="")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--strip-names", action="store_true")
    ap.add_argument("--not-below-none", default="",
                    help="policies whose activations need not be below "
                         "none's (still checked bit-identical)")
    ap.add_argument("--effc", action="append", default=[],
                    help="an extra effc flag for every policy "
                         "(e.g. --effc=--lora=rank=4,targets=c_attn)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)

    model, B, data, outputs = model_and_data(args.model, args.steps)
    names = list(data)
    onnx_path = os.path.join(args.work, args.model + ".onnx")
    import torch
    first = tuple(torch.from_numpy(data[k][:B // args.accum]) for k in names)
    t.export(model, first, names, onnx_path, output_names=outputs)
    if args.strip_names:
        # Node names that say nothing about the structure ("n0", "n1", ...).
        import onnx
        m = onnx.load(onnx_path)
        for i, node in enumerate(m.graph.node):
            node.name = "n%d" % i
        onnx.save_model(m, onnx_path)
    npz = os.path.join(args.work, "data.npz")
    np.savez(npz, **data)

    results = {}
    budgets = {}
    for policy in args.policies.split(","):
        stem = os.path.join(args.work, policy)
        flags = ["--remat", policy]
        if policy == "program":
            flags = ["--remat", "none", "--schedule-memory=false"]
        if args.accum > 1:
            flags += ["--accum", str(args.accum)]
        if policy == "budget":
            # Halfway between no remat and the smallest plan so far.
            low = min(r["total"] for r in results.values())
            budget = (results["none"]["total"] + low) // 2
            budgets["budget"] = budget
            flags = ["--remat", "budget:%d" % budget] + flags[2:]
        if policy == "full" and args.boundary:
            flags += ["--remat-boundary", args.boundary]
        t.run([os.path.join(args.bin, "effc"), onnx_path, "-o", stem + ".effx",
               "--optimizer", "adamw", "--lr", "3e-3",
               "--report-json", stem + ".json"] + flags + args.effc)
        t.run([os.path.join(args.bin, "effrun"), stem + ".effx", "--data", npz,
               "--steps", str(args.steps), "--log", stem + ".jsonl",
               "--save", stem + ".safetensors", "--quiet", "--threads", "1"])
        report = json.load(open(stem + ".json"))
        log = [json.loads(l) for l in open(stem + ".jsonl")]
        allocated = log[0]["allocated_bytes"]
        if report["total_bytes"] != allocated:
            print("MISMATCH %s: report total %d != effrun allocated %d"
                  % (policy, report["total_bytes"], allocated))
        results[policy] = dict(
            losses=losses_bits(stem + ".jsonl"),
            params=t.read_safetensors(stem + ".safetensors"),
            arena=report["regions"]["arena"],
            activations=report["peak"]["by_category"]["activations"],
            peak=report["peak"]["bytes"], total=report["total_bytes"])

    base = results["program"] if "program" in results else results["none"]
    # The schedule decides what is live when; the total adds the gaps of
    # the arena's first-fit placement, which move by a few KiB with any
    # change to the buffers (GPT: none 2 KiB above program at the same
    # live peak once eff-fuse-elementwise recomputed a few chains).
    if "program" in results and "none" in results and \
            results["none"]["peak"] > base["peak"]:
        print("MISMATCH schedule: none's peak is %d bytes live, above the "
              "program order's %d" % (results["none"]["peak"], base["peak"]))
    print("%-10s %14s %14s %14s  %s" % ("policy", "activations", "arena",
                                        "allocated", "training vs none"))
    for policy, r in results.items():
        same = r["losses"] == base["losses"]
        diff = [k for k in base["params"]
                if k not in r["params"] or
                not np.array_equal(base["params"][k], r["params"][k])]
        verdict = "bit-identical" if same and not diff else "DIFFERENT"
        print("%-10s %14d %14d %14d  %s" % (policy, r["activations"], r["arena"],
                                            r["total"], verdict))
        if not same:
            print("MISMATCH %s: losses differ from none" % policy)
        if diff:
            print("MISMATCH %s: %d tensors differ from none, e.g. %s"
                  % (policy, len(diff), diff[0]))
        if policy == "budget" and not r["total"] <= budgets["budget"]:
            print("MISMATCH budget: planned %d above its budget" % r["total"])
        if policy not in ("none", "program") and \
                policy not in args.not_below_none.split(",") and \
                not r["activations"] < results["none"]["activations"]:
            print("MISMATCH %s: activations %d not below none's %d"
                  % (policy, r["activations"],
                     results["none"]["activations"]))
    print("%s: remat done" % args.model)


if __name__ == "__main__":
    main()
