#!/usr/bin/env python3
"""bf16 and fp16 graphs through effopt's CPU backend against PyTorch 1.13.

    lowp_vs_torch.py cast    --bin BIN --libeffrt LIB --work DIR
    lowp_vs_torch.py ops     --bin BIN --libeffrt LIB --work DIR
    lowp_vs_torch.py forward --bin BIN --libeffrt LIB --work DIR --model mlp
    lowp_vs_torch.py train   --bin BIN --work DIR --model mlp --precision bf16

Every graph comes from a torch module whose forward casts explicitly
(`x.to(torch.bfloat16)`, weights `.to(bfloat16)` inside forward, the loss
back in float32), exported with torch.onnx: Cast nodes to BFLOAT16 around
Gemm/Conv and elementwise ops in bf16, LayerNormalization/BatchNorm and the
loss in f32. The fp16 graph is the same export with every bf16 Cast target
and constant changed to FLOAT16.

References. bf16: PyTorch itself where its CPU bf16 kernels compute in
f32 and round once (matmul and conv accumulate in f32: its oneDNN kernels
on CPUs with AVX-512); where they do not (torch 1.13 on an AVX2-only CPU
sums bf16 matmuls, batched matmuls and convolutions in bf16 and rounds
inside GELU: `torch_bf16_rounds_once()` probes it), bf16 is emulated as
fp16 is below, and `--model all-low`, which needs torch's own kernels,
refuses to run. fp16: PyTorch 1.13 has no
CPU kernels for most fp16 ops (addmm, tanh, relu...), so the reference is
PyTorch in float32 with an explicit rounding `.half().float()` at every
point where the graph holds an fp16 value, forward and backward (the
gradient of every fp16 value is rounded too, as the graph's gradient ops
produce fp16).

Parts:
  cast     eff.cast f32/f64 -> bf16/f16 and between bf16/f16 on special
           values (ties, overflow, subnormals, inf, NaN, -0): every bit as
           torch's `.to()`.
  ops      forward graphs of one op each (MatMul with K=1024, Conv, Gelu,
           Tanh, Sigmoid, Exp, Div, Where, ReduceSum, dropout) in bf16 and
           fp16 against torch: elements must be within one unit in the last
           place (ulp) of the low type and at least 98% bit-identical (the
           products accumulate in a different order than torch's, and
           libm's transcendentals differ from torch's SLEEF in the last f32
           bit, which changes a rounded result only near a tie). The
           MatMul result is also checked against the exactly rounded
           product, which a bf16 running sum would miss by many ulps.
  forward  the training model's graph compiled with `effc --mode forward`:
           loss and bf16/fp16 logits against torch, same bounds as `ops`.
  train    effc (train mode, SGD with momentum) + effrun for a few steps
           against torch from the same weights and data: per-step losses
           and final parameters (tolerances below).

Prints one line per check and `lowp <part>: PASS|FAIL`; exits 1 on failure.
"""
import argparse
import io
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples"))
from train_vs_torch import read_safetensors, run  # noqa: E402
from onnx_node_forward import Effrt  # noqa: E402
import export_examples as ex  # noqa: E402

LOW = {"bf16": TensorProto.BFLOAT16, "fp16": TensorProto.FLOAT16}
NUMPY_BITS = {"bfloat16": np.uint16, "float16": np.float16,
              "float32": np.float32, "int64": np.int64, "bool": np.bool_}


# ===------------------------------------------------------------------=== #
# The torch side: real bf16, or fp16 emulated by rounding
# ===------------------------------------------------------------------=== #

