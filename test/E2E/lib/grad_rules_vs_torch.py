#!/usr/bin/env python3
"""Checks every gradient rule of effopt against torch.autograd on random
inputs: one tiny PyTorch function per op family, exported to ONNX in
training mode, compiled with effc and run for exactly one step by effrun.

    grad_rules_vs_torch.py --work DIR [--bin BUILD/bin] [--only REGEX] [-j N]

How the exact gradient is recovered: every differentiable input is
`x = x0 + z`, with `x0` a frozen parameter holding the random value
(`effc --freeze`) and `z` a zero-initialised trainable parameter. With
`--optimizer sgd --lr 1 --momentum 0 --weight-decay 0`, one step leaves
`z == -grad` exactly (0 - 1 * g has no rounding), read back from
`effrun --save`. Each case contributes `(f(x...) * R).sum()` to the loss,
R a fixed random frozen parameter of f's output shape, so every output
element has its own upstream gradient. Many cases share one ONNX model (a
group); each case's inputs are its own parameters, so their gradients are
independent. A group that fails to compile or run is retried case by case
to name the culprit.

The reference is torch.autograd in float64 on the same (fp32) values; the
fp32 torch gradient is printed next to it as the scale of fp32 rounding.
A case passes when |ours - ref| <= atol + rtol * |ref| elementwise (rtol
1e-4, atol 1e-6 unless the case states why it needs more).

Dropout draws its mask differently from torch, so its rule is checked for
self-consistency: y = dropout(x) is multiplied by a trainable w = w0 + zw,
whose gradient is y itself (our forward output); then grad x must be
w0 * (y != 0) / (1 - p) and y must be x * (y != 0) / (1 - p).

Prints one line per case and `N passed, M failed, K expected failures`;
exits 1 on any failure or on an expected failure that passes.
"""
import argparse
import concurrent.futures
import math
import os
import re
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_vs_torch import read_safetensors, tool  # noqa: E402
from train_vs_torch import export as export_graph  # noqa: E402
from conv_pool_vs_torch import CASES as CONV_POOL_CASES  # noqa: E402

# Cases known to fail, with the reason. They still run; one that passes is
# reported (XPASS) and fails the test so that this list stays accurate.
EXPECTED_FAILURES = {
    "hardtanh_at_bounds":
        "ONNX cannot tell hardtanh from clamp: PyTorch exports both as Clip, "
        "whose gradient at a value equal to a bound follows torch.clamp "
        "(passes it); torch's hardtanh passes none there",
}

RNG = np.random.RandomState(1234)


def randn(*shape):
    return RNG.randn(*shape).astype(np.float32)


def positive(*shape):
    """Away from 0 (log, sqrt, division, pow bases)."""
    return RNG.uniform(0.5, 2.0, size=shape).astype(np.float32)


def away_from_zero(*shape):
    """|x| in [0.3, 2]: relu/abs/clamp kinks and divisions stay away."""
    sign = np.where(RNG.rand(*shape) < 0.5, -1.0, 1.0)
    return (sign * RNG.uniform(0.3, 2.0, size=shape)).astype(np.float32)


class Case:
    """f(*inputs[, consts]) -> tensor; inputs are differentiable, consts
    are fixed tensors (labels, masks, indices, running statistics, class
    weights) passed after them as torch tensors."""

    def __init__(self, name, fn, inputs, consts=(), rtol=1e-4, atol=1e-6,
                 why=None, kind="grad"):
        self.name = name
        self.fn = fn
        self.inputs = inputs            # list of float32 arrays
        self.consts = consts            # list of arrays (any dtype)
        self.rtol, self.atol, self.why = rtol, atol, why
        self.kind = kind


CASES = []
GROUPS = {}


def case(group, name, fn, inputs, consts=(), **kw):
    c = Case(name, fn, inputs, consts, **kw)
    CASES.append(c)
    GROUPS.setdefault(group, []).append(c)


def linear_t(x, w, b):
    return F.linear(x, w, b)


# --- matmul --------------------------------------------------------------
case("matmul", "matmul_2d", lambda a, b: a @ b, [randn(3, 4), randn(4, 5)])
case("matmul", "matmul_batched", lambda a, b: torch.matmul(a, b),
     [randn(2, 3, 4), randn(2, 4, 5)])
case("matmul", "matmul_broadcast_batch", lambda a, b: torch.matmul(a, b),
     [randn(2, 1, 3, 4), randn(3, 4, 5)])
case("matmul", "matmul_batched_times_matrix", lambda a, b: a @ b,
     [randn(2, 3, 4), randn(4, 5)])
case("matmul", "matmul_matrix_times_batched", lambda a, b: a @ b,
     [randn(3, 4), randn(2, 4, 5)])
case("matmul", "matmul_1d_lhs", lambda a, b: torch.matmul(a, b),
     [randn(4), randn(4, 5)])
case("matmul", "matmul_1d_rhs", lambda a, b: torch.matmul(a, b),
     [randn(2, 3, 4), randn(4)])
case("matmul", "matmul_1d_dot", lambda a, b: torch.matmul(a, b),
     [randn(6), randn(6)])
# --- Gemm / linear -------------------------------------------------------
case("matmul", "linear_transb_bias", F.linear,
     [randn(3, 4), randn(5, 4), randn(5)])
