#!/usr/bin/env python3
"""Checks an effrun --log file.

  check_log.py LOG FIRST COUNT [--falling] [--allocated BYTES]
               [--same-losses OTHER.jsonl] [--matches-checkpoint CKPT]
               [--allocated-from FILE]

Every line is a JSON object with step, loss, time_ms, samples_per_s,
rss_bytes and allocated_bytes; steps run FIRST..FIRST+COUNT-1 in order.
--falling: the mean loss of the last fifth is below half that of the first
fifth. --allocated: allocated_bytes equals BYTES on every line.
--same-losses: the same (step, loss) pairs as OTHER, bit for bit.
--allocated-from: BYTES is the last word of this file (effx_tool.py info).
--matches-checkpoint: COUNT is the step in CKPT's metadata instead.
"""
import argparse
import json
import sys

p = argparse.ArgumentParser()
p.add_argument("log")
p.add_argument("first", type=int)
p.add_argument("count", type=int)
p.add_argument("--falling", action="store_true")
p.add_argument("--allocated", type=int)
p.add_argument("--same-losses")
p.add_argument("--matches-checkpoint")
p.add_argument("--allocated-from")
a = p.parse_args()
if a.allocated_from:
    with open(a.allocated_from) as f:
        a.allocated = int(f.read().split()[-1])
if a.matches_checkpoint:
    import struct
    with open(a.matches_checkpoint, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        a.count = int(json.loads(f.read(n))["__metadata__"]["step"]) - a.first


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


rows = load(a.log)
errors = []
if [r["step"] for r in rows] != list(range(a.first, a.first + a.count)):
    errors.append("steps are %s" % [r["step"] for r in rows])
for r in rows:
    keys = {"step", "loss", "time_ms", "samples_per_s", "rss_bytes",
            "allocated_bytes"}
    if set(r) != keys:
        errors.append("line %s has keys %s" % (r.get("step"), sorted(r)))
        break
    if not (r["time_ms"] >= 0 and r["samples_per_s"] >= 0 and r["rss_bytes"] > 0):
        errors.append("bad figures in %s" % r)
        break
    if a.allocated is not None and r["allocated_bytes"] != a.allocated:
        errors.append("allocated_bytes %s != %s" % (r["allocated_bytes"], a.allocated))
        break
if a.falling and rows:
    n = max(1, len(rows) // 5)
    head = sum(r["loss"] for r in rows[:n]) / n
    tail = sum(r["loss"] for r in rows[-n:]) / n
    if not tail < head / 2:
        errors.append("loss does not fall: %g -> %g" % (head, tail))
if a.same_losses:
    other = load(a.same_losses)
    if [(r["step"], r["loss"]) for r in rows] != [(r["step"], r["loss"]) for r in other]:
        errors.append("losses differ from %s" % a.same_losses)
if errors:
    sys.exit("check_log.py: %s: %s" % (a.log, "; ".join(errors)))
print("check_log.py: %s: %d steps ok" % (a.log, len(rows)))
