#!/usr/bin/python3
"""Build one tiny ONNX model per converter that composes eff ops.

Usage:
    /usr/bin/python3 test/Import/ONNX/Inputs/make_converter_models.py [OUTDIR]

OUTDIR defaults to the `converters/` folder next to this script. Each model
holds one op (or one exporter idiom) on small inputs, so the lit tests can
check the exact eff IR its converter builds: activations, index-driven ops,
composed reductions, rounding, pad modes, ConvTranspose, Einsum,
InstanceNormalization, and the decomposed LayerNorm and tanh-GELU forms that
RecognizeComposites turns into single ops. Models have one output `y` and are
not training graphs. Deterministic (fixed seeds); every model passes
`onnx.checker.check_model(full_check=True)` and strict shape inference.
Needs Debian's python3-onnx (1.12) and numpy.
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


def unary(name, op, shape=(2, 3), **attrs):
    g = Graph(name)
    x = g.input("x", F, list(shape))
    g.op(op, [x], outputs=["y"], name=name, **attrs)
    g.output("y", F, list(shape))
    return g.model()


# --------------------------------------------------------------------------
# Activations (ConvertActivation.cpp)
# --------------------------------------------------------------------------

@model
def leaky_relu():
    return unary("leaky_relu", "LeakyRelu", alpha=0.2)


@model
def prelu():
    g = Graph("prelu")
    x = g.input("x", F, [2, 3, 4])
    slope = g.param("slope", [3, 1])
    g.op("PRelu", [x, slope], outputs=["y"], name="prelu")
    g.output("y", F, [2, 3, 4])
    return g.model()


@model
def elu():
    return unary("elu", "Elu", alpha=0.5)


@model
def celu():
    return unary("celu", "Celu", alpha=2.0)


@model
def selu():
    return unary("selu", "Selu")


@model
def softplus():
    return unary("softplus", "Softplus")


@model
def softsign():
    return unary("softsign", "Softsign")


@model
def hard_sigmoid():
    return unary("hard_sigmoid", "HardSigmoid", alpha=0.25, beta=0.4)


@model
def hard_swish():
    return unary("hard_swish", "HardSwish")


@model
def clip():
    g = Graph("clip")
    x = g.input("x", F, [2, 3])
    lo = g.const(np.float32(-0.5), np.float32, name="lo")
    hi = g.const(np.float32(0.75), np.float32, name="hi")
    g.op("Clip", [x, lo, hi], outputs=["y"], name="clip")
    g.output("y", F, [2, 3])
    return g.model()


@model
def clip_min_only():
    g = Graph("clip_min_only")
    x = g.input("x", F, [2, 3])
    lo = g.const(np.float32(0.0), np.float32, name="lo")
    g.op("Clip", [x, lo], outputs=["y"], name="clip")
    g.output("y", F, [2, 3])
    return g.model()


@model
def thresholded_relu():
    return unary("thresholded_relu", "ThresholdedRelu", alpha=0.5)


# --------------------------------------------------------------------------
# Index-driven ops (ConvertIndexing.cpp)
# --------------------------------------------------------------------------

@model
def trilu():
    g = Graph("trilu")
    x = g.input("x", F, [3, 4])
    k = g.const(1, np.int64, name="k")
    g.op("Trilu", [x, k], outputs=["y"], name="trilu", upper=0)
    g.output("y", F, [3, 4])
    return g.model()


@model
def one_hot():
    g = Graph("one_hot")
    idx = g.input("indices", I64, [3])
    depth = g.const(4, np.int64, name="depth")
    values = g.const([0.0, 1.0], np.float32, name="values")
    g.op("OneHot", [idx, depth, values], outputs=["y"], name="one_hot", axis=-1)
    g.output("y", F, [3, 4])
    return g.model()


@model
def tile():
    g = Graph("tile")
    x = g.input("x", F, [2, 3])
    repeats = g.const([2, 1], np.int64, name="repeats")
    g.op("Tile", [x, repeats], outputs=["y"], name="tile")
    g.output("y", F, [4, 3])
    return g.model()


@model
def gather_elements():
    g = Graph("gather_elements")
    x = g.input("x", F, [3, 4])
    idx = g.input("indices", I64, [3, 2])
    g.op("GatherElements", [x, idx], outputs=["y"], name="gather_elements", axis=1)
    g.output("y", F, [3, 2])
    return g.model()


@model
def scatter_elements():
    g = Graph("scatter_elements")
    x = g.input("x", F, [3, 4])
    idx = g.input("indices", I64, [3, 1])
    upd = g.input("updates", F, [3, 1])
    g.op("ScatterElements", [x, idx, upd], outputs=["y"], name="scatter_elements", axis=1)
    g.output("y", F, [3, 4])
    return g.model()


@model
def scatter_nd():
    g = Graph("scatter_nd")
    x = g.input("x", F, [3, 4])
    idx = g.const([[0], [2]], np.int64, name="indices")
    upd = g.input("updates", F, [2, 4])
    g.op("ScatterND", [x, idx, upd], outputs=["y"], name="scatter_nd")
    g.output("y", F, [3, 4])
    return g.model()


@model
def cumsum():
    g = Graph("cumsum")
    x = g.input("x", F, [2, 3])
    axis = g.const(1, np.int64, name="axis")
    g.op("CumSum", [x, axis], outputs=["y"], name="cumsum", exclusive=1, reverse=1)
    g.output("y", F, [2, 3])
    return g.model()


@model
def depth_to_space():
    g = Graph("depth_to_space")
    x = g.input("x", F, [1, 8, 2, 2])
    g.op("DepthToSpace", [x], outputs=["y"], name="depth_to_space", blocksize=2,
         mode="CRD")
    g.output("y", F, [1, 2, 4, 4])
    return g.model()


@model
def space_to_depth():
    g = Graph("space_to_depth")
    x = g.input("x", F, [1, 2, 4, 4])
    g.op("SpaceToDepth", [x], outputs=["y"], name="space_to_depth", blocksize=2)
    g.output("y", F, [1, 8, 2, 2])
    return g.model()


@model
def resize_nearest():
    """nn.Upsample(scale_factor=2, mode='nearest') as torch 1.13 exports it."""
    g = Graph("resize_nearest")
    x = g.input("x", F, [1, 1, 2, 3])
    scales = g.const([1.0, 1.0, 2.0, 2.0], np.float32, name="scales")
    g.op("Resize", [x, "", scales], outputs=["y"], name="resize_nearest",
         mode="nearest", coordinate_transformation_mode="asymmetric",
         nearest_mode="floor")
    g.output("y", F, [1, 1, 4, 6])
    return g.model()


@model
def resize_linear():
    """Bilinear resize of the height only, to given sizes (half_pixel)."""
    g = Graph("resize_linear")
    x = g.input("x", F, [1, 1, 2, 3])
    sizes = g.const([1, 1, 4, 3], np.int64, name="sizes")
    g.op("Resize", [x, "", "", sizes], outputs=["y"], name="resize_linear",
         mode="linear", coordinate_transformation_mode="half_pixel")
    g.output("y", F, [1, 1, 4, 3])
    return g.model()


# --------------------------------------------------------------------------
# Reductions (ConvertReduction.cpp)
# --------------------------------------------------------------------------

def reduce(name, op, out_shape, elem=F, **attrs):
    g = Graph(name)
    x = g.input("x", F, [2, 3])
    g.op(op, [x], outputs=["y"], name=name, **attrs)
    g.output("y", elem, out_shape)
    return g.model()


@model
def reduce_l1():
    return reduce("reduce_l1", "ReduceL1", [2], axes=[1], keepdims=0)


@model
def reduce_l2():
    return reduce("reduce_l2", "ReduceL2", [2, 1], axes=[1], keepdims=1)


@model
def reduce_sum_square():
    return reduce("reduce_sum_square", "ReduceSumSquare", [1, 3], axes=[0])


@model
def reduce_log_sum():
    return reduce("reduce_log_sum", "ReduceLogSum", [2, 1], axes=[-1])


@model
def reduce_log_sum_exp():
    return reduce("reduce_log_sum_exp", "ReduceLogSumExp", [2], axes=[1], keepdims=0)


@model
def argmax():
    return reduce("argmax", "ArgMax", [2], elem=I64, axis=1, keepdims=0)


@model
def argmin_last():
    return reduce("argmin_last", "ArgMin", [1, 3], elem=I64, axis=0,
                  select_last_index=1)


@model
def reduce_prod_shape():
    """x.numel() as torch's var/std exports compute it: folds to 6."""
    g = Graph("reduce_prod_shape")
    x = g.input("x", F, [2, 3])
    shape = g.op("Shape", [x], name="shape")
    n = g.op("ReduceProd", [shape], name="numel", keepdims=0)
    nf = g.op("Cast", [n], name="cast", to=F)
    g.op("Div", [x, nf], outputs=["y"], name="div")
    g.output("y", F, [2, 3])
    return g.model()