case("matmul", "linear_no_bias", lambda x, w: F.linear(x, w),
     [randn(3, 4), randn(5, 4)])
case("matmul", "linear_3d_input", F.linear,
     [randn(2, 3, 4), randn(5, 4), randn(5)])
case("matmul", "gemm_alpha_beta",
     lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0),
     [randn(3, 5), randn(3, 4), randn(4, 5)])
case("matmul", "gemm_bias_row", lambda c, a, b: torch.addmm(c, a, b),
     [randn(5), randn(3, 4), randn(4, 5)])
case("matmul", "gemm_transa",
     lambda c, a, b: torch.addmm(c, a.t(), b),
     [randn(3, 5), randn(4, 3), randn(4, 5)])

# --- binary elementwise, broadcasting both ways ---------------------------
case("binary", "add_broadcast", lambda a, b: a + b,
     [randn(3, 1, 5), randn(4, 1)])
case("binary", "sub_broadcast", lambda a, b: a - b,
     [randn(4, 1), randn(3, 1, 5)])
case("binary", "mul_broadcast", lambda a, b: a * b,
     [randn(3, 1, 5), randn(4, 1)])
case("binary", "div_broadcast", lambda a, b: a / b,
     [randn(3, 1, 5), away_from_zero(4, 1)])
case("binary", "div_broadcast_rev", lambda a, b: a / b,
     [randn(4, 1), away_from_zero(3, 1, 5)])
case("binary", "pow_broadcast", lambda a, b: torch.pow(a, b),
     [positive(3, 1, 5), randn(4, 1)])
case("binary", "pow_scalar_exponent", lambda a: a ** 3, [randn(3, 4)])
case("binary", "pow_fractional_exponent", lambda a: a ** 1.5,
     [positive(3, 4)])
case("binary", "scalar_ops", lambda a: (2.0 - a) * 3.0 / 1.5 + 0.25,
     [randn(3, 4)])
case("binary", "rdiv_scalar", lambda a: 2.0 / a, [away_from_zero(3, 4)])
case("binary", "maximum_minimum",
     lambda a, b: torch.maximum(a, b) + 2.0 * torch.minimum(a, b),
     [randn(3, 4), randn(4)])
case("binary", "same_input_twice", lambda a: a * a + a, [randn(3, 4)])

# --- unary -----------------------------------------------------------------
case("unary", "neg", lambda x: -x, [randn(3, 4)])
case("unary", "exp", torch.exp, [randn(3, 4)])
case("unary", "log", torch.log, [positive(3, 4)])
case("unary", "sqrt", torch.sqrt, [positive(3, 4)])
case("unary", "rsqrt", torch.rsqrt, [positive(3, 4)])
case("unary", "reciprocal", torch.reciprocal, [away_from_zero(3, 4)])
case("unary", "tanh", torch.tanh, [randn(3, 4)])
case("unary", "sigmoid", torch.sigmoid, [randn(3, 4)])
case("unary", "relu", F.relu, [away_from_zero(3, 4)])
case("unary", "gelu_erf", F.gelu, [randn(3, 4)])
case("unary", "gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     [randn(3, 4)])
case("unary", "erf", torch.erf, [randn(3, 4)])
case("unary", "abs", torch.abs, [away_from_zero(3, 4)])
case("unary", "clamp", lambda x: torch.clamp(x, -0.5, 0.8),
     [away_from_zero(3, 4)])
case("unary", "leaky_relu", lambda x: F.leaky_relu(x, 0.1),
     [away_from_zero(3, 4)])
case("unary", "silu", F.silu, [randn(3, 4)])
case("unary", "softplus", F.softplus, [randn(3, 4)])
case("unary", "elu", F.elu, [away_from_zero(3, 4)])

# --- softmax / normalisation -------------------------------------------------
for axis in (-1, 0, 1):
    case("norm", "softmax_axis%d" % axis,
         lambda x, axis=axis: torch.softmax(x, axis), [randn(3, 4, 5)])
    case("norm", "log_softmax_axis%d" % axis,
         lambda x, axis=axis: torch.log_softmax(x, axis), [randn(3, 4, 5)])
case("norm", "layer_norm_affine",
     lambda x, w, b: F.layer_norm(x, (8,), w, b),
     [randn(2, 3, 8), randn(8), randn(8)])
case("norm", "layer_norm_two_dims",
     lambda x, w, b: F.layer_norm(x, (3, 8), w, b),
     [randn(2, 3, 8), randn(3, 8), randn(3, 8)])
# ONNX's LayerNormalization requires a scale (torch 1.13 exports an invalid
# node without one): "no affine" is a constant ones scale and no bias.
case("norm", "layer_norm_no_affine",
     lambda x: F.layer_norm(x, (8,), torch.ones(8, dtype=x.dtype)),
     [randn(4, 8)])
case("norm", "layer_norm_scale_only",
     lambda x, w: F.layer_norm(x, (8,), w), [randn(4, 8), randn(8)])
case("norm", "batch_norm_train_1d",
     lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=True),
     [randn(6, 4) * 2 + 1, randn(4), randn(4)],
     [np.zeros(4, np.float32), np.ones(4, np.float32)])