def rounding_to(dtype):
    """An autograd function: float32 -> the nearest `dtype` value (as
    float32); the gradient likewise."""
    class Round(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.to(dtype).float()

        @staticmethod
        def backward(ctx, g):
            return g.to(dtype).float()
    return Round


RoundHalf = rounding_to(torch.float16)
RoundBF16 = rounding_to(torch.bfloat16)


def torch_bf16_rounds_once():
    """Whether this machine's torch computes bf16 matmul, batched matmul,
    convolution and GELU in f32 and rounds once (the reference the bf16
    checks assume), probed against that computation done explicitly."""
    g = torch.Generator().manual_seed(7)
    a, b = (torch.randn(2, 32, 256, generator=g),
            torch.randn(2, 256, 16, generator=g))
    x, w = (torch.randn(2, 8, 6, 6, generator=g),
            torch.randn(4, 8, 3, 3, generator=g))
    v = torch.randn(512, generator=g)
    bf = torch.bfloat16
    pairs = [
        (a[0].to(bf) @ b[0].to(bf), a[0].to(bf).float() @ b[0].to(bf).float()),
        (a.to(bf) @ b.to(bf), a.to(bf).float() @ b.to(bf).float()),
        (F.conv2d(x.to(bf), w.to(bf)), F.conv2d(x.to(bf).float(), w.to(bf).float())),
        (F.gelu(v.to(bf)), F.gelu(v.to(bf).float()))]
    for native, f32 in pairs:
        f32 = f32.to(bf).float()
        # Another f32 summation order may move a rounding; a bf16 running
        # sum moves most.
        if (native.float() == f32).float().mean().item() < 0.95:
            return False
    return True


BF16_NATIVE = torch_bf16_rounds_once()


class Precision:
    """lo: cast into the low type; hi: back to float32; q: what the graph
    rounds after an op in the low type (nothing for real bf16 tensors,
    whose ops round themselves)."""

    def __init__(self, kind, native=None):
        self.kind = kind
        # bf16: real bf16 tensors (the export always; the reference where
        # torch's kernels round once), else emulated by rounding.
        self.native = BF16_NATIVE if native is None else native

    def lo(self, t):
        if self.kind == "bf16":
            return t.to(torch.bfloat16) if self.native else RoundBF16.apply(t)
        return RoundHalf.apply(t) if self.kind == "fp16" else t

    def hi(self, t):
        return t.float()

    def q(self, t):
        if self.kind == "bf16" and not self.native:
            return RoundBF16.apply(t)
        return RoundHalf.apply(t) if self.kind == "fp16" else t


class LowMLP(nn.Module):
    """Linear/GELU/Where/Tanh in the low type, LayerNorm and the loss in
    float32."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 48)
        self.ln = nn.LayerNorm(48)
        self.fc2 = nn.Linear(48, 10)
        self.p = Precision("bf16")

    def forward(self, x, y):
        p = self.p
        h = p.q(F.linear(p.lo(x), p.lo(self.fc1.weight), p.lo(self.fc1.bias)))
        h = p.q(F.gelu(h))
        h = p.q(torch.where(h > 0, h, p.q(h * 0.25)))
        h = p.q(p.q(torch.tanh(h)) + h)
        h = p.lo(self.ln(p.hi(h)))
        logits = p.q(F.linear(h, p.lo(self.fc2.weight), p.lo(self.fc2.bias)))
        return F.cross_entropy(p.hi(logits), y), logits


class LowCNN(nn.Module):
    """Conv/ReLU/max pool/average pool/Linear in the low type, BatchNorm
    and the loss in float32."""

    def __init__(self):
        super().__init__()
        # No bias before BatchNorm: its gradient is exactly zero in exact
        # arithmetic, and only rounding noise would be compared.
        self.c1 = nn.Conv2d(1, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 12, 3, padding=1, bias=False)
        self.fc = nn.Linear(12 * 2 * 2, 10)
        self.p = Precision("bf16")

    def forward(self, x, y):
        p = self.p
        h = p.q(F.conv2d(p.lo(x), p.lo(self.c1.weight), padding=1))
        h = p.lo(self.bn(p.hi(h)))
        h = p.q(F.max_pool2d(p.q(F.relu(h)), 2))
        h = p.q(F.conv2d(h, p.lo(self.c2.weight), padding=1))
        h = p.q(F.avg_pool2d(h, 2))
        logits = p.q(F.linear(h.flatten(1), p.lo(self.fc.weight),
                              p.lo(self.fc.bias)))
        return F.cross_entropy(p.hi(logits), y), logits


class AllLow(nn.Module):
    """Everything in the low type, loss included (bf16 only: real torch
    kernels): embedding gather, LayerNorm, batched products, softmax,
    sigmoid, grouped conv, pooling, concat, cross-entropy."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.ln = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)
        self.conv = nn.Conv2d(4, 8, 3, padding=1, groups=2)
        self.scale = nn.Parameter(torch.ones(8))
        self.shift = nn.Parameter(torch.zeros(8))
        self.out = nn.Linear(16 + 8 * 2 * 2, 10)
        self.p = Precision("bf16")

    def forward(self, tok, img, y):
        lo = self.p.lo
        e = F.embedding(tok, lo(self.emb.weight))
        e = F.layer_norm(e, (16,), lo(self.ln.weight), lo(self.ln.bias))
        a = torch.softmax(e @ e.transpose(1, 2) / 4.0, -1) @ e
        a = torch.sigmoid(F.linear(a, lo(self.fc.weight),
                                   lo(self.fc.bias))).mean(1)
        c = F.conv2d(lo(img), lo(self.conv.weight), lo(self.conv.bias),
                     padding=1, groups=2)
        c = c * lo(self.scale).view(1, 8, 1, 1) + lo(self.shift).view(1, 8, 1, 1)
        c = F.avg_pool2d(F.max_pool2d(F.relu(c), 2), 2).flatten(1)
        logits = F.linear(torch.cat([a, c], 1), lo(self.out.weight),
                          lo(self.out.bias))
        return F.cross_entropy(logits, y), logits


def make_model(name, steps, seed):
    """(model, batch size, {input: array of steps*B rows})"""
    torch.manual_seed(seed)
    if name == "all-low":
        rng = np.random.RandomState(seed)
        n = steps * 16
        return AllLow(), 16, {
            "tok": rng.randint(0, 20, size=(n, 6)).astype(np.int64),
            "img": rng.randn(n, 4, 8, 8).astype(np.float32),
            "y": rng.randint(0, 10, size=n).astype(np.int64)}
    x, y = ex.digits_data()
    idx = ex.epoch_rows(len(x), steps * 32, seed)
    if name == "mlp":
        return LowMLP(), 32, {"x": x[idx], "y": y[idx]}
    return LowCNN(), 32, {"x": x[idx].reshape(-1, 1, 8, 8), "y": y[idx]}


# ===------------------------------------------------------------------=== #
# ONNX
# ===------------------------------------------------------------------=== #

def export_low(model, batch, path, precision, training=True):
    """Exports the bf16 model (torch traces real bf16 ops); for fp16 turns
    every bf16 Cast, constant and value type into fp16."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model.p = Precision("bf16", native=True)
    f = io.BytesIO()
    mode = torch.onnx.TrainingMode
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, batch, f,
                          training=mode.TRAINING if training else mode.EVAL,
                          do_constant_folding=False, opset_version=17,
                          input_names=input_names(model),
                          output_names=["loss", "logits"])
    model.load_state_dict(state)
    m = onnx.load_from_string(f.getvalue())
    for t in m.graph.initializer:
        if t.name in state:
            t.CopyFrom(numpy_helper.from_array(
                np.ascontiguousarray(state[t.name].numpy()), t.name))
    casts = [n for n in m.graph.node
             if n.op_type == "Cast" and n.attribute[0].i == TensorProto.BFLOAT16]
    assert casts, "the export has no Cast to BFLOAT16"
    if precision == "fp16":
        to_fp16(m)
    onnx.checker.check_model(m)
    onnx.save_model(m, path)
    return m


def input_names(model):
    return ["tok", "img", "y"] if isinstance(model, AllLow) else ["x", "y"]


def bf16_bits_to_f32(bits):
    bits = np.asarray(bits, np.uint16)
    wide = bits.reshape(-1).astype(np.uint32) << 16
    return wide.view(np.float32).reshape(bits.shape)


def to_fp16(m):
    for n in m.graph.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.BFLOAT16:
                a.i = TensorProto.FLOAT16
            if a.type == onnx.AttributeProto.TENSOR and \
                    a.t.data_type == TensorProto.BFLOAT16:
                v = numpy_helper.to_array(a.t)  # the values, as float32
                a.t.CopyFrom(numpy_helper.from_array(
                    np.asarray(v, np.float32).astype(np.float16), a.t.name))
    for v in list(m.graph.value_info) + list(m.graph.output):
        if v.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16


# ===------------------------------------------------------------------=== #
# Running forward graphs through libeffrt
# ===------------------------------------------------------------------=== #

def compile_forward(args, onnx_path):
    effx = onnx_path[:-5] + ".effx"
    run([os.path.join(args.bin, "effc"), onnx_path, "-o", effx,
         "--mode", "forward"] + (["--cpu", args.cpu] if args.cpu else []))
    return effx


def run_forward(effrt, effx, inputs):
    """{output name: numpy array} (bf16 as uint16 bits)."""
    lib = effrt.lib
    s = lib.effrt_session_open(effx.encode())
    if not s:
        raise SystemExit("effrt: " + effrt.error())
    try:
        manifest = json.loads(lib.effrt_session_manifest(s))
        for name, value in inputs.items():
            value = np.ascontiguousarray(value)
            if lib.effrt_session_set_input(s, name.encode(), value.ctypes.data,
                                           value.nbytes) != 0:
                raise SystemExit("effrt: " + effrt.error())
        if lib.effrt_session_forward(s) != 0:
            raise SystemExit("effrt: " + effrt.error())
        out = {}
        for o in manifest["outputs"]:
            got = np.empty(o["shape"], dtype=NUMPY_BITS[o["dtype"]])
            if lib.effrt_session_get_output(s, o["name"].encode(),
                                            got.ctypes.data, got.nbytes) != 0:
                raise SystemExit("effrt: " + effrt.error())
            out[o["name"]] = got
        return out
    finally:
        lib.effrt_session_close(s)


# ===------------------------------------------------------------------=== #
# Comparing low-precision values
# ===------------------------------------------------------------------=== #

def as_float(a, kind):
    """Our output (bf16 bits or float16) as float64."""
    if kind == "bf16":
        return bf16_bits_to_f32(a).astype(np.float64)
    return np.asarray(a, np.float16).astype(np.float64)


def torch_low(t, kind):
    """A torch tensor holding low-precision values as float64 numpy."""
    return t.detach().float().double().numpy()


def ulp(v, kind):
    """The spacing of the low type at |v| (normal range)."""
    mant = 8 if kind == "bf16" else 11
    tiny = 2.0 ** (-126 if kind == "bf16" else -14)
    e = np.floor(np.log2(np.maximum(np.abs(v), tiny)))
    return 2.0 ** (e - (mant - 1))


def check_close_low(what, got, ref, kind, min_identical=0.98, max_ulps=1,
                    floor=0.0):
    """Elements within max_ulps ulp of ref (or `floor` absolutely) and
    mostly bit-identical."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    both_nan = np.isnan(got) & np.isnan(ref)
    diff = np.where(both_nan, 0.0, np.abs(got - ref))
    diff = np.where(diff <= floor, 0.0, diff)
    ulps = diff / np.minimum(ulp(ref, kind), ulp(got, kind))
    ulps = np.where(np.isfinite(ulps), ulps, np.where(got == ref, 0, np.inf))
    identical = float(((got == ref) | both_nan).mean())
    worst = float(np.nanmax(ulps)) if ulps.size else 0.0
    ok = worst <= max_ulps and identical >= min_identical
    print("%-34s %s  identical %6.2f%%  max %.2g ulp%s" % (
        what, kind, 100 * identical, worst, "" if ok else "  MISMATCH"))
    if not ok:
        i = np.unravel_index(int(np.nanargmax(ulps)), ulps.shape)
        print("  worst at %s: got %r, expected %r" % (
            list(i), got[i].item(), ref[i].item()))
    return ok


# ===------------------------------------------------------------------=== #
# Part: cast
# ===------------------------------------------------------------------=== #

def special_values():
    f = np.float32
    bits = lambda b: np.array([b], np.uint32).view(np.float32)[0]
    v = [0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, np.pi, 65504.0, 65519.0, 65519.996,
         65520.0, -65520.0, 1e5, -1e6, 3.4028235e38, -3.4028235e38,
         np.inf, -np.inf, np.nan, -np.nan,
         2.0 ** -14, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -26,
         1.5 * 2.0 ** -24, 2.5 * 2.0 ** -24, 1e-8, 1e-40, -1e-45, 1e-38,
         1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8,
         bits(0x3f808000), bits(0x3f818000), bits(0x3f80c000),
         bits(0x7f7f8000), bits(0x00008000), bits(0x7fc00001),
         bits(0xff800001)]
    rng = np.random.RandomState(0)
    for scale in (1e-6, 1e-3, 1.0, 1e3, 1e5, 1e30):
        v += list(rng.randn(40) * scale)
    return np.array(v, dtype=f)


def part_cast(args, effrt):
    x = special_values()
    xd = x.astype(np.float64) + np.float64(2.0 ** -40)  # not exact in f32
    n = len(x)
    g = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["bf16"], to=TensorProto.BFLOAT16),
         helper.make_node("Cast", ["x"], ["f16"], to=TensorProto.FLOAT16),
         helper.make_node("Cast", ["f16"], ["f16_bf16"],
                          to=TensorProto.BFLOAT16),
         helper.make_node("Cast", ["bf16"], ["bf16_f16"],
                          to=TensorProto.FLOAT16),
         helper.make_node("Cast", ["bf16"], ["bf16_f32"], to=TensorProto.FLOAT),
         helper.make_node("Cast", ["f16"], ["f16_f32"], to=TensorProto.FLOAT),
         helper.make_node("Cast", ["xd"], ["f64_f16"], to=TensorProto.FLOAT16),
         helper.make_node("Cast", ["xd"], ["f64_bf16"],
                          to=TensorProto.BFLOAT16)],
        "casts",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n]),
         helper.make_tensor_value_info("xd", TensorProto.DOUBLE, [n])],
        [helper.make_tensor_value_info(name, t, [n]) for name, t in [
            ("bf16", TensorProto.BFLOAT16), ("f16", TensorProto.FLOAT16),
            ("f16_bf16", TensorProto.BFLOAT16),
            ("bf16_f16", TensorProto.FLOAT16),
            ("bf16_f32", TensorProto.FLOAT), ("f16_f32", TensorProto.FLOAT),
            ("f64_f16", TensorProto.FLOAT16),
            ("f64_bf16", TensorProto.BFLOAT16)]])
    path = os.path.join(args.work, "casts.onnx")
    onnx.save_model(helper.make_model(g, opset_imports=[
        helper.make_opsetid("", 17)]), path)
    out = run_forward(effrt, compile_forward(args, path), {"x": x, "xd": xd})

    t, td = torch.from_numpy(x), torch.from_numpy(xd)
    bf, hf = torch.bfloat16, torch.float16
    ref = {"bf16": t.to(bf), "f16": t.to(hf), "f16_bf16": t.to(hf).to(bf),
           "bf16_f16": t.to(bf).to(hf), "bf16_f32": t.to(bf).float(),
           "f16_f32": t.to(hf).float(), "f64_f16": td.to(hf),
           "f64_bf16": td.to(bf)}
    ok = True
    for name, r in ref.items():
        got = out[name]
        if r.dtype == bf:
            want = r.view(torch.int16).numpy().view(np.uint16)
            gotv, wantv = bf16_bits_to_f32(got), bf16_bits_to_f32(want)
            gotb = got
        else:
            want = r.numpy()
            gotv, wantv = got.astype(np.float32), want.astype(np.float32)
            gotb, want = got.view(np.uint16 if got.itemsize == 2 else np.uint32), \
                want.view(np.uint16 if want.itemsize == 2 else np.uint32)
        nan = np.isnan(wantv)
        bad = ~np.where(nan, np.isnan(gotv), gotb == want)
        ok &= not bad.any()
        first = np.argwhere(bad)[:3].ravel().tolist()
        print("cast %-9s %3d values, %d differ from torch%s" % (
            name, n, int(bad.sum()),
            "" if not bad.any() else "  MISMATCH at %s: x=%s got %s want %s" % (
                first, x[first].tolist(), gotv[first].tolist(),
                wantv[first].tolist())))
    return ok