@model
def reduce_prod_runtime():
    return reduce("reduce_prod_runtime", "ReduceProd", [2, 1], axes=[1])


# --------------------------------------------------------------------------
# Rounding and math (ConvertElementwise.cpp)
# --------------------------------------------------------------------------

@model
def floor():
    return unary("floor", "Floor")


@model
def ceil():
    return unary("ceil", "Ceil")


@model
def round_even():
    return unary("round_even", "Round")


@model
def sign():
    return unary("sign", "Sign")


@model
def is_nan():
    g = Graph("is_nan")
    x = g.input("x", F, [2, 3])
    g.op("IsNaN", [x], outputs=["y"], name="is_nan")
    g.output("y", TP.BOOL, [2, 3])
    return g.model()


@model
def is_inf():
    g = Graph("is_inf")
    x = g.input("x", F, [2, 3])
    g.op("IsInf", [x], outputs=["y"], name="is_inf", detect_negative=0)
    g.output("y", TP.BOOL, [2, 3])
    return g.model()


@model
def mod_int():
    g = Graph("mod_int")
    a = g.input("a", I64, [2, 3])
    b = g.input("b", I64, [3])
    g.op("Mod", [a, b], outputs=["y"], name="mod")
    g.output("y", I64, [2, 3])
    return g.model()