case("norm", "batch_norm_train_2d",
     lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=True),
     [randn(3, 4, 3, 3), randn(4), randn(4)],
     [np.zeros(4, np.float32), np.ones(4, np.float32)])
case("norm", "batch_norm_inference",
     lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=False),
     [randn(3, 4, 3, 3), randn(4), randn(4)],
     [randn(4), positive(4)])

# --- reductions ------------------------------------------------------------------
for keep in (False, True):
    k = "_keepdims" if keep else ""
    case("reduce", "reduce_sum_axis1" + k,
         lambda x, keep=keep: x.sum(1, keepdim=keep), [randn(3, 4, 5)])
    case("reduce", "reduce_sum_axes02" + k,
         lambda x, keep=keep: x.sum((0, 2), keepdim=keep), [randn(3, 4, 5)])
    case("reduce", "reduce_mean_axis_neg1" + k,
         lambda x, keep=keep: x.mean(-1, keepdim=keep), [randn(3, 4, 5)])
    case("reduce", "reduce_mean_axes01" + k,
         lambda x, keep=keep: x.mean((0, 1), keepdim=keep), [randn(3, 4, 5)])
    case("reduce", "reduce_max_axis1" + k,
         lambda x, keep=keep: torch.amax(x, 1, keepdim=keep), [randn(3, 4, 5)])
    case("reduce", "reduce_min_axes02" + k,
         lambda x, keep=keep: torch.amin(x, (0, 2), keepdim=keep),
         [randn(3, 4, 5)])
case("reduce", "reduce_sum_all", lambda x: x.sum(), [randn(3, 4)])
case("reduce", "reduce_mean_all", lambda x: x.mean(), [randn(3, 4)])
# Ties: the gradient is shared evenly by the maxima (torch's amax rule).
case("reduce", "reduce_max_ties", lambda x: torch.amax(x, 1),
     [np.round(RNG.randn(4, 6)).astype(np.float32)])
case("reduce", "max_with_indices", lambda x: torch.max(x, 1)[0],
     [randn(3, 5)])

# --- data movement -------------------------------------------------------------
case("shape", "reshape", lambda x: x.reshape(4, 15) * 1.0, [randn(3, 4, 5)])
case("shape", "flatten", lambda x: torch.flatten(x, 1), [randn(3, 4, 5)])
case("shape", "squeeze_unsqueeze",
     lambda x: x.squeeze(1).unsqueeze(0), [randn(3, 1, 5)])
case("shape", "transpose", lambda x: x.transpose(0, 2), [randn(3, 4, 5)])
case("shape", "permute", lambda x: x.permute(2, 0, 1), [randn(3, 4, 5)])
case("shape", "expand", lambda x: x.expand(2, 3, 4), [randn(3, 1)])
case("shape", "expand_new_dims", lambda x: x.expand(2, 3, 4), [randn(4)])
case("shape", "concat", lambda a, b, c: torch.cat([a, b, c], 1),
     [randn(3, 2), randn(3, 4), randn(3, 1)])
case("shape", "concat_neg_axis", lambda a, b: torch.cat([a, b], -1),
     [randn(2, 3, 2), randn(2, 3, 3)])
case("shape", "slice_steps", lambda x: x[1:3, ::2, 1::3], [randn(4, 5, 7)])
case("shape", "slice_negative", lambda x: x[-3:-1, -4:], [randn(5, 6)])
case("shape", "narrow", lambda x: x.narrow(1, 2, 3), [randn(3, 6)])
case("shape", "split",
     lambda x: torch.cat([p * (i + 1) for i, p in
                          enumerate(torch.split(x, [2, 3, 1], 1))], 1),
     [randn(3, 6)])
case("shape", "split_unused_piece",
     lambda x: torch.split(x, [2, 3, 1], 1)[1], [randn(3, 6)])
case("shape", "chunk", lambda x: torch.chunk(x, 2, 0)[0] * torch.chunk(x, 2, 0)[1],
     [randn(4, 3)])
case("shape", "pad", lambda x: F.pad(x, (1, 2, 0, 1)), [randn(3, 4)])
case("shape", "embedding_repeated",
     lambda w, idx: F.embedding(idx, w), [randn(6, 4)],
     [np.array([[1, 3, 1], [3, 3, 0]], np.int64)])
case("shape", "index_select_axis1",
     lambda x, idx: torch.index_select(x, 1, idx), [randn(3, 5)],
     [np.array([4, 0, 4, 2, 4], np.int64)])
case("shape", "where_mask_broadcast",
     lambda a, b, m: torch.where(m, a, b), [randn(3, 5), randn(5)],
     [RNG.rand(3, 5) < 0.5])
case("shape", "where_scalar",
     lambda a, m: torch.where(m, a, torch.zeros_like(a)), [randn(3, 5)],
     [RNG.rand(3, 5) < 0.5])
case("shape", "cast_f64_roundtrip", lambda x: x.double().float(),
     [randn(3, 4)])
case("shape", "cast_f16_roundtrip", lambda x: x.half().float(),
     [randn(3, 4)])

