#!/usr/bin/env python3
"""Checks a memory report (effc --report-json) of a small GPT for copies of
weights held from the forward to the backward, for
test/Tools/effc-saved-weight-copies.test.

usage: saved_weight_copies.py export OUT.onnx
       saved_weight_copies.py check OUT.onnx REPORT.json

export writes the example GPT (examples/export_examples.py) with dimensions
chosen so that no activation has the shape of a weight: vocab 96, context
24, width 48, 4 heads, 2 layers, batch 3 (3*24 = 72 rows).

check lists every buffer of the report whose shape is the shape of a weight
of at least two dimensions or its transpose (a transposed weight, a
low-precision cast of one): the forward still makes such copies for its
GEMMs (at least one must be found, or the check could not see any). None of
them may be an activation, i.e. live from the forward into the backward.
"""
import io
import json
import os
import re
import sys
import warnings

import onnx

ROOT = os.path.dirname(os.path.abspath(__file__))
B, T, V, D, H, L = 3, 24, 96, 48, 4, 2


def export(path):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "..", "..", "..", "examples"))
    import export_examples as ex
    torch.manual_seed(0)
    model = ex.GPT(vocab=V, block_size=T, n_layer=L, d_model=D, n_head=H,
                   dropout=0.0)
    idx = torch.randint(0, V, (B, T))
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (idx, idx), f,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17,
                          input_names=["idx", "targets"],
                          output_names=["loss", "logits"])
    with open(path, "wb") as out:
        out.write(f.getvalue())


def check(onnx_path, report_path):
    model = onnx.load(onnx_path)
    shapes = set()
    for init in model.graph.initializer:
        dims = tuple(init.dims)
        if len(dims) >= 2:
            shapes.add(dims)
            shapes.add(tuple(reversed(dims)))
    report = json.load(open(report_path))
    copies, held = 0, []
    for buf in report["buffers"]:
        m = re.match(r"memref<((?:\d+x)+)", buf["type"])
        if not m:
            continue
        shape = tuple(int(d) for d in m.group(1).rstrip("x").split("x"))
        if shape not in shapes:
            continue
        copies += 1
        if buf["category"] == "activations":
            held.append(buf)
    if copies == 0:
        sys.exit("no buffer with a weight's shape: the check sees nothing")
    for buf in held:
        print("HELD %s %s %s (%s) %d..%d -> %s" % (
            buf["node"], buf["type"], buf["provenance"], buf["category"],
            buf["first"], buf["last"], buf["last_user"]))
    print("%s: %d weight-shaped buffers, %d held into the backward" %
          (report["title"], copies, len(held)))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "export":
        export(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