@model
def sin_constant():
    """Sinusoidal positions computed from a Range: Sin and Cos fold."""
    g = Graph("sin_constant")
    x = g.input("x", F, [4])
    start = g.const(0.0, np.float32, name="start")
    limit = g.const(4.0, np.float32, name="limit")
    delta = g.const(1.0, np.float32, name="delta")
    pos = g.op("Range", [start, limit, delta], name="range")
    s = g.op("Sin", [pos], name="sin")
    c = g.op("Cos", [pos], name="cos")
    sc = g.op("Add", [s, c], name="add_sin_cos")
    g.op("Add", [x, sc], outputs=["y"], name="add")
    g.output("y", F, [4])
    return g.model()


@model
def sin_runtime():
    return unary("sin_runtime", "Sin")


# --------------------------------------------------------------------------
# Pad modes (ConvertShape.cpp)
# --------------------------------------------------------------------------

def pad(name, mode, pads, out_shape):
    g = Graph(name)
    x = g.input("x", F, [2, 4])
    p = g.const(pads, np.int64, name="pads")
    g.op("Pad", [x, p], outputs=["y"], name=name, mode=mode)
    g.output("y", F, out_shape)
    return g.model()


@model
def pad_reflect():
    return pad("pad_reflect", "reflect", [0, 2, 0, 1], [2, 7])


@model
def pad_edge():
    return pad("pad_edge", "edge", [1, 0, 0, 2], [3, 6])


@model
def pad_crop():
    return pad("pad_crop", "constant", [0, -1, 1, 1], [3, 4])


# --------------------------------------------------------------------------
# ConvTranspose, Einsum (ConvertContraction.cpp)
# --------------------------------------------------------------------------

@model
def conv_transpose():
    """ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2)."""
    g = Graph("conv_transpose", seed=5)
    x = g.input("x", F, [1, 4, 3, 3])
    w = g.param("w", [4, 1, 3, 3])
    b = g.param("b", [2])
    g.op("ConvTranspose", [x, w, b], outputs=["y"], name="conv_transpose",
         strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1], group=2,
         kernel_shape=[3, 3])
    g.output("y", F, [1, 2, 6, 6])
    return g.model()


@model
def einsum_batched():
    g = Graph("einsum_batched", seed=6)
    x = g.input("x", F, [2, 4, 8])
    w = g.param("w", [4, 8, 5])
    g.op("Einsum", [x, w], outputs=["y"], name="einsum", equation="bhi,hij->bhj")
    g.output("y", F, [2, 4, 5])
    return g.model()


@model
def einsum_implicit():
    """Implicit output: the letters used once, alphabetically ('ikz')."""
    g = Graph("einsum_implicit")
    a = g.input("a", F, [2, 3, 7])
    b = g.input("b", F, [3, 4])
    g.op("Einsum", [a, b], outputs=["y"], name="einsum", equation="ijz,jk")
    g.output("y", F, [2, 4, 7])
    return g.model()


@model
def einsum_summed():
    """A label only one operand has and the output lacks is summed first."""
    g = Graph("einsum_summed")
    a = g.input("a", F, [2, 3, 7])
    b = g.input("b", F, [3, 4])
    g.op("Einsum", [a, b], outputs=["y"], name="einsum", equation="ijz,jk->ki")
    g.output("y", F, [4, 2])
    return g.model()


# --------------------------------------------------------------------------
# InstanceNormalization (ConvertNormalization.cpp)
# --------------------------------------------------------------------------

