#!/usr/bin/python3
"""Build the small hand-made ONNX models used by the importer lit tests.

Usage:
    /usr/bin/python3 test/Import/ONNX/Inputs/make_test_models.py [OUTDIR]

OUTDIR defaults to the directory of this script.  The output is
deterministic (fixed seeds), so re-running it leaves git clean.  Conventions
of the effopt importer: the first graph output is the scalar loss, float
initializers are trainable parameters, graph inputs are the batch.  See
README.md next to this script for what each file tests.

Needs Debian's python3-onnx (1.12) and python3-numpy; torch is not needed.
"""
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
import onnx.checker
import onnx.shape_inference
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx import numpy_helper as nh

IR_VERSION = 8            # what onnx 1.12 (and torch 1.13) write
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

NP2TP = {np.dtype("float32"): TP.FLOAT, np.dtype("int64"): TP.INT64,
         np.dtype("bool"): TP.BOOL, np.dtype("int32"): TP.INT32}


class Graph:
    """A tiny builder over onnx.helper that names every node and tensor."""

    def __init__(self, name, seed=0):
        self.name = name
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.count = {}
        self.rng = np.random.RandomState(seed)

    def _fresh(self, prefix):
        i = self.count.get(prefix, 0)
        self.count[prefix] = i + 1
        return "%s_%d" % (prefix, i)

    def input(self, name, elem, shape):
        self.inputs.append(oh.make_tensor_value_info(name, elem, shape))
        return name

    def output(self, name, elem, shape):
        self.outputs.append(oh.make_tensor_value_info(name, elem, shape))
        return name

    def init(self, name, arr):
        self.inits.append(nh.from_array(np.ascontiguousarray(arr), name))
        return name

    def param(self, name, shape, scale=0.1):
        return self.init(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def const(self, arr, dtype=None, name=None):
        arr = np.array(arr, dtype=dtype)
        out = name or self._fresh("const")
        self.nodes.append(oh.make_node("Constant", [], [out], name=out + "_node",
                                       value=nh.from_array(arr, out)))
        return out

    def op(self, op_type, inputs, outputs=1, name=None, **attrs):
        """Add a node; outputs is a count or a list of names.  Returns the
        output name (one output) or the list of names."""
        name = name or self._fresh(op_type)
        if isinstance(outputs, int):
            outputs = ["%s_out%d" % (name, i) if outputs > 1 else name + "_out"
                       for i in range(outputs)]
        self.nodes.append(oh.make_node(op_type, list(inputs), list(outputs),
                                       name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def model(self, opset=17, doc=""):
        g = oh.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                          initializer=self.inits)
        m = oh.make_model(g, producer_name="effopt-make_test_models",
                          opset_imports=[oh.make_opsetid("", opset)],
                          ir_version=IR_VERSION, doc_string=doc)
        return m


# --------------------------------------------------------------------------
# Valid models
# --------------------------------------------------------------------------

def mlp_gemm():
    g = Graph("mlp_gemm", seed=1)
    x = g.input("x", TP.FLOAT, [4, 8])
    labels = g.input("labels", TP.INT64, [4])
    w1, b1 = g.param("fc1.weight", [16, 8]), g.param("fc1.bias", [16])
    w2, b2 = g.param("fc2.weight", [5, 16]), g.param("fc2.bias", [5])
    h = g.op("Gemm", [x, w1, b1], name="fc1", transB=1, alpha=1.0, beta=1.0)
    h = g.op("Relu", [h], name="relu1")
    logits = g.op("Gemm", [h, w2, b2], outputs=["logits"], name="fc2", transB=1)
    g.op("SoftmaxCrossEntropyLoss", [logits, labels], outputs=["loss"],
         name="loss_fn", reduction="mean")
    g.output("loss", TP.FLOAT, [])
    return g.model(doc="Gemm(transB=1)+Relu+Gemm+SoftmaxCrossEntropyLoss(mean)")


def elementwise():
    g = Graph("elementwise", seed=2)
    a = g.input("a", TP.FLOAT, [2, 3, 4])
    b = g.input("b", TP.FLOAT, [4])
    c = g.input("c", TP.FLOAT, [3, 1])
    p = g.param("scale", [4])
    t = g.op("Mul", [a, p], name="mul_param")                 # [2,3,4]*[4]
    t = g.op("Add", [t, b], name="add_bcast_4")               # [2,3,4]+[4]
    t = g.op("Sub", [t, c], name="sub_bcast_3x1")             # [2,3,4]-[3,1]
    absb = g.op("Abs", [b], name="abs_b")
    one = g.const(1.0, np.float32, name="one")
    pos = g.op("Add", [absb, one], name="b_plus_1")           # > 0
    t = g.op("Div", [t, pos], name="div_bcast_4")
    abst = g.op("Abs", [t], name="abs_t")
    post = g.op("Add", [abst, one], name="t_plus_1")          # > 0
    absc = g.op("Abs", [c], name="abs_c")
    t2 = g.op("Pow", [post, absc], name="pow_bcast_3x1")      # [2,3,4]**[3,1]
    two = g.const(2.0, np.float32, name="two")
    sq = g.op("Pow", [t, two], name="pow_scalar_2")
    n = g.op("Neg", [t], name="neg")
    e = g.op("Exp", [n], name="exp")
    l = g.op("Log", [post], name="log")
    s = g.op("Sqrt", [post], name="sqrt")
    r = g.op("Reciprocal", [post], name="reciprocal")
    th = g.op("Tanh", [t], name="tanh")
    sg = g.op("Sigmoid", [t], name="sigmoid")
    rl = g.op("Relu", [t], name="relu")
    ef = g.op("Erf", [t], name="erf")
    mx = g.op("Max", [th, sg, c], name="max3_bcast")         # variadic + broadcast
    mn = g.op("Min", [rl, ef], name="min2")
    acc = g.op("Add", [t2, sq], name="acc0")
    acc = g.op("Add", [acc, e], name="acc1")
    acc = g.op("Sub", [acc, l], name="acc2")
    acc = g.op("Add", [acc, s], name="acc3")
    acc = g.op("Mul", [acc, r], name="acc4")
    acc = g.op("Add", [acc, mx], name="acc5")
    acc = g.op("Add", [acc, mn], outputs=["y"], name="acc6")
    g.op("ReduceMean", [acc], outputs=["loss"], name="reduce_mean_all", keepdims=0)
    g.output("loss", TP.FLOAT, [])
    g.output("y", TP.FLOAT, [2, 3, 4])
    return g.model(doc="element-wise ops with broadcasting, reduced by ReduceMean(keepdims=0)")


def shape_chain():
    g = Graph("shape_chain", seed=3)
    x = g.input("x", TP.FLOAT, [2, 3, 4])
    w = g.param("w", [1, 3, 1])
    # x.view(x.size(0), -1) as torch exports it with dynamic shapes
    shp = g.op("Shape", [x], name="/Shape")
    i0 = g.const(0, np.int64, name="/Constant_output_0")            # scalar
    d0 = g.op("Gather", [shp, i0], name="/Gather", axis=0)          # scalar
    ax0 = g.const([0], np.int64, name="onnx::Unsqueeze_5")
    d0v = g.op("Unsqueeze", [d0, ax0], name="/Unsqueeze")           # [1]
    m1 = g.const([-1], np.int64, name="/Constant_1_output_0")
    newshape = g.op("Concat", [d0v, m1], name="/Concat", axis=0)    # [2]
    view = g.op("Reshape", [x, newshape], name="/Reshape")          # [2,12]
    flat = g.op("Flatten", [x], name="flatten", axis=1)             # [2,12]
    v = g.op("Add", [view, flat], name="add_view_flat")
    ax1 = g.const([1], np.int64, name="axes_1")
    u = g.op("Unsqueeze", [v, ax1], name="unsqueeze_axes_input")    # [2,1,12]
    sq = g.op("Squeeze", [u, ax1], name="squeeze_axes_input")       # [2,12]
    tr = g.op("Transpose", [x], name="transpose", perm=[2, 0, 1])   # [4,2,3]
    ex_shape = g.const([2, 3, 4], np.int64, name="expand_shape")
    ex = g.op("Expand", [w, ex_shape], name="expand")               # [2,3,4]
    cat = g.op("Concat", [x, ex], name="concat_axis2", axis=2)      # [2,3,8]
    # Slice: axis 1 reversed (step -1, end INT64_MIN), axis 2 every 2nd
    # element up to INT64_MAX.  Constant inputs, as torch emits them.
    starts = g.const([-1, 0], np.int64, name="slice_starts")
    ends = g.const([INT64_MIN, INT64_MAX], np.int64, name="slice_ends")
    axes = g.const([1, 2], np.int64, name="slice_axes")
    steps = g.const([-1, 2], np.int64, name="slice_steps")
    sl = g.op("Slice", [cat, starts, ends, axes, steps], name="slice_neg_step")  # [2,3,4]
    # no axes/steps inputs; negative end: sl[0:-1] on axis 0
    starts2 = g.const([0], np.int64, name="slice2_starts")
    ends2 = g.const([-1], np.int64, name="slice2_ends")
    sl2 = g.op("Slice", [sl, starts2, ends2], name="slice_no_axes")  # [1,3,4]
    split = g.const([1, 3], np.int64, name="split_sizes")
    s0, s1 = g.op("Split", [sl, split], outputs=2, name="split_input", axis=2)  # [2,3,1],[2,3,3]
    idn = g.op("Identity", [s1], name="identity")
    cos_shape = g.const([2, 3, 1], np.int64, name="cos_shape")
    cos = g.op("ConstantOfShape", [cos_shape], name="constant_of_shape",
               value=nh.from_array(np.array([0.5], np.float32), "value"))
    s0 = g.op("Mul", [s0, cos], name="mul_cos")
    parts = [sq, tr, s0, idn, sl2]
    means = [g.op("ReduceMean", [p_], name="mean_%d" % i, keepdims=0)
             for i, p_ in enumerate(parts)]
    g.op("Sum", means, outputs=["loss"], name="sum_means")
    g.output("loss", TP.FLOAT, [])
    return g.model(doc="shape manipulation ops (Shape/Gather/Unsqueeze/Concat/Reshape "
                       "chain of x.view(x.size(0), -1), Slice, Split, ...)")


def transformer_bits():
    B, T, C, H, V = 2, 5, 8, 2, 11
    hs = C // H
    g = Graph("transformer_bits", seed=4)
    ids = g.input("ids", TP.INT64, [B, T])
    targets = g.input("targets", TP.INT64, [B, T])
    emb = g.param("tok.weight", [V, C])
    pos = g.param("pos.weight", [T, C])
    mask = g.init("attn.mask", np.tril(np.ones((T, T), bool)).reshape(1, 1, T, T))  # bool buffer
    ln_w, ln_b = g.param("ln1.weight", [C]), g.param("ln1.bias", [C])
    ln2_w, ln2_b = g.param("ln2.weight", [C]), g.param("ln2.bias", [C])
    wqkv, bqkv = g.param("attn.c_attn.weight", [C, 3 * C]), g.param("attn.c_attn.bias", [3 * C])
    wfc, bfc = g.param("mlp.fc.weight", [C, 4 * C]), g.param("mlp.fc.bias", [4 * C])
    wpr = g.param("mlp.proj.weight", [4 * C, C])

    tok = g.op("Gather", [emb, ids], name="/tok/Gather")                # [B,T,C]
    pos_ids = g.const(np.arange(T), np.int64, name="pos_ids")
    pe = g.op("Gather", [pos, pos_ids], name="/pos/Gather", axis=0)    # [T,C]
    x = g.op("Add", [tok, pe], name="/Add")
    ratio = g.const(0.1, np.float32, name="dropout_ratio")
    train = g.const(True, np.bool_, name="dropout_training_mode")
    # Dropout as torch emits it: both outputs, the mask unused
    x, _unused_mask = g.op("Dropout", [x, ratio, train], outputs=2, name="/drop/Dropout")
    h = g.op("LayerNormalization", [x, ln_w, ln_b], name="/ln1/LayerNormalization",
             axis=-1, epsilon=1e-5)
    qkv = g.op("MatMul", [h, wqkv], name="/attn/MatMul_3dx2d")         # [B,T,3C]
    qkv = g.op("Add", [bqkv, qkv], name="/attn/Add_bias")              # bias first, as torch
    split = g.const([C, C, C], np.int64, name="qkv_split")
    q, k, v = g.op("Split", [qkv, split], outputs=3, name="/attn/Split", axis=2)
    heads = g.const([B, T, H, hs], np.int64, name="heads_shape")
    q = g.op("Transpose", [g.op("Reshape", [q, heads], name="/attn/Reshape_q")],
             name="/attn/Transpose_q", perm=[0, 2, 1, 3])
    kt = g.op("Transpose", [g.op("Reshape", [k, heads], name="/attn/Reshape_k")],
              name="/attn/Transpose_k", perm=[0, 2, 3, 1])
    v = g.op("Transpose", [g.op("Reshape", [v, heads], name="/attn/Reshape_v")],
             name="/attn/Transpose_v", perm=[0, 2, 1, 3])
    att = g.op("MatMul", [q, kt], name="/attn/MatMul_4dx4d")           # [B,H,T,T]
    scale = g.const(1.0 / np.sqrt(hs), np.float32, name="attn_scale")
    att = g.op("Mul", [att, scale], name="/attn/Mul_scale")
    # masked_fill(mask == 0, -inf) with a bool buffer, as torch 1.13 emits it
    mi = g.op("Cast", [mask], name="/attn/Cast_to_int64", to=TP.INT64)
    zero = g.const(0, np.int64, name="mask_zero")
    eq = g.op("Equal", [mi, zero], name="/attn/Equal")
    eqb = g.op("Cast", [eq], name="/attn/Cast_to_bool", to=TP.BOOL)
    ninf = g.const(-np.inf, np.float32, name="neg_inf")
    att = g.op("Where", [eqb, ninf, att], name="/attn/Where_equal")
    # torch.where(mask_bool, att, -1e9) straight from the bool initializer
    big = g.const(-1e9, np.float32, name="neg_big")
    att = g.op("Where", [mask, att, big], name="/attn/Where_bool_init")
    att = g.op("Softmax", [att], name="/attn/Softmax", axis=-1)
    att = g.op("Dropout", [att, ratio, train], name="/attn/attn_drop/Dropout")  # one output
    y = g.op("MatMul", [att, v], name="/attn/MatMul_av")                # [B,H,T,hs]
    y = g.op("Transpose", [y], name="/attn/Transpose_y", perm=[0, 2, 1, 3])
    y = g.op("Reshape", [y, g.const([B, T, C], np.int64, name="btc_shape")],
             name="/attn/Reshape_y")
    x = g.op("Add", [x, y], name="/Add_residual")
    # decomposed LayerNorm: (x - mean) / sqrt(var + eps) * w + b
    mu = g.op("ReduceMean", [x], name="/ln2/ReduceMean", axes=[-1], keepdims=1)
    d = g.op("Sub", [x, mu], name="/ln2/Sub")
    var = g.op("ReduceMean", [g.op("Pow", [d, g.const(2.0, np.float32, name="pow2")],
                                   name="/ln2/Pow")],
               name="/ln2/ReduceMean_1", axes=[-1], keepdims=1)
    var = g.op("Add", [var, g.const(1e-5, np.float32, name="ln_eps")], name="/ln2/Add_eps")
    h = g.op("Div", [d, g.op("Sqrt", [var], name="/ln2/Sqrt")], name="/ln2/Div")
    h = g.op("Add", [g.op("Mul", [h, ln2_w], name="/ln2/Mul"), ln2_b], name="/ln2/Add")
    # MLP with erf-GELU decomposition: x * 0.5 * (1 + erf(x / sqrt(2)))
    f = g.op("Add", [bfc, g.op("MatMul", [h, wfc], name="/mlp/fc/MatMul")], name="/mlp/fc/Add")
    e = g.op("Erf", [g.op("Div", [f, g.const(np.sqrt(2.0), np.float32, name="sqrt2")],
                          name="/mlp/gelu/Div")], name="/mlp/gelu/Erf")
    e = g.op("Add", [e, g.const(1.0, np.float32, name="gelu_one")], name="/mlp/gelu/Add")
    f = g.op("Mul", [f, e], name="/mlp/gelu/Mul")
    f = g.op("Mul", [f, g.const(0.5, np.float32, name="gelu_half")], name="/mlp/gelu/Mul_1")
    f = g.op("MatMul", [f, wpr], name="/mlp/proj/MatMul")
    f, dmask = g.op("Dropout", [f, ratio, train], outputs=["mlp_drop_out", "dropout_mask"],
                    name="/mlp/drop/Dropout")                            # both outputs used
    x = g.op("Add", [x, f], name="/Add_residual_1")
    # LM head tied to the token embedding: x @ tok.weight^T
    wt = g.op("Transpose", [emb], name="/head/Transpose", perm=[1, 0])
    logits = g.op("MatMul", [x, wt], outputs=["logits"], name="/head/MatMul")
    lg = g.op("Reshape", [logits, g.const([-1, V], np.int64, name="logits_shape")],
              name="/Reshape_logits")
    tg = g.op("Reshape", [targets, g.const([-1], np.int64, name="targets_shape")],
              name="/Reshape_targets")
    g.op("SoftmaxCrossEntropyLoss", [lg, tg], outputs=["loss"], name="/loss",
         reduction="mean", ignore_index=-100)
    g.output("loss", TP.FLOAT, [])
    g.output("logits", TP.FLOAT, [B, T, V])
    g.output("dropout_mask", TP.BOOL, [B, T, C])
    return g.model(doc="GPT-block pieces as torch 1.13 exports them")


def cnn_bn():
    g = Graph("cnn_bn", seed=5)
    x = g.input("x", TP.FLOAT, [2, 3, 8, 8])
    y = g.input("y", TP.INT64, [2])
    w1, b1 = g.param("conv1.weight", [4, 3, 3, 3]), g.param("conv1.bias", [4])
    gamma, beta = g.param("bn1.weight", [4]), g.param("bn1.bias", [4])
    rm = g.init("bn1.running_mean", np.zeros(4, np.float32))
    rv = g.init("bn1.running_var", np.ones(4, np.float32))
    wdw = g.param("dwconv.weight", [4, 1, 3, 3])
    wfc, bfc = g.param("fc.weight", [5, 4]), g.param("fc.bias", [5])
    h = g.op("Conv", [x, w1, b1], name="/conv1/Conv", dilations=[1, 1], group=1,
             kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])       # [2,4,8,8]
    # BatchNormalization in training mode, as torch 1.13 exports it: three
    # outputs, the updated running statistics are not used by anything.
    h, _rm_out, _rv_out = g.op("BatchNormalization", [h, gamma, beta, rm, rv], outputs=3,
                               name="/bn1/BatchNormalization", epsilon=1e-5,
                               momentum=0.9, training_mode=1)
    h = g.op("Relu", [h], name="/relu1/Relu")
    h = g.op("MaxPool", [h], name="/pool1/MaxPool", ceil_mode=0, kernel_shape=[2, 2],
             pads=[0, 0, 0, 0], strides=[2, 2])                             # [2,4,4,4]
    h = g.op("Conv", [h, wdw], name="/dwconv/Conv", dilations=[1, 1], group=4,
             kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])       # depthwise, no bias
    # nn.AvgPool2d(3, stride=2, padding=1) (count_include_pad=True) in torch 1.13:
    # explicit zero Pad, then AveragePool with pads 0.
    pads = g.const([0, 0, 1, 1, 0, 0, 1, 1], np.int64, name="/pool2/Constant_output_0")
    h = g.op("Pad", [h, pads], name="/pool2/Pad", mode="constant")          # [2,4,6,6]
    h = g.op("AveragePool", [h], name="/pool2/AveragePool", ceil_mode=0,
             kernel_shape=[3, 3], pads=[0, 0, 0, 0], strides=[2, 2])         # [2,4,2,2]
    h = g.op("GlobalAveragePool", [h], name="/gap/GlobalAveragePool")       # [2,4,1,1]
    h = g.op("Flatten", [h], name="/flatten/Flatten", axis=1)               # [2,4]
    logits = g.op("Gemm", [h, wfc, bfc], outputs=["logits"], name="/fc/Gemm",
                  alpha=1.0, beta=1.0, transB=1)
    g.op("SoftmaxCrossEntropyLoss", [logits, y], outputs=["loss"], name="/loss",
         reduction="mean", ignore_index=-100)
    g.output("loss", TP.FLOAT, [])
    g.output("logits", TP.FLOAT, [2, 5])
    return g.model(doc="Conv/BatchNorm(training)/MaxPool/Pad+AveragePool/GlobalAveragePool")