# --- losses ----------------------------------------------------------------------
N, C = 6, 5
labels = RNG.randint(0, C, size=N).astype(np.int64)
labels_ign = labels.copy()
labels_ign[[1, 4]] = 2  # class 2 ignored, with ignore_index=2
class_w = positive(C)
case("loss", "cross_entropy_mean", lambda x, y: F.cross_entropy(x, y),
     [randn(N, C)], [labels])
case("loss", "cross_entropy_sum",
     lambda x, y: F.cross_entropy(x, y, reduction="sum"), [randn(N, C)],
     [labels])
case("loss", "cross_entropy_none",
     lambda x, y: F.cross_entropy(x, y, reduction="none"), [randn(N, C)],
     [labels])
case("loss", "cross_entropy_weight_mean",
     lambda x, y, w: F.cross_entropy(x, y, weight=w), [randn(N, C)],
     [labels, class_w])
case("loss", "cross_entropy_ignore_index",
     lambda x, y: F.cross_entropy(x, y, ignore_index=2), [randn(N, C)],
     [labels_ign])
case("loss", "cross_entropy_weight_ignore_sum",
     lambda x, y, w: F.cross_entropy(x, y, weight=w, ignore_index=2,
                                     reduction="sum"), [randn(N, C)],
     [labels_ign, class_w])
case("loss", "cross_entropy_3d",
     lambda x, y: F.cross_entropy(x, y), [randn(2, C, 3)],
     [RNG.randint(0, C, size=(2, 3)).astype(np.int64)])
case("loss", "nll_loss_mean", lambda x, y: F.nll_loss(x, y),
     [randn(N, C)], [labels])
case("loss", "nll_loss_weight_ignore",
     lambda x, y, w: F.nll_loss(x, y, weight=w, ignore_index=2),
     [randn(N, C)], [labels_ign, class_w])
case("loss", "nll_loss_sum_none",
     lambda x, y: torch.stack([F.nll_loss(x, y, reduction="sum"),
                               F.nll_loss(x, y, reduction="none")[0]]),
     [randn(N, C)], [labels])
case("loss", "log_softmax_nll",
     lambda x, y: F.nll_loss(F.log_softmax(x, 1), y), [randn(N, C)],
     [labels])

case("loss", "cross_entropy_4d_weight_ignore",
     lambda x, y, w: F.cross_entropy(x, y, weight=w, ignore_index=1),
     [randn(2, C, 2, 3)],
     [RNG.randint(0, C, size=(2, 2, 3)).astype(np.int64), class_w])
case("loss", "cross_entropy_none_ignore",
     lambda x, y: F.cross_entropy(x, y, ignore_index=2, reduction="none"),
     [randn(N, C)], [labels_ign])
case("loss", "nll_loss_3d", lambda x, y: F.nll_loss(x, y), [randn(2, C, 3)],
     [RNG.randint(0, C, size=(2, 3)).astype(np.int64)])

# --- more data movement, broadcasting and indexing ------------------------------
case("shape2", "matmul_1d_times_batched", lambda a, b: torch.matmul(a, b),
     [randn(4), randn(2, 4, 5)])
case("shape2", "matmul_size1_batch_lhs", lambda a, b: torch.matmul(a, b),
     [randn(1, 3, 4), randn(2, 4, 5)])
case("shape2", "matmul_size1_batch_rhs", lambda a, b: torch.matmul(a, b),
     [randn(2, 3, 4), randn(1, 4, 5)])
case("shape2", "matmul_4d", lambda a, b: torch.matmul(a, b),
     [randn(2, 2, 3, 4), randn(2, 2, 4, 3)])
case("shape2", "select_negative_index", lambda x: x[:, -1] + x[-2],
     [randn(4, 4)])
case("shape2", "select_scalar_index", lambda x: x[2], [randn(4, 3)])
case("shape2", "gather_2d_indices_axis1", lambda x, idx: x[:, idx],
     [randn(3, 5)], [np.array([[0, 4], [4, 1], [2, 4]], np.int64)])
case("shape2", "embedding_of_computed",
     lambda w, idx: F.embedding(idx, w * 2.0 + 1.0), [randn(5, 3)],
     [np.array([0, 4, 4, 2], np.int64)])
case("shape2", "gather_elements", lambda x, idx: torch.gather(x, 1, idx),
     [randn(3, 4)], [np.array([[0, 0, 3], [1, 2, 1], [3, 3, 3]], np.int64)])
case("shape2", "flip", lambda x: torch.flip(x, [1]), [randn(3, 4)])
case("shape2", "repeat_tile", lambda x: x.repeat(2, 3), [randn(2, 3)])
case("shape2", "where_all_broadcast",
     lambda a, b, m: torch.where(m, a, b), [randn(1, 5), randn(3, 1)],
     [RNG.rand(3, 1) < 0.5])
case("shape2", "masked_fill", lambda x, m: x.masked_fill(m, -2.0),
     [randn(3, 4)], [RNG.rand(3, 4) < 0.5])
case("shape2", "triu", lambda x: torch.triu(x, 1), [randn(4, 4)])
case("shape2", "cumsum", lambda x: torch.cumsum(x, 1), [randn(3, 5)])
case("shape2", "permute_4d", lambda x: x.permute(0, 2, 3, 1),
     [randn(2, 3, 4, 5)])
case("shape2", "split_last_axis",
     lambda x: torch.split(x, 2, -1)[2] - torch.split(x, 2, -1)[0],
     [randn(3, 6)])