@model
def instance_norm():
    g = Graph("instance_norm", seed=7)
    x = g.input("x", F, [2, 3, 4, 4])
    s = g.param("scale", [3])
    b = g.param("bias", [3])
    g.op("InstanceNormalization", [x, s, b], outputs=["y"], name="instance_norm",
         epsilon=1e-3)
    g.output("y", F, [2, 3, 4, 4])
    return g.model()


# --------------------------------------------------------------------------
# Exporter idioms recognised as single ops (RecognizeComposites.cpp)
# --------------------------------------------------------------------------

@model
def layernorm_decomposed():
    """nn.LayerNorm(8) as torch 1.13 exports it below opset 17."""
    g = Graph("layernorm_decomposed", seed=8)
    x = g.input("x", F, [2, 3, 8])
    w = g.param("ln.weight", [8])
    b = g.param("ln.bias", [8])
    mean = g.op("ReduceMean", [x], name="/ln/ReduceMean", axes=[-1])
    d = g.op("Sub", [x, mean], name="/ln/Sub")
    two = g.const(2.0, np.float32, name="/ln/Constant")
    sq = g.op("Pow", [d, two], name="/ln/Pow")
    var = g.op("ReduceMean", [sq], name="/ln/ReduceMean_1", axes=[-1])
    eps = g.const(1e-5, np.float32, name="/ln/Constant_1")
    ve = g.op("Add", [var, eps], name="/ln/Add")
    std = g.op("Sqrt", [ve], name="/ln/Sqrt")
    n = g.op("Div", [d, std], name="/ln/Div")
    s = g.op("Mul", [n, w], name="/ln/Mul")
    g.op("Add", [s, b], outputs=["y"], name="/ln/Add_1")
    g.output("y", F, [2, 3, 8])
    return g.model(opset=14)


@model
def layernorm_reciprocal():
    """Hand-written: d * (1 / sqrt(mean(d * d) + eps)) over the last two
    axes, no affine part."""
    g = Graph("layernorm_reciprocal")
    x = g.input("x", F, [2, 3, 4])
    mean = g.op("ReduceMean", [x], name="mean", axes=[1, 2])
    d = g.op("Sub", [x, mean], name="center")
    sq = g.op("Mul", [d, d], name="square")
    var = g.op("ReduceMean", [sq], name="variance", axes=[-2, -1])
    eps = g.const(1e-6, np.float32, name="eps")
    ve = g.op("Add", [eps, var], name="add_eps")
    std = g.op("Sqrt", [ve], name="sqrt")
    r = g.op("Reciprocal", [std], name="reciprocal")
    g.op("Mul", [d, r], outputs=["y"], name="normalize")
    g.output("y", F, [2, 3, 4])
    return g.model()


@model
def not_layernorm():
    """Normalising over a middle axis is no layer norm: left as it is."""
    g = Graph("not_layernorm")
    x = g.input("x", F, [2, 3, 4])
    mean = g.op("ReduceMean", [x], name="mean", axes=[1])
    d = g.op("Sub", [x, mean], name="center")
    two = g.const(2.0, np.float32, name="two")
    sq = g.op("Pow", [d, two], name="square")
    var = g.op("ReduceMean", [sq], name="variance", axes=[1])
    eps = g.const(1e-5, np.float32, name="eps")
    ve = g.op("Add", [var, eps], name="add_eps")
    std = g.op("Sqrt", [ve], name="sqrt")
    g.op("Div", [d, std], outputs=["y"], name="normalize")
    g.output("y", F, [2, 3, 4])
    return g.model()


@model
def gelu_tanh_torch():
    """F.gelu(x, approximate='tanh') as torch 1.13 exports it."""
    g = Graph("gelu_tanh_torch")
    x = g.input("x", F, [2, 8])
    x2 = g.op("Mul", [x, x], name="/Mul")
    x3 = g.op("Mul", [x, x2], name="/Mul_1")
    c = g.const(0.044715, np.float32, name="/Constant")
    t = g.op("Mul", [c, x3], name="/Mul_2")
    inner = g.op("Add", [x, t], name="/Add")
    k = g.const(0.7978845608028654, np.float32, name="/Constant_1")
    a = g.op("Mul", [k, inner], name="/Mul_3")
    th = g.op("Tanh", [a], name="/Tanh")
    one = g.const(1.0, np.float32, name="/Constant_2")
    p = g.op("Add", [one, th], name="/Add_1")
    xp = g.op("Mul", [x, p], name="/Mul_4")
    half = g.const(0.5, np.float32, name="/Constant_3")
    g.op("Mul", [half, xp], outputs=["y"], name="/Mul_5")
    g.output("y", F, [2, 8])
    return g.model()


