#!/usr/bin/env python3
"""Checks that effrun's resident memory is the plan (docs/Effx.md).

  check_rss.py LOG.jsonl BASELINE.jsonl MODEL.effx [--tolerance F]

Every step of LOG must have
  rss_bytes <= allocated_bytes * (1 + F) + code + baseline
where code is the size of MODEL.effx's host code section(s), baseline the
largest rss_bytes of BASELINE (effrun on a model of a few hundred bytes:
the process itself — libraries, heap, thread pools) and F defaults to 0.03.
A runtime that kept the .effx's pages resident would exceed it by the
file's size.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from effx_tool import HOST_CODE, Effx  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("log")
ap.add_argument("baseline")
ap.add_argument("effx")
ap.add_argument("--tolerance", type=float, default=0.03)
a = ap.parse_args()


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


rows, base = load(a.log), load(a.baseline)
baseline = max(r["rss_bytes"] for r in base)
with open(a.effx, "rb") as f:
    effx = Effx(f.read())
code = sum(len(s[5]) for s in effx.sections if s[0] == HOST_CODE)
errors = []
for r in rows:
    limit = r["allocated_bytes"] * (1 + a.tolerance) + code + baseline
    if r["rss_bytes"] > limit:
        errors.append("step %d: rss %d > %d = allocated %d x %g + code %d + "
                      "baseline %d" % (r["step"], r["rss_bytes"], limit,
                                       r["allocated_bytes"], 1 + a.tolerance,
                                       code, baseline))
if not rows:
    errors.append("no steps")
if errors:
    sys.exit("check_rss.py: %s: %s" % (a.log, "; ".join(errors)))
r = rows[-1]
print("check_rss.py: rss %.1f MB = allocated %.1f MB + %.1f MB (code %.2f MB, "
      "baseline %.1f MB, file %.1f MB)" % (
          r["rss_bytes"] / 1e6, r["allocated_bytes"] / 1e6,
          (r["rss_bytes"] - r["allocated_bytes"]) / 1e6, code / 1e6,
          baseline / 1e6, os.path.getsize(a.effx) / 1e6))
