#!/usr/bin/python3
"""Build training graphs whose float initializers no gradient reaches.

Usage:
    /usr/bin/python3 test/Import/ONNX/Inputs/make_buffer_models.py OUTDIR

`buffer-roles.test` runs it into its temporary directory. Each model has a
scalar loss first and float initializers of both kinds: ones the loss
depends on differentiably (trainable) and ones read only through a
comparison, a `where` condition, a shape query, an integer cast, a loss's
class weights, or a graph output other than the loss (buffers, as the
importer must classify them). Deterministic; every model passes
`onnx.checker.check_model(full_check=True)`. Needs Debian's python3-onnx
(1.12) and numpy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_test_models import Graph, check, save  # noqa: E402

F, I64 = TP.FLOAT, TP.INT64
MODELS = {}


def model(fn):
    MODELS[fn.__name__] = fn
    return fn


@model
def causal_mask():
    """nanoGPT's attention mask: the float buffer `attn.bias` =
    tril(ones(T, T)) is sliced to the sequence length and read only through
    `bias == 0` as the condition of masked_fill (a Where)."""
    g = Graph("causal_mask", seed=1)
    x = g.input("x", F, [2, 4, 8])
    g.init("attn.bias", np.tril(np.ones((8, 8), np.float32)).reshape(1, 8, 8))
    w = g.param("attn.c_attn.weight", [8, 8])
    scores = g.op("MatMul", [x, w], name="/attn/MatMul")
    keys = g.op("Transpose", [x], name="/attn/Transpose", perm=[0, 2, 1])
    scores = g.op("MatMul", [scores, keys], name="/attn/MatMul_1")
    starts = g.const(np.array([0, 0], np.int64))
    ends = g.const(np.array([4, 4], np.int64))
    axes = g.const(np.array([1, 2], np.int64))
    bias = g.op("Slice", ["attn.bias", starts, ends, axes], name="/attn/Slice")
    masked = g.op("Equal", [bias, g.const(np.array(0.0, np.float32))],
                  name="/attn/Equal")
    scores = g.op("Where", [masked, g.const(np.array(-np.inf, np.float32)),
                            scores], name="/attn/Where")
    att = g.op("Softmax", [scores], name="/attn/Softmax", axis=-1)
    g.op("ReduceMean", [att], outputs=["loss"], name="/ReduceMean",
         keepdims=0)
    g.output("loss", F, [])
    return g.model(doc="float tril buffer read only through == 0")


@model
def shape_and_index_reads():
    """`pos.table` is read only by Shape (its size sets a Reshape);
    `ids.table` only through a Cast to int64 used as Gather indices."""
    g = Graph("shape_and_index_reads", seed=2)
    x = g.input("x", F, [2, 6])
    g.param("pos.table", [2, 3])
    g.init("ids.table", np.array([2.0, 0.0, 1.0], np.float32))
    emb = g.param("embed.weight", [4, 6])
    ids = g.op("Cast", ["ids.table"], name="/Cast", to=I64)
    rows = g.op("Gather", [emb, ids], name="/Gather", axis=0)
    shape = g.op("Shape", ["pos.table"], name="/Shape")
    flat = g.op("ReduceProd", [shape], name="/ReduceProd", keepdims=1)
    rows = g.op("Reshape", [rows, g.const(np.array([3, 6], np.int64))],
                name="/Reshape")
    y = g.op("MatMul", [x, g.op("Transpose", [rows], name="/T", perm=[1, 0])],
             name="/MatMul")
    y = g.op("Reshape", [y, flat], name="/Reshape_1")
    g.op("ReduceSum", [y], outputs=["loss"], name="/ReduceSum", keepdims=0)
    g.output("loss", F, [])
    return g.model(doc="float initializers read only by Shape and a Cast")


@model
def class_weights_and_side_output():
    """SoftmaxCrossEntropyLoss with class weights `loss.weight` (no gradient
    rule reaches them); `probe.weight` feeds only the second graph output;
    `gate.weight` is a Where *value*, so it stays trainable."""
    g = Graph("class_weights_and_side_output", seed=3)
    x = g.input("x", F, [4, 5])
    labels = g.input("labels", I64, [4])
    w = g.param("fc.weight", [5, 5])
    g.init("loss.weight", np.array([1, 2, 1, 1, 3], np.float32))
    gate = g.param("gate.weight", [5])
    probe = g.param("probe.weight", [5, 5])
    logits = g.op("MatMul", [x, w], name="/fc/MatMul")
    positive = g.op("Greater", [logits, g.const(np.array(0.0, np.float32))],
                    name="/Greater")
    logits = g.op("Where", [positive, logits, gate], name="/Where")
    g.op("SoftmaxCrossEntropyLoss", [logits, labels, "loss.weight"],
         outputs=["loss"], name="/loss", reduction="mean")
    g.op("MatMul", [x, probe], outputs=["probe"], name="/probe/MatMul")
    g.output("loss", F, [])
    g.output("probe", F, [4, 5])
    return g.model(doc="class weights, a side output and a Where value")


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name, fn in MODELS.items():
        m = fn()
        check(m, name)
        save(m, outdir, name + ".onnx")
    print("wrote %d models to %s" % (len(MODELS), outdir))


if __name__ == "__main__":
    main()