def nll_loss():
    g = Graph("nll_loss", seed=6)
    x = g.input("x", TP.FLOAT, [3, 5])
    target = g.input("target", TP.INT64, [3])
    w = g.param("w", [5, 5])
    logits = g.op("MatMul", [x, w], name="matmul")
    lp = g.op("LogSoftmax", [logits], name="log_softmax", axis=1)
    g.op("NegativeLogLikelihoodLoss", [lp, target], outputs=["loss"], name="nll",
         reduction="mean", ignore_index=-1)
    g.output("loss", TP.FLOAT, [])
    return g.model(doc="LogSoftmax + NegativeLogLikelihoodLoss(mean, ignore_index=-1)")


def opset11():
    g = Graph("opset11", seed=7)
    x = g.input("x", TP.FLOAT, [2, 3])
    w = g.param("w", [3, 4])
    h = g.op("MatMul", [x, w], name="matmul")                              # [2,4]
    h = g.op("Unsqueeze", [h], name="unsqueeze_attr", axes=[0])            # [1,2,4]
    # opset < 13 Softmax: coerces to 2-D at `axis` (normalises over dims 1..)
    h = g.op("Softmax", [h], name="softmax_axis1", axis=1)
    a, b = g.op("Split", [h], outputs=2, name="split_attr", axis=2, split=[1, 3])
    a = g.op("Squeeze", [a], name="squeeze_attr", axes=[0, 2])              # [2]
    s = g.op("ReduceSum", [b], name="reducesum_attr", axes=[2], keepdims=0)  # [1,2]
    s = g.op("Squeeze", [s], name="squeeze_attr_1", axes=[0])               # [2]
    g.op("ReduceMean", [g.op("Add", [a, s], name="add")], outputs=["loss"],
         name="mean", keepdims=0)
    g.output("loss", TP.FLOAT, [])
    return g.model(opset=11, doc="opset 11: Unsqueeze/Squeeze/Split/ReduceSum with "
                                 "attribute forms, 2-D-coercing Softmax")


