#!/usr/bin/env python3
"""Checks effrun runs of the dot test model against numpy.

  check_dot.py DATA.npz LOG FIRST COUNT [CKPT.safetensors]

The dot model (runtime/test/model/TestModel.c, TestCudaModel.c): batch
step i is rows [4i, 4i+4) of x; loss = sum(x w) and w -= 0.125 x^T 1, from
w = [0.5, -0.25, 0.75]. Recomputed here in float64 through step
FIRST+COUNT-1; LOG must hold steps FIRST..FIRST+COUNT-1 with these losses
(fp32 tolerance), and CKPT (if given) the w and step counter after them.
"""
import json
import struct
import sys

import numpy as np

data, log, first, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ckpt = sys.argv[5] if len(sys.argv) > 5 else None
x = np.load(data)["x"].astype(np.float64)
w = np.array([0.5, -0.25, 0.75], dtype=np.float64)
expected = {}
for step in range(first + count):
    xb = x[4 * step:4 * step + 4]
    expected[step] = float((xb @ w).sum())
    w = w - 0.125 * xb.sum(axis=0)

lines = [json.loads(line) for line in open(log)]
steps = [r["step"] for r in lines]
if steps != list(range(first, first + count)):
    sys.exit(f"{log}: steps {steps}, expected {first}..{first + count - 1}")
for r in lines:
    want = expected[r["step"]]
    if abs(r["loss"] - want) > 1e-5 + 1e-5 * abs(want):
        sys.exit(f"{log}: step {r['step']}: loss {r['loss']!r}, numpy says {want!r}")

if ckpt:
    blob = open(ckpt, "rb").read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    body = blob[8 + size:]

    def tensor(name, dtype):
        begin, end = header[name]["data_offsets"]
        return np.frombuffer(body[begin:end], dtype=dtype)

    got = tensor("w", np.float32).astype(np.float64)
    if not np.allclose(got, w, rtol=1e-5, atol=1e-5):
        sys.exit(f"{ckpt}: w = {got}, numpy says {w}")
    counter = int(tensor("optimizer.step", np.int64)[0])
    if counter != first + count:
        sys.exit(f"{ckpt}: optimizer.step = {counter}, expected {first + count}")
    if header["__metadata__"]["step"] != str(first + count):
        sys.exit(f"{ckpt}: metadata step {header['__metadata__']['step']}")
print(f"{log}: {count} losses match numpy")