case("shape2", "reduce_max_ties_keepdims",
     lambda x: torch.amax(x, (0, 1), keepdim=True),
     [np.round(RNG.randn(3, 2, 4)).astype(np.float32)])
case("shape2", "reduce_neg_axes_keepdims",
     lambda x: x.sum((-1, -3), keepdim=True), [randn(2, 3, 4)])

# --- edge cases of the rules: kinks, ties, zeros, ignored labels -----------------
kinks = np.array([[-1.5, -0.5, 0.0, 0.8], [0.0, 1.2, -0.7, 0.0],
                  [2.0, -2.0, 0.5, -0.5]], np.float32)
case("edge", "relu_at_zero", F.relu, [kinks])
case("edge", "abs_at_zero", torch.abs, [kinks])
# Bounds exact in fp32, so the float64 reference sees the same ties.
case("edge", "clamp_at_bounds", lambda x: torch.clamp(x, -0.5, 0.75),
     [kinks.clip(-0.5, 0.75)])
case("edge", "clamp_min_only", lambda x: torch.clamp(x, min=0.0), [kinks])
case("edge", "hardtanh_at_bounds", lambda x: F.hardtanh(x, -0.5, 0.5),
     [kinks.clip(-0.5, 0.5)])
case("edge", "hardsigmoid_hardswish_at_kinks",
     lambda x: F.hardsigmoid(x) + 2.0 * F.hardswish(x),
     [np.array([-4.0, -3.0, -1.5, 0.0, 3.0, 4.5], np.float32)])
case("edge", "leaky_relu_at_zero", lambda x: F.leaky_relu(x, 0.2), [kinks])
case("edge", "maximum_minimum_ties",
     lambda a, b: torch.maximum(a, b) + 3.0 * torch.minimum(a, b),
     [kinks, np.round(kinks)])
case("edge", "pow_zero_base_and_exponent", lambda a, b: torch.pow(a, b),
     [np.array([0.0, 0.0, 1.5, 2.0, 0.0], np.float32),
      np.array([0.0, 2.0, 0.0, 1.5, 1.0], np.float32)])
case("edge", "cross_entropy_default_ignore",
     lambda x, y: F.cross_entropy(x, y), [randn(N, C)],
     [np.array([0, -100, 3, 4, -100, 1], np.int64)])
case("edge", "nll_loss_default_ignore_sum",
     lambda x, y: F.nll_loss(x, y, reduction="sum"), [randn(N, C)],
     [np.array([-100, 2, 3, 4, 0, -100], np.int64)])
case("edge", "layer_norm_large_eps",
     lambda x, w, b: F.layer_norm(x, (6,), w, b, eps=0.5),
     [randn(3, 6) * 0.3, randn(6), randn(6)])
case("edge", "concat_same_twice", lambda a: torch.cat([a, a * 2.0, a], 0),
     [randn(2, 3)])
case("edge", "matmul_same_operand", lambda a: a @ a.t(), [randn(3, 4)])
case("edge", "softmax_size1_axis", lambda x: torch.softmax(x, 1) + x,
     [randn(3, 1)])
case("edge", "mean_to_scalar_1d", lambda x: x.mean(0), [randn(5)])
case("edge", "cast_bf16_roundtrip", lambda x: x.bfloat16().float(),
     [randn(3, 4)])
case("edge", "dropout_eval_is_identity",
     lambda x: F.dropout(x, 0.4, training=False), [randn(3, 4)])

# --- larger, odd sizes: BLAS calls, vectorised loops with remainders --------------
# Products summed over K ~ 40-100 terms: fp32 rounding is ~ sqrt(K) eps
# |terms| whatever the size of the (cancelling) result, so elements near 0
# need an absolute tolerance on the scale of the terms; torch's own fp32
# gradients are off by up to ~1e-5 here (printed as "torch fp32 err").
GEMM_TOL = dict(atol=2e-5, why="fp32 sums of ~100 products; torch fp32 errs "
                "by as much")
case("large", "large_matmul_2d", lambda a, b: a @ b,
     [randn(37, 96), randn(96, 45)], **GEMM_TOL)
case("large", "large_matmul_batched_broadcast", lambda a, b: a @ b,
     [randn(3, 1, 17, 40), randn(5, 40, 23)], **GEMM_TOL)
case("large", "large_linear_3d", F.linear,
     [randn(4, 19, 70), randn(51, 70), randn(51)], **GEMM_TOL)
case("large", "large_gemm_transa_alpha",
     lambda c, a, b: torch.addmm(c, a.t(), b.t(), beta=0.25, alpha=1.5),
     [randn(33, 29), randn(65, 33), randn(29, 65)], **GEMM_TOL)
case("large", "large_softmax_log_softmax",
     lambda x: torch.softmax(x, -1) * 3.0 + torch.log_softmax(x, 0),
     [randn(13, 131)])
case("large", "large_layer_norm", lambda x, w, b: F.layer_norm(x, (203,), w, b),
     [randn(7, 203), randn(203), randn(203)])
case("large", "large_cross_entropy",
     lambda x, y: F.cross_entropy(x, y), [randn(41, 1003)],
     [RNG.randint(0, 1003, size=41).astype(np.int64)])