def opset18():
    # onnx 1.12 knows opsets up to 17.  Its checker accepts a model that
    # declares opset 18 as long as every op resolves to a known schema
    # (<= 17); only ops whose signature is the same in opset 18 are used, so
    # this is also a genuine opset-18 model (ReduceMean without axes
    # reduces everything in both the opset-13 and opset-18 forms).
    g = Graph("opset18", seed=8)
    x = g.input("x", TP.FLOAT, [2, 3])
    w = g.param("w", [3, 4])
    h = g.op("Relu", [g.op("MatMul", [x, w], name="matmul")], name="relu")
    g.op("ReduceMean", [h], outputs=["loss"], name="mean", keepdims=0)
    g.output("loss", TP.FLOAT, [])
    return g.model(opset=18, doc="declares opset 18 (newer than onnx 1.12 knows)")


# --------------------------------------------------------------------------
# Bad / special inputs
# --------------------------------------------------------------------------

def unsupported_op():
    g = Graph("unsupported_op", seed=9)
    x = g.input("x", TP.FLOAT, [2, 5])
    w = g.param("w", [5, 5])
    h = g.op("MatMul", [x, w], name="matmul")
    hm = g.op("Hardmax", [h], name="my_hardmax_node", axis=-1)
    g.op("ReduceMean", [g.op("Mul", [hm, h], name="mul")], outputs=["loss"],
         name="mean", keepdims=0)
    g.output("loss", TP.FLOAT, [])
    return g.model(doc="valid model with an op effopt does not support (Hardmax)")


