#!/usr/bin/python3
"""Build the exporter idioms that compute shapes, pads and masks from the
shapes of static tensors, for test/Import/ONNX/constant-folding.test.

Usage:
    /usr/bin/python3 test/Import/ONNX/Inputs/make_folding_models.py OUTDIR

Each model is the node chain torch 1.13 emits (opset 17,
do_constant_folding=False), on small inputs:

- fold_expand.onnx: ViT's `class_token.expand(n, -1, -1)`: Shape -> Gather
  -> Unsqueeze -> Concat(n, -1, -1) -> Reshape(-1) -> Equal(ConstantOfShape
  * -1) -> Where -> Expand, then Concat with the patches.
- fold_pad.onnx: Swin's `F.pad(x, (0, 0, 0, pad_r, 0, pad_b))` with
  `pad_r = (window - W % window) % window`: Mod/Sub -> Concat -> Cast ->
  Concat(zeros) -> Reshape(-1, 2) -> Slice(reversed) -> Transpose ->
  Reshape(-1) -> Cast -> Pad.
- fold_mask.onnx: Swin's shifted-window mask: ConstantOfShape(H, W) zeros,
  ScatterND of region numbers over Range-built indices, the difference of
  two Unsqueezes, Not(Equal 0) -> Where(-100, 0), added to the scores.
- fold_split.onnx: `k.repeat_interleave(2, dim=1)`'s Expand shape, whose
  pieces torch computes by Split of a shape: Shape -> Split -> Concat
  -> Expand.
- fold_if.onnx: an If whose condition is a comparison of a static size
  (torch.diagonal's bounds check): the branch taken is imported in its
  place. if_runtime_error.onnx: an If on a value of the input, an error.
- fold_reshape_error.onnx, fold_gather_error.onnx, fold_div_error.onnx:
  chains over constants that are wrong for their op; the importer names the
  node.

Deterministic; the valid models pass onnx.checker.check_model(full_check)
and strict shape inference. Needs Debian's python3-onnx and numpy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_test_models import Graph, check, save  # noqa: E402

F, I64 = TP.FLOAT, TP.INT64
INT64_MAX = np.iinfo(np.int64).max


def dim(g, x, axis, prefix):
    """torch's `x.size(axis)`: a scalar int64 from Shape -> Gather."""
    shape = g.op("Shape", [x], name=prefix + "/Shape")
    return g.op("Gather", [shape, g.const(axis, np.int64)],
                name=prefix + "/Gather", axis=0)


def unsqueeze0(g, scalar, name):
    return g.op("Unsqueeze", [scalar, g.const([0], np.int64)], name=name)


def fold_expand():
    g = Graph("fold_expand", seed=1)
    x = g.input("x", F, [4, 5, 8])
    token = g.param("class_token", [1, 1, 8])
    n = unsqueeze0(g, dim(g, x, 0, "/model"), "/model/Unsqueeze")
    shape = g.op("Concat", [n, g.const([-1], np.int64), g.const([-1], np.int64)],
                 name="/model/Concat", axis=0)
    flat = g.op("Reshape", [shape, g.const([-1], np.int64)], name="/model/Reshape")
    ones = g.op("ConstantOfShape", [g.const([3], np.int64)],
                name="/model/ConstantOfShape",
                value=onnx.numpy_helper.from_array(np.array([1], np.int64)))
    minus = g.op("Mul", [ones, g.const(-1, np.int64)], name="/model/Mul")
    keep = g.op("Equal", [flat, minus], name="/model/Equal")
    target = g.op("Where", [keep, ones, flat], name="/model/Where")
    tokens = g.op("Expand", [token, target], name="/model/Expand")
    h = g.op("Concat", [tokens, x], name="/model/Concat_1", axis=1)
    g.op("ReduceMean", [h], outputs=["loss"], name="/model/ReduceMean",
         keepdims=0)
    g.output("loss", F, [])
    return g.model()