case("large", "large_embedding", lambda w, idx: F.embedding(idx, w),
     [randn(300, 37)], [RNG.randint(0, 300, size=(9, 61)).astype(np.int64)])
case("large", "large_reductions",
     lambda x: x.sum(1, keepdim=True) * x.mean(0) + torch.amax(x, 1, True),
     [randn(67, 53)])
case("large", "large_batch_norm_train",
     lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=True),
     [randn(9, 13, 5, 7), randn(13), randn(13)],
     [np.zeros(13, np.float32), np.ones(13, np.float32)])
case("large", "large_gelu_mlp",
     lambda x, w1, w2: F.linear(F.gelu(F.linear(x, w1), approximate="tanh"),
                                w2),
     [randn(24, 64) * 0.5, randn(96, 64) * 0.2, randn(48, 96) * 0.2], **GEMM_TOL)

# --- accuracy at training sizes: long reductions ----------------------------------
case("long", "long_batch_norm_train",
     lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=True),
     [randn(16, 4, 32, 32) + 3.0, randn(4), randn(4)],
     [np.zeros(4, np.float32), np.ones(4, np.float32)])
case("long", "long_layer_norm", lambda x, w, b: F.layer_norm(x, (4096,), w, b),
     [randn(4, 4096) + 2.0, randn(4096), randn(4096)])
case("long", "long_reduce_mean", lambda x: x.mean(0) * 5.0, [randn(20000, 3) + 1.0])
case("long", "long_softmax", lambda x: torch.softmax(x, -1) * 100.0,
     [randn(2, 8192)])
case("long", "long_cross_entropy", lambda x, y: F.cross_entropy(x, y),
     [randn(4096, 7)], [RNG.randint(0, 7, size=4096).astype(np.int64)])

# --- compositions the importer builds from other ONNX ops -------------------
case("composite", "logsumexp", lambda x: torch.logsumexp(x, 1),
     [randn(3, 5)])
case("composite", "var_mean",
     lambda x: torch.var(x, 1) + torch.std(x, 0).sum(), [randn(4, 5)])
case("composite", "einsum", lambda a, b: torch.einsum("bij,bjk->bik", a, b),
     [randn(2, 3, 4), randn(2, 4, 2)])
case("composite", "instance_norm",
     lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
     [randn(2, 3, 4, 4), randn(3), randn(3)])
case("composite", "prelu", lambda x, w: F.prelu(x, w),
     [away_from_zero(2, 3, 4), randn(3)])
case("composite", "hardtanh", lambda x: F.hardtanh(x, -0.7, 0.9),
     [away_from_zero(3, 4)])
case("composite", "hardsigmoid_hardswish",
     lambda x: F.hardsigmoid(x) + F.hardswish(x), [away_from_zero(3, 4) * 2])
case("composite", "softsign_selu_celu",
     lambda x: F.softsign(x) + F.selu(x) + F.celu(x, 0.7),
     [away_from_zero(3, 4)])
case("composite", "global_avg_pool", lambda x: F.adaptive_avg_pool2d(x, 1),
     [randn(2, 3, 4, 5)])
case("composite", "global_max_pool", lambda x: F.adaptive_max_pool2d(x, 1),
     [randn(2, 3, 4, 5)])
case("composite", "sum_of_squares_norm", lambda x: torch.linalg.norm(x, dim=1),
     [randn(3, 4)])
case("composite", "interpolate_nearest",
     lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
     [randn(1, 2, 3, 3)])
case("composite", "bce_with_logits",
     lambda x, t: F.binary_cross_entropy_with_logits(x, t),
     [randn(3, 4)], [RNG.rand(3, 4).astype(np.float32)])

# --- convolution and pooling: the layer stacks of conv_pool_vs_torch.py -------
# (which trains them for several steps); here each stack's exact gradient
# with respect to its input and every weight and bias.
def run_layers(layers, x, params):
    """The stack on x with its weights and biases taken from params (in
    named_parameters order); batch norm in training mode."""
    params = list(params)
    for m in layers:
        if isinstance(m, nn.Conv2d):
            w = params.pop(0)
            b = params.pop(0) if m.bias is not None else None
            x = F.conv2d(x, w, b, m.stride, m.padding, m.dilation, m.groups)
        elif isinstance(m, nn.BatchNorm2d):
            w, b = params.pop(0), params.pop(0)
            x = F.batch_norm(x, torch.zeros(m.num_features, dtype=x.dtype),
                             torch.ones(m.num_features, dtype=x.dtype), w, b,
                             training=True, momentum=m.momentum, eps=m.eps)
        else:  # activations and pooling: no parameters
            x = m(x)
    assert not params
    return x


# A batch norm's gradient subtracts means of hundreds of products from each
# element (2 x 12 x 12 = 288 here): elements near 0 carry fp32 rounding on
# the scale of the terms, and torch's own fp32 gradients err by ~2e-5.
BN_TOL = dict(atol=3e-5, why="batch norm's backward cancels sums of ~300 "
              "products; torch fp32 errs by as much")