@model
def gelu_erf_bf16():
    """F.gelu(x) exported from a bf16 forward: the exporter rounds the
    constants to bf16, so sqrt(2) is 1.4140625."""
    g = Graph("gelu_erf_bf16")
    x = g.input("x", F, [2, 8])
    xl = g.op("Cast", [x], name="/Cast", to=TP.BFLOAT16)

    def bf16(value, name):
        g.nodes.append(onnx.helper.make_node(
            "Constant", [], [name], name=name + "_node",
            value=onnx.helper.make_tensor(name, TP.BFLOAT16, [], [value])))
        return name
    d = g.op("Div", [xl, bf16(1.4142135623730951, "/Constant")], name="/Div")
    e = g.op("Erf", [d], name="/Erf")
    p = g.op("Add", [e, bf16(1.0, "/Constant_1")], name="/Add")
    xp = g.op("Mul", [xl, p], name="/Mul")
    g.op("Mul", [xp, bf16(0.5, "/Constant_2")], outputs=["y"], name="/Mul_1")
    g.output("y", TP.BFLOAT16, [2, 8])
    return g.model()


@model
def gelu_tanh_pow():
    """GPT-2's NewGELU: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))."""
    g = Graph("gelu_tanh_pow")
    x = g.input("x", F, [2, 8])
    half = g.const(0.5, np.float32, name="half")
    hx = g.op("Mul", [half, x], name="half_x")
    three = g.const(3.0, np.float32, name="three")
    x3 = g.op("Pow", [x, three], name="cube")
    c = g.const(0.044715, np.float32, name="c")
    t = g.op("Mul", [c, x3], name="scaled_cube")
    inner = g.op("Add", [x, t], name="inner")
    k = g.const(0.7978845608028654, np.float32, name="sqrt_2_over_pi")
    a = g.op("Mul", [k, inner], name="scaled")
    th = g.op("Tanh", [a], name="tanh")
    one = g.const(1.0, np.float32, name="one")
    p = g.op("Add", [one, th], name="one_plus")
    g.op("Mul", [hx, p], outputs=["y"], name="gelu")
    g.output("y", F, [2, 8])
    return g.model()


@model
def gelu_tanh_factored():
    """Megatron's bias_gelu: x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 * x * x)))."""
    g = Graph("gelu_tanh_factored")
    x = g.input("x", F, [2, 8])
    k = g.const(0.79788456, np.float32, name="k")
    kx = g.op("Mul", [k, x], name="kx")
    c = g.const(0.044715, np.float32, name="c")
    cx = g.op("Mul", [c, x], name="cx")
    cxx = g.op("Mul", [cx, x], name="cxx")
    one = g.const(1.0, np.float32, name="one")
    q = g.op("Add", [one, cxx], name="q")
    a = g.op("Mul", [kx, q], name="arg")
    th = g.op("Tanh", [a], name="tanh")
    p = g.op("Add", [th, one], name="one_plus")
    half = g.const(0.5, np.float32, name="half")
    xh = g.op("Mul", [x, half], name="x_half")
    g.op("Mul", [xh, p], outputs=["y"], name="gelu")
    g.output("y", F, [2, 8])
    return g.model()


@model
def not_gelu_tanh():
    """The tanh GELU with 0.05 for 0.044715: not GELU, left as it is."""
    g = Graph("not_gelu_tanh")
    x = g.input("x", F, [2, 8])
    three = g.const(3.0, np.float32, name="three")
    x3 = g.op("Pow", [x, three], name="cube")
    c = g.const(0.05, np.float32, name="c")
    t = g.op("Mul", [c, x3], name="scaled_cube")
    inner = g.op("Add", [x, t], name="inner")
    k = g.const(0.7978845608028654, np.float32, name="k")
    a = g.op("Mul", [k, inner], name="scaled")
    th = g.op("Tanh", [a], name="tanh")
    one = g.const(1.0, np.float32, name="one")
    p = g.op("Add", [one, th], name="one_plus")
    xp = g.op("Mul", [x, p], name="x_times")
    half = g.const(0.5, np.float32, name="half")
    g.op("Mul", [xp, half], outputs=["y"], name="gelu")
    g.output("y", F, [2, 8])
    return g.model()


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "converters")
    os.makedirs(outdir, exist_ok=True)
    for name, fn in MODELS.items():
        m = fn()
        check(m, name)
        path = save(m, outdir, name + ".onnx")
        size = os.path.getsize(path)
        if size > 20000:
            raise SystemExit("make_converter_models.py: %s is %d bytes" % (path, size))
    print("wrote %d models to %s" % (len(MODELS), outdir))


if __name__ == "__main__":
    main()