def unsupported_attr():
    g = Graph("unsupported_attr", seed=10)
    x = g.input("x", TP.FLOAT, [2, 3])
    w = g.param("w", [3, 3])
    h = g.op("MatMul", [x, w], name="matmul")
    g.op("ReduceMean", [h], outputs=["loss"], name="mean", keepdims=0)
    g.op("Cast", [h], outputs=["as_string"], name="cast_to_string", to=TP.STRING)
    g.output("loss", TP.FLOAT, [])
    g.output("as_string", TP.STRING, [2, 3])
    return g.model(doc="valid model with Cast(to=STRING)")


def symbolic_dim():
    g = Graph("symbolic_dim", seed=11)
    x = g.input("x", TP.FLOAT, ["batch", 8])
    w, b = g.param("fc.weight", [4, 8]), g.param("fc.bias", [4])
    h = g.op("Gemm", [x, w, b], name="fc", transB=1)
    g.op("ReduceMean", [h], outputs=["loss"], name="mean", keepdims=0)
    g.output("loss", TP.FLOAT, [])
    return g.model(doc="input x has a symbolic first dimension 'batch'")


def external_model(seed=12):
    g = Graph("external_data", seed=seed)
    x = g.input("x", TP.FLOAT, [4, 64])
    w, b = g.param("fc.weight", [64, 64]), g.param("fc.bias", [64])
    h = g.op("Relu", [g.op("Gemm", [x, w, b], name="fc", transB=1)], name="relu")
    g.op("ReduceMean", [h], outputs=["loss"], name="mean", keepdims=0)
    g.output("loss", TP.FLOAT, [])
    return g.model(doc="weights stored as external data")