def conv_pool_case(name, shape, layers):
    torch.manual_seed(0)
    stack = nn.Sequential(*layers())
    tol = BN_TOL if any(isinstance(m, nn.BatchNorm2d) for m in stack) else {}
    case("conv", "convpool_" + name,
         lambda x, *ps, stack=stack: run_layers(stack, x, ps),
         [randn(2, *shape)] + [p.detach().numpy().copy()
                               for p in stack.parameters()], **tol)


for _name, (_shape, _layers) in CONV_POOL_CASES.items():
    conv_pool_case(_name, _shape, _layers)

# --- dropout (self-consistency) ---------------------------------------------------
DROPOUT_P = 0.3
case("dropout", "dropout",
     lambda x, w: F.dropout(x, DROPOUT_P, training=True) * w,
     [away_from_zero(40, 50), randn(40, 50)], kind="dropout")


# ------------------------------------------------------------------------------

def sanitize(name):
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


class GroupModel(nn.Module):
    """Sum over cases of (f(x0 + z, ...) * R).sum(); x0 and R are frozen
    (names ending in _x0 / _r), z trainable; constants are buffers."""

    def __init__(self, cases, upstream):
        super().__init__()
        self.cases = cases
        for c in cases:
            for i, x in enumerate(c.inputs):
                setattr(self, "%s_in%d_x0" % (c.name, i),
                        nn.Parameter(torch.from_numpy(x.copy())))
                setattr(self, "%s_in%d_z" % (c.name, i),
                        nn.Parameter(torch.zeros(x.shape)))
            for j, k in enumerate(c.consts):
                self.register_buffer("%s_c%d" % (c.name, j),
                                     torch.from_numpy(np.array(k)))
            if c.kind == "grad":
                setattr(self, "%s_r" % c.name,
                        nn.Parameter(torch.from_numpy(upstream[c.name])))

    def forward(self, one):
        total = None
        for c in self.cases:
            xs = [getattr(self, "%s_in%d_x0" % (c.name, i)) +
                  getattr(self, "%s_in%d_z" % (c.name, i))
                  for i in range(len(c.inputs))]
            ks = [getattr(self, "%s_c%d" % (c.name, j))
                  for j in range(len(c.consts))]
            y = c.fn(*xs, *ks)
            if c.kind == "grad":
                y = y * getattr(self, "%s_r" % c.name)
            term = y.sum()
            total = term if total is None else total + term
        # The batch input (one row holding 1.0) scales the loss by exactly 1.
        return total * one.sum()


def upstream_for(c):
    """R: random, one value per output element."""
    with torch.no_grad():
        xs = [torch.from_numpy(x.copy()) for x in c.inputs]
        ks = [torch.from_numpy(np.array(k)) for k in c.consts]
        y = c.fn(*xs, *ks)
    return np.asarray(RNG.randn(*y.shape), dtype=np.float32)


def reference(c, r, dtype):
    """torch.autograd gradients of (f(x) * R).sum() in dtype."""
    xs = [torch.tensor(x, dtype=dtype, requires_grad=True) for x in c.inputs]
    ks = [torch.from_numpy(np.array(k)) for k in c.consts]
    ks = [k.to(dtype) if k.is_floating_point() else k for k in ks]
    y = c.fn(*xs, *ks)
    loss = (y * torch.tensor(r, dtype=dtype)).sum()
    return [g.detach().double().numpy()
            for g in torch.autograd.grad(loss, xs)]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        lines = (r.stderr or r.stdout).strip().splitlines()
        raise RuntimeError(lines[-1] if lines else "exit %d" % r.returncode)
    return r.stdout



def export_group(args, label, cases, upstream):
    """Writes the ONNX model and the data of a group (main thread only:
    torch.onnx.export is not thread-safe); returns its folder."""
    work = os.path.join(args.work, label)
    os.makedirs(work, exist_ok=True)
    model = GroupModel(cases, upstream)
    model.train()
    one = np.ones((1, 1), np.float32)
    try:
        export_graph(model, (torch.from_numpy(one),), ["one"],
                     os.path.join(work, "model.onnx"), output_names=["loss"])
    except Exception as e:  # noqa: BLE001 - torch's exporter failing
        return "torch.onnx.export: %s" % str(e).strip().splitlines()[0]
    np.savez(os.path.join(work, "data.npz"), one=one)
    return work


def run_effopt(args, work):
    """One step with effc + effrun: the checkpoint, or the error text."""
    effx = os.path.join(work, "model.effx")
    ckpt = os.path.join(work, "step1.safetensors")
    try:
        run([tool(args, "effc"), os.path.join(work, "model.onnx"), "-o", effx,
             "--optimizer", "sgd", "--lr", "1", "--momentum", "0",
             "--weight-decay", "0", "--freeze", "_(x0|r)$"])
        run([tool(args, "effrun"), effx, "--data",
             os.path.join(work, "data.npz"), "--steps", "1", "--save", ckpt,
             "--quiet"])
    except RuntimeError as e:
        return str(e)
    return read_safetensors(ckpt)