# ===------------------------------------------------------------------=== #
# Part: ops
# ===------------------------------------------------------------------=== #

def single_op_graph(name, nodes, inputs, outputs, kind):
    """The graph with `LOWTYPE` in Cast targets/types replaced by the low
    ONNX type."""
    low = LOW[kind]

    def fix(t):
        return low if t == "LOW" else t
    ns = []
    for op, ins, outs, attrs in nodes:
        attrs = {k: fix(v) for k, v in attrs.items()}
        ns.append(helper.make_node(op, ins, outs, **attrs))
    g = helper.make_graph(
        ns, name,
        [helper.make_tensor_value_info(n, fix(t), s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, fix(t), s) for n, t, s in outputs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def accumulation_floor(ref):
    """An absolute bound for products and sums: f32 accumulation in another
    order (K * 2^-24 * sum|a*b|) is visible only where the result cancels to
    far below its operands' scale, where an ulp of the result means little.
    1e-5 of the largest result is still 100x (fp16) to 800x (bf16) below
    one ulp there, so a low-precision accumulator would not pass."""
    return 1e-5 * float(ref.abs().max())


def torch_ref(kind, fn, *xs):
    """fn on the inputs cast to the low type: torch's own bf16 kernels, or
    fp16 (and bf16 where torch's kernels do not round once) emulated: f32
    compute on low-precision values, one rounding."""
    if kind == "bf16" and BF16_NATIVE:
        return fn(*[x.to(torch.bfloat16) if x.is_floating_point() else x
                    for x in xs]).float()
    low = torch.bfloat16 if kind == "bf16" else torch.float16
    ys = fn(*[x.to(low).float() if x.is_floating_point() else x for x in xs])
    return ys.to(low).float()


def part_ops(args, effrt):
    rng = np.random.RandomState(1)
    ok = True
    F32 = TensorProto.FLOAT
    for kind in ("bf16", "fp16"):
        # MatMul, K = 1024: f32 accumulation, one rounding.
        a = rng.randn(64, 1024).astype(np.float32)
        b = rng.randn(1024, 96).astype(np.float32)
        m = single_op_graph("mm", [
            ("Cast", ["a"], ["al"], {"to": "LOW"}),
            ("Cast", ["b"], ["bl"], {"to": "LOW"}),
            ("MatMul", ["al", "bl"], ["y"], {})],
            [("a", F32, [64, 1024]), ("b", F32, [1024, 96])],
            [("y", "LOW", [64, 96])], kind)
        path = os.path.join(args.work, "mm-%s.onnx" % kind)
        onnx.save_model(m, path)
        y = as_float(run_forward(effrt, compile_forward(args, path),
                                 {"a": a, "b": b})["y"], kind)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        ref = torch_ref(kind, torch.matmul, ta, tb)
        ok &= check_close_low("matmul 64x1024x96", y, torch_low(ref, kind),
                              kind, floor=accumulation_floor(ref))
        # Against the exactly rounded product of the low-precision inputs.
        low = torch.bfloat16 if kind == "bf16" else torch.float16
        exact = (ta.to(low).double() @ tb.to(low).double()).to(low)
        ok &= check_close_low("matmul vs exact rounding", y,
                              torch_low(exact, kind), kind,
                              min_identical=0.99,
                              floor=accumulation_floor(exact))

        # Batched MatMul (attention's shape): one f32 product per batch.
        q = rng.randn(4, 16, 64).astype(np.float32)
        k = rng.randn(4, 64, 32).astype(np.float32)
        m = single_op_graph("bmm", [
            ("Cast", ["q"], ["ql"], {"to": "LOW"}),
            ("Cast", ["k"], ["kl"], {"to": "LOW"}),
            ("MatMul", ["ql", "kl"], ["y"], {})],
            [("q", F32, [4, 16, 64]), ("k", F32, [4, 64, 32])],
            [("y", "LOW", [4, 16, 32])], kind)
        path = os.path.join(args.work, "bmm-%s.onnx" % kind)
        onnx.save_model(m, path)
        y = as_float(run_forward(effrt, compile_forward(args, path),
                                 {"q": q, "k": k})["y"], kind)
        ref = torch_ref(kind, torch.matmul, torch.from_numpy(q),
                        torch.from_numpy(k))
        ok &= check_close_low("batched matmul 4x16x64x32", y,
                              torch_low(ref, kind), kind,
                              floor=accumulation_floor(ref))

        # Data movement keeps every bit: transpose, concat, slice, pad,
        # gather.
        x = rng.randn(8, 16).astype(np.float32)
        m = single_op_graph("moves", [
            ("Cast", ["x"], ["xl"], {"to": "LOW"}),
            ("Transpose", ["xl"], ["t"], {"perm": [1, 0]}),
            ("Concat", ["t", "t"], ["c"], {"axis": 1}),
            ("Slice", ["c", "starts", "ends"], ["s"], {}),
            ("Pad", ["s", "pads"], ["p"], {}),
            ("Gather", ["p", "rows"], ["y"], {"axis": 0})],
            [("x", F32, [8, 16])], [("y", "LOW", [3, 14])], kind)
        m.graph.initializer.extend([
            numpy_helper.from_array(np.array([1, 3], np.int64), "starts"),
            numpy_helper.from_array(np.array([15, 14], np.int64), "ends"),
            numpy_helper.from_array(np.array([0, 1, 0, 2], np.int64), "pads"),
            numpy_helper.from_array(np.array([0, 13, 5], np.int64), "rows")])
        path = os.path.join(args.work, "moves-%s.onnx" % kind)
        onnx.save_model(m, path)
        y = as_float(run_forward(effrt, compile_forward(args, path),
                                 {"x": x})["y"], kind)

        def moves(v):
            c = torch.cat([v.t(), v.t()], 1)[1:15, 3:14]
            return F.pad(c, (1, 2))[torch.tensor([0, 13, 5])]
        ref = torch_ref(kind, moves, torch.from_numpy(x))
        ok &= check_close_low("transpose/concat/slice/pad/gather", y,
                              torch_low(ref, kind), kind, min_identical=1.0,
                              max_ulps=0)

        # Conv 3x3, 16 -> 24 channels, stride 1, padding 1.
        x = rng.randn(4, 16, 12, 12).astype(np.float32)
        w = (rng.randn(24, 16, 3, 3) * 0.2).astype(np.float32)
        m = single_op_graph("conv", [
            ("Cast", ["x"], ["xl"], {"to": "LOW"}),
            ("Cast", ["w"], ["wl"], {"to": "LOW"}),
            ("Conv", ["xl", "wl"], ["y"], {"pads": [1, 1, 1, 1]})],
            [("x", F32, list(x.shape)), ("w", F32, list(w.shape))],
            [("y", "LOW", [4, 24, 12, 12])], kind)
        path = os.path.join(args.work, "conv-%s.onnx" % kind)
        onnx.save_model(m, path)
        y = as_float(run_forward(effrt, compile_forward(args, path),
                                 {"x": x, "w": w})["y"], kind)
        ref = torch_ref(kind, lambda x, w: F.conv2d(x, w, padding=1),
                        torch.from_numpy(x), torch.from_numpy(w))
        ok &= check_close_low("conv2d 3x3 16->24", y, torch_low(ref, kind),
                              kind, floor=accumulation_floor(ref))

        # Elementwise ops, each computed in f32 and rounded once.
        x = (rng.randn(4096) * 3).astype(np.float32)
        z = (rng.randn(4096) * 3).astype(np.float32)
        unary = {"Tanh": torch.tanh, "Sigmoid": torch.sigmoid,
                 "Exp": torch.exp, "Erf": torch.erf, "Relu": torch.relu,
                 "Sqrt": lambda v: torch.sqrt(torch.abs(v)),
                 "Softmax": lambda v: torch.softmax(v.reshape(64, 64), -1)}
        for op, fn in unary.items():
            src = "xa" if op == "Sqrt" else "xl"
            nodes = [("Cast", ["x"], ["xl"], {"to": "LOW"}),
                     ("Abs", ["xl"], ["xa"], {})]
            if op == "Softmax":
                nodes += [("Reshape", ["xl", "shape"], ["x2"], {}),
                          ("Softmax", ["x2"], ["y"], {"axis": -1})]
                out_shape = [64, 64]
            else:
                nodes += [(op, [src], ["y"], {})]
                out_shape = [4096]
            m = single_op_graph(op, nodes, [("x", F32, [4096])],
                                [("y", "LOW", out_shape)], kind)
            if op == "Softmax":
                m.graph.initializer.append(numpy_helper.from_array(
                    np.array([64, 64], np.int64), "shape"))
            path = os.path.join(args.work, "%s-%s.onnx" % (op, kind))
            onnx.save_model(m, path)
            y = as_float(run_forward(effrt, compile_forward(args, path),
                                     {"x": x})[ "y"], kind)
            ref = torch_ref(kind, fn, torch.from_numpy(x))
            ok &= check_close_low(op.lower(), y.ravel(),
                                  torch_low(ref, kind).ravel(), kind)
        binary = {"Div": torch.div, "Mul": torch.mul, "Sub": torch.sub,
                  "Where": lambda u, v: torch.where(u > v, u, v * 0.5)}
        for op, fn in binary.items():
            nodes = [("Cast", ["x"], ["xl"], {"to": "LOW"}),
                     ("Cast", ["z"], ["zl"], {"to": "LOW"})]
            if op == "Where":
                nodes += [("Greater", ["xl", "zl"], ["c"], {}),
                          ("Cast", ["half"], ["hl"], {"to": "LOW"}),
                          ("Mul", ["zl", "hl"], ["zh"], {}),
                          ("Where", ["c", "xl", "zh"], ["y"], {})]
            else:
                nodes += [(op, ["xl", "zl"], ["y"], {})]
            m = single_op_graph(op, nodes,
                                [("x", F32, [4096]), ("z", F32, [4096])],
                                [("y", "LOW", [4096])], kind)
            if op == "Where":
                m.graph.initializer.append(numpy_helper.from_array(
                    np.array(0.5, np.float32), "half"))
            path = os.path.join(args.work, "%s-%s.onnx" % (op, kind))
            onnx.save_model(m, path)
            y = as_float(run_forward(effrt, compile_forward(args, path),
                                     {"x": x, "z": z})["y"], kind)
            ref = torch_ref(kind, fn, torch.from_numpy(x), torch.from_numpy(z))
            ok &= check_close_low(op.lower(), y, torch_low(ref, kind), kind)

        # ReduceSum over 4096 elements: f32 accumulation, one rounding.
        m = single_op_graph("sum", [
            ("Cast", ["x"], ["xl"], {"to": "LOW"}),
            ("Reshape", ["xl", "shape"], ["x2"], {}),
            ("ReduceSum", ["x2", "axes"], ["y"], {"keepdims": 0})],
            [("x", F32, [4096])], [("y", "LOW", [8])], kind)
        m.graph.initializer.extend([
            numpy_helper.from_array(np.array([8, 512], np.int64), "shape"),
            numpy_helper.from_array(np.array([1], np.int64), "axes")])
        path = os.path.join(args.work, "sum-%s.onnx" % kind)
        onnx.save_model(m, path)
        y = as_float(run_forward(effrt, compile_forward(args, path),
                                 {"x": x})["y"], kind)
        ref = torch_ref(kind, lambda v: v.reshape(8, 512).sum(1),
                        torch.from_numpy(x))
        ok &= check_close_low("reduce_sum 8x512", y, torch_low(ref, kind),
                              kind, floor=accumulation_floor(ref))

        # Dropout (training mode) on the low type: y = x * mask / (1 - p),
        # rounded once; the mask is effopt's own random draw.
        m = single_op_graph("dropout", [
            ("Constant", [], ["ratio"], {"value": numpy_helper.from_array(
                np.array(0.25, np.float32))}),
            ("Constant", [], ["training"], {"value": numpy_helper.from_array(
                np.array(True))}),
            ("Cast", ["x"], ["xl"], {"to": "LOW"}),
            ("Dropout", ["xl", "ratio", "training"], ["y", "mask"], {})],
            [("x", F32, [4096])],
            [("y", "LOW", [4096]), ("mask", TensorProto.BOOL, [4096])], kind)
        path = os.path.join(args.work, "dropout-%s.onnx" % kind)
        onnx.save_model(m, path)
        out = run_forward(effrt, compile_forward(args, path), {"x": x})
        mask = out["mask"].astype(bool)
        y = as_float(out["y"], kind)
        tm = torch.from_numpy(mask)
        ref = torch_ref(kind, lambda v: torch.where(tm, v / 0.75,
                                                    torch.zeros_like(v)),
                        torch.from_numpy(x))
        kept = float(mask.mean())
        ok &= check_close_low("dropout p=0.25 (kept %.3f)" % kept, y,
                              torch_low(ref, kind), kind, min_identical=0.99)
        ok &= abs(kept - 0.75) < 0.03
    return ok


# ===------------------------------------------------------------------=== #
# Part: forward
# ===------------------------------------------------------------------=== #

def part_forward(args, effrt):
    """Inference graphs (torch's eval mode: BatchNorm with its running
    statistics, exported with TrainingMode.EVAL)."""
    ok = True
    for kind in ("bf16", "fp16"):
        model, B, data = make_model(args.model, 1, args.seed)
        if args.model == "cnn":
            # Running statistics that are not the initial 0/1.
            model.bn.running_mean.uniform_(-0.5, 0.5)
            model.bn.running_var.uniform_(0.5, 2.0)
        model.eval()
        path = os.path.join(args.work, "%s-%s.onnx" % (args.model, kind))
        export_low(model, tuple(torch.from_numpy(data[k][:B])
                                for k in ("x", "y")), path, kind,
                   training=False)
        out = run_forward(effrt, compile_forward(args, path),
                          {"x": data["x"][:B], "y": data["y"][:B]})
        model.p = Precision(kind)
        with torch.no_grad():
            loss, logits = model(torch.from_numpy(data["x"][:B]),
                                 torch.from_numpy(data["y"][:B]))
        # The CNN's logits come out of three products in a row, each fed
        # by the last one's low-precision rounding: an f32 summation order
        # other than torch's moves a rounding by one ulp, which the next
        # product can carry into one more (2 ulps seen against torch on an
        # AVX2 CPU, 1 on AVX-512); the MLP's two products stay within one.
        ok &= check_close_low("%s logits" % args.model, as_float(
            out["logits"], kind), torch_low(logits, kind), kind,
            min_identical=0.95, max_ulps=2 if args.model == "cnn" else 1)
        got = float(out["loss"])
        close = abs(got - float(loss)) <= 1e-3 * abs(float(loss))
        ok &= close
        print("%s loss %s effopt %.6f torch %.6f%s" % (
            args.model, kind, got, float(loss), "" if close else "  MISMATCH"))
    return ok


# ===------------------------------------------------------------------=== #
# Part: train
# ===------------------------------------------------------------------=== #

def train_torch(model, data, B, steps, lr, momentum):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    model.train()
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = model(*[torch.from_numpy(data[k][i * B:(i + 1) * B])
                       for k in input_names(model)])[0]
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, {k: v.detach().numpy().copy()
                    for k, v in model.state_dict().items()}


def part_train(args):
    kind, steps = args.precision, args.steps
    if args.model == "all-low" and kind != "bf16":
        raise SystemExit("--model all-low needs torch's own kernels: bf16 only")
    if args.model == "all-low" and not BF16_NATIVE:
        raise SystemExit("--model all-low needs torch's own bf16 kernels to "
                         "compute in f32 and round once; this machine's do "
                         "not (torch 1.13 without AVX-512)")
    model, B, data = make_model(args.model, steps, args.seed)
    init = {k: v.clone() for k, v in model.state_dict().items()}
    tag = "%s-%s" % (args.model, kind)
    path = os.path.join(args.work, tag + ".onnx")
    export_low(model, tuple(torch.from_numpy(data[k][:B])
                            for k in input_names(model)), path, kind)
    npz = os.path.join(args.work, tag + ".npz")
    np.savez(npz, **data)
    effx = os.path.join(args.work, tag + ".effx")
    log = os.path.join(args.work, tag + ".jsonl")
    ckpt = os.path.join(args.work, tag + ".safetensors")
    run([os.path.join(args.bin, "effc"), path, "-o", effx, "--optimizer",
         "sgd", "--lr", repr(args.lr), "--momentum", repr(args.momentum)]
        + args.effc)
    run([os.path.join(args.bin, "effrun"), effx, "--data", npz, "--steps",
         str(steps), "--log", log, "--save", ckpt, "--quiet"])
    ours = [json.loads(line)["loss"] for line in open(log)]

    model.p = Precision(kind)
    ref_losses, ref_state = train_torch(model, data, B, steps, args.lr,
                                        args.momentum)
    # The same training in float32 (no casts): how far low precision moves
    # the result, the scale the tolerances are set against.
    model.load_state_dict(init)
    model.p = Precision("fp32")
    f32_losses, _ = train_torch(model, data, B, steps, args.lr, args.momentum)

    ok = len(ours) == steps
    print("step  effopt       torch-%s   torch-fp32   rel.err" % kind)
    for i, (got, ref, full) in enumerate(zip(ours, ref_losses, f32_losses)):
        good = abs(got - ref) <= args.loss_rtol * abs(ref)
        ok &= good
        print("%4d  %-11.6f  %-11.6f  %-11.6f  %.2e%s" % (
            i, got, ref, full, abs(got - ref) / abs(ref),
            "" if good else "  MISMATCH"))
    # Final parameters and BatchNorm statistics: the difference to torch
    # relative to how far training moved the tensor (its largest change),
    # so the bound does not hide in the size of the initial weights.
    state = read_safetensors(ckpt)
    worst = (0.0, "")
    for name, want in ref_state.items():
        if name.endswith("num_batches_tracked"):
            continue
        got = state[name].astype(np.float64)
        moved = float(np.abs(want - init[name].numpy()).max())
        err = float(np.abs(got - want).max()) / max(moved, 1e-30)
        good = err <= args.update_rtol
        ok &= good
        print("%-16s moved by %.3g, differs by %.2e of that%s" % (
            name, moved, err, "" if good else "  MISMATCH"))
        worst = max(worst, (err, name))
    print("final state: %d tensors, worst %.2e (%s)" % (
        len(ref_state) - 1 if args.model == "cnn" else len(ref_state),
        worst[0], worst[1]))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("part", choices=["cast", "ops", "forward", "train"])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--libeffrt")
    ap.add_argument("--work", required=True)
    ap.add_argument("--cpu", help="effc --cpu for forward graphs (e.g. "
                    "x86-64: no F16C, no AVX512-BF16)")
    ap.add_argument("--model", default="mlp",
                    choices=["mlp", "cnn", "all-low"])
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--effc", action="append", default=[],
                    help="an extra effc flag for training steps")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--loss-rtol", type=float,
                    help="per-step loss, relative (default: bf16 5e-3, "
                    "fp16 1e-3)")
    ap.add_argument("--update-rtol", type=float,
                    help="final state: max difference over the tensor's "
                    "largest change in training (default: bf16 5e-2, "
                    "fp16 5e-3)")
    args = ap.parse_args()
    # Tolerances of `train`. The forward pass is bit-identical to torch's
    # (see `forward`); the backward is not quite: eff's gradient rules
    # compose elementwise ops (tanh' = g * (1 - y*y) is three bf16 ops, each
    # rounded) where torch's fused backward kernels round once, so a
    # gradient element may differ by an ulp, and momentum carries that on.
    # bf16 keeps 8 significant bits (relative rounding 2^-9 = 2e-3), fp16 11
    # (2.4e-4): measured worst cases over 8 steps are 1.8e-3 (bf16) and
    # 1.2e-4 (fp16) on the losses, 2.3e-2 and 4.2e-4 of a tensor's change
    # on the final parameters; the defaults leave about 2-10x room.
    low = args.precision == "bf16"
    if args.loss_rtol is None:
        args.loss_rtol = 5e-3 if low else 1e-3
    if args.update_rtol is None:
        args.update_rtol = 5e-2 if low else 5e-3
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    if args.part == "train":
        ok = part_train(args)
    else:
        effrt = Effrt(args.libeffrt)
        ok = {"cast": part_cast, "ops": part_ops,
              "forward": part_forward}[args.part](args, effrt)
    print("lowp %s: %s" % (args.part, "PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