# --------------------------------------------------------------------------

def check(m, name, strict=True):
    onnx.checker.check_model(m, full_check=True)
    if strict:
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)


def save(m, outdir, fname):
    path = os.path.join(outdir, fname)
    onnx.save_model(m, path)
    return path


def expect_load_failure(path):
    try:
        onnx.load(path)
    except Exception as e:   # protobuf DecodeError
        return type(e).__name__
    raise SystemExit("make_test_models.py: %s unexpectedly parses as a model" % path)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(outdir, exist_ok=True)
    written = []

    valid = [("mlp_gemm.onnx", mlp_gemm), ("elementwise.onnx", elementwise),
             ("shape_chain.onnx", shape_chain), ("transformer_bits.onnx", transformer_bits),
             ("cnn_bn.onnx", cnn_bn), ("nll_loss.onnx", nll_loss),
             ("opset11.onnx", opset11), ("opset18.onnx", opset18),
             ("unsupported_op.onnx", unsupported_op),
             ("unsupported_attr.onnx", unsupported_attr),
             ("symbolic_dim.onnx", symbolic_dim)]
    for fname, fn in valid:
        m = fn()
        check(m, fname)
        written.append(save(m, outdir, fname))

    # garbage.onnx: 200 random bytes that do not parse as a ModelProto
    rng = np.random.RandomState(1234)
    path = os.path.join(outdir, "garbage.onnx")
    with open(path, "wb") as f:
        f.write(rng.bytes(200))
    expect_load_failure(path)
    written.append(path)

    # truncated.onnx: the first 60% of mlp_gemm.onnx
    with open(os.path.join(outdir, "mlp_gemm.onnx"), "rb") as f:
        data = f.read()
    path = os.path.join(outdir, "truncated.onnx")
    with open(path, "wb") as f:
        f.write(data[:len(data) * 6 // 10])
    expect_load_failure(path)
    written.append(path)

    # external_data.onnx + external_data.bin; missing_external_data.onnx
    # points at missing_weights.bin, which is not written.
    for fname, loc, keep_bin in (("external_data.onnx", "external_data.bin", True),
                                 ("missing_external_data.onnx", "missing_weights.bin", False)):
        m = external_model()
        check(m, fname)
        tmp = tempfile.mkdtemp(prefix="effopt-ext-")
        try:
            tpath = os.path.join(tmp, fname)
            onnx.save_model(m, tpath, save_as_external_data=True,
                            all_tensors_to_one_file=True, location=loc,
                            size_threshold=0, convert_attribute=False)
            if keep_bin:
                onnx.checker.check_model(tpath, full_check=True)
                reloaded = onnx.load(tpath)           # loads the external data
                assert len(reloaded.graph.initializer) == 2
                shutil.copyfile(os.path.join(tmp, loc), os.path.join(outdir, loc))
                written.append(os.path.join(outdir, loc))
            shutil.copyfile(tpath, os.path.join(outdir, fname))
            written.append(os.path.join(outdir, fname))
        finally:
            shutil.rmtree(tmp)
    try:
        onnx.load(os.path.join(outdir, "missing_external_data.onnx"))
        raise SystemExit("make_test_models.py: missing_external_data.onnx loads")
    except (OSError, ValueError):
        pass

    for p in written:
        size = os.path.getsize(p)
        if size >= 20 * 1024:
            raise SystemExit("make_test_models.py: %s is %d bytes (limit 20 KB)" % (p, size))
        print("%-28s %6d bytes" % (os.path.basename(p), size))


if __name__ == "__main__":
    main()