def check(c, state, upstream):
    """(ok, message, max abs err, max rel err)"""
    grads = []
    for i in range(len(c.inputs)):
        key = "%s_in%d_z" % (c.name, i)
        if key not in state:
            return False, "no %s in the checkpoint" % key, 0.0, 0.0
        grads.append(-state[key].astype(np.float64))
    if c.kind == "dropout":
        return check_dropout(c, grads)
    r = upstream[c.name]
    want = reference(c, r, torch.float64)
    want32 = reference(c, r, torch.float32)
    problems = []
    worst_abs = worst_rel = torch_err = 0.0
    for i, (got, ref, ref32) in enumerate(zip(grads, want, want32)):
        if got.shape != ref.shape:
            problems.append("input %d: shape %s, torch %s" %
                            (i, got.shape, ref.shape))
            continue
        err = np.abs(got - ref)
        scale = np.abs(ref)
        worst_abs = max(worst_abs, float(err.max(initial=0)))
        worst_rel = max(worst_rel, float((err / np.maximum(scale, 1e-3)).max(initial=0)))
        torch_err = max(torch_err, float(np.abs(ref32 - ref).max(initial=0)))
        bad = err > c.atol + c.rtol * scale
        if not np.isfinite(got).all():
            problems.append("input %d: non-finite gradient" % i)
        elif bad.any():
            j = np.unravel_index(int(np.argmax(err - c.rtol * scale)), err.shape)
            problems.append("input %d: %d of %d differ, e.g. at %s %.7g vs %.7g"
                            % (i, int(bad.sum()), err.size, list(j),
                               got[j], ref[j]))
    msg = "torch fp32 err %.1e" % torch_err
    if problems:
        msg = "; ".join(problems) + " (" + msg + ")"
    return not problems, msg, worst_abs, worst_rel


def check_dropout(c, grads):
    x0, w0 = [x.astype(np.float64) for x in c.inputs]
    dx, y = grads  # grad of w is y = dropout(x), our forward output
    keep = y != 0
    scale = 1.0 / (1.0 - DROPOUT_P)
    problems = []
    frac = keep.mean()
    # 2000 draws of p = 0.7: the kept fraction is within 0.7 +- 0.05 with
    # overwhelming probability (5 standard deviations ~ 0.051).
    if abs(frac - (1 - DROPOUT_P)) > 0.05:
        problems.append("kept fraction %.3f, expected %.2f" %
                        (frac, 1 - DROPOUT_P))
    want_y = x0 * keep * scale
    want_dx = w0 * keep * scale
    ey = np.abs(y - want_y)
    ex = np.abs(dx - want_dx)
    if (ey > 1e-6 + 1e-6 * np.abs(want_y)).any():
        problems.append("forward is not x * mask / (1 - p)")
    if (ex > c.atol + c.rtol * np.abs(want_dx)).any():
        problems.append("grad != upstream * (y != 0) / (1 - p) at %d elements"
                        % int((ex > c.atol + c.rtol * np.abs(want_dx)).sum()))
    return (not problems, "; ".join(problems) or "kept %.3f" % frac,
            float(ex.max()), float((ex / np.maximum(np.abs(want_dx), 1e-3)).max()))


def run_batches(args, batches, upstream):
    """{case name: (ok, message, abs, rel)}. A batch of several cases that
    fails to compile or run is retried case by case to name the culprit."""
    works = [export_group(args, label, cases, upstream)
             for label, cases in batches]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(pool.map(
            lambda w: w if w.startswith("torch.onnx") else run_effopt(args, w),
            works))
    results, retry = {}, []
    for (label, cases), outcome in zip(batches, outcomes):
        if isinstance(outcome, dict):
            results.update({c.name: check(c, outcome, upstream) for c in cases})
        elif len(cases) == 1:
            results[cases[0].name] = (False, outcome, 0.0, 0.0)
        else:
            retry += [(c.name, [c]) for c in cases]
    if retry:
        results.update(run_batches(args, retry, upstream))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", help="directory with effc and effrun")
    ap.add_argument("--only", help="regex of case names to run")
    ap.add_argument("--separate", action="store_true",
                    help="one model per case instead of one per group")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)

    upstream = {c.name: upstream_for(c) for c in CASES if c.kind == "grad"}
    batches = []
    for group, cases in GROUPS.items():
        cases = [c for c in cases
                 if not args.only or re.search(args.only, c.name)
                 or re.search(args.only, group)]
        if not cases:
            continue
        if args.separate:
            batches += [(c.name, [c]) for c in cases]
        else:
            batches.append((group, cases))
    results = run_batches(args, batches, upstream)

    passed = failed = expected = 0
    for c in CASES:
        if c.name not in results:
            continue
        ok, msg, abs_err, rel_err = results[c.name]
        if c.name in EXPECTED_FAILURES:
            if ok:
                status, failed = "XPASS", failed + 1
                msg = "passes: remove it from EXPECTED_FAILURES"
            else:
                status, expected = "XFAIL", expected + 1
                msg = EXPECTED_FAILURES[c.name] + " [" + msg + "]"
        else:
            status = "PASS" if ok else "FAIL"
            passed += ok
            failed += not ok
        tol = "" if c.rtol == 1e-4 and c.atol == 1e-6 else \
            "  (rtol %g atol %g: %s)" % (c.rtol, c.atol, c.why)
        print("%-34s %-5s max abs err %.2e  rel %.2e  %s%s" %
              (c.name, status, abs_err, rel_err, msg, tol))
    print("%d passed, %d failed, %d expected failures" %
          (passed, failed, expected))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
