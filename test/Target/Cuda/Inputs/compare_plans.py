#!/usr/bin/env python3
"""Compares the per-rank memory plans of two compiles of one model (effc
--report-json), e.g. --target cuda against --target cpu at the same ZeRO
stage and world size: prints, per category of the state region, the bytes
of each tensor of that category and whether both plans hold the same
tensors with the same bytes ("same" / "DIFFERENT").

    compare_plans.py A.json B.json
"""
import json
import sys


def tensors(plan, category):
    return {x["name"]: x["bytes"] for x in plan["tensors"]
            if x["category"] == category}


def main():
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
    for category in ("parameters", "optimizer state", "buffers"):
        ta, tb = tensors(a, category), tensors(b, category)
        print("%s: %d tensors, %d bytes, %s" % (
            category, len(ta), sum(ta.values()),
            "same" if ta == tb else "DIFFERENT from %d bytes" %
            sum(tb.values())))


if __name__ == "__main__":
    main()