def fold_pad():
    g = Graph("fold_pad", seed=2)
    x = g.input("x", F, [2, 7, 5, 4])
    w = g.param("w", [4])
    p = "/attn"
    window = g.const(3, np.int64)

    def pad_to_window(axis, tag):
        size = dim(g, x, axis, p + "/" + tag)
        rest = g.op("Mod", [size, window], name=p + "/Mod_" + tag)
        short = g.op("Sub", [window, rest], name=p + "/Sub_" + tag)
        return g.op("Mod", [short, window], name=p + "/Mod2_" + tag)

    pad_r, pad_b = pad_to_window(2, "w"), pad_to_window(1, "h")
    zero = g.const([0], np.int64)
    pads = g.op("Concat", [zero, zero, zero, unsqueeze0(g, pad_r, p + "/Unsqueeze_r"),
                           zero, unsqueeze0(g, pad_b, p + "/Unsqueeze_b")],
                name=p + "/Concat", axis=0)
    pads = g.op("Cast", [pads], name=p + "/Cast", to=I64)
    pads = g.op("Concat", [pads, g.const([0, 0], np.int64)], name=p + "/Concat_1",
                axis=0)
    pairs = g.op("Reshape", [pads, g.const([-1, 2], np.int64)], name=p + "/Reshape")
    pairs = g.op("Slice", [pairs, g.const([-1], np.int64),
                           g.const([-INT64_MAX], np.int64), g.const([0], np.int64),
                           g.const([-1], np.int64)], name=p + "/Slice")
    pairs = g.op("Transpose", [pairs], name=p + "/Transpose", perm=[1, 0])
    pads = g.op("Reshape", [pairs, g.const([-1], np.int64)], name=p + "/Reshape_1")
    pads = g.op("Cast", [pads], name=p + "/Cast_1", to=I64)
    y = g.op("Pad", [x, pads, g.const(0.0, np.float32)], name=p + "/Pad",
             mode="constant")
    y = g.op("Mul", [y, w], name=p + "/Mul")
    g.op("ReduceMean", [y], outputs=["loss"], name=p + "/ReduceMean", keepdims=0)
    g.output("loss", F, [])
    return g.model()


def fold_mask():
    """A 4x4 map of 2x2 windows shifted by 1: regions 0 | 1 | 2 by rows
    [0, 2), [2, 3), [3, 4) (columns left whole), as Swin numbers them."""
    g = Graph("fold_mask", seed=3)
    scores = g.input("scores", F, [4, 4, 4])
    q = g.param("q", [4])
    p = "/attn"
    h, w = dim(g, scores, 1, p + "/h"), dim(g, scores, 2, p + "/w")
    hw = g.op("Concat", [unsqueeze0(g, h, p + "/Unsqueeze_h"),
                         unsqueeze0(g, w, p + "/Unsqueeze_w")],
              name=p + "/Concat", axis=0)
    mask = g.op("ConstantOfShape", [hw], name=p + "/ConstantOfShape",
                value=onnx.numpy_helper.from_array(np.array([0], np.float32)))
    for count, (start, end) in [(1, (2, 3)), (2, (3, 4))]:
        rows = g.op("Range", [g.const(start, np.int64), g.const(end, np.int64),
                              g.const(1, np.int64)], name=p + "/Range_%d" % count)
        index = g.op("Unsqueeze", [rows, g.const([1], np.int64)],
                     name=p + "/Unsqueeze_%d" % count)
        updates = g.op("Expand", [g.const(float(count), np.float32),
                                  g.const([end - start, 4], np.int64)],
                       name=p + "/Expand_%d" % count)
        mask = g.op("ScatterND", [mask, index, updates],
                    name=p + "/ScatterND_%d" % count)
    windows = g.op("Reshape", [mask, g.const([2, 2, 2, 2], np.int64)],
                   name=p + "/Reshape")
    windows = g.op("Transpose", [windows], name=p + "/Transpose",
                   perm=[0, 2, 1, 3])
    windows = g.op("Reshape", [windows, g.const([4, 4], np.int64)],
                   name=p + "/Reshape_1")
    diff = g.op("Sub", [g.op("Unsqueeze", [windows, g.const([1], np.int64)],
                             name=p + "/Unsqueeze_a"),
                        g.op("Unsqueeze", [windows, g.const([2], np.int64)],
                             name=p + "/Unsqueeze_b")], name=p + "/Sub")
    same = g.op("Equal", [diff, g.const(0.0, np.float32)], name=p + "/Equal")
    other = g.op("Not", [same], name=p + "/Not")
    bias = g.op("Where", [other, g.const(-100.0, np.float32),
                          g.const(0.0, np.float32)], name=p + "/Where")
    y = g.op("Add", [scores, bias], name=p + "/Add")
    y = g.op("Softmax", [g.op("Mul", [y, q], name=p + "/Mul")], name=p + "/Softmax",
             axis=-1)
    g.op("ReduceMean", [y], outputs=["loss"], name=p + "/ReduceMean", keepdims=0)
    g.output("loss", F, [])
    return g.model()


