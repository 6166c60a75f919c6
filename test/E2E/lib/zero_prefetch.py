#!/usr/bin/env python3
"""What ZeRO-3's prefetch costs, from effc's own plans.

    zero_prefetch.py --model gpt --ranks 2 --bin BUILD/bin --work DIR

Compiles the model for N ranks at --zero 3 blocking (--zero-overlap=false),
overlapped without prefetch (--zero-prefetch 0) and with the next gather
started one ahead (--zero-prefetch 1), with --report-json, and checks from
the plans alone (no figure is hard-coded): splitting the collectives
without prefetch keeps the peak; prefetching one gather ahead raises the
peak by at most one gather in flight (exactly one, in temporaries, where
the peak stays where it was): the
gathered copy of one of the sharded parameters (N times its shard) and the
copy of its shard that the gather sends, (N + 1) shards in all.
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_vs_torch as t  # noqa: E402
from zero_run import Runs, add_common_args, setup  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    add_common_args(ap)
    args = ap.parse_args()
    setup(args)
    N = args.ranks
    model, B, data = t.make(args.model, 1, 0)
    names = list(data)
    onnx_path = os.path.join(args.work, "model.onnx")
    t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names), names,
             onnx_path)
    runs = Runs(args.bin, args.work, onnx_path, None,
                ["--world-size", str(N), "--zero", "3"])
    plans = {}
    for label, flags in (("blocking", ["--zero-overlap=false"]),
                         ("prefetch 0", ["--zero-prefetch", "0"]),
                         ("prefetch 1", ["--zero-prefetch", "1"])):
        _, plan = runs.compile(label.replace(" ", ""), flags, report=True)
        plans[label] = plan["peak"]
        print("%s: peak %d bytes, temporaries %d" %
              (label, plans[label]["bytes"],
               plans[label]["by_category"]["temporaries"]))
    # One gather in flight: the whole (padded) copy of a sharded parameter
    # and the send buffer holding its shard.
    gathered = sorted({(N + 1) * x["bytes"] for x in plan["tensors"]
                       if x["category"] == "parameters"})
    failures = 0
    b, p0, p1 = plans["blocking"], plans["prefetch 0"], plans["prefetch 1"]
    if p0["bytes"] != b["bytes"]:
        print("prefetch 0 peak %d, blocking %d MISMATCH" % (p0["bytes"],
                                                          b["bytes"]))
        failures += 1
    extra = p1["bytes"] - p0["bytes"]
    extra_temp = (p1["by_category"]["temporaries"]
                  - p0["by_category"]["temporaries"])
    # Where the peak stays put, it grows by exactly one gather, all of it
    # temporaries; where the extra gather moves the peak elsewhere, it grows
    # by less: never by more than the largest gather in flight.
    if extra in gathered and extra_temp == extra:
        print("prefetch 1 adds one gather in flight: %d bytes = (N + 1) "
              "shards of %d" % (extra, extra // (N + 1)))
    elif 0 < extra < max(gathered):
        print("prefetch 1 adds %d bytes, less than one gather in flight "
              "(the peak moved)" % extra)
    else:
        print("prefetch 1 adds %d bytes (%d temporaries), not at most one "
              "gather in flight %s MISMATCH" % (extra, extra_temp, gathered))
        failures += 1
    print("%s: %s" % (args.model, "PASS" if failures == 0 else
                      "FAIL (%d mismatches)" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