def fold_split():
    g = Graph("fold_split", seed=1)
    x = g.input("x", F, [2, 3, 4])
    shape = g.op("Shape", [x], name="/model/Shape")
    lead, rest = g.op("Split", [shape, g.const([1, 2], np.int64)],
                      outputs=["/model/Split_0", "/model/Split_1"],
                      name="/model/Split", axis=0)
    target = g.op("Concat", [lead, g.const([2], np.int64), rest],
                  name="/model/Concat", axis=0)
    wide = g.op("Unsqueeze", [x, g.const([1], np.int64)], name="/model/Unsqueeze")
    y = g.op("Expand", [wide, target], name="/model/Expand")
    g.op("ReduceMean", [y], outputs=["loss"], name="/model/ReduceMean",
         keepdims=0)
    g.output("loss", F, [])
    return g.model()


def if_model(name, runtime):
    """loss = mean(If(cond, x * 2, x + 1)); cond is size(x, 0) > 1, or,
    with `runtime`, sum(x) > 0."""
    g = Graph(name, seed=1)
    x = g.input("x", F, [2, 3])
    if runtime:
        total = g.op("ReduceSum", [x], name="/model/ReduceSum", keepdims=0)
        cond = g.op("Greater", [total, g.const(0.0, np.float32)],
                    name="/model/Greater")
    else:
        cond = g.op("Greater", [dim(g, x, 0, "/model"), g.const(1, np.int64)],
                    name="/model/Greater")

    def branch(bname, op, operand):
        node = onnx.helper.make_node(op, [x, bname + "_c"], [bname + "_y"],
                                     name="/model/" + bname)
        c = onnx.helper.make_node(
            "Constant", [], [bname + "_c"], name="/model/" + bname + "_c",
            value=onnx.numpy_helper.from_array(np.array(operand, np.float32)))
        return onnx.helper.make_graph(
            [c, node], bname, [],
            [onnx.helper.make_tensor_value_info(bname + "_y", F, [2, 3])])
    y = g.op("If", [cond], name="/model/If",
             then_branch=branch("then", "Mul", 2.0),
             else_branch=branch("else", "Add", 1.0))
    g.op("ReduceMean", [y], outputs=["loss"], name="/model/ReduceMean",
         keepdims=0)
    g.output("loss", F, [])
    return g.model()


def fold_if():
    return if_model("fold_if", runtime=False)


def if_runtime_error():
    return if_model("if_runtime_error", runtime=True)


def error_model(name, chain):
    """x f32[2,3,4] -> chain(g, x) gives a shape for Reshape(x) -> loss."""
    g = Graph(name)
    x = g.input("x", F, [2, 3, 4])
    y = g.op("Reshape", [x, chain(g, x)], name="/Reshape")
    g.op("ReduceMean", [y], outputs=["loss"], name="/ReduceMean", keepdims=0)
    g.output("loss", F, [])
    return g.model()


def fold_reshape_error():
    # [2, 3, 4] -> Reshape([5, -1]) of the shape: 3 elements are not 5*k.
    return error_model("fold_reshape_error", lambda g, x: g.op(
        "Reshape", [g.op("Shape", [x], name="/Shape"),
                    g.const([5, -1], np.int64)], name="/bad/Reshape"))


def fold_gather_error():
    return error_model("fold_gather_error", lambda g, x: unsqueeze0(
        g, g.op("Gather", [g.op("Shape", [x], name="/Shape"),
                           g.const(3, np.int64)], name="/bad/Gather", axis=0),
        "/Unsqueeze"))


def fold_div_error():
    def chain(g, x):
        n = dim(g, x, 0, "")
        zero = g.op("Sub", [n, n], name="/Sub")
        q = g.op("Div", [n, zero], name="/bad/Div")
        return g.op("Concat", [unsqueeze0(g, q, "/Unsqueeze"),
                               g.const([-1], np.int64)], name="/Concat", axis=0)
    return error_model("fold_div_error", chain)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for make, valid in [(fold_expand, True), (fold_pad, True), (fold_mask, True),
                        (fold_split, True), (fold_if, True),
                        (if_runtime_error, True),
                        (fold_reshape_error, False), (fold_gather_error, False),
                        (fold_div_error, False)]:
        m = make()
        if valid:
            check(m, make.__name__)
        else:
            onnx.checker.check_model(m, full_check=False)
        save(m, outdir, make.__name__ + ".onnx")


if __name__ == "__main__":
    main()
